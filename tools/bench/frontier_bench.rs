//! Frontier benchmark: how fast the durable frontier takes and gives back URLs, and what it costs
//! in disk and memory, at crawl sizes (10^6, 10^7 URLs). A measurement, not a test.
//!
//! `cargo bench --bench frontier -- N [--dir FOLDER]` (or `tools/bench/frontier.sh N`):
//! 1. enqueue: N new URLs spread over 1,000 sites, each first checked against the seen-set, in
//!    bursts of 20 per site (the links of one page), one in five an embed; after every tenth URL
//!    one more seen-check of an earlier URL (a duplicate hit, which must answer "seen");
//!    a commit every 100 URLs, as the crawl commits once per finished URL;
//! 2. reopen: drop the frontier and open it again (counters are loaded, not counted);
//! 3. pop: the sites round-robin, one URL at a time, each popped then marked done, a commit
//!    every 100 URLs, until nothing is queued.
//!
//!
//! `cargo bench --bench frontier -- --crawl N`: the crawl's own pattern instead, N URLs: pop one
//! URL (sites round-robin), seen-check and queue the 5 new links its page found, mark it done;
//! committed twice per URL (after the links and at the job's end: the crawl before group
//! commits), once per URL, or once per group of 4 or 16 URLs (`crawl/commits.rs`). Reported: CPU
//! microseconds and bytes written per URL for each.
//!
//! Reported: URLs/s of each phase, the database size on disk, and the peak resident memory of
//! the process (VmHWM from /proc/self/status) after the enqueue (all N queued) and at the end.

use std::path::{Path, PathBuf};
use std::time::Instant;

use archiver::frontier::sqlite::{CrawlIdentity, SqliteFrontier};
use archiver::frontier::{Candidate, Frontier};
use url::Url;

mod frontier_urls;
use frontier_urls::{candidate, cpu_s, mix, origin, COMMIT_EVERY, SITES};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Bytes this process handed to write calls so far (`wchar` of /proc/self/io).
fn written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Size of the database and its WAL.
fn db_bytes(dir: &Path) -> u64 {
    ["frontier.sqlite", "frontier.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// "1000000", "1_000_000", "1e6" or "10^6".
fn parse_count(s: &str) -> Option<u64> {
    let s = s.replace('_', "");
    if let Some((m, e)) = s.split_once(['e', 'E']) {
        return Some(m.parse::<u64>().ok()? * 10u64.checked_pow(e.parse().ok()?)?);
    }
    if let Some((b, e)) = s.split_once('^') {
        return b.parse::<u64>().ok()?.checked_pow(e.parse().ok()?);
    }
    s.parse().ok()
}

struct Args {
    n: u64,
    dir: Option<PathBuf>,
    crawl: bool,
}

fn args() -> Result<Args, String> {
    let mut n = None;
    let mut dir = None;
    let mut crawl = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--crawl" => crawl = true,
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a folder")?)),
            _ => n = Some(parse_count(&a).ok_or(format!("not a URL count: {a}"))?),
        }
    }
    Ok(Args {
        n: n.unwrap_or(1_000_000),
        dir,
        crawl,
    })
}

fn fail(what: &str) -> impl FnOnce(archiver::frontier::FrontierError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Links found on each page of the crawl pattern.
const LINKS_PER_PAGE: u64 = 5;

/// The crawl pattern (see the module documentation) with a commit every `group` URLs (0: twice
/// per URL). Returns CPU seconds and bytes written.
fn crawl_pattern(dir: &Path, n: u64, group: u64) -> Result<(f64, u64), String> {
    let id = CrawlIdentity {
        name: "frontier-bench".into(),
        seeds: vec![origin(0) + "/"],
    };
    let mut f = SqliteFrontier::open(dir, &id).map_err(|e| e.to_string())?;
    let parse = |s: &str| Url::parse(s).map_err(|e| format!("{s}: {e}"));
    let sites: Vec<String> = (0..SITES).map(origin).collect();
    for site in &sites {
        let seed = Candidate::seed(parse(&format!("{site}/"))?);
        f.mark_seen(&seed.url).map_err(fail("seen-check"))?;
        f.push(site, seed).map_err(fail("push"))?;
    }
    f.commit().map_err(fail("commit"))?;
    let (cpu0, w0) = (cpu_s(), written());
    let mut next_link = 0u64;
    for i in 0..n {
        let site = &sites[(i % SITES) as usize];
        let Some(page) = f.pop(site).map_err(fail("pop"))? else {
            return Err(format!("{site} ran out of URLs"));
        };
        let mut links = Vec::new();
        for _ in 0..LINKS_PER_PAGE {
            let h = mix(next_link);
            next_link += 1;
            links.push(parse(&format!("{site}/s{}/{h:016x}.html", h % 50))?);
        }
        let refs: Vec<&Url> = links.iter().collect();
        let new = f.mark_seen_all(&refs).map_err(fail("seen-check"))?;
        for (url, new) in links.iter().zip(new) {
            if new {
                let c = Candidate {
                    url: url.clone(),
                    path: format!("{}L", page.path),
                    via: Some(page.url.clone()),
                    attempts: 0,
                };
                f.push(site, c).map_err(fail("push"))?;
            }
        }
        if group == 0 {
            f.commit().map_err(fail("commit"))?;
        }
        f.done(&page.url).map_err(fail("done"))?;
        if group == 0 || (i + 1).is_multiple_of(group) {
            f.commit().map_err(fail("commit"))?;
        }
    }
    f.commit().map_err(fail("commit"))?;
    Ok((cpu_s() - cpu0, written() - w0))
}

fn run_crawl_pattern(n: u64) -> Result<(), String> {
    println!("frontier bench, the crawl's pattern: {n} URLs over {SITES} sites, {LINKS_PER_PAGE} new links each");
    println!();
    println!("| commits | CPU per URL | written per URL |");
    println!("| --- | ---: | ---: |");
    for (label, group) in [
        ("2 per URL (before)", 0),
        ("1 per URL", 1),
        ("1 per 4 URLs", 4),
        ("1 per 16 URLs", 16),
    ] {
        let tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
        let (cpu, w) = crawl_pattern(&tmp.path().join("state"), n, group)?;
        println!(
            "| {label} | {:.1} µs | {:.1} KiB |",
            cpu / n as f64 * 1e6,
            w as f64 / n as f64 / 1024.0
        );
        println!(
            "RESULT crawl group={group} cpu_us_per_url={:.1} written_kib_per_url={:.1}",
            cpu / n as f64 * 1e6,
            w as f64 / n as f64 / 1024.0
        );
    }
    Ok(())
}

fn run() -> Result<(), String> {
    let args = args()?;
    let n = args.n;
    if args.crawl {
        return run_crawl_pattern(n);
    }
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
            tmp.path().join("state")
        }
    };
    let id = CrawlIdentity {
        name: "frontier-bench".into(),
        seeds: vec![origin(0) + "/"],
    };
    println!(
        "frontier bench: {n} URLs over {SITES} sites, state in {}",
        dir.display()
    );
    let mut f = SqliteFrontier::open(&dir, &id).map_err(|e| e.to_string())?;

    // 1. enqueue with seen-checks
    let t = Instant::now();
    let (cpu0, w0) = (cpu_s(), written());
    let mut pushed = 0u64;
    let mut dup_checks = 0u64;
    for i in 0..n {
        let (site, c) = candidate(i)?;
        if f.mark_seen(&c.url).map_err(fail("seen-check"))? {
            f.push(&site, c).map_err(fail("push"))?;
            pushed += 1;
        }
        if i % 10 == 9 {
            let (_, old) = candidate(mix(i) % i)?;
            if f.mark_seen(&old.url).map_err(fail("seen-check"))? {
                return Err(format!("{} was seen but the seen-set says new", old.url));
            }
            dup_checks += 1;
        }
        if i % COMMIT_EVERY == COMMIT_EVERY - 1 {
            f.commit().map_err(fail("commit"))?;
        }
        if i > 0 && i % (n / 10).max(1) == 0 {
            eprintln!(
                "  enqueued {i} ({:.0} URLs/s so far)",
                i as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    f.commit().map_err(fail("commit"))?;
    let enqueue_s = t.elapsed().as_secs_f64();
    let (enqueue_cpu, enqueue_w) = (cpu_s() - cpu0, written() - w0);
    let queued = f.total_queued();
    let size_full = db_bytes(&dir);
    let hwm_full = status_kib("VmHWM:");

    // 2. reopen
    drop(f);
    let t = Instant::now();
    let mut f = SqliteFrontier::open(&dir, &id).map_err(|e| e.to_string())?;
    let reopen_s = t.elapsed().as_secs_f64();
    if f.total_queued() != queued {
        return Err(format!(
            "reopened with {} queued, not {queued}",
            f.total_queued()
        ));
    }

    // 3. pop round-robin
    let t = Instant::now();
    let (cpu0, w0) = (cpu_s(), written());
    let mut popped = 0u64;
    while f.total_queued() > 0 {
        for site in f.sites_with_work().map_err(fail("sites"))? {
            if let Some(c) = f.pop(&site).map_err(fail("pop"))? {
                f.done(&c.url).map_err(fail("done"))?;
                popped += 1;
                if popped.is_multiple_of(COMMIT_EVERY) {
                    f.commit().map_err(fail("commit"))?;
                }
            }
        }
    }
    f.commit().map_err(fail("commit"))?;
    let pop_s = t.elapsed().as_secs_f64();
    let (pop_cpu, pop_w) = (cpu_s() - cpu0, written() - w0);
    if popped != pushed {
        return Err(format!("popped {popped} URLs, but {pushed} were queued"));
    }
    let hwm_end = status_kib("VmHWM:");
    let size_end = db_bytes(&dir);
    drop(f);

    println!();
    println!("| measure | value |");
    println!("| --- | --- |");
    println!("| URLs enqueued (new) | {pushed} |");
    println!(
        "| seen-checks (incl. {dup_checks} duplicate hits) | {} |",
        n + dup_checks
    );
    println!(
        "| enqueue + seen-check | {enqueue_s:.1} s, {:.0} URLs/s ({:.0} seen-checks/s) |",
        pushed as f64 / enqueue_s,
        (n + dup_checks) as f64 / enqueue_s
    );
    println!(
        "| enqueue CPU, written | {enqueue_cpu:.1} s, {:.0} MiB |",
        mib(enqueue_w)
    );
    println!(
        "| database on disk, {queued} queued | {:.0} MiB ({:.0} bytes/URL) |",
        mib(size_full),
        size_full as f64 / pushed.max(1) as f64
    );
    println!(
        "| peak RSS with {queued} queued | {:.1} MiB |",
        hwm_full as f64 / 1024.0
    );
    println!("| reopen | {reopen_s:.3} s |");
    println!(
        "| pop + done | {pop_s:.1} s, {:.0} URLs/s |",
        popped as f64 / pop_s
    );
    println!(
        "| pop CPU, written | {pop_cpu:.1} s, {:.0} MiB |",
        mib(pop_w)
    );
    println!(
        "| database on disk, all popped | {:.0} MiB |",
        mib(size_end)
    );
    println!(
        "| peak RSS at the end | {:.1} MiB |",
        hwm_end as f64 / 1024.0
    );
    println!(
        "RESULT n={n} enqueue_per_s={:.0} pop_per_s={:.0} db_mib={:.0} peak_rss_mib={:.1} \
         reopen_s={reopen_s:.3} enqueue_cpu_s={enqueue_cpu:.1} pop_cpu_s={pop_cpu:.1} \
         enqueue_written_mib={:.0} pop_written_mib={:.0}",
        pushed as f64 / enqueue_s,
        popped as f64 / pop_s,
        mib(size_full),
        hwm_end as f64 / 1024.0,
        mib(enqueue_w),
        mib(pop_w)
    );
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("frontier bench: {e}");
        std::process::exit(1);
    }
}
