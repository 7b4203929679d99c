//! Pages whose links were cut at `[limits] max_outlinks`: counted and listed, so that a cap
//! reached on a real page shows in the end summary, summary.txt and report.json, not only in
//! crawl.log's `max-outlinks:N` annotation.

use std::collections::BTreeMap;

/// At most this many cut pages are named (the count covers them all): a link-bomb site must not
/// grow the summary or the crawl's memory.
pub const LISTED: usize = 20;

/// crawl.log's annotation on a page cut at the cap: `max-outlinks:N`, N links left out.
const ANNOTATION: &str = "max-outlinks:";

/// Pages cut at `max_outlinks`, from their crawl.log lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CutPages {
    /// crawl.log lines of pages cut (a page fetched twice counts twice).
    pub pages: u64,
    /// Links left out of those pages, all together.
    pub links_left_out: u64,
    /// The first [`LISTED`] pages cut, URL → links left out.
    pub listed: BTreeMap<String, u64>,
}

impl CutPages {
    /// Counts a crawl.log line if it says its page was cut; true when it did.
    pub fn record(&mut self, uri: &str, annotations: &[String]) -> bool {
        let Some(n) = annotations.iter().find_map(|a| left_out(a)) else {
            return false;
        };
        self.pages += 1;
        self.links_left_out += n;
        if self.listed.len() < LISTED || self.listed.contains_key(uri) {
            self.listed.insert(uri.to_string(), n);
        }
        true
    }

    /// One line for people, or None when no page was cut.
    pub fn describe(&self) -> Option<String> {
        if self.pages == 0 {
            return None;
        }
        let pages = if self.pages == 1 { "page" } else { "pages" };
        let more = self.pages.saturating_sub(self.listed.len() as u64);
        let more = if more > 0 {
            format!(" and {more} more (crawl.log: max-outlinks)")
        } else {
            String::new()
        };
        let names: Vec<String> = self
            .listed
            .iter()
            .map(|(url, n)| format!("{url} ({n})"))
            .collect();
        Some(format!(
            "{} {pages} cut at [limits] max_outlinks, {} links left out: {}{more}",
            self.pages,
            self.links_left_out,
            names.join(", ")
        ))
    }
}

/// N of a `max-outlinks:N` annotation.
fn left_out(annotation: &str) -> Option<u64> {
    annotation.strip_prefix(ANNOTATION)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cut_pages_are_counted_and_the_first_ones_named() {
        let mut cut = CutPages::default();
        assert_eq!(cut.describe(), None);
        assert!(!cut.record("http://a.test/", &notes(&["rendered"])));
        assert!(cut.record("http://a.test/x86/", &notes(&["max-outlinks:1498"])));
        assert_eq!(
            cut.describe().as_deref(),
            Some(
                "1 page cut at [limits] max_outlinks, 1498 links left out: \
                 http://a.test/x86/ (1498)"
            )
        );
        for i in 0..30 {
            cut.record(
                &format!("http://a.test/{i:02}"),
                &notes(&["max-outlinks:2"]),
            );
        }
        assert_eq!(cut.pages, 31);
        assert_eq!(cut.links_left_out, 1498 + 60);
        assert_eq!(cut.listed.len(), LISTED);
        assert!(cut
            .describe()
            .is_some_and(|d| d.ends_with(" and 11 more (crawl.log: max-outlinks)")));
        // Not a number: not a cut (crawl.log's annotations come from outside when read back).
        assert!(!cut.record("http://a.test/y", &notes(&["max-outlinks:many"])));
    }
}
