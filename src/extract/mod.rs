//! HTML → outlinks and robots directives; X-Robots-Tag parsing; content decoding for extraction.
//!
//! The crawler hands every HTML response body (transfer- and content-decoded, see
//! [`decode_body`]) to [`extract_html`] and the response's `X-Robots-Tag` headers to
//! [`x_robots_tag`]. Both produce [`Directives`]; merged, they decide whether the page is
//! archived ([`Directives::discard_reason`]) and whether its links are queued
//! ([`Directives::follow_links`]).
//!
//! Inline CSS (`<style>` elements and `style="…"` attributes) is handed to [`crate::extract::css`],
//! resolved against the document's base like every other reference.
//!
//! Parsing streams through `lol_html`, which never builds a DOM, so big pages cost linear time
//! and little memory. Attribute values are collected raw during the parse and resolved after it,
//! because a `<base href>` applies to every relative URL of the document, including those that
//! come before it.

pub mod css;
pub mod sitemap;

// The parse's helpers, each one job: attribute micro-parsers, the input's encoding,
// Content-Encoding decoding, character references; and a page's visible text.
mod attr;
mod charset;
mod decode;
pub(crate) mod entities;
mod robots;
pub(crate) mod text;

pub use decode::{decode_body, decode_slice, decoding_reader, DecodeError, Decoded};
pub use robots::{x_robots_tag, Directives};

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::io::{Cursor, Read};
use std::sync::LazyLock;

use lol_html::html_content::{Element, TextChunk};
use lol_html::{AsciiCompatibleEncoding, ElementContentHandlers, HtmlRewriter, Selector, Settings};
use url::Url;

use attr::{clean_attr, is_ascii_ws, refresh_url, srcset_urls};
use charset::{
    ascii_compatible, clean_label, is_utf8_label, meta_may_name_other_charset, prepare_input,
    UTF16_LABELS,
};
use decode::read_head;
use entities::decode_entities;
use text::TextParse;

/// Heritrix hop types: how a URL was discovered from the page that links to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hop {
    /// A navigational link (`a`, `area`, plain `link`).
    Link,
    /// A resource the page needs to render (images, scripts, stylesheets, frames, …).
    Embed,
    /// A redirect (here: `<meta http-equiv=refresh>`).
    Redirect,
}

impl Hop {
    /// The letter used in crawl.log discovery paths: `L`, `E` or `R`.
    pub fn letter(self) -> char {
        match self {
            Hop::Link => 'L',
            Hop::Embed => 'E',
            Hop::Redirect => 'R',
        }
    }
}

/// One URL found in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outlink {
    /// Absolute http(s) URL, fragment removed.
    pub url: Url,
    pub hop: Hop,
    /// Where it was found, e.g. `"a/@href"`, `"img/@srcset"`, `"meta/@refresh"`.
    pub context: &'static str,
}

/// What [`extract_html`] found.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Deduplicated outlinks in document order (first occurrence wins).
    pub links: Vec<Outlink>,
    /// Directives from `<meta name="robots">` and `<meta name="AGENT">`.
    pub directives: Directives,
    /// Link values left out once the page reached its link limit (or too long to be a URL
    /// worth fetching); counted, never kept.
    pub left_out: usize,
    /// The parse stopped at [`MAX_PARSER_MEMORY`] (elements opened and never closed, by the
    /// million): links after that point were not read.
    pub cut: bool,
}

/// Most memory one parse may take for the parser's own state (lol_html's stack of open
/// elements and its buffer for a tag split between reads). A page of `<a href=x>` repeated
/// and never closed pushes an element per link: 50 MB of it held about 900 MB before this cap.
/// 4 MiB is some 20,000 open elements, far deeper than any real page nests.
pub const MAX_PARSER_MEMORY: usize = 4 << 20;

/// Attribute values longer than this are not taken as links (a URL over 2,000 characters is
/// a trap anyway); holding them would let one page pin megabytes per link.
pub const MAX_LINK_VALUE: usize = 8 * 1024;

/// Text of `<noscript>` elements kept for their links, per page.
const MAX_NOSCRIPT_TEXT: usize = 1 << 20;

/// Inline CSS (`<style>` text and `style` attributes) kept for its links, per page; past it
/// each piece is counted as left out.
const MAX_INLINE_CSS: usize = 2 << 20;

/// Links and meta robots directives of an HTML page (already transfer- and content-decoded).
///
/// `charset` is the Content-Type header's charset, if any. It wins over the document's own
/// `<meta charset>`; when it is absent or not an ASCII-compatible encoding lol_html knows, the
/// first `<meta charset>`/`<meta http-equiv=content-type>` of the document decides, else UTF-8.
/// A byte order mark beats both (UTF-16 pages are transcoded first).
/// `agent_token` is the crawler's robots product token (e.g. "archiver").
///
/// Links inside `<noscript>` are extracted too (lol_html, like a browser with scripts on,
/// reads them as text, yet they are often the only plain `<img>` of a lazy-loading page);
/// `<base>` and meta robots inside `<noscript>` are not honoured.
///
/// Empty and unparsable URL values are skipped. Non-ASCII characters are percent-encoded as
/// UTF-8 everywhere, also in the query (a browser would use the page's encoding for the
/// query of a non-UTF-8 page; that needs `encoding_rs` as a direct dependency).
///
/// Never fails: broken markup or a parser error yields whatever was collected so far.
pub fn extract_html(
    html: &[u8],
    charset: Option<&str>,
    page_url: &Url,
    agent_token: &str,
) -> Extracted {
    extract_html_limited(
        std::io::Cursor::new(html),
        charset,
        page_url,
        agent_token,
        usize::MAX,
    )
}

/// [`extract_html`] over a stream, keeping at most `max_links` links: memory stays bounded
/// whatever the page (the body is parsed in pieces as it is read; at most `max_links`
/// distinct link values are held, further ones are only counted in `left_out`). Only a
/// UTF-16 page, which must be transcoded first, is read whole.
pub fn extract_html_limited(
    body: impl Read,
    charset: Option<&str>,
    page_url: &Url,
    agent_token: &str,
    max_links: usize,
) -> Extracted {
    parse_page(body, charset, page_url, agent_token, max_links, None).0
}

/// [`extract_html_limited`], and from the same parse the page's text as
/// `text::page_text(body, text_max)` gives it, when the parse reads the page exactly as that
/// function would: it follows the document's `<meta charset>` and starts in UTF-8, while link
/// extraction lets the header's charset win and drops a byte order mark. So the text comes
/// only when there is no byte order mark and the header names no charset, or names UTF-8 and
/// no `<meta>` of the page could name another; else it is None and the caller runs
/// `text::page_text` itself. Pass the whole body: `page_text` of a body cut short ends
/// differently.
///
/// One parse instead of two: on the small pages of a many-sites crawl, setting up a second
/// parser and running it was a third of the crawler's HTML work.
pub fn extract_html_and_text(
    body: impl Read,
    charset: Option<&str>,
    page_url: &Url,
    agent_token: &str,
    max_links: usize,
    text_max: usize,
) -> (Extracted, Option<String>) {
    parse_page(
        body,
        charset,
        page_url,
        agent_token,
        max_links,
        Some(text_max),
    )
}

/// The parse behind both: links (and, with `text_max`, the text when it can be had).
fn parse_page(
    mut body: impl Read,
    charset: Option<&str>,
    page_url: &Url,
    agent_token: &str,
    max_links: usize,
    text_max: Option<usize>,
) -> (Extracted, Option<String>) {
    let scope = Scope::Document { agent_token };
    let head = read_head(&mut body, 3).unwrap_or_default();
    let utf16_bom = head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF");
    let utf16_label = charset
        .and_then(clean_label)
        .is_some_and(|l| l.starts_with("utf-16") || UTF16_LABELS.contains(&l.as_str()));
    let mut text = None;
    let collector = if utf16_bom || utf16_label {
        let mut all = head;
        if let Err(e) = body.read_to_end(&mut all) {
            tracing::debug!("reading a UTF-16 page for links stopped: {e}");
        }
        let input = prepare_input(&all, charset);
        let reader = Cursor::new(&input.bytes[..]);
        let label = input.label.as_deref();
        collect_from(reader, label, input.sniff_meta, scope, max_links, None)
    } else if let Some(rest) = head.strip_prefix(b"\xEF\xBB\xBF") {
        let reader = Cursor::new(rest.to_vec()).chain(body);
        collect_from(reader, None, false, scope, max_links, None)
    } else {
        let label = charset.and_then(clean_label);
        // With no label both parses follow the document's meta; with a UTF-8 one both read
        // UTF-8 unless a meta of the page names something else (checked during the parse).
        let same_reading = label.as_deref().is_none_or(is_utf8_label);
        let page_text = text_max.filter(|_| same_reading).map(TextParse::new);
        let reader = Cursor::new(head).chain(body);
        let collector = collect_from(
            reader,
            label.as_deref(),
            true,
            scope,
            max_links,
            page_text.as_ref(),
        );
        let other_charset = label.is_some() && collector.meta_names_other_charset;
        text = page_text.filter(|_| !other_charset).map(TextParse::finish);
        collector
    };
    let mut collector = collector;
    // The distinct values were needed only while reading (up to max_outlinks strings).
    collector.values = HashSet::new();
    let base = document_base(page_url, collector.base_href.as_deref());
    let mut links = LinkList {
        limit: max_links,
        ..LinkList::default()
    };
    links.add_all(&collector, &base);
    let extracted = Extracted {
        links: links.links,
        directives: collector.directives,
        left_out: collector.left_out + links.left_out,
        cut: collector.cut,
    };
    (extracted, text)
}

// ---------------------------------------------------------------------------------------------
// Collecting raw attribute values
// ---------------------------------------------------------------------------------------------

/// An attribute that holds URLs and the element it belongs to.
struct AttrRule {
    selector: &'static str,
    attr: &'static str,
    hop: Hop,
    context: &'static str,
    srcset: bool,
}

const fn rule(
    selector: &'static str,
    attr: &'static str,
    hop: Hop,
    context: &'static str,
) -> AttrRule {
    AttrRule {
        selector,
        attr,
        hop,
        context,
        srcset: false,
    }
}

const fn srcset_rule(selector: &'static str, context: &'static str) -> AttrRule {
    AttrRule {
        selector,
        attr: "srcset",
        hop: Hop::Embed,
        context,
        srcset: true,
    }
}

/// Attributes taken as they are; `link`, `input`, `meta` and `base` need a look at other
/// attributes and have their own handlers.
const ATTR_RULES: &[AttrRule] = &[
    rule("a[href]", "href", Hop::Link, "a/@href"),
    rule("area[href]", "href", Hop::Link, "area/@href"),
    rule("img[src]", "src", Hop::Embed, "img/@src"),
    srcset_rule("img[srcset]", "img/@srcset"),
    rule("source[src]", "src", Hop::Embed, "source/@src"),
    srcset_rule("source[srcset]", "source/@srcset"),
    rule("script[src]", "src", Hop::Embed, "script/@src"),
    rule("iframe[src]", "src", Hop::Embed, "iframe/@src"),
    rule("frame[src]", "src", Hop::Embed, "frame/@src"),
    rule("embed[src]", "src", Hop::Embed, "embed/@src"),
    rule("object[data]", "data", Hop::Embed, "object/@data"),
    rule("video[src]", "src", Hop::Embed, "video/@src"),
    rule("video[poster]", "poster", Hop::Embed, "video/@poster"),
    rule("audio[src]", "src", Hop::Embed, "audio/@src"),
    rule("audio[poster]", "poster", Hop::Embed, "audio/@poster"),
    rule("track[src]", "src", Hop::Embed, "track/@src"),
    rule(
        "body[background]",
        "background",
        Hop::Embed,
        "body/@background",
    ),
    rule(
        "table[background]",
        "background",
        Hop::Embed,
        "table/@background",
    ),
    rule("td[background]", "background", Hop::Embed, "td/@background"),
];

/// `link` relations whose target the page needs to render.
const EMBED_RELS: &[&str] = &[
    "stylesheet",
    "icon",
    "preload",
    "modulepreload",
    "manifest",
    "apple-touch-icon",
    "apple-touch-icon-precomposed",
];

/// A URL-bearing attribute value, entity-decoded and trimmed, not yet resolved.
enum Raw {
    Url {
        value: String,
        hop: Hop,
        context: &'static str,
    },
    Srcset {
        value: String,
        context: &'static str,
    },
    /// The n-th `<noscript>`'s text, parsed after the document in this place.
    Noscript(usize),
    /// CSS: a `style="…"` attribute's declarations (decoded), or the n-th `<style>` element.
    StyleAttr(String),
    StyleElement(usize),
}

#[derive(Default)]
struct Collector {
    raws: Vec<Raw>,
    /// href of the first `<base>` that has one.
    base_href: Option<String>,
    directives: Directives,
    noscripts: Vec<String>,
    /// Text of each `<style>` element, in document order.
    styles: Vec<String>,
    /// Bytes held in `noscripts`.
    noscript_bytes: usize,
    /// Most distinct link values kept.
    limit: usize,
    /// The distinct values kept so far (a page repeating one link a million times holds it
    /// once).
    values: HashSet<String>,
    /// Values not kept: past the limit, or too long.
    left_out: usize,
    /// Bytes of inline CSS (`<style>` text, `style` attributes) held.
    css_bytes: usize,
    /// A `<meta>` of the document may name a charset other than UTF-8 (see
    /// [`extract_html_and_text`]).
    meta_names_other_charset: bool,
    /// The parse hit [`MAX_PARSER_MEMORY`].
    cut: bool,
}

impl Collector {
    fn with_limit(limit: usize) -> Collector {
        Collector {
            limit,
            ..Collector::default()
        }
    }

    /// True when a value is to be kept (it is then remembered).
    fn admit(&mut self, value: &str) -> bool {
        if value.is_empty() || self.values.contains(value) {
            return false;
        }
        if value.len() > MAX_LINK_VALUE || self.values.len() >= self.limit {
            self.left_out += 1;
            return false;
        }
        self.values.insert(value.to_string());
        true
    }

    fn push(&mut self, value: &str, hop: Hop, context: &'static str) {
        let value = clean_attr(value);
        if self.admit(&value) {
            self.raws.push(Raw::Url {
                value: value.into_owned(),
                hop,
                context,
            });
        }
    }

    /// True while the page's inline CSS stays within `MAX_INLINE_CSS` (then `len` is counted).
    fn admit_css(&mut self, len: usize) -> bool {
        if self.css_bytes + len > MAX_INLINE_CSS {
            self.left_out += 1;
            return false;
        }
        self.css_bytes += len;
        true
    }

    fn push_srcset(&mut self, value: &str, context: &'static str) {
        let value = clean_attr(value);
        if self.admit(&value) {
            self.raws.push(Raw::Srcset {
                value: value.into_owned(),
                context,
            });
        }
    }

    /// A new `<noscript>`; past `SEPARATE_NOSCRIPTS` they share one text (see `add_all`).
    fn open_noscript(&mut self) {
        if self.noscripts.len() <= SEPARATE_NOSCRIPTS {
            let index = self.noscripts.len();
            self.noscripts.push(String::new());
            self.raws.push(Raw::Noscript(index));
        }
    }

    fn noscript_text(&mut self, text: &str) {
        if self.noscript_bytes + text.len() > MAX_NOSCRIPT_TEXT {
            return;
        }
        if let Some(current) = self.noscripts.last_mut() {
            current.push_str(text);
            self.noscript_bytes += text.len();
        }
    }
}

/// What a parse may look at: the whole document, or the text of a `<noscript>` (links only).
#[derive(Clone, Copy)]
enum Scope<'a> {
    Document { agent_token: &'a str },
    Noscript,
}

/// Runs lol_html over `input`; stops quietly at the first parser error.
fn collect(
    input: &[u8],
    label: Option<&str>,
    sniff_meta: bool,
    scope: Scope<'_>,
    limit: usize,
) -> Collector {
    collect_from(Cursor::new(input), label, sniff_meta, scope, limit, None)
}

/// Runs lol_html over a stream, 64 KiB at a time; stops quietly at the first parser or read
/// error (what was collected before it stands). With `text`, its handlers run in the same
/// parse.
fn collect_from(
    mut input: impl Read,
    label: Option<&str>,
    sniff_meta: bool,
    scope: Scope<'_>,
    limit: usize,
    text: Option<&TextParse>,
) -> Collector {
    let state = RefCell::new(Collector::with_limit(limit));
    {
        let forced = label.and_then(ascii_compatible);
        let settings = Settings {
            element_content_handlers: handlers(&state, scope, text),
            document_content_handlers: text.map(TextParse::document_handler).into_iter().collect(),
            strict: false,
            // The label's encoding from the first byte, the document's metas ignored; a label
            // lol_html cannot read leaves the choice to them.
            encoding: forced.unwrap_or_else(AsciiCompatibleEncoding::utf_8),
            adjust_charset_on_meta_tag: sniff_meta && forced.is_none(),
            memory_settings: lol_html::MemorySettings {
                max_allowed_memory_usage: MAX_PARSER_MEMORY,
                ..lol_html::MemorySettings::new()
            },
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let end = READ_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
            Ok(mut buf) => pump(&mut rewriter, &mut input, &mut buf),
            // A parse inside a parse (none today) finds the buffer lent: it gets its own.
            Err(_) => pump(&mut rewriter, &mut input, &mut vec![0; READ_CHUNK]),
        });
        // After an error lol_html must not be called again.
        match end {
            Pumped::Read => {
                if let Err(lol_html::errors::RewritingError::MemoryLimitExceeded(_)) =
                    rewriter.end()
                {
                    state.borrow_mut().cut = true;
                }
            }
            Pumped::OutOfMemory => state.borrow_mut().cut = true,
            Pumped::Failed => {}
        }
    }
    state.into_inner()
}

/// How feeding the parser ended.
enum Pumped {
    /// The input was read to its end (or to a read error: a corrupt compressed body).
    Read,
    /// The parser reached [`MAX_PARSER_MEMORY`].
    OutOfMemory,
    /// Another parser error.
    Failed,
}

/// Writes what `input` holds to the parser, `buf` at a time, until the input ends or the
/// parser fails.
fn pump<O: lol_html::OutputSink>(
    rewriter: &mut HtmlRewriter<'_, O>,
    input: &mut impl Read,
    buf: &mut [u8],
) -> Pumped {
    loop {
        let n = match input.read(buf) {
            Ok(0) => return Pumped::Read,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Pumped::Read, // a corrupt compressed body: keep what was parsed
        };
        match rewriter.write(&buf[..n]) {
            Ok(()) => {}
            Err(lol_html::errors::RewritingError::MemoryLimitExceeded(_)) => {
                return Pumped::OutOfMemory
            }
            Err(_) => return Pumped::Failed,
        }
    }
}

/// Bytes read from a page per write to the parser.
const READ_CHUNK: usize = 64 * 1024;

thread_local! {
    /// The read buffer of [`collect_from`], one per thread and kept: a fresh zeroed 64 KiB per
    /// page showed in the profile of a crawl of small pages.
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_CHUNK]);
}

type Handlers<'h> = Vec<(Cow<'static, Selector>, ElementContentHandlers<'h>)>;

/// The parse's selectors: every element (its attributes are read by [`on_element`]), and the
/// two elements whose text is wanted. Three selectors, parsed once for the whole process: a
/// rewriter compiles its selectors into a matching program each time it is made, once per page,
/// and with one selector per attribute rule (27 of them) that compiling cost more than parsing a
/// small page.
const SELECTOR_TEXTS: [&str; 3] = ["*", "style", "noscript"];
const ANY: usize = 0;
const STYLE: usize = 1;
const NOSCRIPT: usize = 2;

static SELECTORS: LazyLock<Vec<Option<Selector>>> =
    LazyLock::new(|| SELECTOR_TEXTS.iter().map(|s| s.parse().ok()).collect());

/// A selector parsed once; None only if a constant above did not parse (a unit test checks).
fn selector(index: usize) -> Option<Cow<'static, Selector>> {
    SELECTORS.get(index)?.as_ref().map(Cow::Borrowed)
}

/// The parse's handlers; with `text`, the page text's too. Every element goes through one `*`
/// handler (links, then the text's line breaks): one handler call and one tag name per element.
fn handlers<'h>(
    state: &'h RefCell<Collector>,
    scope: Scope<'h>,
    text: Option<&TextParse>,
) -> Handlers<'h> {
    let mut list: Handlers<'h> = Vec::new();
    let mut add = |index: usize, handler: ElementContentHandlers<'h>| {
        if let Some(selector) = selector(index) {
            list.push((selector, handler));
        }
    };
    let lines = text.cloned();
    add(
        ANY,
        ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
            let tag = el.tag_name();
            on_element(el, &tag, &mut state.borrow_mut(), scope);
            if let Some(lines) = &lines {
                lines.on_element(el, &tag);
            }
            Ok(())
        }),
    );
    add(
        STYLE,
        ElementContentHandlers::default()
            .element(move |_: &mut Element<'_, '_>| {
                let mut st = state.borrow_mut();
                let index = st.styles.len();
                st.styles.push(String::new());
                st.raws.push(Raw::StyleElement(index));
                Ok(())
            })
            .text(move |text: &mut TextChunk<'_>| {
                let mut st = state.borrow_mut();
                if st.admit_css(text.as_str().len()) {
                    if let Some(current) = st.styles.last_mut() {
                        current.push_str(text.as_str());
                    }
                }
                Ok(())
            }),
    );
    if let Scope::Document { .. } = scope {
        add(
            NOSCRIPT,
            ElementContentHandlers::default()
                .element(move |_: &mut Element<'_, '_>| {
                    state.borrow_mut().open_noscript();
                    Ok(())
                })
                .text(move |text: &mut TextChunk<'_>| {
                    state.borrow_mut().noscript_text(text.as_str());
                    Ok(())
                }),
        );
    }
    list.extend(text.and_then(TextParse::hidden_handler));
    list
}

/// The element part of a rule's selector (`img` of `img[src]`).
#[cfg(test)]
fn rule_tag(rule: &AttrRule) -> &'static str {
    rule.selector.split('[').next().unwrap_or(rule.selector)
}

/// Whether a rule is for elements named `tag`: its selector is `tag[`… (compared in place,
/// as this runs for every rule on every element).
fn rule_is_for(rule: &AttrRule, tag: &str) -> bool {
    rule.selector.as_bytes().get(tag.len()) == Some(&b'[') && rule.selector.starts_with(tag)
}

/// Every URL-bearing attribute of one element (named `tag`), in the order the rules are listed
/// (which is the order their links are kept in when one element has several).
fn on_element(el: &Element<'_, '_>, tag: &str, st: &mut Collector, scope: Scope<'_>) {
    for rule in ATTR_RULES.iter().filter(|r| rule_is_for(r, tag)) {
        if let Some(value) = el.get_attribute(rule.attr) {
            if rule.srcset {
                st.push_srcset(&value, rule.context);
            } else {
                st.push(&value, rule.hop, rule.context);
            }
        }
    }
    match tag {
        "link" => {
            if let Some(href) = el.get_attribute("href") {
                let rel = el.get_attribute("rel").unwrap_or_default();
                let embed = rel
                    .split(is_ascii_ws)
                    .any(|r| EMBED_RELS.iter().any(|e| r.eq_ignore_ascii_case(e)));
                let hop = if embed { Hop::Embed } else { Hop::Link };
                st.push(&href, hop, "link/@href");
            }
        }
        "input" => {
            let is_image = el
                .get_attribute("type")
                .is_some_and(|t| clean_attr(&t).eq_ignore_ascii_case("image"));
            if let (true, Some(src)) = (is_image, el.get_attribute("src")) {
                st.push(&src, Hop::Embed, "input/@src");
            }
        }
        "image" => {
            // SVG `<image>`: SVG 2 `href`, else SVG 1.1 `xlink:href`.
            let href = el
                .get_attribute("href")
                .or_else(|| el.get_attribute("xlink:href"));
            if let Some(href) = href {
                st.push(&href, Hop::Embed, "image/@href");
            }
        }
        _ => {}
    }
    if let Some(style) = el.get_attribute("style") {
        let css = decode_entities(&style).into_owned();
        // Every reference is a function (`url(…)`, `image-set(…)`): no `(`, nothing to parse.
        if css.contains('(') && st.admit_css(css.len()) {
            st.raws.push(Raw::StyleAttr(css));
        }
    }
    match tag {
        "meta" => on_meta(el, st, scope),
        "base" if matches!(scope, Scope::Document { .. }) && st.base_href.is_none() => {
            st.base_href = el
                .get_attribute("href")
                .map(|h| clean_attr(&h).into_owned());
        }
        _ => {}
    }
}

/// `<meta http-equiv=refresh>` anywhere; `<meta name=robots|AGENT>` in the document only.
fn on_meta(el: &Element<'_, '_>, st: &mut Collector, scope: Scope<'_>) {
    if matches!(scope, Scope::Document { .. }) && !st.meta_names_other_charset {
        st.meta_names_other_charset = meta_may_name_other_charset(el);
    }
    let Some(content) = el.get_attribute("content") else {
        return;
    };
    let content = decode_entities(&content);
    if let Some(http_equiv) = el.get_attribute("http-equiv") {
        if clean_attr(&http_equiv).eq_ignore_ascii_case("refresh") {
            if let Some(target) = refresh_url(&content) {
                st.push(target, Hop::Redirect, "meta/@refresh");
            }
        }
    }
    if let (Scope::Document { agent_token }, Some(name)) = (scope, el.get_attribute("name")) {
        let name = clean_attr(&name);
        let agent_token = agent_token.trim();
        if name.eq_ignore_ascii_case("robots")
            || (!agent_token.is_empty() && name.eq_ignore_ascii_case(agent_token))
        {
            st.directives.apply_list(&content);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resolving
// ---------------------------------------------------------------------------------------------

/// The document's base URL: the first `<base href>` resolved against the page URL, unless it
/// does not parse or is not http(s) (then the page URL, as a browser falls back to it).
fn document_base(page_url: &Url, base_href: Option<&str>) -> Url {
    base_href
        .and_then(|href| page_url.join(href).ok())
        .filter(is_http)
        .unwrap_or_else(|| page_url.clone())
}

fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// Each `<noscript>` is parsed on its own (an unclosed tag in one must not hide the next) up
/// to this many; the rest are parsed together in one go, because setting up a parser costs
/// about as much as parsing a few kilobytes and a page could hold a million noscripts.
const SEPARATE_NOSCRIPTS: usize = 256;

/// Resolved, filtered, deduplicated outlinks.
#[derive(Default)]
struct LinkList {
    links: Vec<Outlink>,
    seen: HashSet<Url>,
    /// Most links kept.
    limit: usize,
    /// Distinct links found past the limit.
    left_out: usize,
}

impl LinkList {
    fn add_all(&mut self, collector: &Collector, base: &Url) {
        for raw in &collector.raws {
            match raw {
                Raw::Url {
                    value,
                    hop,
                    context,
                } => self.add(base, value, *hop, context),
                Raw::Srcset { value, context } => {
                    for candidate in srcset_urls(value) {
                        self.add(base, candidate, Hop::Embed, context);
                    }
                }
                Raw::StyleAttr(css) => self.add_css(css, base),
                Raw::StyleElement(index) => {
                    if let Some(css) = collector.styles.get(*index) {
                        self.add_css(css, base);
                    }
                }
                Raw::Noscript(index) => {
                    let all = &collector.noscripts;
                    let text: Option<Cow<'_, str>> = match index.cmp(&SEPARATE_NOSCRIPTS) {
                        Ordering::Less => all.get(*index).map(|t| Cow::Borrowed(t.as_str())),
                        Ordering::Equal => all.get(*index..).map(|rest| Cow::Owned(rest.concat())),
                        Ordering::Greater => None,
                    };
                    if let Some(text) = text.filter(|t| t.contains('<')) {
                        let room = self.limit.saturating_sub(self.links.len());
                        let inner = collect(text.as_bytes(), None, false, Scope::Noscript, room);
                        self.left_out += inner.left_out;
                        self.add_all(&inner, base);
                    }
                }
            }
        }
    }

    /// Adds what inline CSS references (resolved against the document's base, as browsers do).
    fn add_css(&mut self, css: &str, base: &Url) {
        if self.links.len() >= self.limit {
            self.left_out += 1;
            return;
        }
        crate::extract::css::add_links(css, base, &mut self.links, &mut self.seen);
        if self.links.len() > self.limit {
            self.left_out += self.links.len() - self.limit;
            self.links.truncate(self.limit);
        }
    }

    /// Adds one URL: resolved against `base`, fragment dropped, http(s) only, first wins.
    fn add(&mut self, base: &Url, value: &str, hop: Hop, context: &'static str) {
        if value.is_empty() {
            return;
        }
        let Ok(mut url) = base.join(value) else {
            return;
        };
        if !is_http(&url) {
            return;
        }
        url.set_fragment(None);
        if self.seen.contains(&url) {
            return;
        }
        if self.links.len() >= self.limit {
            self.left_out += 1;
            return;
        }
        self.seen.insert(url.clone());
        self.links.push(Outlink { url, hop, context });
    }
}

#[cfg(test)]
mod bomb_tests;
#[cfg(test)]
mod one_parse_tests;
#[cfg(test)]
mod tests;
