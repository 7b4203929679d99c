//! A site's prerequisites, as Heritrix calls them: its name resolved (and the address let
//! through by the guard) and its robots.txt fetched, before any of its URLs is. The robots job
//! hands the scheduler a [`Pace`] like any fetch.

use std::time::Instant;

use url::Url;

use super::candidates::child;
use super::desks::Desks;
use super::disposition::{archive, Keeping, Kept};
use super::fetch::{Net, Request};
use super::locks::{Free, Key, Root};
use super::page::{location_of, redirect_target, Location};
use super::sched::{Clock, Pace, RobotsChase};
use super::sitemap_links::SitemapDesk;
use crate::extract;
use crate::frontier::Candidate;
use crate::logs::crawllog::status;
use crate::net::fetch::{BodyPlan, Fetched};
use crate::politeness::robots::{self, Policy, Verdict};
use crate::politeness::Answer;
use crate::scope::origin_of;

/// The robots.txt job and its ports (`Crawler::robots_job`): the network, the desks, the
/// archiving of each answer, the product token the rules are read for, the sitemaps the file
/// names.
pub(super) struct RobotsJob<'a> {
    pub(super) net: &'a Net,
    pub(super) desks: &'a Desks,
    pub(super) keeping: Keeping<'a>,
    pub(super) robots_token: &'a str,
    pub(super) sitemaps: SitemapDesk<'a>,
}

impl RobotsJob<'_> {
    /// Fetches robots.txt for a site, following up to 5 redirects and archiving every answer.
    pub(super) async fn run(&self, root: &mut Root, origin: &str, thread: usize) -> Pace {
        let Some(url) = Url::parse(origin).ok().and_then(|u| robots::robots_url(&u)) else {
            return Pace::idle();
        };
        let candidate = Candidate {
            url,
            path: "P".to_string(),
            via: Url::parse(origin).ok(),
            attempts: 0,
        };
        let chase = RobotsChase {
            owner: origin.to_string(),
            candidate,
            hop: 0,
        };
        self.chain(root, origin, chase, thread).await
    }

    /// Fetches a robots.txt URL of `origin`'s server on that server's budget, with the
    /// redirects that stay on it. A redirect to another origin is handed to that origin (its
    /// budget, its address, the guard's check of it) and this job ends; the answer at the end
    /// of the chain settles the robots.txt of `chase.owner`.
    pub(super) async fn chain(
        &self,
        root: &mut Root,
        origin: &str,
        chase: RobotsChase,
        thread: usize,
    ) -> Pace {
        let RobotsChase {
            owner,
            mut candidate,
            hop: first,
        } = chase;
        let mut pace = Pace::idle();
        let mut outcome: Option<(Policy, Verdict)> = None;
        // The final answer (status, decoded body), for the other workers of a shared crawl.
        let mut answer: Option<(u16, Vec<u8>)> = None;
        for hop in first..=robots::MAX_ROBOTS_REDIRECTS {
            // robots.txt is read whole and sent without a Referer.
            let read_all = |_: u16, _: &hyper::HeaderMap| BodyPlan::Read { keep: true };
            let request = Request {
                candidate: &candidate,
                referer: None,
                conditions: &[],
            };
            let get = self.net.get(self.desks, root, origin, request, read_all);
            let fetched = get.await;
            let mut f = match fetched {
                Ok(f) => f,
                Err(e) => {
                    root.with(|key| {
                        self.desks
                            .log_error(key, &candidate, &e, thread, Vec::new())
                    });
                    pace.answer = Answer::Overloaded;
                    break;
                }
            };
            let location = redirect_target(&f);
            // A Retry-After on robots.txt (a 503, say) is the server speaking too: it sticks.
            pace = root.with(|key| super::fetch::pace_after(self.desks, key, origin, &f));
            let kept = Kept {
                origin,
                c: &candidate,
                thread,
                notes: Vec::new(),
            };
            archive(self.desks, &self.keeping, root, &mut f, kept).await;
            root.with(|key| self.log_unfollowed_redirect(key, &candidate, &f));
            match location {
                Some(target) if hop < robots::MAX_ROBOTS_REDIRECTS => {
                    let next = child(&candidate, target, 'R');
                    if origin_of(&next.url) != origin {
                        let chase = RobotsChase {
                            owner,
                            candidate: next,
                            hop: hop + 1,
                        };
                        root.with(|key| {
                            self.desks
                                .with_sched(key, |s| s.hand_off_robots(chase, Clock::now()))
                        });
                        return pace;
                    }
                    candidate = next;
                    // Stay polite inside the redirect chain too.
                    let at = pace.end + pace.base;
                    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                }
                _ => {
                    let body = extract::decode_body(
                        f.header("content-encoding"),
                        &f.payload[..],
                        robots::MAX_ROBOTS_BYTES,
                    );
                    // A redirect chain longer than five hops counts as unreachable.
                    let status = if (300..400).contains(&f.status) {
                        500
                    } else {
                        f.status
                    };
                    let token = self.robots_token;
                    outcome = Some(Policy::from_answer(
                        status,
                        &body.bytes,
                        token,
                        Instant::now(),
                    ));
                    answer = Some((status, body.bytes.to_vec()));
                    break;
                }
            }
        }
        if let Some((status, body)) = &answer {
            root.with(|key| self.sitemaps.queue_sitemaps(key, &owner, *status, body));
        }
        root.with(|key| {
            self.desks.with_sched(key, |s| {
                if let (Some((status, body)), Some((_, Verdict::Rules))) = (answer, &outcome) {
                    s.share_robots(&owner, status, body);
                }
                s.settle_robots(&owner, origin, outcome, &mut pace, Clock::now());
            })
        });
        pace
    }

    /// A robots.txt redirect that cannot be followed (not http(s), or no URL at all) is said
    /// so in crawl.log; robots.txt then counts as unreachable.
    fn log_unfollowed_redirect(&self, key: &mut Key<Free>, parent: &Candidate, f: &Fetched) {
        match location_of(f) {
            Some(Location::Junk(text)) => self.desks.log_bad_location(key, parent, &text),
            Some(Location::Target(url)) if !matches!(url.scheme(), "http" | "https") => {
                let c = child(parent, url, 'R');
                self.desks
                    .log_unfetched(key, &c, status::OUT_OF_SCOPE, "scope:scheme");
            }
            _ => {}
        }
    }
}
