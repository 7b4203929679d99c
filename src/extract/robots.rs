//! Robots directives of a page: `<meta name="robots">` (applied by the parse, see the module
//! above) and `X-Robots-Tag` headers.

use super::attr::is_ascii_ws;

/// Robots directives from meta tags and/or X-Robots-Tag headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    pub noindex: bool,
    pub nofollow: bool,
    pub noarchive: bool,
    /// `none` was given (it also sets `noindex` and `nofollow` when parsed).
    pub none: bool,
}

impl Directives {
    /// Union of both sets: a directive given anywhere applies.
    pub fn merge(&mut self, other: Directives) {
        self.noindex |= other.noindex;
        self.nofollow |= other.nofollow;
        self.noarchive |= other.noarchive;
        self.none |= other.none;
    }

    /// Why the page must be discarded: `"none"`, `"noindex"` or `"noarchive"` (in that
    /// priority; the value is the crawl.log annotation), or `None` to keep it.
    pub fn discard_reason(&self) -> Option<&'static str> {
        if self.none {
            Some("none")
        } else if self.noindex {
            Some("noindex")
        } else if self.noarchive {
            Some("noarchive")
        } else {
            None
        }
    }

    /// Links are not followed when `nofollow` or `none` was given.
    pub fn follow_links(&self) -> bool {
        !(self.nofollow || self.none)
    }

    /// Applies one directive token (case-insensitive); `all`, `index`, `follow` and unknown
    /// tokens change nothing.
    fn apply_token(&mut self, token: &str) {
        if token.eq_ignore_ascii_case("noindex") {
            self.noindex = true;
        } else if token.eq_ignore_ascii_case("nofollow") {
            self.nofollow = true;
        } else if token.eq_ignore_ascii_case("noarchive") {
            self.noarchive = true;
        } else if token.eq_ignore_ascii_case("none") {
            self.none = true;
            self.noindex = true;
            self.nofollow = true;
        }
    }

    /// Applies every token of a directive list. Commas are the separator; ASCII whitespace is
    /// accepted too, because "noindex nofollow" is a common mistake whose intent is plain.
    pub(super) fn apply_list(&mut self, list: &str) {
        for token in list.split(|c: char| c == ',' || is_ascii_ws(c)) {
            if !token.is_empty() {
                self.apply_token(token);
            }
        }
    }
}

/// X-Robots-Tag header values (each header occurrence one entry) → directives for `agent_token`.
///
/// A value is a comma-separated list of directives. An item may start with `AGENT:`; from there
/// to the next such prefix (or the end of that header value) the directives apply only to
/// AGENT, and we keep them only when AGENT equals `agent_token` (case-insensitive). Items before
/// any prefix apply to every crawler. So `"googlebot: noindex, archiver: nofollow"` gives us
/// `nofollow` only, and `"otherbot: noindex, nofollow"` gives us nothing.
///
/// A prefix is one token before the item's first colon that looks like a robots product token
/// (starts with an ASCII letter; letters, digits, `-`, `_`) and is not a directive name, so
/// `unavailable_after: 25 Jun 2030 15:00:00 PST` and `max-snippet: 20` are directives (which we
/// ignore), not agents.
pub fn x_robots_tag(values: &[&str], agent_token: &str) -> Directives {
    let mut directives = Directives::default();
    for value in values {
        let mut applies = true;
        for item in value.split(',') {
            let mut item = item.trim_matches(is_ascii_ws);
            if let Some((head, rest)) = item.split_once(':') {
                let head = head.trim_matches(is_ascii_ws);
                if is_agent_prefix(head) {
                    applies = head.eq_ignore_ascii_case(agent_token.trim());
                    item = rest;
                }
            }
            if applies {
                directives.apply_list(item);
            }
        }
    }
    directives
}

/// Directive names that may be followed by a colon and so must not be read as an agent prefix.
const DIRECTIVE_NAMES: &[&str] = &[
    "all",
    "index",
    "follow",
    "noindex",
    "nofollow",
    "none",
    "noarchive",
    "nocache",
    "nosnippet",
    "notranslate",
    "noimageindex",
    "indexifembedded",
    "max-snippet",
    "max-image-preview",
    "max-video-preview",
    "unavailable_after",
    "noodp",
    "noydir",
];

fn is_agent_prefix(head: &str) -> bool {
    let mut chars = head.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    starts_with_letter
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !DIRECTIVE_NAMES.iter().any(|d| head.eq_ignore_ascii_case(d))
}
