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

use super::engine::Crawler;
use super::locks::{Free, Key};
use crate::extract::sitemap::{self, Kind};
use crate::extract::{Hop, Outlink};
use crate::frontier::Candidate;
use crate::logs::crawllog::status;
use crate::net::fetch::Fetched;

/// The path letter of a sitemap file.
pub(super) const SITEMAP: char = 'S';
/// The path letter of a URL a sitemap lists (Heritrix's "manifest" hop).
pub(super) const LISTED: char = 'M';

/// `Sitemap:` lines taken from one robots.txt.
const MAX_ROBOTS_SITEMAPS: usize = 1000;
/// `lastmod` values remembered for crawl.log, at most (about 100 bytes each).
const MAX_LASTMODS: usize = 1_000_000;

/// The crawl's side of sitemaps: whether they are looked for, and the `lastmod` of listed
/// URLs until their own crawl.log line is written.
pub(super) struct Sitemaps {
    enabled: bool,
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

    fn remember(&self, url: &Url, lastmod: &str) {
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
fn is_nested(c: &Candidate) -> bool {
    c.path.ends_with("SS")
}

/// Named by robots.txt (or at the root): its entries may be of the robots.txt's host too.
fn named_by_robots(c: &Candidate) -> bool {
    c.path == "PS"
}

/// sitemaps.org: a sitemap lists URLs of its own host (and port); one that robots.txt names
/// may also list the robots.txt's host ("Sitemaps & Cross Submits").
fn may_list(c: &Candidate, url: &Url) -> bool {
    let same = |other: &Url| {
        other.host_str() == url.host_str()
            && other.port_or_known_default() == url.port_or_known_default()
    };
    same(&c.url) || (named_by_robots(c) && c.via.as_ref().is_some_and(same))
}

impl Crawler {
    /// robots.txt of `owner` answered `status` with `body`: the sitemaps it names and the
    /// site's `/sitemap.xml` are queued, for a site in scope, unless `[discovery] sitemaps`
    /// is off.
    pub(super) fn queue_sitemaps(
        &self,
        key: &mut Key<Free>,
        owner: &str,
        status: u16,
        body: &[u8],
    ) {
        if !self.sitemaps.enabled {
            return;
        }
        let Ok(root) = Url::parse(owner) else {
            return;
        };
        let in_scope = self
            .rules
            .decide(&self.scope, &root, 1, Hop::Link, &root)
            .is_ok();
        let Some(robots) = crate::politeness::robots::robots_url(&root).filter(|_| in_scope) else {
            return;
        };
        let mut found = Vec::new();
        if (200..300).contains(&status) {
            found = crate::politeness::robots::sitemap_lines(body, &robots, MAX_ROBOTS_SITEMAPS);
        }
        if let Ok(at_root) = root.join("/sitemap.xml") {
            if !found.contains(&at_root) {
                found.push(at_root);
            }
        }
        let links = found
            .into_iter()
            .map(|url| Outlink {
                url,
                hop: Hop::Link,
                context: "robots/sitemap",
            })
            .collect();
        let parent = Candidate {
            url: robots,
            path: "P".to_string(),
            via: Some(root),
            attempts: 0,
        };
        self.queue_links_as(key, &parent, links, Some(SITEMAP));
    }

    /// A fetched sitemap file: its locations judged and queued (an index's as sitemaps, the
    /// others' as pages). What went wrong is returned as the file's crawl.log annotation and
    /// said in run.log; the crawl goes on.
    pub(super) fn follow_sitemap(
        &self,
        key: &mut Key<Free>,
        c: &Candidate,
        f: &Fetched,
    ) -> Option<String> {
        let body = if f.status == 304 {
            // Not modified: the sitemap is the one the earlier crawl archived, read from there.
            let limit = crate::net::fetch::KEEP_PAYLOAD_MAX as u64;
            let earlier = self.earlier.get(&f.url).and_then(|e| e.payload(limit));
            let Some((body, encoding)) = earlier else {
                self.runlog.line(&format!(
                    "sitemap {}: 304, and no earlier copy to read",
                    f.url
                ));
                return Some("sitemap:no-earlier-copy".to_string());
            };
            crate::extract::decode_slice(encoding.as_deref(), &body, sitemap::MAX_BYTES)
        } else if (200..300).contains(&f.status) {
            let encoding = f.header("content-encoding");
            crate::extract::decode_slice(encoding, &f.payload, sitemap::MAX_BYTES)
        } else {
            return None;
        };
        let map = sitemap::parse(&body.bytes);
        let (letter, note) = match map.kind {
            Kind::Index if is_nested(c) => (None, Some("sitemap:index-too-deep")),
            Kind::Index => (Some(SITEMAP), None),
            Kind::Unknown => (None, Some("sitemap:not-a-sitemap")),
            Kind::UrlSet | Kind::Feed | Kind::Text => (Some(LISTED), None),
        };
        let note = note.or(map.problem.as_ref().map(|_| "sitemap:broken"));
        if let Some(problem) = &map.problem {
            self.runlog.line(&format!("sitemap {}: {problem}", f.url));
        }
        if map.left_out > 0 {
            self.runlog.line(&format!(
                "sitemap {}: {} locations past the protocol's {} left out",
                f.url,
                map.left_out,
                sitemap::MAX_URLS
            ));
        }
        let mut links = Vec::new();
        let mut not_urls = 0;
        for entry in map.entries {
            let Ok(mut url) = f.url.join(&entry.loc) else {
                // No URL to give a crawl.log line of its own: counted in run.log.
                not_urls += 1;
                continue;
            };
            url.set_fragment(None);
            let Some(letter) = letter else {
                // An index too deep: each of its sitemaps is said not followed.
                self.log_listed(key, c, url, SITEMAP, "sitemap:index-too-deep");
                continue;
            };
            if !may_list(c, &url) {
                self.log_listed(key, c, url, letter, "sitemap:cross-host");
                continue;
            }
            if let Some(lastmod) = &entry.lastmod {
                self.sitemaps.remember(&url, lastmod);
            }
            links.push(Outlink {
                url,
                hop: Hop::Link,
                context: "sitemap/loc",
            });
        }
        if not_urls > 0 {
            self.runlog.line(&format!(
                "sitemap {}: {not_urls} locations that are no URL, not followed",
                f.url
            ));
        }
        if let Some(letter) = letter {
            self.queue_links_as(key, c, links, Some(letter));
        }
        note.map(str::to_string)
    }

    /// A listed URL not followed, with why.
    fn log_listed(&self, key: &mut Key<Free>, c: &Candidate, url: Url, letter: char, why: &str) {
        let listed = Candidate {
            url,
            path: format!("{}{letter}", c.path),
            via: Some(c.url.clone()),
            attempts: 0,
        };
        self.log_unfetched(key, &listed, status::OUT_OF_SCOPE, why);
    }
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
