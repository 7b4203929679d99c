//! The frontier: what is queued for each site, and every URL already seen.
//!
//! Behind a trait so a durable or shared store can replace the in-memory one without touching
//! the crawl loop. Within a site, pages come before embedded resources ("HTML first"), each
//! breadth-first.

use std::collections::{HashMap, HashSet, VecDeque};

use url::Url;

use crate::extract::Hop;

/// A URL waiting to be fetched.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub url: Url,
    /// Heritrix discovery path: hop letters from the seed ("" for a seed).
    pub path: String,
    pub via: Option<Url>,
    /// Tries so far (0 before the first).
    pub attempts: u32,
}

impl Candidate {
    pub fn seed(url: Url) -> Candidate {
        Candidate {
            url,
            path: String::new(),
            via: None,
            attempts: 0,
        }
    }

    /// The hop type that led here (last letter of the path), Link for seeds.
    pub fn last_hop(&self) -> Option<char> {
        self.path.chars().last()
    }

    /// Number of hops from the seed.
    pub fn hops(&self) -> usize {
        self.path.len()
    }
}

/// The key that decides whether two URLs are the same for the seen-set: the URL without its
/// fragment, as the url crate normalises it (case of scheme and host, default port, dot segments,
/// percent-encoding of unsafe characters).
pub fn seen_key(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    u.into()
}

/// What the crawl loop needs from a frontier.
pub trait Frontier: Send {
    /// Records the URL as seen; true when it was not seen before.
    fn mark_seen(&mut self, url: &Url) -> bool;
    /// Queues a candidate for a site (`site` is its origin).
    fn push(&mut self, site: &str, candidate: Candidate);
    /// Queues a candidate again after a failed try, behind what is already queued.
    fn push_retry(&mut self, site: &str, candidate: Candidate);
    /// The next candidate of a site.
    fn pop(&mut self, site: &str) -> Option<Candidate>;
    /// Candidates queued for a site.
    fn queued(&self, site: &str) -> usize;
    /// Candidates queued in all.
    fn total_queued(&self) -> usize;
    /// Every queued candidate of a site, removed (used when a site is given up).
    fn drain(&mut self, site: &str) -> Vec<Candidate>;
}

#[derive(Debug, Default)]
struct SiteQueue {
    pages: VecDeque<Candidate>,
    embeds: VecDeque<Candidate>,
}

impl SiteQueue {
    fn len(&self) -> usize {
        self.pages.len() + self.embeds.len()
    }
}

/// A frontier held in memory.
#[derive(Debug, Default)]
pub struct MemoryFrontier {
    seen: HashSet<String>,
    sites: HashMap<String, SiteQueue>,
    total: usize,
}

fn is_embed(c: &Candidate) -> bool {
    c.last_hop() == Some(Hop::Embed.letter())
}

impl Frontier for MemoryFrontier {
    fn mark_seen(&mut self, url: &Url) -> bool {
        self.seen.insert(seen_key(url))
    }

    fn push(&mut self, site: &str, candidate: Candidate) {
        let q = self.sites.entry(site.to_string()).or_default();
        if is_embed(&candidate) {
            q.embeds.push_back(candidate);
        } else {
            q.pages.push_back(candidate);
        }
        self.total += 1;
    }

    fn push_retry(&mut self, site: &str, candidate: Candidate) {
        self.push(site, candidate);
    }

    fn pop(&mut self, site: &str) -> Option<Candidate> {
        let q = self.sites.get_mut(site)?;
        let c = q.pages.pop_front().or_else(|| q.embeds.pop_front());
        if c.is_some() {
            self.total -= 1;
        }
        if q.len() == 0 {
            self.sites.remove(site);
        }
        c
    }

    fn queued(&self, site: &str) -> usize {
        self.sites.get(site).map_or(0, SiteQueue::len)
    }

    fn total_queued(&self) -> usize {
        self.total
    }

    fn drain(&mut self, site: &str) -> Vec<Candidate> {
        let Some(q) = self.sites.remove(site) else {
            return Vec::new();
        };
        self.total -= q.len();
        q.pages.into_iter().chain(q.embeds).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(s: &str, path: &str) -> Candidate {
        Candidate {
            url: Url::parse(s).unwrap(),
            path: path.to_string(),
            via: None,
            attempts: 0,
        }
    }

    #[test]
    fn pages_before_embeds_each_in_order() {
        let mut f = MemoryFrontier::default();
        f.push("s", cand("http://s/a.png", "LE"));
        f.push("s", cand("http://s/1", "L"));
        f.push("s", cand("http://s/2", "LL"));
        assert_eq!(f.total_queued(), 3);
        let order: Vec<String> = std::iter::from_fn(|| f.pop("s"))
            .map(|c| c.url.path().to_string())
            .collect();
        assert_eq!(order, ["/1", "/2", "/a.png"]);
        assert_eq!(f.total_queued(), 0);
        assert!(f.pop("s").is_none());
    }

    #[test]
    fn seen_ignores_fragments_and_normalised_forms() {
        let mut f = MemoryFrontier::default();
        assert!(f.mark_seen(&Url::parse("http://S/a/../b#x").unwrap()));
        assert!(!f.mark_seen(&Url::parse("http://s:80/b").unwrap()));
    }

    #[test]
    fn drain_empties_a_site() {
        let mut f = MemoryFrontier::default();
        f.push("s", cand("http://s/1", "L"));
        f.push("t", cand("http://t/1", "L"));
        assert_eq!(f.drain("s").len(), 1);
        assert_eq!(f.total_queued(), 1);
        assert_eq!(f.queued("s"), 0);
    }
}
