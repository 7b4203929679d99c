//! What a fetched answer means for the crawl: tried again, refused, discarded, not kept, or
//! archived. Pure: it reads the exchange and the page's findings and returns a
//! [`Disposition`]; the engine carries it out (a crawl.log line, a WARC record, a retry).

use super::page::Page;
use crate::net::fetch::Fetched;

/// The crawl.log note of a page whose links were read only up to the HTML parser's memory cap
/// (elements opened by the million and never closed): the links after it are unseen.
pub(super) const LINKS_CUT: &str = "links-cut:parser-memory";

/// The settings `decide` obeys.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    /// Tries a URL gets before a transient failure or a refusal is final.
    pub(super) max_retries: u32,
}

/// What becomes of one fetched URL. Every variant carries the crawl.log annotations.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Disposition {
    /// No real answer yet (a 429, a 5xx, a cut connection, a challenge page): logged and
    /// queued again; its links are not followed and nothing is archived.
    Retry { notes: Vec<String> },
    /// A refusal with no tries left: logged as final, nothing archived.
    Refused { notes: Vec<String> },
    /// The page asks not to be archived (`noindex`, `noarchive`, `none`): logged only.
    Discard { notes: Vec<String> },
    /// A type the profile does not keep, decided on the headers: the body was never read.
    NotKept { notes: Vec<String> },
    /// Written to the WARC (a response, or a revisit when the payload is known).
    Archive { notes: Vec<String> },
}

impl Disposition {
    /// Whether the page's links are queued: never for an answer that is tried again.
    pub(super) fn follows_links(&self, page: &Page) -> bool {
        !matches!(
            self,
            Disposition::Retry { .. } | Disposition::Refused { .. }
        ) && page.directives.follow_links()
    }
}

/// The verdict on one answer, and the refusal marker it carried (which counts towards the
/// site's suspension even when the answer is archived, as a 403 challenge is).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Decision {
    pub(super) refusal: Option<String>,
    pub(super) disposition: Disposition,
}

/// Decides what one answer means. `attempts` counts this try (1 on the first).
pub(super) fn decide(f: &Fetched, page: &Page, attempts: u32, rules: Rules) -> Decision {
    let refusal = crate::politeness::refusal_marker(f.status, &f.headers, &page.text);
    let retries_left = attempts <= rules.max_retries;
    let retry = format!("retry:{attempts}");
    // A 403 challenge is the site's answer (archived); a 429 or a challenge page with another
    // status is no answer at all: the URL is tried again.
    if refusal.is_some() && f.status != 403 {
        let disposition = if retries_left {
            Disposition::Retry {
                notes: vec!["refused".to_string(), retry],
            }
        } else {
            Disposition::Refused {
                notes: vec!["refused".to_string()],
            }
        };
        return Decision {
            refusal,
            disposition,
        };
    }
    let transient = f.status == 429 || f.status >= 500 || f.truncated == Some("disconnect");
    if transient && retries_left {
        return Decision {
            refusal,
            disposition: Disposition::Retry { notes: vec![retry] },
        };
    }
    let mut notes = Vec::new();
    if page.left_out > 0 {
        notes.push(format!("max-outlinks:{}", page.left_out));
    }
    if page.links_cut {
        notes.push(LINKS_CUT.to_string());
    }
    if let Some(trap) = &page.trap {
        notes.push(trap.rule.to_string());
    }
    let disposition = if let Some(reason) = page.directives.discard_reason() {
        notes.push(reason.to_string());
        Disposition::Discard { notes }
    } else if f.body_skipped {
        // Only successful answers are filtered by type (redirects, 404s and errors are the
        // site's answer and are always archived), and that was decided on the headers.
        notes.push(crate::scope::rules::MIME_NOT_KEPT.to_string());
        Disposition::NotKept { notes }
    } else {
        Disposition::Archive { notes }
    };
    Decision {
        refusal,
        disposition,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Directives;
    use crate::scope::traps::Trap;
    use std::time::Instant;
    use url::Url;

    const RULES: Rules = Rules { max_retries: 2 };

    fn fetched(status: u16, headers: &[(&'static str, &'static str)]) -> Fetched {
        let mut map = hyper::HeaderMap::new();
        for (k, v) in headers {
            map.append(*k, hyper::header::HeaderValue::from_static(v));
        }
        Fetched {
            url: Url::parse("http://example.com/a").unwrap(),
            ip: "127.0.0.1".parse().unwrap(),
            started: chrono::Utc::now(),
            started_at: Instant::now(),
            finished_at: Instant::now(),
            request: Vec::new(),
            response: crate::spool::Spool::new(1024),
            status,
            headers: map,
            payload_digest: String::new(),
            payload_len: 0,
            payload: Vec::new(),
            truncated: None,
            body_skipped: false,
            interim: Vec::new(),
            excess_bytes: 0,
        }
    }

    fn page() -> Page {
        Page {
            links: Vec::new(),
            directives: Directives::default(),
            text: Vec::new(),
            trap: None,
            bad_location: None,
            left_out: 0,
            links_cut: false,
        }
    }

    fn notes(d: &Disposition) -> Vec<&str> {
        match d {
            Disposition::Retry { notes }
            | Disposition::Refused { notes }
            | Disposition::Discard { notes }
            | Disposition::NotKept { notes }
            | Disposition::Archive { notes } => notes.iter().map(String::as_str).collect(),
        }
    }

    #[test]
    fn a_plain_answer_is_archived() {
        for status in [200, 301, 404] {
            let d = decide(&fetched(status, &[]), &page(), 1, RULES);
            assert_eq!(d.refusal, None);
            assert!(matches!(&d.disposition, Disposition::Archive { notes } if notes.is_empty()));
            assert!(d.disposition.follows_links(&page()));
        }
    }

    #[test]
    fn a_server_error_is_tried_again_until_the_tries_run_out() {
        let f = fetched(503, &[]);
        let d = decide(&f, &page(), 2, RULES).disposition;
        assert_eq!(notes(&d), ["retry:2"]);
        assert!(matches!(d, Disposition::Retry { .. }));
        assert!(!d.follows_links(&page()));
        let last = decide(&f, &page(), 3, RULES).disposition;
        assert!(matches!(last, Disposition::Archive { .. }), "{last:?}");
    }

    #[test]
    fn a_cut_connection_is_transient_but_a_length_cap_is_not() {
        let mut f = fetched(200, &[]);
        f.truncated = Some("disconnect");
        let d = decide(&f, &page(), 1, RULES).disposition;
        assert!(matches!(d, Disposition::Retry { .. }));
        f.truncated = Some("length");
        let d = decide(&f, &page(), 1, RULES).disposition;
        assert!(matches!(d, Disposition::Archive { .. }));
    }

    #[test]
    fn a_429_is_a_refusal_retried_then_refused_for_good() {
        let f = fetched(429, &[]);
        let d = decide(&f, &page(), 1, RULES);
        assert!(d.refusal.is_some());
        assert_eq!(notes(&d.disposition), ["refused", "retry:1"]);
        assert!(matches!(d.disposition, Disposition::Retry { .. }));
        let d = decide(&f, &page(), 3, RULES).disposition;
        assert_eq!(
            d,
            Disposition::Refused {
                notes: vec!["refused".to_string()]
            }
        );
    }

    #[test]
    fn a_403_challenge_counts_as_a_refusal_but_is_archived() {
        let f = fetched(403, &[("cf-mitigated", "challenge")]);
        let d = decide(&f, &page(), 1, RULES);
        assert!(d.refusal.is_some(), "a challenge marker was expected");
        assert!(matches!(d.disposition, Disposition::Archive { .. }));
    }

    #[test]
    fn robots_directives_discard_and_stop_links() {
        let mut p = page();
        p.directives.noindex = true;
        p.directives.nofollow = true;
        let d = decide(&fetched(200, &[]), &p, 1, RULES).disposition;
        assert_eq!(notes(&d), ["noindex"]);
        assert!(matches!(d, Disposition::Discard { .. }));
        assert!(!d.follows_links(&p));
    }

    #[test]
    fn a_skipped_body_is_not_kept_and_notes_add_up() {
        let mut f = fetched(200, &[]);
        f.body_skipped = true;
        let mut p = page();
        p.left_out = 7;
        p.links_cut = true;
        p.trap = Some(Trap {
            rule: "trap:repeated-content",
            detail: "same text".to_string(),
        });
        let d = decide(&f, &p, 1, RULES).disposition;
        assert!(matches!(d, Disposition::NotKept { .. }));
        assert_eq!(
            notes(&d),
            [
                "max-outlinks:7",
                LINKS_CUT,
                "trap:repeated-content",
                "scope:mime"
            ]
        );
    }
}
