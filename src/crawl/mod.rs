//! The crawl engine: which site goes next, and the road of one URL through the crawler.
//!
//! One dispatcher owns the decision of what runs next. It asks the scheduler for a politeness
//! budget (a server address, or a host) whose pause is over, takes the next job of one of that
//! budget's sites (robots.txt first, then a page's requisites right after it, pages
//! breadth-first) and spawns it as a task; at most `sites_at_once` run at once. When a job ends
//! it gives the budget back with the pause the politeness rules ask for. No task, thread or
//! timer exists per site, so ten thousand sites cost only their queues.
//!
//! The road, one stage per file, each handing the next a small typed value:
//!
//! | file | job | hands on |
//! | --- | --- | --- |
//! | `engine` | the `Crawler` and its two locks | — |
//! | `sched` | synchronous, clock injected: enqueue, take a job, release, wake | `Job` |
//! | `driver` | the async loop: dispatch, resolver task, signals, report timer | — |
//! | `prereq` | a site's robots.txt and DNS | `Pace` |
//! | `fetch` | one URL's job: fetch, read the page, decide, dispose, queue links | `Fetched` |
//! | `page` | what a page offers: outlinks, directives, decoded start | `Page` |
//! | `decide` | pure: what an answer means | `Disposition` |
//! | `disposition` | the WARC record and CDXJ line asked for, the crawl.log line | — |
//! | `writer` | the archive desk: dedup, WARC records, rotation, under the rank-2 lock; says where each went | `Record` |
//! | `render` | pages empty without JavaScript: rendered, each browser request taken through the road | `RenderJob` |
//! | `readback` | the browser's answers read back from the crawl's own WARC records | `Copy` |
//! | `candidates` | which outlinks are queued (the decide rules) | `Verdict` |
//! | `journal` | crawl.log, statistics, refusals.log: the one place drops are logged | — |
//! | `commits` | when the frontier's changes are committed: one commit per group of jobs | — |
//! | `shared` | the scheduler's side of a shared (PostgreSQL) frontier: leases, polls | — |
//! | `descriptors` | the open-file limit shared out: jobs and lookups at once | `Slots` |
//! | `admission` | how many jobs may be held up inside the crawler at once (waiting for a CPU) | `Admitted` |

mod admission;
mod archived;
mod candidates;
mod commits;
mod decide;
mod descriptors;
mod disposition;
mod dom_links;
mod driver;
mod engine;
mod fetch;
mod journal;
// Public for its examples alone (the compile-fail proofs of the lock order); nothing outside
// the crate needs it.
pub mod locks;
mod page;
mod prereq;
mod readback;
mod render;
mod sched;
mod shared;
mod writer;

use crate::config::Profile;
use crate::logs::report::Stats;

/// How a run ended, for the command line.
pub enum Ended {
    /// The run crawled (to the end, or until stopped); the whole crawl's statistics.
    Ran(Stats),
    /// Nothing was left to do: an earlier run finished the crawl. No report was touched.
    AlreadyComplete(Stats),
}

/// Runs the crawl a profile describes, to the end. Returns the whole crawl's statistics.
pub async fn run(profile: Profile) -> anyhow::Result<Ended> {
    // The crawl runs as a task on the runtime's workers, not on the thread that called
    // `block_on`: a job that wakes the dispatcher then schedules it on its own worker, instead
    // of waking a thread of its own with a system call each time (thousands a second at scale).
    match tokio::spawn(driver::run(profile)).await {
        Ok(ended) => ended,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the crawl's task ended early: {e}")),
    }
}
