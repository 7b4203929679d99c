//! One crawl on three workers through a real PostgreSQL server (issue 13's acceptance test):
//! 300 loopback sites on 100 addresses (three host names per address, mapped with
//! `[resolve]`), a 1 s politeness floor; one worker is SIGKILLed a few seconds in. The other two
//! must finish the crawl, the server's own logs must show no two requests to one address closer
//! than the floor (across all workers), every page must be archived in some worker's WARC, and
//! the killed worker, started again, recovers its WARC and exits 0.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::output::files_ending;
use common::pg_cluster::PgCluster;
use common::site::{html, response, Exchange, Handler, Request, TestSite};
use common::tools::{run_archiver, venv};

const ADDRESSES: usize = 100;
const HOSTS_PER_ADDRESS: usize = 3;
/// Pages per site besides `/`: `/` links to each.
const PAGES: usize = 2;
const DELAY: Duration = Duration::from_secs(1);
/// What the server's clock and the scheduler's rounding may take off a gap.
const JITTER: Duration = Duration::from_millis(15);
const SITES_AT_ONCE: usize = 40;
/// The database password in the workers' profiles.
const SECRET: &str = "s3cr3t-Pa55";
const UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";

fn host(addr: usize, k: usize) -> String {
    format!("site-{addr:03}-{k}.test")
}

fn ip(addr: usize) -> IpAddr {
    format!("127.0.0.{}", 10 + addr).parse().expect("ip")
}

/// Every site: robots.txt allowing everything, `/` linking to `PAGES` pages.
fn handler() -> Handler {
    Arc::new(|req: &Request| {
        let host = req.header("host").unwrap_or("").to_string();
        match req.target.as_str() {
            "/robots.txt" => response(
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\nAllow: /\n",
            ),
            "/" => {
                let links: String = (1..=PAGES)
                    .map(|i| format!("<a href=\"/p/{i}\">page {i}</a> "))
                    .collect();
                html(format!("<html><body><h1>{host}</h1>{links}</body></html>").as_bytes())
            }
            t if t.starts_with("/p/") => html(
                format!("<html><body><p>{host} {t}: text of its own</p></body></html>").as_bytes(),
            ),
            _ => response("404 Not Found", &[("Content-Type", "text/plain")], b"no"),
        }
    })
}

fn profile(dir: &Path, worker: usize, seeds: &[String], resolve: &str, db: &str) -> PathBuf {
    let seeds: Vec<String> = seeds.iter().map(|s| format!("{s:?}")).collect();
    let text = format!(
        r#"[crawl]
name = "distributed-test"
seeds = [{seeds}]
sites_at_once = {SITES_AT_ONCE}

[identity]
user_agent = "{UA} worker-{worker}"

[politeness]
min_delay = 1.0
delay_factor = 0.0
max_delay = 1.0

[limits]
timeout = 10.0

[discovery]
# This test counts its requests: no /sitemap.xml (tests/sitemap_recrawl.rs tests sitemaps).
sitemaps = false

[output]
dir = "out{worker}"

[frontier]
database = "{db}"
# Short, so the killed worker's URLs come back soon; not so short that a survivor starved of
# CPU for a few seconds on a loaded machine is taken for dead (its pages would be asked twice).
lease_seconds = 6

{resolve}"#,
        seeds = seeds.join(", ")
    );
    let path = dir.join(format!("worker{worker}.toml"));
    std::fs::write(&path, text).expect("write profile");
    path
}

fn spawn(profile: &Path, dir: &Path, label: &str) -> Child {
    let out = std::fs::File::create(dir.join(format!("{label}.stdout"))).expect("stdout");
    let err = std::fs::File::create(dir.join(format!("{label}.stderr"))).expect("stderr");
    Command::new(env!("CARGO_BIN_EXE_archiver"))
        .arg("crawl")
        .arg("--profile")
        .arg(profile)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("start a worker")
}

/// Waits for a worker to exit (killing it after `limit`, which fails the test).
fn wait(child: &mut Child, dir: &Path, label: &str, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err =
                std::fs::read_to_string(dir.join(format!("{label}.stderr"))).unwrap_or_default();
            panic!("{label} still running after {limit:?}: killed\n{err}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn worker_of(e: &Exchange) -> usize {
    let ua = e.request.header("user-agent").unwrap_or("");
    ua.rsplit("worker-")
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// URLs of the 200 responses and revisits the CDXJ of an output folder lists.
fn archived(out: &Path) -> Vec<String> {
    let mut urls = Vec::new();
    for f in files_ending(&out.join("indexes"), ".cdxj") {
        for line in std::fs::read_to_string(&f).expect("cdxj").lines() {
            let Some(json) = line.splitn(3, ' ').nth(2) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(json).expect("cdxj json");
            if v["status"] == "200" {
                urls.push(v["url"].as_str().unwrap_or("").to_string());
            }
        }
    }
    urls
}

/// Every file under `dir` but the profiles (gzip members read through), checked for [`SECRET`].
fn never_shows_the_password(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    let mut looked = 0;
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_some_and(|e| e == "toml") {
                continue;
            }
            let raw = std::fs::read(&path).expect("read");
            let mut bytes = Vec::new();
            let gz = raw.starts_with(&[0x1f, 0x8b]);
            if !gz
                || std::io::Read::read_to_end(
                    &mut flate2::read::MultiGzDecoder::new(&raw[..]),
                    &mut bytes,
                )
                .is_err()
            {
                bytes = raw;
            }
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(SECRET),
                "{} shows the database password",
                path.display()
            );
            looked += 1;
        }
    }
    assert!(looked > 10, "only {looked} files looked at");
}

#[test]
fn three_workers_one_killed_finish_one_crawl_politely() {
    let pg = PgCluster::start(&["crawl"]);
    let sites: Vec<TestSite> = (0..ADDRESSES)
        .map(|a| TestSite::start(ip(a), handler()))
        .collect();
    let mut seeds = Vec::new();
    let mut resolve = String::from("[resolve]\n");
    let mut pages = HashSet::new();
    for (a, site) in sites.iter().enumerate() {
        for k in 0..HOSTS_PER_ADDRESS {
            let h = host(a, k);
            let origin = format!("http://{h}:{}", site.addr.port());
            seeds.push(format!("{origin}/"));
            resolve.push_str(&format!("\"{h}\" = \"{}\"\n", ip(a)));
            pages.insert(format!("{origin}/"));
            for i in 1..=PAGES {
                pages.insert(format!("{origin}/p/{i}"));
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // The test server trusts every local connection, so a password in the URL is never asked
    // for: it is there to prove that nothing the workers write or print shows it.
    let url = pg
        .url("crawl")
        .replacen("postgres@", &format!("postgres:{SECRET}@"), 1);
    let profiles: Vec<PathBuf> = (1..=3)
        .map(|w| profile(dir.path(), w, &seeds, &resolve, &url))
        .collect();
    let started = Instant::now();
    let mut workers: Vec<Child> = profiles
        .iter()
        .enumerate()
        .map(|(i, p)| spawn(p, dir.path(), &format!("worker{}", i + 1)))
        .collect();
    // Worker 3 dies a few seconds in, with requests in flight.
    std::thread::sleep(Duration::from_secs(4));
    workers[2].kill().expect("SIGKILL worker 3");
    let _ = workers[2].wait();
    let killed_at = started.elapsed();
    let limit = Duration::from_secs(120);
    for (i, w) in workers.iter_mut().enumerate().take(2) {
        let label = format!("worker{}", i + 1);
        let code = wait(w, dir.path(), &label, limit);
        let err =
            std::fs::read_to_string(dir.path().join(format!("{label}.stderr"))).unwrap_or_default();
        assert_eq!(code, Some(0), "{label} exit code\n{err}");
    }
    let finished_at = started.elapsed();
    // `archiver status` sees the crawl over, across workers.
    let st = run_archiver(
        &["status", "--profile", profiles[0].to_str().expect("utf-8")],
        dir.path(),
        "status",
    );
    assert_eq!(st.code, Some(0), "status: {}", st.stderr);
    assert!(st.stdout.contains("queued 0, in flight 0"), "{}", st.stdout);
    // The survivors wrote batches (worker 3 may have died before its first): each line says its last.
    let batches = st.stdout.lines().filter(|l| l.contains(" done, ")).count();
    assert!(batches >= 2, "last batches: {}", st.stdout);
    assert!(!st.stdout.contains(SECRET) && !st.stderr.contains(SECRET));
    // The killed worker comes back: it recovers its WARC and finds the crawl done.
    let out3 = dir.path().join("out3");
    let open_before = files_ending(&out3.join("warcs"), ".open").len();
    let again = run_archiver(
        &["crawl", "--profile", profiles[2].to_str().expect("utf-8")],
        dir.path(),
        "worker3-again",
    );
    assert_eq!(again.code, Some(0), "worker 3 again: {}", again.stderr);
    assert!(files_ending(&out3.join("warcs"), ".open").is_empty());

    // Every page archived in some worker's WARC.
    let mut got: HashSet<String> = HashSet::new();
    for w in 1..=3 {
        got.extend(archived(&dir.path().join(format!("out{w}"))));
    }
    let missing: Vec<&String> = pages.iter().filter(|p| !got.contains(*p)).collect();
    assert!(
        missing.is_empty(),
        "{} pages never archived: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );

    // The servers' own logs: no gap under the delay on any address, whoever sent it; pages
    // asked twice only where worker 3 had them in flight; the survivors' shares of the work.
    let mut per_worker: HashMap<usize, usize> = HashMap::new();
    let mut asked: HashMap<String, Vec<usize>> = HashMap::new();
    let mut robots: HashMap<String, usize> = HashMap::new();
    let mut worst = Duration::MAX;
    let mut total = 0;
    for site in &sites {
        let ex = site.exchanges();
        for pair in ex.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                b.arrived >= a.finished,
                "{}: two requests at once",
                site.addr
            );
            let gap = b.arrived.duration_since(a.finished);
            worst = worst.min(gap);
            assert!(
                gap + JITTER >= DELAY,
                "{}: {} (worker {}) came {gap:?} after the end of {} (worker {})",
                site.addr,
                b.request.target,
                worker_of(b),
                a.request.target,
                worker_of(a)
            );
        }
        for e in &ex {
            total += 1;
            *per_worker.entry(worker_of(e)).or_default() += 1;
            if e.request.target == "/robots.txt" {
                let host = e.request.header("host").unwrap_or("").to_string();
                *robots.entry(host).or_default() += 1;
            } else {
                let key = format!(
                    "{} {}",
                    e.request.header("host").unwrap_or(""),
                    e.request.target
                );
                asked.entry(key).or_default().push(worker_of(e));
            }
        }
    }
    let twice: Vec<(&String, &Vec<usize>)> = asked.iter().filter(|(_, w)| w.len() > 1).collect();
    eprintln!(
        "distributed: {total} requests ({per_worker:?} per worker), worker 3 killed at \
         {killed_at:?}, survivors done at {finished_at:?}, smallest gap {worst:?}, pages asked \
         twice {} ({open_before} open WARCs recovered)",
        twice.len()
    );
    for (page, by) in &twice {
        assert!(
            by.len() == 2 && by.contains(&3),
            "{page} asked by workers {by:?}"
        );
    }
    assert!(
        twice.len() <= SITES_AT_ONCE,
        "{} pages asked twice",
        twice.len()
    );
    // robots.txt is shared: one worker fetches a site's, the others read it from the
    // database (twice at most, where worker 3 died before it could tell the others).
    let robots_total: usize = robots.values().sum();
    let most = robots.values().copied().max().unwrap_or(0);
    eprintln!(
        "distributed: {robots_total} robots.txt requests for {} hosts",
        robots.len()
    );
    assert!(most <= 2, "a robots.txt asked {most} times");
    assert!(
        robots_total <= ADDRESSES * HOSTS_PER_ADDRESS + SITES_AT_ONCE,
        "{robots_total} robots.txt requests"
    );
    for w in [1, 2] {
        let n = per_worker.get(&w).copied().unwrap_or(0);
        assert!(n * 5 >= total, "worker {w} did {n} of {total} requests");
    }

    // The database password is in no log, report, state file or WARC of any worker.
    never_shows_the_password(dir.path());

    // Every WARC of every worker is valid.
    let warcs: Vec<PathBuf> = (1..=3)
        .flat_map(|w| files_ending(&dir.path().join(format!("out{w}/warcs")), ".warc.gz"))
        .collect();
    let check = Command::new(venv().join("bin/warcio"))
        .arg("check")
        .args(&warcs)
        .output()
        .expect("warcio check");
    assert!(
        check.status.success(),
        "warcio check: {}",
        String::from_utf8_lossy(&check.stdout)
    );
}
