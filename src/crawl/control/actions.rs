//! Each order of the operator carried out: checked (a bad one changes nothing), saved in
//! `state/operator.json`, said in run.log, and handed to the scheduler — all within the request
//! that asked for it, so it is in force when the answer is sent.

use std::time::Duration;

use serde_json::{json, Value};
use url::Url;

use crate::crawl::engine::Crawler;
use crate::crawl::locks::{Free, Key};
use crate::crawl::operator::rules::{checked, Rule, SiteOrders};
use crate::crawl::operator::Refused;
use crate::crawl::sched::Clock;
use crate::frontier::Candidate;
use crate::scope::origin_of;

/// Most seeds one request may add.
const MAX_SEEDS: usize = 1000;
/// The longest delay an operator may ask for a site: a day (a longer one is a hold).
const MAX_DELAY: f64 = 86_400.0;

/// What the operator asked for.
#[derive(Debug)]
pub(super) enum Action {
    Pause,
    Resume,
    Seeds(Vec<String>),
    Exclude(Rule),
    Site(String, SiteAction),
    Report,
}

/// An order for one site.
#[derive(Debug)]
pub(super) enum SiteAction {
    Delay(f64),
    Hold,
    Release,
    Retire,
}

/// A site as the API names it (`http://host:port`, or `host[:port]` for http), as its origin.
pub(super) fn parse_origin(text: &str) -> Result<String, Refused> {
    let text = text.trim();
    let full = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let url = Url::parse(&full).map_err(|e| Refused::bad(format!("{text:?} is no site: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Refused::bad(format!("{text:?} is no http(s) site")));
    }
    Ok(origin_of(&url))
}

/// Carries out one order; the answer's JSON says what it did.
pub(super) fn act(
    crawler: &Crawler,
    key: &mut Key<Free>,
    action: Action,
) -> Result<Value, Refused> {
    match action {
        Action::Pause => set_paused(crawler, key, true),
        Action::Resume => set_paused(crawler, key, false),
        Action::Seeds(urls) => add_seeds(crawler, key, &urls),
        Action::Exclude(rule) => exclude(crawler, key, rule),
        Action::Site(origin, order) => order_site(crawler, key, &origin, order),
        Action::Report => {
            crawler.report_now(key);
            crawler.desks.runlog.line("operator: report written now");
            Ok(json!({ "report": crawler.profile.output_dir.join("report.json") }))
        }
    }
}

fn set_paused(crawler: &Crawler, key: &mut Key<Free>, paused: bool) -> Result<Value, Refused> {
    let (was, _) = crawler
        .operator
        .change(|o| Ok(std::mem::replace(&mut o.paused, paused)))?;
    let line = match (was, paused) {
        (false, true) => "operator: pause (requests in flight finish; none starts)",
        (true, false) => "operator: resume",
        (true, true) => "operator: pause (already paused)",
        (false, false) => "operator: resume (was not paused)",
    };
    crawler.desks.runlog.line(line);
    steer_sched(crawler, key, false);
    Ok(json!({ "paused": paused }))
}

fn add_seeds(crawler: &Crawler, key: &mut Key<Free>, urls: &[String]) -> Result<Value, Refused> {
    if urls.is_empty() || urls.len() > MAX_SEEDS {
        return Err(Refused::bad(format!(
            "give 1 to {MAX_SEEDS} URLs in \"urls\""
        )));
    }
    let mut parsed = Vec::with_capacity(urls.len());
    for u in urls {
        let url =
            Url::parse(u.trim()).map_err(|e| Refused::bad(format!("{u:?} is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(Refused::bad(format!("{u:?} is not an http(s) URL")));
        }
        parsed.push(url);
    }
    crawler.operator.change(|o| {
        for url in &parsed {
            if !o.seeds.iter().any(|s| s == url.as_str()) {
                o.seeds.push(url.to_string());
            }
        }
        Ok(())
    })?;
    crawler.operator.widen();
    let gate = crawler.gate();
    let mut queued = Vec::new();
    for url in parsed {
        let seed = Candidate::seed(url.clone());
        if crawler
            .desks
            .with_sched(key, |s| s.seed(seed, &gate, Clock::now()))
        {
            queued.push(url.to_string());
        }
        crawler.desks.runlog.line(&format!(
            "operator: seed {url} {}",
            if queued.last() == Some(&url.to_string()) {
                "queued"
            } else {
                "not queued (seen before, opted out or excluded)"
            }
        ));
    }
    Ok(json!({ "queued": queued }))
}

fn exclude(crawler: &Crawler, key: &mut Key<Free>, rule: Rule) -> Result<Value, Refused> {
    let rule = checked(rule).map_err(|e| Refused::bad(e.0))?;
    let text = rule.text();
    crawler.operator.change(|o| {
        if !o.exclusions.contains(&rule) {
            o.exclusions.push(rule.clone());
        }
        Ok(())
    })?;
    let dropped = steer_sched(crawler, key, true);
    crawler.desks.runlog.line(&format!(
        "operator: exclude {text}: {dropped} queued URLs dropped, new ones refused"
    ));
    Ok(json!({ "rule": text, "dropped": dropped }))
}

fn order_site(
    crawler: &Crawler,
    key: &mut Key<Free>,
    text: &str,
    order: SiteAction,
) -> Result<Value, Refused> {
    let origin = parse_origin(text)?;
    if !crawler.desks.with_sched(key, |s| s.knows(&origin))
        && !known_elsewhere(crawler, key, &origin)
    {
        return Err(Refused::not_found(format!(
            "{origin} is not a site of this crawl"
        )));
    }
    let answer = match order {
        SiteAction::Delay(d) => {
            if !d.is_finite() || !(0.0..=MAX_DELAY).contains(&d) {
                return Err(Refused::bad(format!(
                    "min_delay must be 0 to {MAX_DELAY} seconds"
                )));
            }
            let floor = delay_floor(crawler, key, &origin).as_secs_f64();
            let delay = d.max(floor);
            change_site(crawler, &origin, |s| s.min_delay = Some(delay))?;
            let line = format!(
                "operator: {origin}: at least {delay} s between requests{}",
                if delay > d {
                    " (the profile's floor)"
                } else {
                    ""
                }
            );
            crawler.desks.runlog.line(&line);
            json!({ "site": origin, "min_delay": delay })
        }
        SiteAction::Hold => {
            change_site(crawler, &origin, |s| s.held = true)?;
            crawler
                .desks
                .runlog
                .line(&format!("operator: {origin}: held"));
            json!({ "site": origin, "held": true })
        }
        SiteAction::Release => {
            change_site(crawler, &origin, |s| s.held = false)?;
            crawler
                .desks
                .runlog
                .line(&format!("operator: {origin}: released"));
            json!({ "site": origin, "held": false })
        }
        SiteAction::Retire => {
            crawler.operator.change(|o| {
                o.sites.remove(&origin);
                if !o.retired.contains(&origin) {
                    o.retired.push(origin.clone());
                }
                Ok(())
            })?;
            let dropped = steer_sched(crawler, key, true);
            crawler.desks.runlog.line(&format!(
                "operator: {origin}: retired ({dropped} queued URLs dropped)"
            ));
            return Ok(json!({ "site": origin, "retired": true, "dropped": dropped }));
        }
    };
    steer_sched(crawler, key, false);
    crawler
        .desks
        .with_sched(key, |s| s.site_back(&origin, Clock::now()));
    Ok(answer)
}

/// Changes one site's orders (an entry with nothing left is removed).
fn change_site(
    crawler: &Crawler,
    origin: &str,
    f: impl Fn(&mut SiteOrders),
) -> Result<(), Refused> {
    crawler.operator.change(|o| {
        let site = o.sites.entry(origin.to_string()).or_default();
        f(site);
        if *site == SiteOrders::default() {
            o.sites.remove(origin);
        }
        Ok(())
    })?;
    Ok(())
}

/// The shortest pause the profile allows for a site (its floor off loopback is 5 s).
fn delay_floor(crawler: &Crawler, key: &mut Key<Free>, origin: &str) -> Duration {
    crawler.desks.with_sched(key, |s| s.delay_floor(origin))
}

/// A site this worker never met, but the crawl did (another worker's, or an earlier run's).
fn known_elsewhere(crawler: &Crawler, key: &mut Key<Free>, origin: &str) -> bool {
    let host = crate::logs::report::host_key(origin);
    crawler
        .desks
        .with_journal(key, |j| j.stats.hosts.contains_key(&host))
        || crawler.profile.seeds.iter().any(|s| origin_of(s) == origin)
}

/// Hands the scheduler the orders now in force and, after a new exclusion or retired site
/// (`drop`), drops the queued URLs they cover; how many.
pub(in crate::crawl) fn steer_sched(crawler: &Crawler, key: &mut Key<Free>, drop: bool) -> usize {
    let dropped = crawler.desks.with_sched(key, |s| {
        s.steer(crawler.operator.steering());
        if drop {
            s.drop_covered(std::time::Instant::now())
        } else {
            0
        }
    });
    crawler.desks.wake.notify_one();
    dropped
}
