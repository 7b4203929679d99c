//! Sitemaps on the crawl's road: the ones robots.txt names (and `/sitemap.xml`) queued once
//! robots.txt is known, and a fetched sitemap's locations judged and queued like links (an
//! index's sitemaps as sitemaps). What a sitemap is, and the `lastmod`s kept for crawl.log,
//! are in `sitemaps.rs`.

use url::Url;

use super::candidates::child;
use super::links::Links;
use super::locks::{Free, Key};
use super::sitemaps::{is_nested, may_list, Sitemaps, LISTED, MAX_ROBOTS_SITEMAPS, SITEMAP};
use crate::extract::sitemap::{self, Kind};
use crate::extract::{Hop, Outlink};
use crate::frontier::Candidate;
use crate::logs::crawllog::status;
use crate::net::fetch::Fetched;
use crate::recrawl::EarlierCaptures;

/// The sitemaps' way to the frontier: the links' port, the `lastmod`s kept for crawl.log and
/// an earlier crawl's copies (a sitemap answered 304 is read from there).
pub(super) struct SitemapDesk<'a> {
    pub(super) links: Links<'a>,
    pub(super) sitemaps: &'a Sitemaps,
    pub(super) earlier: &'a EarlierCaptures,
}

impl SitemapDesk<'_> {
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
            .links
            .rules
            .decide(self.links.scope, &root, 1, Hop::Link, &root)
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
        self.links.queue_as(key, &parent, links, Some(SITEMAP));
    }

    /// A fetched sitemap file: its locations judged and queued (an index's as sitemaps, the
    /// others' as pages). What went wrong is returned as the file's crawl.log annotation and
    /// said in run.log; the crawl goes on.
    pub(super) fn follow(&self, key: &mut Key<Free>, c: &Candidate, f: &Fetched) -> Option<String> {
        let body = if f.status == 304 {
            // Not modified: the sitemap is the one the earlier crawl archived, read from there.
            let limit = crate::net::fetch::KEEP_PAYLOAD_MAX as u64;
            let earlier = self.earlier.get(&f.url).and_then(|e| e.payload(limit));
            let Some((body, encoding)) = earlier else {
                self.links.desks.runlog.line(&format!(
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
            self.links
                .desks
                .runlog
                .line(&format!("sitemap {}: {problem}", f.url));
        }
        if map.left_out > 0 {
            self.links.desks.runlog.line(&format!(
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
            self.links.desks.runlog.line(&format!(
                "sitemap {}: {not_urls} locations that are no URL, not followed",
                f.url
            ));
        }
        if let Some(letter) = letter {
            self.links.queue_as(key, c, links, Some(letter));
        }
        note.map(str::to_string)
    }

    /// A listed URL not followed, with why.
    fn log_listed(&self, key: &mut Key<Free>, c: &Candidate, url: Url, letter: char, why: &str) {
        let listed = child(c, url, letter);
        self.links
            .desks
            .log_unfetched(key, &listed, status::OUT_OF_SCOPE, why);
    }
}
