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
    let text = TextParse::new(max);
    {
        let settings = Settings {
            element_content_handlers: text.element_handlers(),
            document_content_handlers: vec![text.document_handler()],
            strict: false,
            adjust_charset_on_meta_tag: follow_meta_charset,
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let mut ok = true;
        for chunk in html.chunks(64 * 1024) {
            ok = rewriter.write(chunk).is_ok();
            if !ok || text.full() {
                break;
            }
        }
        // After an error lol_html must not be called again.
        if ok {
            let _ = rewriter.end();
        }
    }
    text.finish()
}

/// The handlers that collect a page's text during a parse: [`lines_of`] runs them alone, and
/// link extraction runs them beside its own (`extract::extract_html_and_text`), so a page is
/// parsed once for both. The text depends only on the elements and text the parser reports,
/// not on how the input was cut into chunks.
#[derive(Clone)]
pub(crate) struct TextParse {
    /// End-tag handlers must be 'static: the handlers share the state through an Rc.
    lines: Rc<RefCell<Lines>>,
    /// Hidden elements open around the current text.
    hidden: Rc<Cell<u32>>,
}

impl TextParse {
    /// Text of at most `max` bytes.
    pub(crate) fn new(max: usize) -> TextParse {
        TextParse {
            lines: Rc::new(RefCell::new(Lines::new(max))),
            hidden: Rc::new(Cell::new(0)),
        }
    }

    /// Whether the text has reached its cap (what follows cannot change it).
    pub(crate) fn full(&self) -> bool {
        self.lines.borrow().full()
    }

    /// The element handlers of a parse for the text alone: hidden elements counted, block
    /// elements breaking lines.
    fn element_handlers<'h>(&self) -> Vec<(Cow<'static, Selector>, ElementContentHandlers<'h>)> {
        let mut handlers: Vec<_> = self.hidden_handler().into_iter().collect();
        if let Some(selector) = &*ANY_SELECTOR {
            let text = self.clone();
            let on_any =
                ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
                    let tag = el.tag_name();
                    text.on_element(el, &tag);
                    Ok(())
                });
            handlers.push((Cow::Borrowed(selector), on_any));
        }
        handlers
    }

    /// The handler counting the hidden elements open around the current text.
    pub(crate) fn hidden_handler<'h>(
        &self,
    ) -> Option<(Cow<'static, Selector>, ElementContentHandlers<'h>)> {
        let selector = HIDDEN_SELECTOR.as_ref()?;
        let hidden = self.hidden.clone();
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
        Some((Cow::Borrowed(selector), on_hidden))
    }

    /// Every element, named `tag` (lower case, as lol_html gives it): a block element starts
    /// and ends a line.
    pub(crate) fn on_element(&self, el: &mut Element<'_, '_>, tag: &str) {
        if BLOCKS.binary_search(&tag).is_err() {
            return;
        }
        self.lines.borrow_mut().break_line();
        if let Some(handlers) = el.end_tag_handlers() {
            let text = self.lines.clone();
            let end: EndTagHandler<'static> = Box::new(move |_| {
                text.borrow_mut().break_line();
                Ok(())
            });
            handlers.push(end);
        }
    }

    /// The document handler: every shown text chunk outside hidden elements.
    pub(crate) fn document_handler<'h>(&self) -> DocumentContentHandlers<'h> {
        let text = self.lines.clone();
        let hidden = self.hidden.clone();
        DocumentContentHandlers::default().text(move |chunk: &mut TextChunk<'_>| {
            // Raw text (`<xmp>`, `<iframe>`'s fallback, CDATA) is not rendered as text.
            let shown = matches!(chunk.text_type(), TextType::Data | TextType::RCData);
            if shown && hidden.get() == 0 {
                text.borrow_mut()
                    .push_raw(chunk.as_str(), chunk.last_in_text_node());
            }
            Ok(())
        })
    }

    /// The text (call once the parse is over).
    pub(crate) fn finish(self) -> String {
        let lines = std::mem::replace(&mut *self.lines.borrow_mut(), Lines::new(0));
        lines.finish()
    }
}

/// ASCII whitespace as `char::is_whitespace` has it (vertical tab included).
fn is_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
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
        // Once full nothing more is written: the rest of a long page is not even held.
        if self.full() {
            return;
        }
        if last && self.node.is_empty() {
            // The whole node in one chunk, as usual: decoded where it lies.
            self.push_text(&decode_text(raw));
            return;
        }
        self.node.push_str(raw);
        // A node longer than the cap is decoded in pieces: one reference may break, no more.
        if last || self.node.len() >= self.max {
            let node = std::mem::take(&mut self.node);
            self.push_text(&decode_text(&node));
        }
    }

    /// [`Lines::push_char`] for each character of `text`; runs of ASCII that is not whitespace
    /// (most text) are copied whole. The runs are cut at the cap as the characters would be,
    /// and `finish` cuts the text below that anyway.
    fn push_text(&mut self, text: &str) {
        let mut rest = text;
        while let Some(&first) = rest.as_bytes().first() {
            if self.full() {
                return;
            }
            if !first.is_ascii() || is_space(first) {
                let Some(c) = rest.chars().next() else {
                    return;
                };
                self.push_char(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let run = rest
                .bytes()
                .position(|b| !b.is_ascii() || is_space(b))
                .unwrap_or(rest.len());
            self.write_gap();
            // At least the first character, as push_char would (it looked before the gap).
            let room = self.max.saturating_sub(self.out.len()).max(1);
            self.out.push_str(&rest[..run.min(room)]);
            rest = &rest[run..];
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
        self.write_gap();
        self.out.push(c);
    }

    /// What separates the next character from the text before it (nothing at the start).
    fn write_gap(&mut self) {
        if !self.out.is_empty() {
            match self.gap {
                Gap::Line => self.out.push('\n'),
                Gap::Space => self.out.push(' '),
                Gap::None => {}
            }
        }
        self.gap = Gap::None;
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
    fn runs_of_text_come_out_as_characters_one_by_one_would() {
        let pieces = [
            "Hello  world",
            " \u{b}tab\tand\u{c}feeds\r\n",
            "caf\u{e9}\u{a0}nbsp\u{2003}em-space",
            "\u{1F600}emoji",
            "x",
            "   ",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        ];
        for max in [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 1000] {
            let mut runs = Lines::new(max);
            let mut chars = Lines::new(max);
            for (i, piece) in pieces.iter().enumerate() {
                runs.push_text(piece);
                piece.chars().for_each(|c| chars.push_char(c));
                if i % 3 == 1 {
                    runs.break_line();
                    chars.break_line();
                }
            }
            assert_eq!(runs.finish(), chars.finish(), "max {max}");
        }
    }

    #[test]
    fn text_is_capped() {
        let big = format!("<p>{}</p>", "word ".repeat(1000));
        let text = page_text(big.as_bytes(), 100);
        assert!(text.len() <= 100, "{}", text.len());
        assert!(text.len() > 90);
    }
}
