//! A page's outlinks on their way to the frontier: seen-checked a batch at a time, judged
//! one by one (scope, rules, opt-out, traps: [`candidates::judge`]), queued or logged with the
//! reason they were dropped. The seen-check and the queueing hold the scheduler's lock
//! briefly; judging and logging happen without it, so one page never holds up other sites.

use std::sync::Arc;

use super::candidates;
use super::desks::Desks;
use super::locks::{Free, Key};
use super::sched::Clock;
use crate::extract::Outlink;
use crate::frontier::Candidate;
use crate::scope::optout::OptOutList;
use crate::scope::rules::ScopeRules;
use crate::scope::traps::UrlTrapRules;
use crate::scope::Scope;

/// Outlinks seen-checked and queued per turn of the scheduler lock, so that other sites' jobs
/// get the lock between two turns.
pub(super) const LINK_BATCH: usize = 256;

/// The way to the frontier for outlinks: the desks and the rules every link is judged by.
pub(super) struct Links<'a> {
    pub(super) desks: &'a Desks,
    /// The profile's scope...
    pub(super) scope: &'a Scope,
    /// ...or, when the operator added seeds, the scope they widen (as profile seeds do).
    pub(super) widened: Option<Arc<Scope>>,
    pub(super) rules: &'a ScopeRules,
    pub(super) optout: &'a OptOutList,
    pub(super) url_traps: Option<&'a UrlTrapRules>,
}

impl Links<'_> {
    /// Scope-checks and queues the outlinks of a page, a batch at a time: the seen-check and
    /// the queueing hold the state lock briefly; judging (scope, opt-out, traps) and logging
    /// what is dropped happen without it, so other sites' jobs are never held up by one page.
    pub(super) fn queue(&self, key: &mut Key<Free>, parent: &Candidate, links: Vec<Outlink>) {
        self.queue_as(key, parent, links, None);
    }

    /// [`Self::queue`], each link's path letter `letter` when given (else its hop's).
    pub(super) fn queue_as(
        &self,
        key: &mut Key<Free>,
        parent: &Candidate,
        links: Vec<Outlink>,
        letter: Option<char>,
    ) {
        let mut links = links.into_iter().peekable();
        while links.peek().is_some() {
            let batch: Vec<Outlink> = links.by_ref().take(LINK_BATCH).collect();
            // One seen-check for the whole batch (one round trip with a shared frontier).
            let seen = self.desks.with_sched(key, |s| {
                let urls: Vec<&url::Url> = batch.iter().map(|l| &l.url).collect();
                let new = s.mark_seen_all(&urls)?;
                let fresh: Vec<Outlink> = batch
                    .into_iter()
                    .zip(new)
                    .filter_map(|(link, new)| new.then_some(link))
                    .collect();
                Ok::<_, crate::frontier::FrontierError>(fresh)
            });
            let fresh = match seen {
                Ok(fresh) => fresh,
                Err(e) => return self.desks.fail(key, e),
            };
            let accepted: Vec<Candidate> = fresh
                .into_iter()
                .filter_map(|link| self.judge(key, parent, link, letter))
                .collect();
            if accepted.is_empty() {
                continue;
            }
            self.desks.with_sched(key, |s| {
                let clock = Clock::now();
                for candidate in accepted {
                    s.enqueue(candidate, clock);
                }
            });
        }
    }

    /// Decides one new outlink (see [`candidates::judge`]): the candidate to queue, or None,
    /// logged with the reason. `letter` replaces the hop's letter on the discovery path.
    pub(super) fn judge(
        &self,
        key: &mut Key<Free>,
        parent: &Candidate,
        link: Outlink,
        letter: Option<char>,
    ) -> Option<Candidate> {
        let rules = candidates::Rules {
            scope: self.widened.as_deref().unwrap_or(self.scope),
            rules: self.rules,
            optout: self.optout,
            url_traps: self.url_traps,
        };
        let letter = letter.unwrap_or(link.hop.letter());
        let robots_named_sitemap = letter == super::sitemaps::SITEMAP && parent.path == "P";
        match candidates::judge_as(&rules, parent, link, letter) {
            candidates::Verdict::Queue(candidate) => Some(candidate),
            // robots.txt may name a sitemap on another host (sitemaps.org, "Sitemaps &
            // Cross Submits"): that one is fetched; what it lists is judged as usual.
            candidates::Verdict::Drop(d) if robots_named_sitemap && d.why == "scope:off-site" => {
                Some(d.candidate)
            }
            candidates::Verdict::Drop(dropped) => {
                self.desks.log_drop(key, dropped);
                None
            }
        }
    }
}
