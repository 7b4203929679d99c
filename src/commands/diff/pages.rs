//! What changed on a page between two captures, for the HTML report: its words (a word-level
//! diff), or only its links (the text outside the links is the same).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::cdxj::{Capture, Crawl};
use super::lines::{diff_lines, Op};
use super::page::page_source;
use crate::commands::html::html_escape;
use crate::extract::text::decoded_text;

/// How a changed page changed.
pub(super) enum PageChange {
    /// The text changed: both sizes (decoded body bytes) and the word diff as HTML.
    Content {
        sizes: (usize, usize),
        words: String,
    },
    /// The text outside links is the same; links were added or removed (or only the markup
    /// changed, when both lists are empty).
    LinksOnly {
        sizes: (usize, usize),
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// Not compared (not text, not readable, a revisit): why.
    NotCompared(String),
}

/// Words of unchanged text kept around each change.
const CONTEXT_WORDS: usize = 8;

static ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<a\b[^>]*>.*?</a\s*>").unwrap_or_else(|_| Regex::new("$^").expect("re"))
});
static HREF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?is)<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))"#)
        .unwrap_or_else(|_| Regex::new("$^").expect("re"))
});

/// Compares one page's two captures, reading both from their WARCs.
pub(super) fn compare(old: (&Crawl, &Capture), new: (&Crawl, &Capture)) -> PageChange {
    if old.1.revisit || new.1.revisit {
        return PageChange::NotCompared("one side is a revisit record".into());
    }
    let read = |(crawl, c): (&Crawl, &Capture)| page_source(crawl, c, &c.url);
    let (a, b) = match (read(old), read(new)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return PageChange::NotCompared(e.to_string()),
    };
    let sizes = (a.2, b.2);
    let html = a.0.contains("html") && b.0.contains("html");
    let (text_a, text_b) = if html {
        (decoded_text(&a.1), decoded_text(&b.1))
    } else {
        (a.1.clone(), b.1.clone())
    };
    if html {
        let outside = |s: &str| decoded_text(&ANCHOR.replace_all(s, " "));
        if outside(&a.1) == outside(&b.1) {
            let (links_a, links_b) = (links(&a.1), links(&b.1));
            return PageChange::LinksOnly {
                sizes,
                added: links_b.difference(&links_a).cloned().collect(),
                removed: links_a.difference(&links_b).cloned().collect(),
            };
        }
    }
    PageChange::Content {
        sizes,
        words: word_diff_html(&text_a, &text_b),
    }
}

/// The link targets of a page, as written.
fn links(html: &str) -> BTreeSet<String> {
    HREF.captures_iter(html)
        .filter_map(|c| c.get(1).or(c.get(2)).or(c.get(3)))
        .map(|m| m.as_str().trim().to_string())
        .collect()
}

/// A word-level diff: removed words in `<del>`, added ones in `<ins>`, long unchanged runs cut
/// to a few words around each change.
pub(super) fn word_diff_html(a: &str, b: &str) -> String {
    let wa: Vec<&str> = a.split_whitespace().collect();
    let wb: Vec<&str> = b.split_whitespace().collect();
    let ops = diff_lines(&wa, &wb);
    let mut out = String::new();
    let mut i = 0;
    while i < ops.len() {
        let kind = std::mem::discriminant(&ops[i]);
        let mut j = i;
        while j < ops.len() && std::mem::discriminant(&ops[j]) == kind {
            j += 1;
        }
        let words: Vec<&str> = ops[i..j]
            .iter()
            .map(|op| match op {
                Op::Same(w) | Op::Del(w) | Op::Add(w) => *w,
            })
            .collect();
        match ops[i] {
            Op::Same(_) => out.push_str(&same_run(&words, i == 0, j == ops.len())),
            Op::Del(_) => out.push_str(&format!("<del>{}</del> ", html_escape(&words.join(" ")))),
            Op::Add(_) => out.push_str(&format!("<ins>{}</ins> ", html_escape(&words.join(" ")))),
        }
        i = j;
    }
    out.trim_end().to_string()
}

/// An unchanged run of words, cut in the middle (or at the open end) when long.
fn same_run(words: &[&str], first: bool, last: bool) -> String {
    let n = words.len();
    let keep_head = if first { 0 } else { CONTEXT_WORDS };
    let keep_tail = if last { 0 } else { CONTEXT_WORDS };
    if n <= keep_head + keep_tail + 3 {
        return html_escape(&words.join(" ")) + " ";
    }
    let mut s = String::new();
    if keep_head > 0 {
        s.push_str(&html_escape(&words[..keep_head].join(" ")));
        s.push(' ');
    }
    let cut = n - keep_head - keep_tail;
    s.push_str(&format!("<span class=\"cut\">… {cut} words …</span> "));
    if keep_tail > 0 {
        s.push_str(&html_escape(&words[n - keep_tail..].join(" ")));
        s.push(' ');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_marked_and_long_runs_cut() {
        let a = "the quick brown fox jumps";
        let b = "the slow brown fox jumps high";
        assert_eq!(
            word_diff_html(a, b),
            "the <del>quick</del> <ins>slow</ins> brown fox jumps <ins>high</ins>"
        );
        let long: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let a = long.join(" ");
        let b = format!("{a} end");
        let html = word_diff_html(&a, &b);
        // The 8 words before the change stay; the 92 before them are cut.
        assert!(
            html.starts_with("<span class=\"cut\">… 92 words …</span> w92 w93"),
            "{html}"
        );
        assert!(html.ends_with("w99 <ins>end</ins>"), "{html}");
        assert_eq!(
            word_diff_html("<b>", "<i>"),
            "<del>&lt;b&gt;</del> <ins>&lt;i&gt;</ins>"
        );
    }

    #[test]
    fn links_are_read_from_anchors() {
        let l = links("<a href=\"/a\">A</a> <A HREF='/b'>B</A> <a href=/c>C</a> <a name=x>");
        assert_eq!(l.into_iter().collect::<Vec<_>>(), ["/a", "/b", "/c"]);
    }
}
