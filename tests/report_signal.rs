//! Reports on demand: SIGUSR1 makes a running crawl write `report.json` at once.

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::site::{html, Request, TestSite};

#[test]
fn sigusr1_writes_the_report_while_the_crawl_runs() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(|req: &Request| {
            if req.target == "/" {
                let links: String = (0..20)
                    .map(|i| format!("<a href=/p{i}.html>p</a>"))
                    .collect();
                html(links.as_bytes())
            } else {
                html(b"<p>page</p>")
            }
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = format!(
        r#"[crawl]
name = "usr1"
seeds = ["{}/"]

[identity]
user_agent = "archiver/0.1 (+https://example.org/archiver-tests)"

[politeness]
min_delay = 0.2
delay_factor = 0.0

[output]
dir = "out"
"#,
        site.origin()
    );
    std::fs::write(dir.path().join("p.toml"), profile).expect("profile");
    let mut child = Command::new(env!("CARGO_BIN_EXE_archiver"))
        .args(["crawl", "--profile", "p.toml"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let report = dir.path().join("out/report.json");
    // Let it fetch a few pages (the 22 URLs take over 4 s at 0.2 s apart).
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        !report.exists(),
        "no report is due yet (the periodic one comes after a minute)"
    );
    let sent = Command::new("kill")
        .args(["-USR1", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(3);
    while !report.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&report).expect("report.json written on SIGUSR1");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["finished"], false, "written while running");
    assert!(json["totals"]["queued"].as_u64().expect("queued") > 0);
    let status = child.wait().expect("wait");
    assert!(status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    assert_eq!(json["finished"], true);
    assert_eq!(json["totals"]["queued"], 0);
}
