//! The shared frontier alone: how fast PostgreSQL takes and hands out URLs with 10^6 queued.
//! A measurement, not a test; `tools/bench/distributed.sh` runs it against its own server.
//!
//! `cargo bench --bench pg_frontier -- URL N TAKE`:
//! 1. enqueue: N new URLs over 1,000 sites, seen-checked 20 at a time (a page's links, one
//!    query) then queued, a commit every 100 (as the crawl commits once per finished URL, with
//!    that URL's outlinks);
//! 2. take: TAKE URLs with the whole queue still there, as a worker takes them: lease the
//!    site's budget, pop its next URL, mark it done, give the budget back and commit (one
//!    statement), sites round-robin.
//!
//! Reported: URLs/s and CPU of this process per phase, database calls (statements) and round
//! trips per URL (the connection's heartbeat included).

use std::time::{Duration, Instant};

use archiver::frontier::postgres::{PostgresFrontier, PostgresSettings};
use archiver::frontier::sqlite::CrawlIdentity;
use archiver::frontier::{Candidate, Frontier, Lease};
use url::Url;

mod frontier_urls;
use frontier_urls::{cpu_s, origin, BURST, COMMIT_EVERY};

/// URL number `i` as `frontier_urls` makes it, without the page it was found on (as the
/// figures in docs/figures.md were measured).
fn candidate(i: u64) -> Result<(String, Candidate), String> {
    let (site, mut c) = frontier_urls::candidate(i)?;
    c.via = None;
    Ok((site, c))
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [url, n, take] = &args[..] else {
        return Err("usage: pg_frontier URL N TAKE".into());
    };
    let n: u64 = n.parse().map_err(|_| format!("not a count: {n}"))?;
    let take: u64 = take.parse().map_err(|_| format!("not a count: {take}"))?;
    let settings = PostgresSettings {
        url: url.clone(),
        worker: "bench~1".into(),
        lease: Duration::from_secs(60),
    };
    let id = CrawlIdentity {
        name: "pg-frontier-bench".into(),
        seeds: vec![origin(0) + "/"],
    };
    let mut f = PostgresFrontier::open(&settings, &id).map_err(|e| e.to_string())?;
    let err = |e: archiver::frontier::FrontierError| e.to_string();

    let (t, cpu0, calls0, trips0) = (Instant::now(), cpu_s(), f.calls(), f.round_trips());
    let mut i = 0;
    let mut next_note = (n / 10).max(1);
    while i < n {
        // One page's links: the next BURST URLs (all of one site), checked in one query.
        let page: Vec<(String, Candidate)> = (i..(i + BURST).min(n))
            .map(candidate)
            .collect::<Result<_, _>>()?;
        let urls: Vec<&Url> = page.iter().map(|(_, c)| &c.url).collect();
        let fresh = f.mark_seen_all(&urls).map_err(err)?;
        for ((site, c), new) in page.into_iter().zip(fresh) {
            if new {
                f.push(&site, c).map_err(err)?;
            }
            i += 1;
            if i % COMMIT_EVERY == 0 {
                f.commit().map_err(err)?;
            }
        }
        if i >= next_note {
            next_note += (n / 10).max(1);
            eprintln!(
                "  enqueued {i} ({:.0}/s)",
                i as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    f.commit().map_err(err)?;
    let enq = (
        t.elapsed().as_secs_f64(),
        cpu_s() - cpu0,
        f.calls() - calls0,
        f.round_trips() - trips0,
    );
    let sites = f.sites_with_work().map_err(err)?;
    let queued = f.total_queued();

    let (t, cpu0, calls0, trips0) = (Instant::now(), cpu_s(), f.calls(), f.round_trips());
    let mut taken = 0u64;
    'outer: loop {
        for site in &sites {
            if taken >= take {
                break 'outer;
            }
            if f.lease(site).map_err(err)? == Lease::Busy {
                return Err(format!("{site}: budget busy with one worker"));
            }
            let Some(c) = f.pop(site).map_err(err)? else {
                continue;
            };
            f.done(&c.url).map_err(err)?;
            f.give_back(site, Duration::ZERO, Duration::ZERO)
                .map_err(err)?;
            f.commit().map_err(err)?;
            taken += 1;
        }
    }
    let tk = (
        t.elapsed().as_secs_f64(),
        cpu_s() - cpu0,
        f.calls() - calls0,
        f.round_trips() - trips0,
    );
    let per = |x: u64, k: u64| x as f64 / k.max(1) as f64;
    println!("| measure | value |");
    println!("| --- | --- |");
    println!("| URLs queued | {queued} over {} sites |", sites.len());
    println!(
        "| enqueue (seen-check 20 at a time + push, commit every 100) | {:.0} URLs/s; {:.2} database calls, {:.2} round trips and {:.0} µs CPU (client) per URL |",
        n as f64 / enq.0,
        per(enq.2, n),
        per(enq.3, n),
        enq.1 * 1e6 / n as f64
    );
    println!(
        "| take with {queued} queued (lease + pop + done + give back, commit) | {:.0} URLs/s; {:.2} database calls, {:.2} round trips and {:.0} µs CPU (client) per URL |",
        taken as f64 / tk.0,
        per(tk.2, taken),
        per(tk.3, taken),
        tk.1 * 1e6 / taken.max(1) as f64
    );
    println!(
        "RESULT n={n} enqueue_per_s={:.0} take={taken} take_per_s={:.0}",
        n as f64 / enq.0,
        taken as f64 / tk.0
    );
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("pg_frontier bench: {e}");
        std::process::exit(1);
    }
}
