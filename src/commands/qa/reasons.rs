//! Why the archive could not answer a request, from crawl.log's last word on the URL.

use serde::Serialize;

use super::plan::LastWord;
use crate::logs::crawllog::status;

/// Why a URL the page asked for is not in the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// crawl.log never names it: the crawler never found it (a script asked for it, say).
    NotDiscovered,
    /// Dropped by the scope rules (`-5000`, annotated `scope:…`).
    OutOfScope,
    /// robots.txt forbade it (`-9998`).
    Robots,
    /// Fetching it failed (a negative code: DNS, connection, timeout…), or its record could
    /// not be read back.
    Failed,
    /// crawl.log has a line but the crawl kept no record: a trap, a quota, an opt-out list,
    /// a MIME or size rule, noindex/noarchive.
    Discarded,
}

impl Reason {
    /// The name the report and the JSON use.
    pub fn name(self) -> &'static str {
        match self {
            Reason::NotDiscovered => "not-discovered",
            Reason::OutOfScope => "out-of-scope",
            Reason::Robots => "robots",
            Reason::Failed => "failed",
            Reason::Discarded => "discarded",
        }
    }

    /// What a person reads in the report.
    pub fn explain(self) -> &'static str {
        match self {
            Reason::NotDiscovered => "never found by the crawler (asked for by a script, say)",
            Reason::OutOfScope => "left out by the scope rules",
            Reason::Robots => "forbidden by robots.txt",
            Reason::Failed => "fetching it failed",
            Reason::Discarded => "fetched or judged, but no record kept (a rule discarded it)",
        }
    }

    /// Whether a patch crawl may get it: a URL nobody found, or one whose fetch failed. What
    /// a rule left out would be left out again.
    pub fn patchable(self) -> bool {
        matches!(self, Reason::NotDiscovered | Reason::Failed)
    }

    pub const ALL: [Reason; 5] = [
        Reason::NotDiscovered,
        Reason::OutOfScope,
        Reason::Robots,
        Reason::Failed,
        Reason::Discarded,
    ];
}

/// Why a URL whose last crawl.log word is `word` (None: no line) has no answer in the archive.
pub(super) fn reason(word: Option<&LastWord>) -> Reason {
    let Some(w) = word else {
        return Reason::NotDiscovered;
    };
    match w.status {
        status::OUT_OF_SCOPE if w.scope_rule => Reason::OutOfScope,
        status::ROBOTS_PRECLUDED => Reason::Robots,
        // Traps (-5000 without a scope rule), opt-out lists, quotas: rules, not failures.
        status::OUT_OF_SCOPE | status::BLOCKED_BY_USER | status::BLOCKED_BY_QUOTA => {
            Reason::Discarded
        }
        s if s < 0 => Reason::Failed,
        // An answer was had: a record that is named but not readable is a failure, no record
        // at all a rule's discarding.
        _ if w.recorded => Reason::Failed,
        _ => Reason::Discarded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(status: i32, note: &str, recorded: bool) -> LastWord {
        LastWord {
            status,
            scope_rule: note.starts_with("scope:"),
            recorded,
        }
    }

    #[test]
    fn each_crawl_log_word_has_its_reason() {
        assert_eq!(reason(None), Reason::NotDiscovered);
        let cases = [
            (word(-5000, "scope:off-site", false), Reason::OutOfScope),
            (word(-5000, "trap:calendar", false), Reason::Discarded),
            (word(-9998, "robots", false), Reason::Robots),
            (word(-5003, "max-pages-per-site", false), Reason::Discarded),
            (word(-2, "-", false), Reason::Failed),
            (word(-61, "-", false), Reason::Failed),
            (word(200, "mime:drop", false), Reason::Discarded),
            (word(200, "-", true), Reason::Failed),
        ];
        for (w, want) in cases {
            assert_eq!(reason(Some(&w)), want, "{w:?}");
        }
        assert!(Reason::NotDiscovered.patchable() && Reason::Failed.patchable());
        assert!(!Reason::Robots.patchable() && !Reason::OutOfScope.patchable());
        assert_eq!(
            serde_json::to_string(&Reason::NotDiscovered).unwrap(),
            "\"not-discovered\""
        );
    }
}
