//! A re-crawl of earlier crawls (`[recrawl] previous`): their captures loaded when the crawl
//! opens (validators for conditional requests, see `crate::recrawl`), and their URLs queued
//! again so a page no longer linked is still asked for (`revisit_unlinked`).

use anyhow::Context as _;
use url::Url;

use super::engine::Crawler;
use super::locks::{Free, Key};
use super::sched::Clock;
use crate::config::Profile;
use crate::extract::Hop;
use crate::frontier::Candidate;
use crate::logs::runlog::RunLog;
use crate::recrawl::EarlierCaptures;

/// The earlier crawls' captures, said in run.log; empty without `[recrawl] previous`.
pub(super) fn load_earlier(p: &Profile, runlog: &RunLog) -> anyhow::Result<EarlierCaptures> {
    if p.recrawl.previous.is_empty() {
        return Ok(EarlierCaptures::default());
    }
    let earlier = EarlierCaptures::load(&p.recrawl)
        .context("cannot read the earlier crawls named in [recrawl] previous")?;
    let s = &earlier.stats;
    runlog.line(&format!(
        "recrawl: {} earlier captures from {} CDXJ files, {} with a validator ({} unreadable, \
         {} past the limit of {})",
        s.captures,
        s.files,
        s.with_validator,
        s.unreadable,
        s.left_out,
        crate::recrawl::MAX_CAPTURES
    ));
    Ok(earlier)
}

impl Crawler {
    /// Queues the URLs the earlier crawls archived that this crawl has not seen, as seeds are
    /// (no discovery path: they were found by an earlier crawl), when they are in scope;
    /// returns how many. Off with `[recrawl] revisit_unlinked = false`.
    pub(super) fn queue_earlier(&self, key: &mut Key<Free>) -> usize {
        if !self.profile.recrawl.revisit_unlinked {
            return 0;
        }
        let gate = self.gate();
        let mut queued = 0;
        for text in self.earlier.urls() {
            let Ok(url) = Url::parse(text) else {
                continue;
            };
            let candidate = Candidate::seed(url);
            // Out of scope now (the profile changed): said once, when it is new.
            if let Err(why) =
                self.rules
                    .decide(&self.scope, &candidate.url, 0, Hop::Link, &candidate.url)
            {
                if self
                    .with_sched(key, |s| s.mark_seen(&candidate.url))
                    .unwrap_or(false)
                {
                    self.log_unfetched(
                        key,
                        &candidate,
                        crate::logs::crawllog::status::OUT_OF_SCOPE,
                        why,
                    );
                }
                continue;
            }
            if self.with_sched(key, |s| s.seed(candidate, &gate, Clock::now())) {
                queued += 1;
            }
        }
        queued
    }
}
