//! The visible text of an HTML page, one line per block: what `diff` compares between crawls
//! and what the content-trap detector hashes (`scope::traps`).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::LazyLock;

use lol_html::html_content::{Element, TextChunk, TextType};
use lol_html::{
    DocumentContentHandlers, ElementContentHandlers, EndTagHandler, HtmlRewriter, Selector,
    Settings,
};

use super::entities::decode_text;

/// Elements whose content is never shown: scripts, styles, templates, `<noscript>` (the
/// crawler reads pages as a browser with scripts would) and everything in `<head>` but its
/// `<title>`.
const HIDDEN: &str = "script, style, template, noscript, head > *:not(title)";

/// Elements that start and end a line of text, sorted (a binary search finds them). They are
/// matched by tag name under `*`, not as a selector list: a rewriter compiles its selectors on
/// every page, and compiling these 32 alternatives cost more than the text pass itself on a
/// small page (about 3% of the crawler's CPU in the many-sites bench).
const BLOCKS: [&str; 32] = [
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dt",
    "figcaption",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "option",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "title",
    "tr",
    "ul",
];

/// [`HIDDEN`], parsed once for the whole process; None only if the constant did not parse (a
/// unit test checks).
static HIDDEN_SELECTOR: LazyLock<Option<Selector>> = LazyLock::new(|| HIDDEN.parse().ok());
/// `*`, under which [`is_block`] picks the block elements; parsed once, as [`HIDDEN_SELECTOR`].
static ANY_SELECTOR: LazyLock<Option<Selector>> = LazyLock::new(|| "*".parse().ok());

/// Whether an element starts and ends a line (its tag name is lower case: lol_html says so).
fn is_block(el: &Element<'_, '_>) -> bool {
    BLOCKS.binary_search(&el.tag_name().as_str()).is_ok()
}

/// The text of a page as fetched: its `<meta charset>` is followed, else UTF-8 (good enough
/// for a hash: a page always decodes the same way). At most `max` bytes; see [`lines_of`].
pub(crate) fn page_text(html: &[u8], max: usize) -> String {
    lines_of(html, true, max)
}

/// The text of a page already decoded to a string (its `<meta charset>` no longer applies).
pub(crate) fn decoded_text(html: &str) -> String {
    lines_of(html.as_bytes(), false, usize::MAX)
}

/// Text outside hidden elements, character references decoded, whitespace runs collapsed
/// to one space, each block on its own line (every line ends with `\n`, none is empty). Cut
/// at `max` bytes, so a 100 MB page costs no more memory than that. Never fails: broken
/// markup yields what was read before it.
fn lines_of(html: &[u8], follow_meta_charset: bool, max: usize) -> String {
    // End-tag handlers must be 'static: they share the state through an Rc.
    let text = Rc::new(RefCell::new(Lines::new(max)));
    let hidden = Rc::new(Cell::new(0u32));
    {
        let mut handlers = Vec::new();
        if let Some(selector) = &*HIDDEN_SELECTOR {
            let hidden = hidden.clone();
            let on_hidden =
                ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
                    hidden.set(hidden.get() + 1);
                    match el.end_tag_handlers() {
                        Some(handlers) => {
                            let hidden = hidden.clone();
                            let end: EndTagHandler<'static> = Box::new(move |_| {
                                hidden.set(hidden.get().saturating_sub(1));
                                Ok(())
                            });
                            handlers.push(end);
                        }
                        // A void element (`<meta>`, `<link>`) has no content to hide.
                        None => hidden.set(hidden.get().saturating_sub(1)),
                    }
                    Ok(())
                });
            handlers.push((Cow::Borrowed(selector), on_hidden));
        }
        if let Some(selector) = &*ANY_SELECTOR {
            let text = text.clone();
            let on_block =
                ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
                    if !is_block(el) {
                        return Ok(());
                    }
                    text.borrow_mut().break_line();
                    if let Some(handlers) = el.end_tag_handlers() {
                        let text = text.clone();
                        let end: EndTagHandler<'static> = Box::new(move |_| {
                            text.borrow_mut().break_line();
                            Ok(())
                        });
                        handlers.push(end);
                    }
                    Ok(())
                });
            handlers.push((Cow::Borrowed(selector), on_block));
        }
        let settings = Settings {
            element_content_handlers: handlers,
            document_content_handlers: vec![DocumentContentHandlers::default().text(
                |chunk: &mut TextChunk<'_>| {
                    // Raw text (`<xmp>`, `<iframe>`'s fallback, CDATA) is not rendered as text.
                    let shown = matches!(chunk.text_type(), TextType::Data | TextType::RCData);
                    if shown && hidden.get() == 0 {
                        text.borrow_mut()
                            .push_raw(chunk.as_str(), chunk.last_in_text_node());
                    }
                    Ok(())
                },
            )],
            strict: false,
            adjust_charset_on_meta_tag: follow_meta_charset,
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let mut ok = true;
        for chunk in html.chunks(64 * 1024) {
            ok = rewriter.write(chunk).is_ok();
            if !ok || text.borrow().full() {
                break;
            }
        }
        // After an error lol_html must not be called again.
        if ok {
            let _ = rewriter.end();
        }
    }
    let lines = std::mem::replace(&mut *text.borrow_mut(), Lines::new(0));
    lines.finish()
}

/// What separates the next character from the text before it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Gap {
    None,
    Space,
    Line,
}

/// Text collected line by line, whitespace collapsed, up to `max` bytes.
struct Lines {
    out: String,
    /// The current text node as written: references are decoded once it is whole, since
    /// lol_html may cut a node (and a reference) between chunks.
    node: String,
    gap: Gap,
    max: usize,
}

impl Lines {
    fn new(max: usize) -> Lines {
        Lines {
            out: String::new(),
            node: String::new(),
            gap: Gap::None,
            max,
        }
    }

    fn full(&self) -> bool {
        self.out.len() >= self.max
    }

    fn break_line(&mut self) {
        self.gap = Gap::Line;
    }

    fn push_raw(&mut self, raw: &str, last: bool) {
        self.node.push_str(raw);
        // A node longer than the cap is decoded in pieces: one reference may break, no more.
        if last || self.node.len() >= self.max {
            let node = std::mem::take(&mut self.node);
            decode_text(&node).chars().for_each(|c| self.push_char(c));
        }
    }

    fn push_char(&mut self, c: char) {
        if self.full() {
            return;
        }
        if c.is_whitespace() {
            self.gap = self.gap.max(Gap::Space);
            return;
        }
        if !self.out.is_empty() {
            match self.gap {
                Gap::Line => self.out.push('\n'),
                Gap::Space => self.out.push(' '),
                Gap::None => {}
            }
        }
        self.gap = Gap::None;
        self.out.push(c);
    }

    /// The text with its last line's `\n`, all within `max` bytes.
    fn finish(mut self) -> String {
        let room = self.max.saturating_sub(1);
        if self.out.len() > room {
            let mut end = room;
            while !self.out.is_char_boundary(end) {
                end -= 1;
            }
            self.out.truncate(end);
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selectors_parse_and_the_block_list_is_sorted() {
        assert!(HIDDEN_SELECTOR.is_some() && ANY_SELECTOR.is_some());
        assert!(
            BLOCKS.windows(2).all(|w| w[0] < w[1]),
            "binary_search needs BLOCKS sorted"
        );
    }

    #[test]
    fn upper_case_and_svg_blocks_still_break_lines() {
        assert_eq!(
            page_text(b"<DIV>a</DIV><Li>b<svg><title>c</title></svg>d", 1000),
            "a\nb\nc\nd\n"
        );
    }

    #[test]
    fn blocks_make_lines_and_hidden_text_is_left_out() {
        let html = "<html><head><title>T &amp; t</title><style>p{}</style></head><body>\
                    <script>var x=1;</script><h1>Head</h1><p>One  <b>two</b>\nthree</p>\
                    <ul><li>a</li><li>b&#33;</li></ul><noscript>js off</noscript></body></html>";
        assert_eq!(decoded_text(html), "T & t\nHead\nOne two three\na\nb!\n");
    }

    #[test]
    fn references_whitespace_and_broken_markup() {
        let html = b"<p>Hello&nbsp;<b>big</b>\n\n   world &lt;3 &#x263A; &bogus; &</p>\
                     <!-- a comment --><div>end</div>";
        assert_eq!(
            page_text(html, 1 << 20),
            "Hello big world <3 \u{263A} &bogus; &\nend\n"
        );
        assert_eq!(page_text(b"", 100), "");
        assert_eq!(page_text(b"<p>unclosed <b>tags", 100), "unclosed tags\n");
        assert_eq!(
            page_text(b"\xff\xfe<p>bad bytes", 100),
            "\u{FFFD}\u{FFFD}\nbad bytes\n"
        );
    }

    #[test]
    fn a_reference_cut_between_chunks_is_decoded() {
        let mut html = "x".repeat(64 * 1024 - 3).into_bytes();
        html.extend_from_slice(b"&amp;y");
        assert!(page_text(&html, 1 << 20).ends_with("x&y\n"));
    }

    #[test]
    fn meta_charset_is_followed_only_for_raw_pages() {
        let html = b"<meta charset=windows-1252><p>caf\xe9</p>";
        assert_eq!(page_text(html, 100), "caf\u{e9}\n");
        assert_eq!(
            decoded_text("<meta charset=windows-1252><p>caf\u{e9}</p>"),
            "caf\u{e9}\n"
        );
    }

    #[test]
    fn text_is_capped() {
        let big = format!("<p>{}</p>", "word ".repeat(1000));
        let text = page_text(big.as_bytes(), 100);
        assert!(text.len() <= 100, "{}", text.len());
        assert!(text.len() > 90);
    }
}
