//! The links a rendered DOM adds to its page's, bounded: a script can make ever-new URLs (a
//! search page's example queries, a calendar's next month), and each one that is again a page
//! the browser renders makes more. URLs first found in a rendered DOM — not among the page's
//! own links, not seen before in the crawl — are followed up to `[browser]
//! max_dom_links_per_page` per rendered page and `max_dom_links_per_site` per site; the rest
//! get a crawl.log line (`-5000`, [`RENDER_VARIANTS`]), which the summary and report.json count
//! with the trap rules.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::extract::Outlink;
use crate::frontier::seen_key;

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
    pub(super) fn take(&self, origin: &str, wanted: usize, per_site: usize) -> usize {
        let mut map = self.per_site.lock().unwrap_or_else(|p| p.into_inner());
        let used = map.entry(origin.to_string()).or_default();
        let granted = wanted.min(per_site.saturating_sub(*used));
        *used += granted;
        granted
    }
}

/// The links of a rendered DOM split: those the page offers anyway (not counted) and those the
/// DOM alone offers, in DOM order.
pub(super) fn dom_only(page_links: &[Outlink], dom: Vec<Outlink>) -> Vec<Outlink> {
    let own: HashSet<String> = page_links.iter().map(|l| seen_key(&l.url)).collect();
    let mut taken = HashSet::new();
    dom.into_iter()
        .filter(|l| {
            let key = seen_key(&l.url);
            !own.contains(&key) && taken.insert(key)
        })
        .collect()
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
