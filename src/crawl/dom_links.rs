//! The links a rendered DOM adds to its page's, bounded: a script can make ever-new URLs (a
//! search page's example queries, a calendar's next month), and each one that is again a page
//! the browser renders makes more. URLs first found in a rendered DOM — not among the page's
//! own links, not seen before in the crawl — are followed up to `[browser]
//! max_dom_links_per_page` per rendered page and `max_dom_links_per_site` per site; the rest
//! get a crawl.log line (`-5000`, [`RENDER_VARIANTS`]), which the summary and report.json count
//! with the trap rules.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::engine::Crawler;
use super::locks::{Free, Key};
use super::sched::Clock;
use crate::extract::Outlink;
use crate::frontier::{seen_key, Candidate};
use crate::logs::crawllog::status;

/// crawl.log's annotation on a URL a rendered DOM offered past the bounds.
pub(super) const RENDER_VARIANTS: &str = "trap:render-variants";

/// DOM-only links followed so far, per site (origin).
#[derive(Default)]
pub(super) struct DomLinkCounts {
    per_site: Mutex<HashMap<String, usize>>,
}

impl DomLinkCounts {
    /// How many of `wanted` more DOM-only links of `origin` may be followed (taken from the
    /// site's room at once, so two renders of one site cannot both take the last of it).
    fn take(&self, origin: &str, wanted: usize, per_site: usize) -> usize {
        let mut map = self.per_site.lock().unwrap_or_else(|p| p.into_inner());
        let used = map.entry(origin.to_string()).or_default();
        let granted = wanted.min(per_site.saturating_sub(*used));
        *used += granted;
        granted
    }
}

/// The links of a rendered DOM split: those the page offers anyway (not counted) and those the
/// DOM alone offers, in DOM order.
fn dom_only(page_links: &[Outlink], dom: Vec<Outlink>) -> Vec<Outlink> {
    let own: HashSet<String> = page_links.iter().map(|l| seen_key(&l.url)).collect();
    let mut taken = HashSet::new();
    dom.into_iter()
        .filter(|l| {
            let key = seen_key(&l.url);
            !own.contains(&key) && taken.insert(key)
        })
        .collect()
}

impl Crawler {
    /// Queues a rendered page's own links and, within the bounds, the URLs its DOM alone
    /// offers; those past the bounds are logged and never fetched.
    pub(super) fn queue_rendered_links(
        &self,
        key: &mut Key<Free>,
        page: &Candidate,
        links: Vec<Outlink>,
        dom: Vec<Outlink>,
    ) {
        let extra = dom_only(&links, dom);
        self.queue_links(key, page, links);
        if extra.is_empty() {
            return;
        }
        // Only URLs the crawl meets here for the first time count (and are marked seen now).
        let seen = self.with_sched(key, |s| {
            let urls: Vec<&url::Url> = extra.iter().map(|l| &l.url).collect();
            s.mark_seen_all(&urls)
        });
        let new: Vec<Outlink> = match seen {
            Ok(new) => extra
                .into_iter()
                .zip(new)
                .filter_map(|(l, new)| new.then_some(l))
                .collect(),
            Err(e) => return self.fail(key, e),
        };
        let settings = &self.profile.browser;
        let wanted = new.len().min(settings.max_dom_links_per_page);
        let origin = crate::scope::origin_of(&page.url);
        let granted =
            self.rendering
                .dom_links()
                .take(&origin, wanted, settings.max_dom_links_per_site);
        let mut new = new.into_iter();
        let accepted: Vec<Candidate> = new
            .by_ref()
            .take(granted)
            .filter_map(|link| self.judge(key, page, link, None))
            .collect();
        self.with_sched(key, |s| {
            let clock = Clock::now();
            for c in accepted {
                s.enqueue(c, clock);
            }
        });
        for link in new {
            let c = Candidate {
                path: format!("{}{}", page.path, link.hop.letter()),
                url: link.url,
                via: Some(page.url.clone()),
                attempts: 0,
            };
            self.log_unfetched(key, &c, status::OUT_OF_SCOPE, RENDER_VARIANTS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Hop;
    use url::Url;

    fn link(u: &str) -> Outlink {
        Outlink {
            url: Url::parse(u).unwrap(),
            hop: Hop::Link,
            context: "a/@href",
        }
    }

    #[test]
    fn only_links_the_page_does_not_offer_itself_are_dom_only() {
        let own = vec![link("http://h/a"), link("http://h/b#x")];
        let dom = vec![
            link("http://h/b"),
            link("http://h/?search=x"),
            link("http://h/a"),
            link("http://h/?search=x#top"),
            link("http://h/c"),
        ];
        let only: Vec<String> = dom_only(&own, dom)
            .into_iter()
            .map(|l| l.url.to_string())
            .collect();
        assert_eq!(only, ["http://h/?search=x", "http://h/c"]);
    }

    #[test]
    fn a_site_gives_out_its_room_once() {
        let counts = DomLinkCounts::default();
        assert_eq!(counts.take("http://h", 3, 5), 3);
        assert_eq!(counts.take("http://h", 3, 5), 2);
        assert_eq!(counts.take("http://h", 3, 5), 0);
        assert_eq!(counts.take("http://other", 3, 5), 3);
    }
}
