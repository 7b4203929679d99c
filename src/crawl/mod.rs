//! The crawl engine: which site goes next, and the road of one URL through the crawler.
//!
//! One dispatcher (`driver`) asks the synchronous scheduler (`sched`, clock injected, the one
//! owner of site state) for a politeness budget whose pause is over and spawns the next job of
//! one of its sites; the job (`job`) goes one straight road over narrow ports: fetch (`fetch`),
//! read the page (`page`, pure), decide (`decide`, pure), render or follow (`render_job`,
//! `links`), make durable (`commits`), dispose (`disposition`: the archive desk, `writer`; the
//! journal), pace (the scheduler's site rules). The map of this folder — every file, what it
//! hands the next, and the engine's three locks and their order (`locks`) — is in
//! `docs/design.md` ("Inside `crawl/`"), the one copy of it.

mod admission;
mod archived;
mod candidates;
mod commits;
mod control;
mod decide;
mod descriptors;
mod desks;
mod disposition;
mod dom_links;
mod driver;
mod engine;
mod fetch;
mod job;
mod journal;
mod links;
// Public for its examples alone (the compile-fail proofs of the lock order); nothing outside
// the crate needs it.
pub mod locks;
mod operator;
mod page;
mod patch;
mod prereq;
mod recrawl;
mod render;
mod render_job;
mod sched;
mod sitemap_links;
mod sitemaps;
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
/// `[output] wacz` is the caller's to honour once the crawl has ended
/// (`commands::wacz::pack_crawl`, as `archiver crawl` does).
pub async fn run(profile: Profile) -> anyhow::Result<Ended> {
    run_patched(profile, Vec::new()).await
}

/// [`run`], with the URLs of a patch list (`archiver qa --missing`) queued first as embeds of
/// the pages that wanted them: a crawl that was complete runs again for them.
pub async fn run_patched(
    profile: Profile,
    patch: Vec<crate::commands::qa::PatchLine>,
) -> anyhow::Result<Ended> {
    // The crawl runs as a task on the runtime's workers, not on the thread that called
    // `block_on`: a job that wakes the dispatcher then schedules it on its own worker, instead
    // of waking a thread of its own with a system call each time (thousands a second at scale).
    match tokio::spawn(driver::run(profile, patch)).await {
        Ok(ended) => ended,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the crawl's task ended early: {e}")),
    }
}
