//! robots.txt (RFC 9309): what the fetched file means for the crawl.
//!
//! Parsing and matching are texting_robots' job (group for our product token, else `*`; `*` and
//! `$` wildcards; longest match wins). This module adds what RFC 9309 asks of a crawler around
//! that: the 500 KiB cut, how statuses are read, the 24 h cache and a sane Crawl-delay.

use std::time::{Duration, Instant};

use url::Url;

/// RFC 9309 §2.5: a crawler must parse at least 500 KiB; we parse exactly that much.
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;
/// RFC 9309 §2.4: cached rules should not be used for more than 24 hours.
pub const ROBOTS_TTL: Duration = Duration::from_secs(24 * 3600);
/// RFC 9309 §2.3.1.2: at least five redirects are followed.
pub const MAX_ROBOTS_REDIRECTS: usize = 5;

/// What a site's robots.txt allows.
pub enum Rules {
    AllowAll,
    DisallowAll,
    Parsed(Box<texting_robots::Robot>),
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rules::AllowAll => "AllowAll",
            Rules::DisallowAll => "DisallowAll",
            Rules::Parsed(_) => "Parsed",
        })
    }
}

/// The rules of one site, with when they were learnt.
#[derive(Debug)]
pub struct Policy {
    pub rules: Rules,
    pub crawl_delay: Option<Duration>,
    pub fetched_at: Instant,
    /// Why the rules are what they are, for logs (e.g. "404: allow all").
    pub note: String,
}

/// How a robots.txt answer is read.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Use these rules.
    Rules,
    /// Server error or unreachable: disallow everything for now and ask again later.
    Unavailable,
}

impl Policy {
    /// Rules from a final (non-redirect) robots.txt answer. `body` is the payload after content
    /// decoding. 2xx: parse; 4xx: allow all; anything else: unavailable (disallow all for now).
    pub fn from_answer(
        status: u16,
        body: &[u8],
        agent_token: &str,
        now: Instant,
    ) -> (Policy, Verdict) {
        match status {
            200..=299 => (Policy::parse(body, agent_token, now), Verdict::Rules),
            400..=499 => (
                Policy::fixed(Rules::AllowAll, now, format!("{status}: allow all")),
                Verdict::Rules,
            ),
            _ => (
                Policy::unavailable(now, format!("{status}: disallow all for now")),
                Verdict::Unavailable,
            ),
        }
    }

    /// Rules while robots.txt cannot be had: nothing may be fetched.
    pub fn unavailable(now: Instant, note: String) -> Policy {
        Policy::fixed(Rules::DisallowAll, now, note)
    }

    fn fixed(rules: Rules, now: Instant, note: String) -> Policy {
        Policy {
            rules,
            crawl_delay: None,
            fetched_at: now,
            note,
        }
    }

    /// Parses robots.txt, cut at 500 KiB. texting_robots refuses some pathological files (e.g.
    /// patterns too large to compile); then we disallow everything: a webmaster's file we cannot
    /// read is no licence to crawl.
    fn parse(body: &[u8], agent_token: &str, now: Instant) -> Policy {
        let body = &body[..body.len().min(MAX_ROBOTS_BYTES)];
        match texting_robots::Robot::new(agent_token, body) {
            Ok(robot) => {
                let crawl_delay = robot
                    .delay
                    .filter(|d| d.is_finite() && *d > 0.0)
                    .map(|d| Duration::from_secs_f64(f64::from(d).min(86_400.0)));
                Policy {
                    rules: Rules::Parsed(Box::new(robot)),
                    crawl_delay,
                    fetched_at: now,
                    note: "parsed".to_string(),
                }
            }
            Err(e) => Policy::fixed(
                Rules::DisallowAll,
                now,
                format!("unparsable robots.txt ({e}): disallow all"),
            ),
        }
    }

    /// May this URL be fetched?
    pub fn allows(&self, url: &Url) -> bool {
        match &self.rules {
            Rules::AllowAll => true,
            Rules::DisallowAll => false,
            // RFC 9309 §2.2.2: /robots.txt itself is always allowed.
            Rules::Parsed(r) => url.path() == "/robots.txt" || r.allowed(url.as_str()),
        }
    }

    /// True once the rules are older than the cache lifetime.
    pub fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.fetched_at) >= ROBOTS_TTL
    }
}

/// The `Sitemap:` lines of a robots.txt (any group, or none: the field stands outside the
/// groups, RFC 9309 §2.2.4), resolved against the robots.txt URL; http(s) URLs only, at most
/// `max` of them.
pub fn sitemap_lines(body: &[u8], robots: &Url, max: usize) -> Vec<Url> {
    let text = String::from_utf8_lossy(body);
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case("sitemap") {
            continue;
        }
        let Ok(mut url) = robots.join(value.trim()) else {
            continue;
        };
        url.set_fragment(None);
        if matches!(url.scheme(), "http" | "https") && !found.contains(&url) {
            found.push(url);
        }
        if found.len() >= max {
            break;
        }
    }
    found
}

/// The robots.txt URL of a URL's origin.
pub fn robots_url(url: &Url) -> Option<Url> {
    let mut r = url.clone();
    r.set_path("/robots.txt");
    r.set_query(None);
    r.set_fragment(None);
    let _ = r.set_username("");
    let _ = r.set_password(None);
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TXT: &[u8] = b"User-agent: otherbot\nDisallow: /\n\n\
User-agent: archiver\nDisallow: /private/\nDisallow: /*.pdf$\nAllow: /private/ok.html\nCrawl-delay: 2.5\n\n\
User-agent: *\nDisallow: /\n";

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn our_group_wins_over_star_with_wildcards() {
        let now = Instant::now();
        let (p, v) = Policy::from_answer(200, TXT, "archiver", now);
        assert_eq!(v, Verdict::Rules);
        assert!(p.allows(&url("http://h/")));
        assert!(!p.allows(&url("http://h/private/secret.html")));
        assert!(p.allows(&url("http://h/private/ok.html")));
        assert!(!p.allows(&url("http://h/doc.pdf")));
        assert!(p.allows(&url("http://h/doc.pdf?x=1")));
        assert_eq!(p.crawl_delay, Some(Duration::from_secs_f64(2.5)));
        // Another product token falls to `*`.
        let (p, _) = Policy::from_answer(200, TXT, "somebot", now);
        assert!(!p.allows(&url("http://h/")));
        assert!(p.allows(&url("http://h/robots.txt")));
    }

    #[test]
    fn statuses_are_read_as_rfc_9309_says() {
        let now = Instant::now();
        let (p, v) = Policy::from_answer(404, b"", "archiver", now);
        assert_eq!(v, Verdict::Rules);
        assert!(p.allows(&url("http://h/x")));
        let (p, v) = Policy::from_answer(503, b"", "archiver", now);
        assert_eq!(v, Verdict::Unavailable);
        assert!(!p.allows(&url("http://h/x")));
    }

    #[test]
    fn odd_crawl_delays_are_ignored_and_garbage_parses() {
        let now = Instant::now();
        let (p, _) = Policy::from_answer(200, b"User-agent: *\nCrawl-delay: -5\n", "archiver", now);
        assert_eq!(p.crawl_delay, None);
        let (p, _) = Policy::from_answer(200, b"\x00\xff<html>not robots</html>", "archiver", now);
        assert!(p.allows(&url("http://h/x")));
    }

    #[test]
    fn cache_expires_after_a_day() {
        let now = Instant::now();
        let (p, _) = Policy::from_answer(404, b"", "archiver", now);
        assert!(!p.expired(now + Duration::from_secs(3600)));
        assert!(p.expired(now + ROBOTS_TTL));
    }

    #[test]
    fn sitemap_lines_anywhere_in_the_file() {
        let body = b"User-agent: *\nDisallow: /x\n\nSITEMAP: /s.xml # ours\nsitemap:https://cdn.test/m.xml.gz\nSitemap: ftp://no/\nSitemap: /s.xml\n";
        let robots = url("http://h.test/robots.txt");
        let found: Vec<String> = sitemap_lines(body, &robots, 10)
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(found, ["http://h.test/s.xml", "https://cdn.test/m.xml.gz"]);
        assert_eq!(sitemap_lines(body, &robots, 1).len(), 1);
    }

    #[test]
    fn robots_url_drops_path_query_and_credentials() {
        let r = robots_url(&url("https://u:p@h:8443/a/b?c=d#e")).unwrap();
        assert_eq!(r.as_str(), "https://h:8443/robots.txt");
    }
}
