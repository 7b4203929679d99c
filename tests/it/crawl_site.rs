//! End-to-end: crawl a hand-written loopback test site with the real binary, then check the
//! output with the real tools (warcio, cdxj-indexer, pywb) and against the exact bytes the
//! test server sent and received.
//!
//! The tools come from the venv that `tools/test.sh` creates (`$ARCHIVER_VENV`, default
//! `<repo>/.venv`); without it these tests fail rather than skip.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::output::{files_ending, lines, names_in, read_warc, CdxjLine, LogLine, WarcRecord};
use common::pages::{self, ARCHIVED_200, DISCARDED, LARGE_LEN, NEVER, USER_AGENT};
use common::site::{Exchange, TestSite};
use common::tools::{http_get, run_archiver, run_with_timeout, tail, venv, Finished, Replay};
use common::{profile_toml, write_file, ProfileOptions};
use regex::Regex;

const MAX_BODY: usize = 1_000_000;
const CRAWL_DELAY: Duration = Duration::from_millis(200);
/// How late the test server's own end-of-answer stamp may be under load (see its use).
const STAMP_SLACK: Duration = Duration::from_millis(25);
const RETRY_AFTER: Duration = Duration::from_secs(1);

// ---- running checks: every failure is collected, not only the first ----------------------

/// Runs named checks one after the other and reports all failures at the end, so one run of
/// the (slow) crawl tells everything that is wrong.
struct Checks {
    failures: Vec<(String, String)>,
    passed: Vec<String>,
}

impl Checks {
    fn new() -> Checks {
        Checks {
            failures: Vec::new(),
            passed: Vec::new(),
        }
    }

    fn run(&mut self, name: &str, f: impl FnOnce()) {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(()) => self.passed.push(name.to_string()),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "(non-string panic)".to_string());
                self.failures.push((name.to_string(), msg));
            }
        }
    }

    /// Panics with every failure; keeps `dir` for inspection when something failed.
    fn finish(self, dir: tempfile::TempDir) {
        eprintln!("checks passed: {}", self.passed.join(", "));
        if self.failures.is_empty() {
            return;
        }
        let kept = dir.keep();
        let mut report = format!(
            "{} check(s) failed (output kept in {}):\n",
            self.failures.len(),
            kept.display()
        );
        for (name, msg) in &self.failures {
            report.push_str(&format!("\n=== {name} ===\n{msg}\n"));
        }
        panic!("{report}");
    }
}

// ---- one crawl of the test sites ------------------------------------------------------------

struct Crawl {
    dir: tempfile::TempDir,
    out: PathBuf,
    main: TestSite,
    off: TestSite,
    run: Finished,
}

/// Starts the main site (127.0.0.1) and the off-site one (127.0.0.2), writes a profile and
/// crawls from `seed_path` on the main site.
fn crawl_sites(name: &str, seed_path: &str, embeds_off_site: bool) -> Crawl {
    let off = TestSite::start(ip("127.0.0.2"), pages::offsite_site());
    let main = TestSite::start(ip("127.0.0.1"), pages::main_site(off.origin()));
    let dir = tempfile::Builder::new()
        .prefix("archiver-e2e-")
        .tempdir()
        .expect("temp dir");
    let seeds = [format!("{}{}", main.origin(), seed_path)];
    let profile = profile_toml(&ProfileOptions {
        name,
        seeds: &seeds,
        embeds_off_site,
    });
    let path = write_file(dir.path(), "profile.toml", &profile);
    let run = run_archiver(
        &["crawl", "--profile", path.to_str().expect("utf-8 path")],
        dir.path(),
        "archiver",
    );
    let out = dir.path().join("out");
    Crawl {
        dir,
        out,
        main,
        off,
        run,
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

impl Crawl {
    fn url(&self, target: &str) -> String {
        format!("{}{}", self.main.origin(), target)
    }
    fn off_url(&self, target: &str) -> String {
        format!("{}{}", self.off.origin(), target)
    }
    fn run_summary(&self) -> String {
        format!(
            "exit code {:?}\n--- stderr (tail) ---\n{}\n--- stdout (tail) ---\n{}",
            self.run.code,
            tail(&self.run.stderr, 3000),
            tail(&self.run.stdout, 1500)
        )
    }
}

/// Every record of every WARC in `out/warcs`, in file order.
fn all_records(out: &Path) -> Vec<WarcRecord> {
    files_ending(&out.join("warcs"), ".warc.gz")
        .iter()
        .flat_map(|p| read_warc(p))
        .collect()
}

/// Every line of every `out/indexes/*.cdxj`.
fn our_cdxj(out: &Path) -> Vec<CdxjLine> {
    let mut v = Vec::new();
    for p in files_ending(&out.join("indexes"), ".cdxj") {
        let text = std::fs::read_to_string(&p).expect("read cdxj");
        for l in lines(&text) {
            v.push(CdxjLine::parse(&l).unwrap_or_else(|e| panic!("{}: {e}: {l}", p.display())));
        }
    }
    v
}

fn crawl_log(out: &Path) -> Vec<LogLine> {
    let text = std::fs::read_to_string(out.join("crawl.log")).expect("read crawl.log");
    let mut bad = Vec::new();
    let mut v = Vec::new();
    for l in lines(&text) {
        match LogLine::parse(&l) {
            Ok(x) => v.push(x),
            Err(e) => bad.push(e),
        }
    }
    assert!(
        bad.is_empty(),
        "malformed crawl.log lines:\n{}",
        bad.join("\n")
    );
    v
}

/// Path and query of an absolute URL: the request-target the crawler sends.
fn target_of(url: &str) -> String {
    let u = url::Url::parse(url).unwrap_or_else(|e| panic!("bad URL {url}: {e}"));
    match u.query() {
        Some(q) => format!("{}?{}", u.path(), q),
        None => u.path().to_string(),
    }
}

fn head_of(block: &[u8]) -> &[u8] {
    match block.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(p) => &block[..p + 4],
        None => block,
    }
}

/// Where two byte strings first differ, for readable failures.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let i = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = i.saturating_sub(40);
    format!(
        "lengths {} vs {}, first difference at byte {i}:\n  WARC:   {:?}\n  server: {:?}",
        a.len(),
        b.len(),
        String::from_utf8_lossy(&a[from..(i + 40).min(a.len())]),
        String::from_utf8_lossy(&b[from..(i + 40).min(b.len())])
    )
}

// ---- the main end-to-end test ----------------------------------------------------------------

#[test]
fn crawl_of_the_test_site_is_archival_grade() {
    let _ = venv(); // fail early and clearly without the tools
    let c = crawl_sites("e2e-main", "/", false);
    let mut checks = Checks::new();

    checks.run("exit code 0", || {
        assert_eq!(c.run.code, Some(0), "{}", c.run_summary());
        assert!(!c.run.stderr.contains("panicked"), "{}", c.run_summary());
    });
    checks.run("output layout", || check_layout(&c));

    let mut records = Vec::new();
    checks.run("WARCs: one gzip member per record, readable", || {
        records = all_records(&c.out);
        check_stream_reading(&c.out, &records);
    });
    let main_log = c.main.exchanges();
    let off_log = c.off.exchanges();

    checks.run("warcio check", || check_warcio(&c.out, &records));
    checks.run("cdxj-indexer equals our CDXJ", || check_cdxj(&c.out));
    checks.run("pywb replays every HTML page", || {
        check_replay(&c, &main_log)
    });
    checks.run("WARC records hold the exact wire bytes", || {
        check_wire_bytes(&c, &records, &main_log, &off_log)
    });
    checks.run("WARC holds what it must and nothing else", || {
        check_warc_contents(&c, &records)
    });
    checks.run("server log: robots first, politeness, identity", || {
        check_server_log(&main_log, &off_log)
    });
    checks.run("crawl.log", || check_crawl_log(&c, &main_log, &records));

    drop(records);
    let Crawl { dir, .. } = c;
    checks.finish(dir);
}

fn check_layout(c: &Crawl) {
    let warcs = c.out.join("warcs");
    let indexes = c.out.join("indexes");
    for p in [&warcs, &indexes] {
        assert!(p.is_dir(), "{} missing; {}", p.display(), c.run_summary());
    }
    let names = names_in(&warcs);
    let open: Vec<&String> = names.iter().filter(|n| n.contains(".open")).collect();
    assert!(open.is_empty(), "WARCs left open: {open:?}");
    let re = Regex::new(r"^E2E-\d{17}-(\d{5})-\d+~.+\.warc\.gz$").expect("regex");
    let mut serials = Vec::new();
    for n in &names {
        let caps = re.captures(n).unwrap_or_else(|| {
            panic!("unexpected file in warcs/: {n:?} (PREFIX-TIMESTAMP-SERIAL-PID~HOST.warc.gz)")
        });
        serials.push(caps[1].parse::<u32>().expect("serial"));
    }
    assert!(
        names.len() >= 2,
        "expected rotation into several WARCs (warc_max_bytes = 200000, ~1 MB of incompressible \
         records), got {names:?}"
    );
    serials.sort();
    let expected: Vec<u32> = (0..names.len() as u32).collect();
    assert_eq!(serials, expected, "WARC serial numbers");
    let mut cdxj = names_in(&indexes);
    cdxj.retain(|n| n.ends_with(".cdxj"));
    let mut want: Vec<String> = names
        .iter()
        .map(|n| format!("{}.cdxj", n.trim_end_matches(".warc.gz")))
        .collect();
    want.sort();
    assert_eq!(cdxj, want, "one CDXJ per WARC, same base name");
    for f in ["crawl.log", "summary.txt"] {
        let p = c.out.join(f);
        assert!(p.is_file(), "{} missing", p.display());
    }
    assert!(
        std::fs::metadata(c.out.join("crawl.log"))
            .expect("crawl.log")
            .len()
            > 0,
        "crawl.log is empty"
    );
}

/// Reading each file as one stream (MultiGzDecoder, as most tools do) gives the very same
/// records as the member-by-member walk.
fn check_stream_reading(out: &Path, records: &[WarcRecord]) {
    for p in files_ending(&out.join("warcs"), ".warc.gz") {
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        let streamed = common::output::read_warc_stream(&p);
        let walked: Vec<&WarcRecord> = records.iter().filter(|r| r.file == name).collect();
        assert_eq!(
            streamed.len(),
            walked.len(),
            "{name}: record count differs by reader"
        );
        for ((h, block), r) in streamed.iter().zip(&walked) {
            assert!(
                h == &r.headers && block == &r.block,
                "{name} #{}: the readers disagree",
                r.index
            );
        }
    }
}

fn check_warcio(out: &Path, records: &[WarcRecord]) {
    let files = files_ending(&out.join("warcs"), ".warc.gz");
    assert!(!files.is_empty(), "no WARC to check");
    let mut cmd = Command::new(venv().join("bin/warcio"));
    cmd.arg("check").arg("-v").args(&files);
    let tmp = tempfile::tempdir().expect("tmp");
    let r = run_with_timeout(cmd, tmp.path(), "warcio", Duration::from_secs(120));
    // -v lists every record and its verdicts; keep the problems, naming the record's URI.
    let mut problems = Vec::new();
    let mut chunked_accepted = 0;
    let mut record_line = String::new();
    for line in r.stdout.lines() {
        if line.starts_with("  offset") {
            record_line = line.trim().to_string();
        } else if line.starts_with("    ") {
            let verdict = line.trim();
            if verdict != "digest pass" && verdict != "no digest to check" {
                let id = record_line.split_whitespace().nth(3).unwrap_or("");
                let record = records.iter().find(|x| x.get("warc-record-id") == Some(id));
                if record.is_some_and(|r| is_warcio_chunked_disagreement(r, verdict)) {
                    chunked_accepted += 1;
                    continue;
                }
                let uri = record
                    .map(|x| format!("{} {}", x.kind(), x.target()))
                    .unwrap_or_default();
                problems.push(format!("{record_line} [{uri}]: {verdict}"));
            }
        }
    }
    // warcio exits 1 for the accepted disagreements too; anything else must be clean.
    let exit_ok = r.code == Some(0) || (r.code == Some(1) && chunked_accepted > 0);
    assert!(
        exit_ok && problems.is_empty(),
        "warcio check failed (exit {:?}):\n{}\n{}",
        r.code,
        problems.join("\n"),
        tail(&r.stderr, 3000)
    );
    // The test site serves two chunked pages: both must have met the rule above.
    assert_eq!(
        chunked_accepted, 2,
        "expected the two chunked responses to be checked"
    );
}

/// warcio 1.8.1 digests the payload of a chunked response *with* its chunk framing
/// (warcio#74/#75); WARC 1.1 §6.3.2 defines the payload with the transfer coding removed, and
/// that is what we write. warcio's "payload digest failed" is accepted only for a response
/// whose headers say `Transfer-Encoding: chunked` and whose payload digest this test verifies
/// itself over the de-chunked body; the block digest must still pass.
fn is_warcio_chunked_disagreement(r: &WarcRecord, verdict: &str) -> bool {
    if r.kind() != "response" || !verdict.starts_with("payload digest failed") {
        return false;
    }
    let Some(head_end) = r.block.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&r.block[..head_end]).to_ascii_lowercase();
    let chunked = head
        .lines()
        .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
    let Some(body) = common::site::dechunk(&r.block[head_end + 4..]) else {
        return false;
    };
    let digest = {
        use sha1::Digest;
        format!(
            "sha1:{}",
            data_encoding::BASE32.encode(&sha1::Sha1::digest(&body))
        )
    };
    chunked && r.get("warc-payload-digest") == Some(digest.as_str())
}

fn check_cdxj(out: &Path) {
    let warcs = out.join("warcs");
    let names = names_in(&warcs);
    assert!(!names.is_empty(), "no WARC to index");
    let mut cmd = Command::new(venv().join("bin/cdxj-indexer"));
    cmd.args(&names).current_dir(&warcs);
    let tmp = tempfile::tempdir().expect("tmp");
    let r = run_with_timeout(cmd, tmp.path(), "cdxj-indexer", Duration::from_secs(120));
    assert_eq!(
        r.code,
        Some(0),
        "cdxj-indexer failed:\n{}",
        tail(&r.stderr, 3000)
    );
    let mut theirs = lines(&r.stdout);
    theirs.sort();

    // Each of our index files must be sorted on its own: pywb binary-searches it.
    for p in files_ending(&out.join("indexes"), ".cdxj") {
        let l = lines(&std::fs::read_to_string(&p).expect("read cdxj"));
        let mut sorted = l.clone();
        sorted.sort();
        assert_eq!(l, sorted, "{} is not sorted", p.display());
        let warc = p
            .file_name()
            .expect("name")
            .to_string_lossy()
            .replace(".cdxj", ".warc.gz");
        for line in &l {
            let parsed = CdxjLine::parse(line).expect("cdxj line");
            assert_eq!(
                parsed.str_field("filename"),
                warc,
                "{} indexes another WARC: {line}",
                p.display()
            );
        }
    }
    let mut ours: Vec<String> = our_cdxj(out).into_iter().map(|l| l.raw).collect();
    ours.sort();
    assert!(ours.len() >= 20, "only {} CDXJ lines", ours.len());

    // Same records (by file and offset) with the same fields and values...
    let by_place = |v: &[String]| -> BTreeMap<(String, String), CdxjLine> {
        v.iter()
            .map(|l| {
                let p = CdxjLine::parse(l).unwrap_or_else(|e| panic!("{e}: {l}"));
                ((p.str_field("filename"), p.str_field("offset")), p)
            })
            .collect()
    };
    let (a, b) = (by_place(&ours), by_place(&theirs));
    let mut diffs = Vec::new();
    for (place, t) in &b {
        let Some(o) = a.get(place) else {
            diffs.push(format!("missing from ours: {}", t.raw));
            continue;
        };
        let mut d = Vec::new();
        if o.key != t.key {
            d.push(format!("key {:?} != {:?}", o.key, t.key));
        }
        if o.timestamp != t.timestamp {
            d.push(format!("timestamp {} != {}", o.timestamp, t.timestamp));
        }
        let names: std::collections::BTreeSet<&String> =
            o.fields.keys().chain(t.fields.keys()).collect();
        for n in names {
            if o.fields.get(n) != t.fields.get(n) {
                d.push(format!(
                    "{n}: {:?} != {:?}",
                    o.fields.get(n),
                    t.fields.get(n)
                ));
            }
        }
        if !d.is_empty() {
            diffs.push(format!(
                "{} ({}): ours != cdxj-indexer's: {}",
                t.str_field("url"),
                place.1,
                d.join("; ")
            ));
        }
    }
    for (place, o) in &a {
        if !b.contains_key(place) {
            diffs.push(format!("only in ours: {}", o.raw));
        }
    }
    assert!(
        diffs.is_empty(),
        "CDXJ differs from cdxj-indexer's in {} record(s):\n{}",
        diffs.len(),
        diffs
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // ...and the very same lines.
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(
            o, t,
            "CDXJ line text differs from cdxj-indexer's (ours, then theirs)"
        );
    }
    assert_eq!(ours.len(), theirs.len());
}

/// The decoded body of the server's last answer to `target` when it was a 200 HTML page.
fn served_html<'a>(log: &'a [Exchange], target: &str) -> Option<&'a [u8]> {
    log.iter()
        .rev()
        .find(|e| e.request.target == target)
        .filter(|e| e.status == 200 && e.complete && is_html(head_of(&e.reply.wire)))
        .map(|e| e.reply.body.as_slice())
}

/// The `<title>` of an HTML page (pywb's error pages say what went wrong there).
fn title_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let Some(start) = text.find("<title>") else {
        return format!("{:?}", &text[..text.len().min(80)]);
    };
    let rest = &text[start + 7..];
    format!(
        "title {:?}",
        rest[..rest.find('<').unwrap_or(rest.len())].trim()
    )
}

fn is_html(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .to_ascii_lowercase()
        .contains("\r\ncontent-type: text/html")
}

fn check_replay(c: &Crawl, main_log: &[Exchange]) {
    let replay = Replay::start(&c.out, c.dir.path());
    let printed = replay.stdout();
    let browse = format!("http://127.0.0.1:{}/crawl/", replay.addr.port());
    assert!(
        printed.contains(&browse),
        "tools/replay.sh should print the URL to browse ({browse}*/URL), printed:\n{printed}"
    );
    let mut replayed = Vec::new();
    let mut errors = Vec::new();
    for line in our_cdxj(&c.out) {
        // HTML pages by what the server sent (not by our CDXJ's own mime and status fields,
        // which the cdxj-indexer check judges).
        let url = line.str_field("url");
        if !url.starts_with(&c.main.origin()) {
            continue;
        }
        let target = target_of(&url);
        let Some(expected) = served_html(main_log, &target) else {
            continue;
        };
        let path = format!("/crawl/{}id_/{}", line.timestamp, url);
        match http_get(replay.addr, &path) {
            Err(e) => errors.push(format!("GET {path}: {e}")),
            Ok(r) if r.status != 200 => errors.push(format!(
                "GET {path}: status {} ({})",
                r.status,
                title_of(&r.body)
            )),
            Ok(r) if r.body != expected => errors.push(format!(
                "GET {path}: replayed body differs from what the server sent: {}",
                first_difference(&r.body, expected)
            )),
            Ok(_) => replayed.push(target),
        }
    }
    assert!(
        errors.is_empty(),
        "{} replay failure(s):\n{}",
        errors.len(),
        errors
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    for must in [
        "/",
        "/gzip.html",
        "/chunked.html",
        "/gzip-chunked.html",
        "/dup-headers.html",
    ] {
        assert!(
            replayed.iter().any(|t| t == must),
            "{must} was not replayed (replayed: {replayed:?})"
        );
    }
    assert!(
        replayed.len() >= 15,
        "only {} pages replayed: {replayed:?}",
        replayed.len()
    );
}

/// Checks 5: every response block is exactly the bytes the server wrote for one exchange (a
/// prefix when truncated), and its request record is exactly the bytes the server received.
fn check_wire_bytes(
    c: &Crawl,
    records: &[WarcRecord],
    main_log: &[Exchange],
    off_log: &[Exchange],
) {
    assert!(!records.is_empty(), "no WARC records read");
    let main_host = c.main.addr.to_string();
    let off_host = c.off.addr.to_string();
    let by_id: HashMap<&str, &WarcRecord> = records
        .iter()
        .filter_map(|r| r.get("warc-record-id").map(|id| (id, r)))
        .collect();
    let mut used: HashSet<(bool, usize)> = HashSet::new();
    let mut paired_requests: HashSet<&str> = HashSet::new();
    let mut errors = Vec::new();
    for r in records.iter().filter(|r| r.kind() == "response") {
        let uri = r.target();
        let host = url::Url::parse(uri)
            .ok()
            .map(|u| format!("{}:{}", u.host_str().unwrap_or(""), u.port().unwrap_or(80)));
        let (is_main, log, ip) = match host.as_deref() {
            Some(h) if h == main_host => (true, main_log, "127.0.0.1"),
            Some(h) if h == off_host => (false, off_log, "127.0.0.2"),
            _ => {
                errors.push(format!("response record for an unknown host: {uri}"));
                continue;
            }
        };
        let target = target_of(uri);
        let truncated = r.get("warc-truncated").is_some();
        let candidates: Vec<&Exchange> =
            log.iter().filter(|e| e.request.target == target).collect();
        let found = candidates.iter().find(|e| {
            !used.contains(&(is_main, e.seq))
                && if truncated {
                    e.written.starts_with(&r.block)
                } else {
                    e.written == r.block
                }
        });
        let Some(ex) = found else {
            let detail = candidates
                .iter()
                .map(|e| first_difference(&r.block, &e.written))
                .collect::<Vec<_>>()
                .join("\n");
            errors.push(format!(
                "{} #{} response for {uri} (truncated: {truncated}) matches no bytes the server wrote for it ({} exchanges):\n{detail}",
                r.file,
                r.index,
                candidates.len()
            ));
            continue;
        };
        used.insert((is_main, ex.seq));
        if r.get("warc-ip-address") != Some(ip) {
            errors.push(format!(
                "{uri}: WARC-IP-Address {:?}, expected {ip}",
                r.get("warc-ip-address")
            ));
        }
        if r.get("warc-payload-digest").is_none() {
            errors.push(format!("{uri}: response without WARC-Payload-Digest"));
        }
        // The request record: linked either way by WARC-Concurrent-To.
        let rid = r.get("warc-record-id").unwrap_or("");
        let req = records.iter().find(|q| {
            q.kind() == "request"
                && (q.get("warc-concurrent-to") == Some(rid)
                    || r.get("warc-concurrent-to")
                        .is_some_and(|to| q.get("warc-record-id") == Some(to)))
        });
        match req {
            None => errors.push(format!(
                "{uri}: no request record linked by WARC-Concurrent-To"
            )),
            Some(q) => {
                paired_requests.insert(q.get("warc-record-id").unwrap_or(""));
                if q.block != ex.raw_request {
                    errors.push(format!(
                        "{uri}: request record differs from the bytes the server received: {}",
                        first_difference(&q.block, &ex.raw_request)
                    ));
                }
                if q.target() != uri {
                    errors.push(format!("request record target {} != {uri}", q.target()));
                }
            }
        }
    }
    for q in records.iter().filter(|q| q.kind() == "request") {
        let id = q.get("warc-record-id").unwrap_or("");
        if !paired_requests.contains(id) {
            errors.push(format!(
                "request record for {} without a response record (concurrent-to {:?} -> {:?})",
                q.target(),
                q.get("warc-concurrent-to"),
                q.get("warc-concurrent-to")
                    .and_then(|t| by_id.get(t))
                    .map(|x| x.kind())
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// What must be archived (once) and what must not be there at all.
fn check_warc_contents(c: &Crawl, records: &[WarcRecord]) {
    let mut errors = Vec::new();
    // Every file starts with a warcinfo record; every record is WARC/1.1.
    let mut first_of_file: BTreeMap<&str, &WarcRecord> = BTreeMap::new();
    for r in records {
        first_of_file.entry(r.file.as_str()).or_insert(r);
        if r.version != "1.1" {
            errors.push(format!(
                "{} #{}: WARC version {:?}",
                r.file, r.index, r.version
            ));
        }
    }
    for (f, r) in &first_of_file {
        if r.kind() != "warcinfo" || r.index != 0 {
            errors.push(format!("{f}: first record is {:?}, not warcinfo", r.kind()));
        }
    }
    let responses = |url: &str| -> Vec<&WarcRecord> {
        records
            .iter()
            .filter(|r| r.kind() == "response" && r.target() == url)
            .collect()
    };
    let status_of = |r: &WarcRecord| common::site::status_of(&r.block);
    for t in ARCHIVED_200 {
        let rs = responses(&c.url(t));
        if rs.len() != 1 || status_of(rs[0]) != 200 {
            errors.push(format!(
                "{t}: expected one 200 response record, got statuses {:?}",
                rs.iter().map(|r| status_of(r)).collect::<Vec<_>>()
            ));
        }
    }
    for (t, status) in [("/redirect", 301), ("/loop-a", 302), ("/loop-b", 302)] {
        let rs = responses(&c.url(t));
        if rs.len() != 1 || status_of(rs[0]) != status {
            errors.push(format!(
                "{t}: expected one {status} response record, got statuses {:?}",
                rs.iter().map(|r| status_of(r)).collect::<Vec<_>>()
            ));
        }
    }
    let forbidden: Vec<String> = DISCARDED
        .iter()
        .map(|(t, _)| c.url(t))
        .chain(NEVER.iter().map(|t| c.url(t)))
        .collect();
    for r in records {
        if forbidden.iter().any(|u| u == r.target()) {
            errors.push(format!(
                "{} record for {} must not exist (discarded or never fetched)",
                r.kind(),
                r.target()
            ));
        }
        if r.target().starts_with(&c.off.origin()) {
            errors.push(format!(
                "{} record for off-site {} (embeds_off_site = false)",
                r.kind(),
                r.target()
            ));
        }
    }
    // The large body: truncated at the limit, said so.
    if let Some(r) = responses(&c.url("/large.bin")).first() {
        let body_len = r.block.len() - head_of(&r.block).len();
        if r.get("warc-truncated") != Some("length") {
            errors.push(format!(
                "/large.bin: WARC-Truncated {:?}, expected \"length\"",
                r.get("warc-truncated")
            ));
        }
        if body_len == 0 || body_len > MAX_BODY || body_len >= LARGE_LEN {
            errors.push(format!(
                "/large.bin: {body_len} body bytes kept, expected 1..={MAX_BODY}"
            ));
        }
    }
    // Duplicate and mixed-case headers, in order, byte for byte.
    if let Some(r) = responses(&c.url("/dup-headers.html")).first() {
        let want: &[u8] = b"HTTP/1.1 200 OK\r\nx-lower: a\r\nX-Dup: 1\r\nContent-TYPE: text/html\r\nx-dup: 2\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2; Path=/\r\nX-MiXeD-CaSe:   spaced  value\r\ncontent-length: ";
        if !r.block.starts_with(want) {
            errors.push(format!(
                "/dup-headers.html: headers not kept as sent:\n{:?}",
                String::from_utf8_lossy(head_of(&r.block))
            ));
        }
    }
    // Chunked framing kept as sent.
    if let Some(r) = responses(&c.url("/chunked.html")).first() {
        let body = &r.block[head_of(&r.block).len()..];
        if !body.starts_with(b"A\r\n") || !body.ends_with(b"0\r\n\r\n") {
            errors.push("/chunked.html: chunked framing not kept in the WARC".to_string());
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

fn describe(e: &Exchange) -> String {
    format!("#{} {} (status {})", e.seq, e.request.target, e.status)
}

/// Checks 6: robots.txt first, never the forbidden URLs, Crawl-delay between requests, our
/// User-Agent, no Cookie, one request at a time.
fn check_server_log(main_log: &[Exchange], off_log: &[Exchange]) {
    let mut errors = Vec::new();
    assert!(!main_log.is_empty(), "the main site got no request");
    if main_log[0].request.target != "/robots.txt" {
        errors.push(format!(
            "first request was {}, not /robots.txt",
            describe(&main_log[0])
        ));
    }
    let robots = main_log
        .iter()
        .filter(|e| e.request.target == "/robots.txt")
        .count();
    if robots != 1 {
        errors.push(format!(
            "/robots.txt requested {robots} times (cached 24 h: once)"
        ));
    }
    for e in main_log {
        if NEVER.contains(&e.request.target.as_str()) {
            errors.push(format!("requested {} (must never be)", describe(e)));
        }
    }
    if !off_log.is_empty() {
        errors.push(format!(
            "the off-site host got requests (embeds_off_site = false): {:?}",
            off_log.iter().map(describe).collect::<Vec<_>>()
        ));
    }
    for e in main_log.iter().chain(off_log) {
        let r = &e.request;
        if r.method != "GET" {
            errors.push(format!("{}: method {}", describe(e), r.method));
        }
        let uas: Vec<&str> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
            .map(|(_, v)| v.as_str())
            .collect();
        if uas != [USER_AGENT] {
            errors.push(format!(
                "{}: User-Agent {uas:?}, expected {USER_AGENT:?}",
                describe(e)
            ));
        }
        if r.header("cookie").is_some() || r.header("cookie2").is_some() {
            errors.push(format!("{}: sent a Cookie header", describe(e)));
        }
        if r.header("host").is_none() {
            errors.push(format!("{}: no Host header", describe(e)));
        }
    }
    // One request at a time, and Crawl-delay from the end of one response to the next request.
    for w in main_log.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.arrived < a.finished {
            errors.push(format!(
                "{} arrived while {} was still being answered (overlap)",
                describe(b),
                describe(a)
            ));
            continue;
        }
        // After a reply the client cut short (the truncated large body) the server cannot tell
        // when the client stopped reading, so only the overlap is checked there.
        // The server stamps `finished` after its last write returns; on a loaded machine its
        // task can be scheduled that much later than the client saw the last byte, so the
        // measured gap may look shorter than the pause the crawler really kept. A few
        // milliseconds of slack keep the check about politeness, not about the scheduler.
        let gap = b.arrived - a.finished;
        if a.complete && gap + STAMP_SLACK < CRAWL_DELAY {
            errors.push(format!(
                "{} came {:?} after the end of {} (Crawl-delay: 0.2)",
                describe(b),
                gap,
                describe(a)
            ));
        }
    }
    // Retry-After: 1 honoured.
    let retry: Vec<&Exchange> = main_log
        .iter()
        .filter(|e| e.request.target == "/retry.html")
        .collect();
    match retry.as_slice() {
        [first, second, ..] => {
            if second.arrived - first.finished < RETRY_AFTER {
                errors.push(format!(
                    "/retry.html retried {:?} after the 503 (Retry-After: 1)",
                    second.arrived - first.finished
                ));
            }
        }
        _ => errors.push(format!(
            "/retry.html requested {} time(s); expected a 503 then a retry",
            retry.len()
        )),
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Checks 7: the crawl.log lines the crawl must have produced.
fn check_crawl_log(c: &Crawl, main_log: &[Exchange], records: &[WarcRecord]) {
    let log = crawl_log(&c.out);
    let mut errors = Vec::new();
    let for_uri = |u: &str| -> Vec<&LogLine> { log.iter().filter(|l| l.uri == u).collect() };
    let statuses = |u: &str| -> Vec<i64> { for_uri(u).iter().map(|l| l.status).collect() };
    let mut expect_status = |t: &str, url: String, status: i64| {
        if !statuses(&url).contains(&status) {
            errors.push(format!(
                "{t}: expected a line with status {status}, got {:?}",
                for_uri(&url).iter().map(|l| &l.raw).collect::<Vec<_>>()
            ));
        }
    };
    expect_status("/private/secret.html", c.url("/private/secret.html"), -9998);
    expect_status("/doc.pdf", c.url("/doc.pdf"), -9998);
    expect_status("off-site link", c.off_url("/offsite.html"), -5000);
    expect_status("/missing.html", c.url("/missing.html"), 404);
    expect_status("/redirect", c.url("/redirect"), 301);
    expect_status("/from-noindex.html", c.url("/from-noindex.html"), 200);
    expect_status("/private/ok.html", c.url("/private/ok.html"), 200);
    expect_status("/doc.pdf?x=1", c.url("/doc.pdf?x=1"), 200);

    // The seed and robots.txt.
    match for_uri(&c.url("/")).first() {
        Some(l) if l.status == 200 && l.hops == "-" && l.via == "-" => {
            if !l.mime.starts_with("text/html") {
                errors.push(format!("seed line MIME {:?}", l.mime));
            }
        }
        other => errors.push(format!(
            "seed: expected 200 with discovery path and via \"-\", got {other:?}"
        )),
    }
    match for_uri(&c.url("/robots.txt")).first() {
        Some(l) if l.status == 200 && l.hops.ends_with('P') => {}
        other => errors.push(format!(
            "robots.txt: expected 200 with discovery path ending in P, got {other:?}"
        )),
    }
    match for_uri(&c.url("/target.html")).first() {
        Some(l) if l.status == 200 && l.hops.ends_with('R') && l.via == c.url("/redirect") => {}
        other => errors.push(format!(
            "/target.html: expected 200 via /redirect with hop R, got {other:?}"
        )),
    }
    match for_uri(&c.url("/logo.png")).first() {
        Some(l) if l.status == 200 && l.hops.ends_with('E') => {}
        other => errors.push(format!("/logo.png: expected 200 with hop E, got {other:?}")),
    }
    match for_uri(&c.url("/level3.html")).first() {
        Some(l) if l.status == 200 && l.hops == "LLL" && l.via == c.url("/level2.html") => {}
        other => errors.push(format!(
            "/level3.html: expected 200, hops LLL via /level2.html, got {other:?}"
        )),
    }
    // Discarded pages: status kept, reason annotated, nothing in WARC or CDXJ.
    let cdxj_urls: HashSet<String> = catch_unwind(|| our_cdxj(&c.out))
        .unwrap_or_default()
        .into_iter()
        .map(|l| l.str_field("url"))
        .collect();
    for (t, why) in DISCARDED {
        let url = c.url(t);
        let ls = for_uri(&url);
        if !ls.iter().any(|l| l.status == 200 && l.has_annotation(why)) {
            errors.push(format!(
                "{t}: expected status 200 annotated {why:?}, got {:?}",
                ls.iter().map(|l| &l.raw).collect::<Vec<_>>()
            ));
        }
        if cdxj_urls.contains(&url) {
            errors.push(format!("{t}: discarded but has a CDXJ line"));
        }
        if records.iter().any(|r| r.target() == url) {
            errors.push(format!("{t}: discarded but has a WARC record"));
        }
    }
    // Truncated body annotated.
    let large = for_uri(&c.url("/large.bin"));
    if !large.iter().any(|l| {
        l.status == 200
            && l.annotations
                .iter()
                .any(|a| a.to_ascii_lowercase().contains("trunc"))
    }) {
        errors.push(format!(
            "/large.bin: expected a 200 line annotated as truncated, got {:?}",
            large.iter().map(|l| &l.raw).collect::<Vec<_>>()
        ));
    }
    // The retried 503 and its final 200.
    let retry = for_uri(&c.url("/retry.html"));
    let retried_503 = retry
        .iter()
        .any(|l| l.status == 503 && l.annotations.iter().any(|a| a.starts_with("retry:")));
    if !retried_503 || retry.last().map(|l| l.status) != Some(200) {
        errors.push(format!(
            "/retry.html: expected a 503 annotated retry:N then a 200, got {:?}",
            retry.iter().map(|l| &l.raw).collect::<Vec<_>>()
        ));
    }
    // The dropped connection: an error status or an annotation, and the crawl went on.
    let drop = for_uri(&c.url("/drop.html"));
    if drop.is_empty()
        || !drop
            .iter()
            .all(|l| l.status < 0 || !l.annotations.is_empty())
    {
        errors.push(format!(
            "/drop.html: expected negative status or annotation, got {:?}",
            drop.iter().map(|l| &l.raw).collect::<Vec<_>>()
        ));
    }
    // A redirect loop ends: each side once.
    for t in ["/loop-a", "/loop-b"] {
        let s = statuses(&c.url(t));
        if s != [302] {
            errors.push(format!(
                "{t}: expected exactly one line with 302, got {s:?}"
            ));
        }
    }
    // Never-linked-to pages are not even discovered.
    for l in &log {
        if l.uri.contains("/never-") {
            errors.push(format!("line for a nofollow link: {}", l.raw));
        }
    }
    // Every answer the server gave is logged with its status.
    for e in main_log {
        if e.request.target == "/drop.html" {
            continue;
        }
        let url = c.url(&e.request.target);
        if !statuses(&url).contains(&(e.status as i64)) {
            errors.push(format!(
                "server answered {} but crawl.log has {:?}",
                describe(e),
                statuses(&url)
            ));
        }
    }
    // A digest in crawl.log is the payload digest of the archived response.
    for l in &log {
        let retried = l.annotations.iter().any(|a| a.starts_with("retry:"));
        if l.digest == "-" || l.status <= 0 || retried {
            continue;
        }
        let archived: Vec<&str> = records
            .iter()
            .filter(|r| r.kind() == "response" && r.target() == l.uri)
            .filter_map(|r| r.get("warc-payload-digest"))
            .collect();
        if !archived.is_empty() && !archived.contains(&l.digest.as_str()) {
            errors.push(format!(
                "{}: digest {} but WARC has {archived:?}",
                l.uri, l.digest
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

// ---- embeds off site -------------------------------------------------------------------------

#[test]
fn embeds_off_site_fetches_the_offsite_image_after_its_robots_txt() {
    let c = crawl_sites("e2e-embeds", "/embeds.html", true);
    let mut checks = Checks::new();
    checks.run("exit code 0", || {
        assert_eq!(c.run.code, Some(0), "{}", c.run_summary())
    });
    let off_log = c.off.exchanges();
    checks.run("off-site requests: robots.txt, then the image only", || {
        let targets: Vec<&str> = off_log.iter().map(|e| e.request.target.as_str()).collect();
        assert_eq!(
            targets,
            ["/robots.txt", "/offsite.png"],
            "requests to 127.0.0.2"
        );
        for e in &off_log {
            assert_eq!(e.request.header("user-agent"), Some(USER_AGENT));
        }
    });
    checks.run("off-site image archived", || {
        let records = all_records(&c.out);
        for t in ["/robots.txt", "/offsite.png"] {
            let url = c.off_url(t);
            let r = records
                .iter()
                .find(|r| r.kind() == "response" && r.target() == url)
                .unwrap_or_else(|| panic!("no response record for {url}"));
            assert_eq!(r.get("warc-ip-address"), Some("127.0.0.2"), "{url}");
            let sent = &off_log
                .iter()
                .find(|e| e.request.target == t)
                .expect("exchange")
                .written;
            assert!(
                &r.block == sent,
                "{url}: {}",
                first_difference(&r.block, sent)
            );
        }
    });
    checks.run("crawl.log: embed fetched, link out of scope", || {
        let log = crawl_log(&c.out);
        let img = c.off_url("/offsite.png");
        assert!(
            log.iter()
                .any(|l| l.uri == img && l.status == 200 && l.hops.ends_with('E')),
            "no 200 line with hop E for {img}"
        );
        let link = c.off_url("/offsite.html");
        assert!(
            log.iter().any(|l| l.uri == link && l.status == -5000),
            "no -5000 line for {link}"
        );
    });
    let Crawl { dir, .. } = c;
    checks.finish(dir);
}

// ---- bad input -------------------------------------------------------------------------------

/// A valid profile with `line` inserted right after `[section]`; returns the text and the
/// 1-based number of the inserted line.
fn profile_with(section: &str, line: &str, replace_key: Option<&str>) -> (String, usize) {
    let seeds = ["http://127.0.0.1:9/".to_string()];
    let base = profile_toml(&ProfileOptions {
        name: "e2e-bad",
        seeds: &seeds,
        embeds_off_site: false,
    });
    let mut out = Vec::new();
    let mut at = 0;
    for l in base.lines() {
        if let Some(k) = replace_key {
            if l.starts_with(&format!("{k} =")) {
                continue;
            }
        }
        out.push(l.to_string());
        if l.trim() == format!("[{section}]") {
            out.push(line.to_string());
            at = out.len();
        }
    }
    assert!(at > 0, "no [{section}] in the profile");
    (out.join("\n") + "\n", at)
}

fn assert_refused(dir: &Path, file: &Path, key: &str, line: usize, args: &[&str], label: &str) {
    let r = run_archiver(args, dir, label);
    assert_eq!(r.code, Some(2), "{label}: exit code (stderr: {})", r.stderr);
    assert!(
        !r.stderr.contains("panicked"),
        "{label}: panic: {}",
        r.stderr
    );
    let name = file
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        r.stderr.contains(&name),
        "{label}: stderr does not name the file {name}: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains(key),
        "{label}: stderr does not name the key {key}: {}",
        r.stderr
    );
    let line_re = Regex::new(&format!(r"(?i)(line\s*{line}\b|:{line}(:|\b))")).expect("regex");
    assert!(
        line_re.is_match(&r.stderr),
        "{label}: stderr does not name line {line}: {}",
        r.stderr
    );
}

#[test]
fn a_broken_profile_is_refused_naming_file_line_and_key() {
    let dir = tempfile::tempdir().expect("tmp");
    let (unknown, line) = profile_with("scope", "colour_of_links = \"blue\"", None);
    let f = write_file(dir.path(), "unknown-key.toml", &unknown);
    let fs = f.to_str().expect("utf-8");
    assert_refused(
        dir.path(),
        &f,
        "colour_of_links",
        line,
        &["crawl", "--profile", fs],
        "crawl-unknown",
    );
    assert_refused(
        dir.path(),
        &f,
        "colour_of_links",
        line,
        &["profile", "check", fs],
        "check-unknown",
    );

    let (bad_value, line) = profile_with("scope", "max_hops = \"many\"", Some("max_hops"));
    let f = write_file(dir.path(), "bad-value.toml", &bad_value);
    let fs = f.to_str().expect("utf-8");
    assert_refused(
        dir.path(),
        &f,
        "max_hops",
        line,
        &["crawl", "--profile", fs],
        "crawl-bad-value",
    );
    assert!(
        !dir.path().join("out").exists(),
        "a refused profile must not start a crawl"
    );
}

#[test]
fn an_unreachable_seed_ends_the_crawl_with_a_negative_status() {
    let dir = tempfile::tempdir().expect("tmp");
    // A port that was just free on 127.0.0.1: connections are refused.
    let port = common::tools::free_port();
    let seed = format!("http://127.0.0.1:{port}/");
    let profile = profile_toml(&ProfileOptions {
        name: "e2e-unreachable",
        seeds: std::slice::from_ref(&seed),
        embeds_off_site: false,
    });
    let f = write_file(dir.path(), "profile.toml", &profile);
    let r = run_archiver(
        &["crawl", "--profile", f.to_str().expect("utf-8")],
        dir.path(),
        "archiver",
    );
    // No seed could be fetched: exit code 3 (issue 14), not a plain "finished".
    assert_eq!(
        r.code,
        Some(3),
        "exit code; stderr: {}",
        tail(&r.stderr, 3000)
    );
    assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
    let log = crawl_log(&dir.path().join("out"));
    assert!(
        log.iter().any(|l| l.uri.starts_with(&seed) && l.status < 0),
        "no negative status for {seed} in crawl.log:\n{}",
        log.iter()
            .map(|l| l.raw.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Nothing was fetched, so no response can be archived.
    let warcs = dir.path().join("out/warcs");
    if warcs.is_dir() {
        let records = all_records(&dir.path().join("out"));
        assert!(
            records.iter().all(|r| r.kind() != "response"),
            "a response record for an unreachable site"
        );
    }
}

#[test]
fn a_malformed_robots_txt_does_not_stop_the_crawl() {
    let site = TestSite::start(ip("127.0.0.1"), pages::garbage_robots_site());
    let dir = tempfile::tempdir().expect("tmp");
    let seed = format!("{}/", site.origin());
    // Also packed as a WACZ when it ends ([output] wacz = true).
    let profile = profile_toml(&ProfileOptions {
        name: "e2e-garbage-robots",
        seeds: std::slice::from_ref(&seed),
        embeds_off_site: false,
    })
    .replace(
        "warc_version = \"1.1\"\n",
        "warc_version = \"1.1\"\nwacz = true\n",
    );
    let f = write_file(dir.path(), "profile.toml", &profile);
    let r = run_archiver(
        &["crawl", "--profile", f.to_str().expect("utf-8")],
        dir.path(),
        "archiver",
    );
    assert_eq!(
        r.code,
        Some(0),
        "exit code; stderr: {}",
        tail(&r.stderr, 3000)
    );
    assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
    let log = site.exchanges();
    assert_eq!(
        log.first().map(|e| e.request.target.as_str()),
        Some("/robots.txt"),
        "robots.txt first"
    );
    // Whatever the crawler makes of it, the seed gets a crawl.log line and every line is
    // well-formed.
    let lines = crawl_log(&dir.path().join("out"));
    assert!(
        lines.iter().any(|l| l.uri == seed),
        "no crawl.log line for the seed {seed}"
    );
    let wacz = dir.path().join("out/e2e-garbage-robots.wacz");
    let mut zip =
        zip::ZipArchive::new(std::fs::File::open(&wacz).expect("the WACZ")).expect("a ZIP");
    assert!(zip.file_names().any(|n| n.starts_with("archive/")));
    let package: serde_json::Value =
        serde_json::from_reader(zip.by_name("datapackage.json").expect("datapackage.json"))
            .expect("JSON");
    assert_eq!(package["mainPageUrl"], seed.as_str(), "{package}");
}
