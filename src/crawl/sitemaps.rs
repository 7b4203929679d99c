//! Sitemaps in the crawl: the ones a site's robots.txt names and its `/sitemap.xml`, queued
//! once robots.txt is known; each fetched like any URL (politeness, robots rules, archived as
//! received) and then read by `extract::sitemap`, its locations judged and queued like links.
//!
//! Discovery paths carry what a URL is, so a resumed crawl knows it too: a sitemap file ends in
//! [`SITEMAP`] (`PS` named by robots.txt or at the root, `PSS` listed by an index), a page a
//! sitemap lists in [`LISTED`] (`PSM`, `PSSM`). An index inside an index is not followed
//! (the protocol's depth 1). A re-crawl asks for a sitemap conditionally too; on a `304` the
//! earlier crawl's copy is read again for its locations.

use std::collections::HashMap;
use std::sync::Mutex;

use url::Url;

use crate::extract::sitemap;
use crate::frontier::Candidate;

/// The path letter of a sitemap file.
pub(super) const SITEMAP: char = 'S';
/// The path letter of a URL a sitemap lists (Heritrix's "manifest" hop).
pub(super) const LISTED: char = 'M';

/// `Sitemap:` lines taken from one robots.txt.
pub(super) const MAX_ROBOTS_SITEMAPS: usize = 1000;
/// `lastmod` values remembered for crawl.log, at most (about 100 bytes each).
const MAX_LASTMODS: usize = 1_000_000;

/// The crawl's side of sitemaps: whether they are looked for, and the `lastmod` of listed
/// URLs until their own crawl.log line is written.
pub(super) struct Sitemaps {
    pub(super) enabled: bool,
    /// Seen key → lastmod. In memory only: after a resume, URLs queued before the stop log no
    /// lastmod (the sitemap's own record still holds it).
    lastmods: Mutex<HashMap<String, String>>,
}

impl Sitemaps {
    pub(super) fn new(settings: &sitemap::DiscoverySettings) -> Sitemaps {
        Sitemaps {
            enabled: settings.sitemaps,
            lastmods: Mutex::new(HashMap::new()),
        }
    }

    /// The `lastmod` a sitemap gave this URL, taken out (its line is written once).
    pub(super) fn lastmod_of(&self, url: &Url) -> Option<String> {
        let mut map = self.lastmods.lock().unwrap_or_else(|p| p.into_inner());
        if map.is_empty() {
            return None;
        }
        map.remove(&crate::frontier::seen_key(url))
    }

    pub(super) fn remember(&self, url: &Url, lastmod: &str) {
        let mut map = self.lastmods.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() < MAX_LASTMODS {
            map.insert(crate::frontier::seen_key(url), lastmod.to_string());
        }
    }
}

/// Is this queued URL a sitemap file?
pub(super) fn is_sitemap(c: &Candidate) -> bool {
    c.path.ends_with(SITEMAP)
}

/// A sitemap listed by an index: it may not be an index itself.
pub(super) fn is_nested(c: &Candidate) -> bool {
    c.path.ends_with("SS")
}

/// Named by robots.txt (or at the root): its entries may be of the robots.txt's host too.
fn named_by_robots(c: &Candidate) -> bool {
    c.path == "PS"
}

/// sitemaps.org: a sitemap lists URLs of its own host (and port); one that robots.txt names
/// may also list the robots.txt's host ("Sitemaps & Cross Submits").
pub(super) fn may_list(c: &Candidate, url: &Url) -> bool {
    let same = |other: &Url| {
        other.host_str() == url.host_str()
            && other.port_or_known_default() == url.port_or_known_default()
    };
    same(&c.url) || (named_by_robots(c) && c.via.as_ref().is_some_and(same))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sitemap(url: &str, path: &str, via: &str) -> Candidate {
        Candidate {
            url: Url::parse(url).unwrap(),
            path: path.to_string(),
            via: Url::parse(via).ok(),
            attempts: 0,
        }
    }

    #[test]
    fn a_sitemap_lists_its_own_host_and_robots_may_cross_submit() {
        let u = |s: &str| Url::parse(s).unwrap();
        let own = sitemap("http://a.test/s.xml", "PS", "http://a.test/robots.txt");
        assert!(may_list(&own, &u("http://a.test/page")));
        assert!(!may_list(&own, &u("http://b.test/page")));
        assert!(!may_list(&own, &u("http://a.test:8080/page")));
        // Named by a.test's robots.txt but kept on a CDN: a.test's URLs are allowed.
        let cdn = sitemap("http://cdn.test/a.xml", "PS", "http://a.test/robots.txt");
        assert!(may_list(&cdn, &u("http://a.test/page")));
        assert!(may_list(&cdn, &u("http://cdn.test/x")));
        assert!(!may_list(&cdn, &u("http://b.test/page")));
        // Listed by an index: its own host only.
        let nested = sitemap("http://cdn.test/b.xml", "PSS", "http://a.test/index.xml");
        assert!(!may_list(&nested, &u("http://a.test/page")));
        assert!(is_sitemap(&nested) && is_nested(&nested) && !is_nested(&cdn));
        assert!(!is_sitemap(&sitemap(
            "http://a.test/p",
            "PSM",
            "http://a.test/s.xml"
        )));
    }
}
