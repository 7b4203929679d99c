//! A patch crawl (`crawl --patch FILE`): the URLs `archiver qa` found missing, queued before
//! the run starts as embeds of the pages that wanted them (hop `E`, the page as via), the way
//! the renderer queues what a browser asks for. From there they are URLs like any other: the
//! decide rules judge them (a drop gets its crawl.log line), robots.txt and the sites' pacing
//! apply, and each gets its record and its line in the same crawl. A URL the crawl saw
//! before (a failed fetch) is queued again — the list asks for it — when the crawl had nothing
//! left to do; in a crawl still under way it may be queued or in flight already, and is left
//! to the crawl (run.log says how many).

use std::collections::HashSet;

use crate::commands::qa::PatchLine;
use crate::extract::{Hop, Outlink};
use crate::frontier::{seen_key, Candidate};

use super::engine::Crawler;
use super::locks::{Free, Key};

/// Queues the patch list's URLs the decide rules accept; returns how many. `idle`: the
/// crawl had nothing queued or in flight, so a URL seen before may be queued again.
pub(super) fn queue_patch(
    crawler: &Crawler,
    key: &mut Key<Free>,
    patch: &[PatchLine],
    idle: bool,
) -> usize {
    let (mut queued, mut left) = (0, 0);
    let mut once = HashSet::new();
    for line in patch {
        if !once.insert(seen_key(&line.url)) {
            continue;
        }
        let page = Candidate {
            url: line.page.clone(),
            path: line.page_path.clone(),
            via: None,
            attempts: 0,
        };
        match crawler.desks.with_sched(key, |s| s.mark_seen(&line.url)) {
            Ok(new) if new || idle => {}
            Ok(_) => {
                left += 1;
                continue;
            }
            Err(e) => {
                crawler.desks.fail(key, e);
                return queued;
            }
        }
        let link = Outlink {
            url: line.url.clone(),
            hop: Hop::Embed,
            context: "patch",
        };
        if let Some(c) = crawler.links().judge(key, &page, link, None) {
            let clock = super::sched::Clock::now();
            crawler.desks.with_sched(key, |s| s.enqueue(c, clock));
            queued += 1;
        }
    }
    if !patch.is_empty() {
        crawler.desks.runlog.line(&format!(
            "patch: {queued} of {} URLs of the patch list queued as embeds of their pages; \
             {left} seen before left to the crawl under way",
            patch.len()
        ));
    }
    queued
}
