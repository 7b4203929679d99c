//! A re-crawl of earlier crawls (`[recrawl] previous`): their URLs queued again so a page no
//! longer linked is still asked for (`revisit_unlinked`). Their captures (validators for
//! conditional requests, see `crate::recrawl`) are loaded when the crawl opens (`engine.rs`).

use url::Url;

use super::engine::Crawler;
use super::locks::{Free, Key};
use super::sched::Clock;
use crate::extract::Hop;
use crate::frontier::Candidate;

/// Queues the URLs the earlier crawls archived that this crawl has not seen, as seeds are
/// (no discovery path: they were found by an earlier crawl), when they are in scope;
/// returns how many. Off with `[recrawl] revisit_unlinked = false`.
pub(super) fn queue_earlier(crawler: &Crawler, key: &mut Key<Free>) -> usize {
    if !crawler.profile.recrawl.revisit_unlinked {
        return 0;
    }
    let gate = crawler.gate();
    let mut queued = 0;
    for text in crawler.earlier.urls() {
        let Ok(url) = Url::parse(text) else {
            continue;
        };
        let candidate = Candidate::seed(url);
        // Out of scope now (the profile changed): said once, when it is new.
        if let Err(why) =
            crawler
                .rules
                .decide(&crawler.scope, &candidate.url, 0, Hop::Link, &candidate.url)
        {
            if crawler
                .desks
                .with_sched(key, |s| s.mark_seen(&candidate.url))
                .unwrap_or(false)
            {
                crawler.desks.log_unfetched(
                    key,
                    &candidate,
                    crate::logs::crawllog::status::OUT_OF_SCOPE,
                    why,
                );
            }
            continue;
        }
        if crawler
            .desks
            .with_sched(key, |s| s.seed(candidate, &gate, Clock::now()))
        {
            queued += 1;
        }
    }
    queued
}
