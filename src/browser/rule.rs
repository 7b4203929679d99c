//! The "empty without JavaScript" rule: which pages are worth a browser.
//!
//! A page is empty without JavaScript when all of these hold:
//! - it has at least one `<script>`;
//! - its visible text (outside `script`, `style`, `noscript`, `title` and `template`, whitespace
//!   not counted) is under [`MAX_VISIBLE_CHARS`] characters;
//! - it shows the mark of an app: an app-root element (an `id` such as `root`, `app`, `__next`,
//!   `__nuxt`, `___gatsby`; an `ng-app`, `data-reactroot` or `ng-version` attribute; an
//!   `<app-root>` element) or a `<noscript>` notice;
//! - it links to at most [`MAX_SITE_LINKS`] pages of its own site (`<a href>`, `<area href>`).
//!
//! Ordinary pages (text, or links to follow) never match, however many scripts they carry.

use std::cell::RefCell;

use std::borrow::Cow;
use std::sync::LazyLock;

use lol_html::html_content::Element;
use lol_html::{doc_text, ElementContentHandlers, HtmlRewriter, Selector, Settings};

/// An element handler of the rule.
type ElementHandler<'h> = dyn FnMut(&mut Element<'_, '_>) -> lol_html::HandlerResult + 'h;
use url::Url;

/// Visible characters below which a page counts as empty.
pub(crate) const MAX_VISIBLE_CHARS: usize = 200;
/// Links to the page's own site above which it is an ordinary page.
pub(crate) const MAX_SITE_LINKS: usize = 3;
/// Only the page's first bytes are read: an app shell is small.
const MAX_READ: usize = 1 << 20;

/// `id` values that single-page frameworks mount their app on.
const APP_IDS: &[&str] = &[
    "root",
    "app",
    "__next",
    "__nuxt",
    "___gatsby",
    "svelte",
    "main-app",
    "app-root",
    "application",
];
/// Attributes that only a client-rendered app root carries.
const APP_ATTRS: &[&str] = &[
    "ng-app",
    "data-ng-app",
    "data-reactroot",
    "ng-version",
    "data-v-app",
];

/// The rule's selectors, parsed once for the process rather than once per page (the rule looks
/// at every HTML page of a crawl that may render). Indexes into [`SELECTORS`]:
const SCRIPT: usize = 0;
const NOSCRIPT: usize = 1;
const APP: usize = 2;
const LINK: usize = 3;
const STYLE: usize = 4;
const TITLE: usize = 5;
const TEMPLATE: usize = 6;

static SELECTORS: LazyLock<Vec<Option<Selector>>> = LazyLock::new(|| {
    [
        "script",
        "noscript",
        "app-root, [ng-app], [data-ng-app], [data-reactroot], [ng-version], [data-v-app], [id]",
        "a[href], area[href]",
        "style",
        "title",
        "template",
    ]
    .iter()
    // Constants known to parse (a unit test checks each); a failure would only lose that part.
    .map(|s| s.parse().ok())
    .collect()
});

/// What the rule saw on a page, and its answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Emptiness {
    pub scripts: usize,
    pub visible_chars: usize,
    pub app_root: bool,
    pub noscript: bool,
    pub site_links: usize,
}

impl Emptiness {
    /// The rule itself.
    pub fn is_empty(&self) -> bool {
        self.scripts > 0
            && self.visible_chars < MAX_VISIBLE_CHARS
            && (self.app_root || self.noscript)
            && self.site_links <= MAX_SITE_LINKS
    }
}

/// The rule's answer for `html` found at `page`: [`looks_empty`]`(html, page).is_empty()`, but
/// a page without a `<script` tag is answered without parsing it. The rule wants a script,
/// and a script element's start tag is always these seven bytes (ASCII case aside: the
/// tokenizer lower-cases tag names, and the rule parses the bytes as UTF-8). Most pages of a
/// static site have none, and the rule's parse was ~5% of the crawler's CPU there.
pub fn empty_without_js(html: &[u8], page: &Url) -> bool {
    has_script_tag(&html[..html.len().min(MAX_READ)]) && looks_empty(html, page).is_empty()
}

/// Whether the links already taken from a page (its `<a href>` and `<area href>`, as absolute
/// URLs, each once) show it is an ordinary page: more than `MAX_SITE_LINKS` (3) of them point to
/// other pages of its own site. The rule would count at least as many (it counts every element
/// and joins against the page, so a `<base>` elsewhere only lowers this count), so it is not
/// run: on a documentation site every page has scripts, and the rule's parse of each was a
/// second full parse of the page.
pub fn links_show_ordinary<'a>(page: &Url, anchors: impl Iterator<Item = &'a Url>) -> bool {
    anchors
        .filter(|u| {
            u.origin() == page.origin() && !(u.path() == page.path() && u.query() == page.query())
        })
        .nth(MAX_SITE_LINKS)
        .is_some()
}

/// Whether `html` holds `<script`, in any case.
fn has_script_tag(html: &[u8]) -> bool {
    memchr::memchr_iter(b'<', html).any(|i| {
        html.get(i + 1..i + 7)
            .is_some_and(|name| name.eq_ignore_ascii_case(b"script"))
    })
}

/// Counts, on `html` (decoded, UTF-8 or ASCII-compatible) found at `page`, what the rule needs.
pub fn looks_empty(html: &[u8], page: &Url) -> Emptiness {
    let seen = RefCell::new(Emptiness::default());
    let all_chars = RefCell::new(0usize);
    let hidden_chars = RefCell::new(0usize);
    {
        let count_hidden = |t: &mut lol_html::html_content::TextChunk<'_>| {
            *hidden_chars.borrow_mut() += visible_len(t.as_str());
            Ok(())
        };
        let script = |_: &mut Element<'_, '_>| {
            seen.borrow_mut().scripts += 1;
            Ok(())
        };
        let noscript = |_: &mut Element<'_, '_>| {
            seen.borrow_mut().noscript = true;
            Ok(())
        };
        let app = |el: &mut Element<'_, '_>| {
            let by_id = el
                .get_attribute("id")
                .is_some_and(|id| APP_IDS.contains(&id.trim().to_ascii_lowercase().as_str()));
            let by_attr = APP_ATTRS.iter().any(|a| el.has_attribute(a));
            if by_id || by_attr || el.tag_name() == "app-root" {
                seen.borrow_mut().app_root = true;
            }
            Ok(())
        };
        let link = |el: &mut Element<'_, '_>| {
            if let Some(href) = el.get_attribute("href") {
                if same_site(page, &href) {
                    seen.borrow_mut().site_links += 1;
                }
            }
            Ok(())
        };
        let on = |i: usize| SELECTORS.get(i)?.as_ref().map(Cow::Borrowed);
        let element = |i: usize, h| Some((on(i)?, ElementContentHandlers::default().element(h)));
        let hidden =
            |i: usize| Some((on(i)?, ElementContentHandlers::default().text(count_hidden)));
        let handlers = [
            element(SCRIPT, Box::new(script) as Box<ElementHandler<'_>>),
            element(NOSCRIPT, Box::new(noscript)),
            element(APP, Box::new(app)),
            element(LINK, Box::new(link)),
            hidden(SCRIPT),
            hidden(STYLE),
            hidden(NOSCRIPT),
            hidden(TITLE),
            hidden(TEMPLATE),
        ];
        let settings = Settings {
            element_content_handlers: handlers.into_iter().flatten().collect(),
            document_content_handlers: vec![doc_text!(|t| {
                *all_chars.borrow_mut() += visible_len(t.as_str());
                Ok(())
            })],
            strict: false,
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let head = &html[..html.len().min(MAX_READ)];
        // A parse error leaves what was counted so far, which is all the rule can know.
        if rewriter.write(head).is_ok() {
            let _ = rewriter.end();
        }
    }
    let mut out = seen.into_inner();
    out.visible_chars = all_chars
        .into_inner()
        .saturating_sub(hidden_chars.into_inner());
    out
}

/// Characters that are not whitespace.
fn visible_len(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

/// Whether `href` on `page` points to a page of the same origin (fragments of the page itself
/// and non-web links are not pages).
fn same_site(page: &Url, href: &str) -> bool {
    let href = href.trim();
    if href.starts_with('#') {
        return false;
    }
    match page.join(href) {
        Ok(u) => {
            matches!(u.scheme(), "http" | "https")
                && u.origin() == page.origin()
                && !(u.path() == page.path() && u.query() == page.query())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_a_few_links_to_the_own_site_make_an_ordinary_page() {
        let page = page();
        let urls =
            |list: &[&str]| -> Vec<Url> { list.iter().map(|u| page.join(u).unwrap()).collect() };
        let four = urls(&["/a", "/b", "/c", "/d"]);
        assert!(links_show_ordinary(&page, four.iter()));
        // The page itself and other sites do not count.
        let few = urls(&["/a", "/b", "/c", "/app/", "http://other.test/x"]);
        assert!(!links_show_ordinary(&page, few.iter()));
        // What the rule says of the same links agrees.
        let html = r#"<script src="/x.js"></script><div id="root"></div>
            <a href="/a">a</a><a href="/b">b</a><a href="/c">c</a><a href="/d">d</a>"#;
        assert!(!looks_empty(html.as_bytes(), &page).is_empty());
    }

    #[test]
    fn every_selector_of_the_rule_parses() {
        assert_eq!(SELECTORS.len(), TEMPLATE + 1);
        assert!(SELECTORS.iter().all(Option::is_some));
    }

    fn page() -> Url {
        Url::parse("http://example.test/app/").unwrap()
    }

    fn judge(html: &str) -> Emptiness {
        looks_empty(html.as_bytes(), &page())
    }

    #[test]
    fn a_react_shell_is_empty() {
        let e = judge(
            r#"<!doctype html><html><head><title>Shop</title>
            <script src="/static/app.js"></script><style>body{margin:0}</style></head>
            <body><div id="root"></div></body></html>"#,
        );
        assert_eq!(e.scripts, 1);
        assert!(e.app_root);
        assert_eq!(e.visible_chars, 0, "{e:?}");
        assert!(e.is_empty());
    }

    #[test]
    fn a_noscript_notice_marks_an_app_too() {
        let e = judge(
            r#"<body><noscript>You need to enable JavaScript to run this app.</noscript>
            <div class="main"></div><script>start()</script></body>"#,
        );
        assert!(e.noscript && !e.app_root);
        assert!(e.is_empty(), "{e:?}");
    }

    #[test]
    fn loading_text_is_still_empty() {
        let e = judge(r#"<div id="app">Loading…</div><script src="a.js"></script>"#);
        assert_eq!(e.visible_chars, 8);
        assert!(e.is_empty());
    }

    #[test]
    fn an_article_with_scripts_is_not_empty() {
        let text = "This is a paragraph of an ordinary article. ".repeat(10);
        let e = judge(&format!(
            r#"<div id="app"><p>{text}</p></div><script src="analytics.js"></script>"#
        ));
        assert!(e.visible_chars >= MAX_VISIBLE_CHARS);
        assert!(!e.is_empty());
    }

    #[test]
    fn a_menu_of_site_links_is_not_empty() {
        let e = judge(
            r#"<div id="root"><a href="/a">A</a><a href="/b">B</a><a href="c">C</a>
            <a href="http://example.test/d">D</a></div><script src="x.js"></script>"#,
        );
        assert_eq!(e.site_links, 4);
        assert!(!e.is_empty());
    }

    #[test]
    fn off_site_links_fragments_and_the_page_itself_do_not_count() {
        let e = judge(
            r##"<div id="root"><a href="http://other.test/">o</a><a href="#top">t</a>
            <a href="/app/">self</a><a href="mailto:x@y">m</a></div><script></script>"##,
        );
        assert_eq!(e.site_links, 0);
        assert!(e.is_empty());
    }

    #[test]
    fn no_script_means_nothing_to_render() {
        let e = judge(r#"<div id="root"></div>"#);
        assert!(!e.is_empty());
    }

    #[test]
    fn no_app_mark_means_an_ordinary_short_page() {
        let e = judge(r#"<p>Short.</p><script src="a.js"></script>"#);
        assert!(!e.app_root && !e.noscript);
        assert!(!e.is_empty());
    }

    #[test]
    fn script_and_style_text_is_not_visible() {
        let code = "var x = 1; ".repeat(100);
        let e = judge(&format!(
            r#"<script>{code}</script><style>{code}</style><div ng-app="x"></div>"#
        ));
        assert_eq!(e.visible_chars, 0);
        assert!(e.app_root);
        assert!(e.is_empty());
    }

    #[test]
    fn the_short_answer_agrees_with_the_rule() {
        let pages = [
            r#"<div id="root"></div><SCRIPT src="a.js"></SCRIPT>"#,
            r#"<div id="root"></div><ScRiPt>start()</script>"#,
            r#"<div id="root"></div><noscript>enable js</noscript>"#,
            r#"<div id="root"></div><!-- <script> in a comment -->"#,
            r#"<div id="root"></div><scripts></scripts>"#,
            r#"<p>plain</p>"#,
            "<div id=\"root\"<<script \u{fffd}<noscript>",
            "<",
            "",
        ];
        for html in pages {
            let rule = looks_empty(html.as_bytes(), &page()).is_empty();
            assert_eq!(empty_without_js(html.as_bytes(), &page()), rule, "{html}");
        }
        assert!(empty_without_js(pages[0].as_bytes(), &page()));
        assert!(!has_script_tag(b"<p>no script</p> <scrip"));
    }

    #[test]
    fn broken_html_gives_an_answer_not_a_panic() {
        let e = looks_empty(b"<div id=\"root\"<<script \xff\xfe<noscript>", &page());
        assert!(e.visible_chars < 10);
        let _ = e.is_empty();
        assert_eq!(looks_empty(b"", &page()), Emptiness::default());
    }
}
