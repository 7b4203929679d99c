//! The control endpoint of a running crawl, end to end: loopback sites served by the tests'
//! own server (which logs when every request arrived), the crawler binary, and the endpoint
//! found from `state/control.json` as an operator's tools would find it.
//!
//! Windows of silence (a pause, a hold) are asserted on what the servers logged; nothing here
//! asserts how fast anything went.

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::output::{crawl_log, LogLine};
use common::site::{endless_site, Handler, TestSite};
use common::tools::{run_archiver, send_signal, start_crawl, wait_until};
use serde_json::{json, Value};

const UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";
/// Long enough for anything on a loaded machine; never a measure of speed.
const PATIENCE: Duration = Duration::from_secs(90);

/// An endless site: `/p/N` links to `/p/N+1` and to `/trap/N`; every page answers.
fn endless() -> Handler {
    endless_site(|n| format!("<a href=/p/{}>next</a> <a href=/trap/{n}>trap</a>", n + 1))
}

fn sites(n: usize) -> Vec<TestSite> {
    (0..n)
        .map(|i| TestSite::start(IpAddr::from([127, 0, 0, 20 + i as u8]), endless()))
        .collect()
}

fn profile(dir: &Path, seeds: &[String], extra: &str) -> PathBuf {
    let seeds: Vec<String> = seeds.iter().map(|s| format!("{s:?}")).collect();
    let text = format!(
        r#"[crawl]
name = "control-test"
seeds = [{seeds}]
sites_at_once = 16

[identity]
user_agent = "{UA}"

[scope]
max_hops = 100000

[politeness]
min_delay = 0.2
delay_factor = 0.0
max_delay = 5.0

[limits]
timeout = 10.0

[browser]
render = "never"

[traps]
enabled = false

[output]
dir = "out"
{extra}"#,
        seeds = seeds.join(", ")
    );
    let path = dir.join("profile.toml");
    std::fs::write(&path, text).expect("write profile");
    path
}

/// The endpoint as `state/control.json` names it.
#[derive(Clone, Debug, PartialEq)]
struct Endpoint {
    authority: String,
    token: String,
}

/// Waits for a `control.json` whose token is not `old`'s.
fn endpoint(out: &Path, old: Option<&Endpoint>) -> Endpoint {
    let file = out.join("state").join("control.json");
    let mut found = None;
    let ok = wait_until(PATIENCE, || {
        let Ok(text) = std::fs::read_to_string(&file) else {
            return false;
        };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            return false;
        };
        let ep = Endpoint {
            authority: v["url"]
                .as_str()
                .unwrap_or("")
                .trim_start_matches("http://")
                .to_string(),
            token: v["token"].as_str().unwrap_or("").to_string(),
        };
        let fresh = old.is_none_or(|o| o.token != ep.token) && !ep.token.is_empty();
        if fresh {
            found = Some(ep);
        }
        fresh
    });
    assert!(ok, "no control.json in {}", out.display());
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode, 0o600,
        "control.json must be readable by its owner alone"
    );
    found.unwrap()
}

/// One request: the status and the body.
fn call(
    ep: &Endpoint,
    method: &str,
    path: &str,
    body: &[u8],
    token: Option<&str>,
) -> (u16, String) {
    let mut s = TcpStream::connect(&ep.authority).expect("connect to the control endpoint");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        ep.authority,
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    // A body over the limit may be refused before it is all read: the rest cannot be sent.
    let _ = s.write_all(body);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

fn get(ep: &Endpoint, path: &str) -> (u16, String) {
    call(ep, "GET", path, b"", Some(&ep.token))
}

fn post(ep: &Endpoint, path: &str, body: Value) -> Value {
    let (status, text) = call(
        ep,
        "POST",
        path,
        body.to_string().as_bytes(),
        Some(&ep.token),
    );
    assert_eq!(status, 200, "POST {path} {body}: {text}");
    serde_json::from_str(&text).expect("JSON answer")
}

fn status(ep: &Endpoint) -> Value {
    let (code, text) = get(ep, "/api/status");
    assert_eq!(code, 200, "{text}");
    serde_json::from_str(&text).expect("status JSON")
}

fn site_path(site: &TestSite, verb: &str) -> String {
    let origin: String = site.origin().bytes().map(|b| format!("%{b:02X}")).collect();
    format!("/api/sites/{origin}/{verb}")
}

/// Arrival times of the requests a site got after `t`, with their paths.
fn after(site: &TestSite, t: Instant) -> Vec<(Instant, String)> {
    (site.exchanges().into_iter())
        .filter(|e| e.arrived > t)
        .map(|e| (e.arrived, e.path().to_string()))
        .collect()
}

/// The crawler, killed if the test fails before it stops it.
struct Crawl(Child);

impl Drop for Crawl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(dir: &Path, profile: &Path, label: &str) -> Crawl {
    let err = std::fs::File::create(dir.join(format!("{label}.stderr"))).unwrap();
    Crawl(start_crawl(
        dir,
        &profile.to_string_lossy(),
        Stdio::from(err),
    ))
}

/// The bad requests: each refused with a 4xx and a JSON message, none changing anything.
fn refuses_what_it_should(ep: &Endpoint, known: &TestSite) {
    for token in [None, Some("wrong"), Some("")] {
        let (code, text) = call(ep, "GET", "/api/status", b"", token);
        assert_eq!(code, 401, "{token:?}: {text}");
        let (code, _) = call(ep, "POST", "/api/pause", b"", token);
        assert_eq!(code, 401);
        let (code, _) = call(ep, "GET", "/metrics", b"", token);
        assert_eq!(code, 401);
    }
    let near = format!("{}x", ep.token);
    assert_eq!(call(ep, "GET", "/api/status", b"", Some(&near)).0, 401);
    let big = vec![b' '; 65 * 1024];
    let bad: Vec<(&str, String, Vec<u8>, u16)> = vec![
        ("POST", "/api/exclusions".into(), b"{not json".to_vec(), 400),
        (
            "POST",
            "/api/exclusions".into(),
            br#"{"regex": "(unclosed"}"#.to_vec(),
            400,
        ),
        (
            "POST",
            "/api/exclusions".into(),
            br#"{"regex": "a", "surt_prefix": "b"}"#.to_vec(),
            400,
        ),
        (
            "POST",
            "/api/exclusions".into(),
            br#"{"surt_prefix": "ftp://x/"}"#.to_vec(),
            400,
        ),
        ("POST", "/api/exclusions".into(), big.clone(), 413),
        (
            "POST",
            "/api/seeds".into(),
            br#"{"urls": ["not a url"]}"#.to_vec(),
            400,
        ),
        (
            "POST",
            "/api/seeds".into(),
            br#"{"urls": "http://a/"}"#.to_vec(),
            400,
        ),
        (
            "POST",
            "/api/sites/http%3A%2F%2F127.0.0.99%3A1/delay".into(),
            br#"{"min_delay": 9}"#.to_vec(),
            404,
        ),
        (
            "POST",
            site_path(known, "delay"),
            br#"{"min_delay": "slow"}"#.to_vec(),
            400,
        ),
        (
            "POST",
            site_path(known, "delay"),
            br#"{"min_delay": -1}"#.to_vec(),
            400,
        ),
        ("POST", site_path(known, "explode"), b"".to_vec(), 404),
        ("GET", "/api/pause".into(), b"".to_vec(), 405),
        ("PUT", "/api/seeds".into(), b"".to_vec(), 405),
        ("POST", "/api/status".into(), b"".to_vec(), 405),
        ("POST", "/api/sites//hold".into(), b"".to_vec(), 400),
        ("GET", "/api/nothing".into(), b"".to_vec(), 404),
    ];
    for (method, path, body, want) in bad {
        let (code, text) = call(ep, method, &path, &body, Some(&ep.token));
        assert_eq!(code, want, "{method} {path}: {text}");
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"));
        assert!(v["error"].as_str().is_some_and(|m| !m.is_empty()), "{text}");
    }
    let orders = &status(ep)["orders"];
    assert_eq!(
        orders["exclusions"],
        json!([]),
        "a refused order changed something"
    );
    assert_eq!(orders["sites"], json!({}));
    assert_eq!(orders["paused"], json!(false));
}

/// Asserts that no server saw a request arrive in `(from, to)`.
fn silent(sites: &[&TestSite], from: Instant, to: Instant, what: &str) {
    for s in sites {
        let seen: Vec<_> = after(s, from)
            .into_iter()
            .filter(|(t, _)| *t < to)
            .collect();
        assert!(seen.is_empty(), "{what}: {} got {seen:?}", s.origin());
    }
}

/// Smallest gap between two requests of a site after `t`.
fn min_gap(site: &TestSite, t: Instant) -> Option<Duration> {
    let times: Vec<Instant> = after(site, t).into_iter().map(|(t, _)| t).collect();
    times.windows(2).map(|w| w[1] - w[0]).min()
}

fn prometheus_parse(text: &str, dir: &Path) -> Value {
    let lib = python_lib("prometheus_client", "prometheus-client==0.26.0");
    let script = dir.join("parse_metrics.py");
    std::fs::write(
        &script,
        "import sys, json\nfrom prometheus_client.parser import text_string_to_metric_families\n\
         out = {}\nfor f in text_string_to_metric_families(sys.stdin.read()):\n    \
         out[f.name] = {'type': f.type, 'samples': [[s.name, s.labels, s.value] for s in f.samples]}\n\
         print(json.dumps(out))\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(common::tools::venv().join("bin").join("python"))
        .arg(&script)
        .env("PYTHONPATH", &lib)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused /metrics: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A folder on PYTHONPATH holding `module`: the venv's own when it has it (tools/test.sh pins
/// it), else the pinned version installed by pip into the test target's folder, once.
fn python_lib(module: &str, pin: &str) -> PathBuf {
    let python = common::tools::venv().join("bin").join("python");
    let has = |path: &Path| {
        std::process::Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .env("PYTHONPATH", path)
            .status()
            .is_ok_and(|s| s.success())
    };
    let lib = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pylib-{pin}"));
    if has(&lib) {
        return lib;
    }
    let done = std::process::Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            "--target",
        ])
        .arg(&lib)
        .arg(pin)
        .status()
        .expect("pip");
    assert!(
        done.success() && has(&lib),
        "pip could not install {pin} into {}",
        lib.display()
    );
    lib
}

fn sample(families: &Value, family: &str, labels: Value) -> f64 {
    let f = &families[family];
    assert!(f.is_object(), "no family {family} in {families}");
    (f["samples"].as_array().unwrap().iter())
        .find(|s| {
            labels
                .as_object()
                .unwrap()
                .iter()
                .all(|(k, v)| &s[1][k] == v)
        })
        .and_then(|s| s[2].as_f64())
        .unwrap_or_else(|| panic!("no {family} {labels} in {f}"))
}

#[test]
fn steer_a_running_crawl_and_its_orders_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let sites = sites(9);
    // Site 8 is no seed: the operator adds it.
    let seeds: Vec<String> = sites[..8]
        .iter()
        .map(|s| format!("{}/", s.origin()))
        .collect();
    let profile = profile(dir.path(), &seeds, "");
    let out = dir.path().join("out");
    let mut crawl = start(dir.path(), &profile, "first");
    let ep = endpoint(&out, None);
    assert!(
        wait_until(PATIENCE, || sites[..8]
            .iter()
            .all(|s| s.exchanges().len() >= 4)),
        "the crawl did not get going"
    );

    // The console page holds no data and needs no token; everything else does.
    let (code, page) = call(&ep, "GET", "/", b"", None);
    assert_eq!(code, 200);
    assert!(
        page.contains("<canvas") || page.contains("<svg"),
        "the console page"
    );
    refuses_what_it_should(&ep, &sites[1]);

    // Exclusions: a SURT prefix (Python surt's spelling) for site 0's /trap, a regex for all.
    let a0 = sites[0].addr;
    // As Python's `surt` writes it: the address reversed, no trailing slash.
    let reversed: Vec<String> = a0
        .ip()
        .to_string()
        .split('.')
        .rev()
        .map(str::to_string)
        .collect();
    let prefix = format!("{}:{})/trap", reversed.join(","), a0.port());
    let answer = post(&ep, "/api/exclusions", json!({ "surt_prefix": prefix }));
    let t_prefix = Instant::now();
    assert!(answer["dropped"].is_u64(), "{answer}");
    post(
        &ep,
        "/api/exclusions",
        json!({ "regex": "^http://[^/]+/trap/" }),
    );
    let t_regex = Instant::now();

    // Site 1 slower, site 2 held, site 3 retired, site 8 added.
    let answer = post(
        &ep,
        &site_path(&sites[1], "delay"),
        json!({ "min_delay": 1.5 }),
    );
    assert_eq!(answer["min_delay"], json!(1.5), "{answer}");
    let t_delay = Instant::now();
    post(&ep, &site_path(&sites[2], "hold"), json!({}));
    let t_hold = Instant::now();
    let answer = post(&ep, &site_path(&sites[3], "retire"), Value::Null);
    let t_retire = Instant::now();
    assert!(answer["dropped"].as_u64().is_some(), "{answer}");
    // The seed from the shell: `archiver control` finds the endpoint in control.json.
    let p = profile.to_string_lossy().to_string();
    let seed = format!("{}/", sites[8].origin());
    let done = run_archiver(
        &["control", "--profile", &p, "seed", &seed],
        dir.path(),
        "seed",
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(done.stdout.contains(&seed), "{}", done.stdout);
    let done = run_archiver(
        &["control", "--profile", &p, "status"],
        dir.path(),
        "status",
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(done.stdout.contains(&sites[1].origin()), "{}", done.stdout);
    let done = run_archiver(
        &["control", "--profile", &p, "exclude", "--regex", "("],
        dir.path(),
        "bad",
    );
    assert_eq!(
        done.code,
        Some(1),
        "a bad regex from the shell: {}",
        done.stderr
    );
    // The added seed is crawled, and its links followed (its origin joined the scope).
    assert!(
        wait_until(PATIENCE, || after(&sites[8], t_delay)
            .iter()
            .any(|(_, p)| p == "/p/2")),
        "the added seed was not crawled: {:?}",
        after(&sites[8], t_delay)
    );
    assert!(
        wait_until(PATIENCE, || after(&sites[1], t_delay).len() >= 4),
        "site 1 stopped"
    );
    let st = status(&ep);
    let rows = st["sites"].as_array().unwrap();
    let row = |s: &TestSite| {
        rows.iter()
            .find(|r| r["site"] == json!(s.origin()))
            .cloned()
    };
    assert!(row(&sites[0]).is_some_and(|r| r["queued"].is_u64()), "{st}");
    assert_eq!(row(&sites[2]).unwrap()["held"], json!(true));
    assert_eq!(row(&sites[1]).unwrap()["min_delay"], json!(1.5));
    assert!(st["totals"]["fetched"].as_u64().unwrap() > 0, "{st}");
    assert_eq!(st["paused"], json!(false));
    assert!(st["crawl_log"].as_array().is_some_and(|l| !l.is_empty()));

    // /metrics, read by Prometheus' own parser.
    let (code, text) = get(&ep, "/metrics");
    assert_eq!(code, 200);
    let families = prometheus_parse(&text, dir.path());
    assert!(
        sample(&families, "archiver_urls", json!({ "class": "2xx" })) > 0.0,
        "{text}"
    );
    assert!(sample(&families, "archiver_bytes", json!({})) > 0.0);
    assert!(sample(&families, "archiver_queued", json!({})) >= 0.0);
    assert_eq!(
        sample(&families, "archiver_sites", json!({ "state": "held" })),
        1.0
    );
    assert_eq!(families["archiver_in_flight"]["type"], json!("gauge"));

    // Released, site 2 is crawled again; while held it was not (one request in flight aside).
    let t_release = Instant::now();
    post(&ep, &site_path(&sites[2], "release"), json!({}));
    assert!(
        wait_until(PATIENCE, || !after(&sites[2], t_release).is_empty()),
        "site 2 not released"
    );
    let during: Vec<_> = after(&sites[2], t_hold)
        .into_iter()
        .filter(|(t, _)| *t < t_release)
        .collect();
    assert!(
        during.len() <= 1,
        "site 2 was crawled while held: {during:?}"
    );

    // Pause: nothing for a while (requests already sent may finish).
    post(&ep, "/api/pause", json!({}));
    let t_pause = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let all: Vec<&TestSite> = sites.iter().collect();
    silent(
        &all,
        t_pause + Duration::from_millis(500),
        Instant::now(),
        "while paused",
    );
    assert_eq!(status(&ep)["paused"], json!(true));

    // Killed while paused; the next run is paused too, and keeps every order.
    crawl.0.kill().unwrap();
    crawl.0.wait().unwrap();
    let t_restart = Instant::now();
    let mut crawl = start(dir.path(), &profile, "second");
    let ep2 = endpoint(&out, Some(&ep));
    assert_eq!(
        status(&ep2)["paused"],
        json!(true),
        "the pause did not survive the restart"
    );
    std::thread::sleep(Duration::from_secs(3));
    silent(&all, t_restart, Instant::now(), "paused after the restart");
    let orders = status(&ep2)["orders"].clone();
    assert_eq!(
        orders["exclusions"].as_array().map(Vec::len),
        Some(2),
        "{orders}"
    );
    post(&ep2, "/api/resume", json!({}));
    let t_resume = Instant::now();
    assert!(
        wait_until(PATIENCE, || after(&sites[1], t_resume).len() >= 4),
        "no requests after the resume"
    );
    let (code, _) = call(&ep2, "POST", "/api/report", b"", Some(&ep2.token));
    assert_eq!(code, 200);
    send_signal(&crawl.0, "INT");
    crawl.0.wait().unwrap();

    // The delay held in both runs: site 1's gaps (server-side) are its new delay at least,
    // the first one after each order aside (a pause already running).
    for (from, run) in [(t_delay, "first run"), (t_resume, "second run")] {
        let times: Vec<Instant> = after(&sites[1], from).into_iter().map(|(t, _)| t).collect();
        let gaps: Vec<Duration> = times.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
        assert!(!gaps.is_empty(), "{run}");
        assert!(
            gaps.iter().all(|g| *g >= Duration::from_millis(1450)),
            "{run}: site 1's gaps {gaps:?}"
        );
    }
    for s in [&sites[0], &sites[4], &sites[8]] {
        assert!(
            min_gap(s, t_resume).is_some(),
            "{} not crawled after the resume: {:?}\n{}",
            s.origin(),
            after(s, t_restart),
            std::fs::read_to_string(out.join("run.log")).unwrap()
        );
    }
    // No excluded URL was asked for after its exclusion, in either run; nothing of the retired site.
    for (i, s) in sites.iter().enumerate() {
        let from = if i == 0 { t_prefix } else { t_regex };
        let traps: Vec<_> = after(s, from)
            .into_iter()
            .filter(|(_, p)| p.starts_with("/trap/"))
            .collect();
        assert!(
            traps.is_empty(),
            "{}: excluded URLs fetched: {traps:?}",
            s.origin()
        );
    }
    let retired = after(&sites[3], t_retire);
    assert!(
        retired.len() <= 1,
        "the retired site was crawled: {retired:?}"
    );

    // Every trap URL found after the exclusions has its crawl.log line.
    let log = crawl_log(&out);
    let lines: HashMap<&str, Vec<&LogLine>> = log.iter().fold(HashMap::new(), |mut m, l| {
        m.entry(l.uri.as_str()).or_default().push(l);
        m
    });
    let mut checked = 0;
    for s in &sites {
        for (_, path) in after(s, t_regex + Duration::from_millis(500)) {
            if let Some(n) = path.strip_prefix("/p/") {
                let trap = format!("{}/trap/{n}", s.origin());
                let found = lines.get(trap.as_str()).cloned().unwrap_or_default();
                assert!(
                    found
                        .iter()
                        .any(|l| l.status == -5000 && l.has_annotation("scope:operator")),
                    "{trap}: {found:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 5, "too few pages after the exclusions to tell");
    let run_log = std::fs::read_to_string(out.join("run.log")).unwrap();
    for said in [
        "operator: exclude",
        "operator: pause",
        "operator: resume",
        "retired",
        "held",
        "operator: seed",
    ] {
        assert!(run_log.contains(said), "run.log lacks {said:?}");
    }
    assert!(
        !out.join("state").join("control.json").exists(),
        "control.json outlived the crawl"
    );
    let p = profile.to_string_lossy().to_string();
    let done = run_archiver(
        &["control", "--profile", &p, "status", "--json"],
        dir.path(),
        "gone",
    );
    assert_eq!(done.code, Some(2), "no crawl runs: {}", done.stderr);
    assert!(done.stderr.contains("no running crawl"), "{}", done.stderr);
}

#[test]
fn a_profile_off_loopback_needs_allow_remote_and_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = vec!["http://127.0.0.1:9/".to_string()];
    let cases = [
        ("[control]\nlisten = \"0.0.0.0:0\"\n", "allow_remote"),
        (
            "[control]\nlisten = \"0.0.0.0:0\"\nallow_remote = true\n",
            "reason",
        ),
        ("[control]\nlisten = \"nowhere\"\n", "control.listen"),
    ];
    for (extra, said) in cases {
        let p = profile(dir.path(), &seeds, extra);
        let done = run_archiver(
            &["profile", "check", &p.to_string_lossy()],
            dir.path(),
            "check",
        );
        assert_eq!(done.code, Some(2), "{extra}: {}", done.stderr);
        assert!(done.stderr.contains(said), "{extra}: {}", done.stderr);
    }
    let ok = "[control]\nlisten = \"0.0.0.0:0\"\nallow_remote = true\nreason = \"behind the lab's TLS proxy\"\n";
    let p = profile(dir.path(), &seeds, ok);
    let done = run_archiver(
        &["profile", "check", &p.to_string_lossy()],
        dir.path(),
        "check",
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
}

/// Requests a site got from `from` on, across every worker of a shared crawl.
fn arrivals(site: &TestSite, from: Instant) -> Vec<Instant> {
    after(site, from).into_iter().map(|(t, _)| t).collect()
}

#[test]
fn an_order_sent_to_one_worker_of_a_shared_crawl_holds_on_both() {
    let pg = common::pg_cluster::PgCluster::start(&["crawl"]);
    let url = pg.url("crawl");
    let dir = tempfile::tempdir().unwrap();
    let sites: Vec<TestSite> = (0..4)
        .map(|i| TestSite::start(IpAddr::from([127, 0, 0, 60 + i as u8]), endless()))
        .collect();
    let seeds: Vec<String> = sites.iter().map(|s| format!("{}/", s.origin())).collect();
    let extra = format!("\n[frontier]\ndatabase = \"{url}\"\nlease_seconds = 6\n");
    let mut workers = Vec::new();
    let mut endpoints = Vec::new();
    for w in 1..=2 {
        let wdir = dir.path().join(format!("w{w}"));
        std::fs::create_dir_all(&wdir).unwrap();
        let p = profile(&wdir, &seeds, &extra);
        workers.push(start(&wdir, &p, "worker"));
        endpoints.push(endpoint(&wdir.join("out"), None));
    }
    assert!(
        wait_until(PATIENCE, || sites.iter().all(|s| s.exchanges().len() >= 4)),
        "the shared crawl did not get going"
    );
    // Each worker's status lists both workers, as the database knows them.
    assert!(
        wait_until(PATIENCE, || status(&endpoints[0])["workers"]
            .as_array()
            .is_some_and(|w| w.len() == 2)),
        "the status does not list both workers: {}",
        status(&endpoints[0])["workers"]
    );
    // Orders are taken up by the other worker within a second: each check starts 1.5 s after
    // the answer, generously.
    let settle = Duration::from_millis(1500);

    // An exclusion sent to worker 1 is in worker 2's orders, and no worker fetches a covered URL.
    post(
        &endpoints[0],
        "/api/exclusions",
        json!({ "regex": "/trap/" }),
    );
    let t_excl = Instant::now();
    assert!(
        wait_until(PATIENCE, || status(&endpoints[1])["orders"]["exclusions"]
            .as_array()
            .is_some_and(|a| a.len() == 1)),
        "worker 2 never took up the exclusion"
    );
    // A delay sent to worker 2 holds for worker 1's requests too.
    let answer = post(
        &endpoints[1],
        &site_path(&sites[0], "delay"),
        json!({ "min_delay": 1.5 }),
    );
    assert_eq!(answer["min_delay"], json!(1.5));
    let t_delay = Instant::now();
    assert!(wait_until(PATIENCE, || arrivals(
        &sites[0],
        t_delay + settle
    )
    .len()
        >= 5));
    let times = arrivals(&sites[0], t_delay + settle);
    let gaps: Vec<Duration> = times.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_millis(1450)),
        "site 0's gaps across both workers: {gaps:?}"
    );

    // A pause sent to worker 2 stops both; a resume sent to worker 1 starts both.
    post(&endpoints[1], "/api/pause", json!({}));
    let t_pause = Instant::now();
    assert!(wait_until(PATIENCE, || status(&endpoints[0])["paused"] == json!(true)));
    std::thread::sleep(Duration::from_secs(4));
    let all: Vec<&TestSite> = sites.iter().collect();
    silent(
        &all,
        t_pause + settle,
        Instant::now(),
        "while the shared crawl was paused",
    );
    post(&endpoints[0], "/api/resume", json!({}));
    let t_resume = Instant::now();
    assert!(
        wait_until(PATIENCE, || sites[1..].iter().all(|s| arrivals(
            s, t_resume
        )
        .len()
            >= 2)),
        "no requests after the resume"
    );
    for w in &mut workers {
        send_signal(&w.0, "INT");
    }
    for w in &mut workers {
        w.0.wait().unwrap();
    }
    for s in &sites {
        let traps: Vec<_> = (after(s, t_excl + settle).into_iter())
            .filter(|(_, p)| p.starts_with("/trap/"))
            .collect();
        assert!(
            traps.is_empty(),
            "{}: excluded URLs fetched: {traps:?}",
            s.origin()
        );
    }
    for w in 1..=2 {
        let run_log =
            std::fs::read_to_string(dir.path().join(format!("w{w}/out/run.log"))).unwrap();
        assert!(
            run_log.contains("operator:"),
            "worker {w}'s run.log says nothing of the orders"
        );
    }
}
