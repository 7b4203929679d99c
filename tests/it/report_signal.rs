//! Reports on demand: SIGUSR1 makes a running crawl write `report.json` at once.

use crate::common;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::profile::Loopback;
use common::site::{html, Request, TestSite};
use common::tools::{send_signal, start_crawl, wait_until};

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
    Loopback {
        politeness: "min_delay = 0.2\ndelay_factor = 0.0",
        ..Loopback::new("usr1", vec![format!("{}/", site.origin())])
    }
    .write(dir.path(), "p.toml");
    let mut child = start_crawl(dir.path(), "p.toml", Stdio::null());
    let report = dir.path().join("out/report.json");
    // Let it fetch a few pages (the 22 URLs take over 4 s at 0.2 s apart).
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        !report.exists(),
        "no report is due yet (the periodic one comes after a minute)"
    );
    send_signal(&child, "USR1");
    wait_until(Duration::from_secs(3), || report.exists());
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
