//! The open-file limit: a crawl of many sites due at once under `ulimit -n 64` runs out of no
//! descriptors. Every URL is fetched, none is logged as an error, and run.log says the limit
//! capped the requests at once.

use crate::common;

use std::collections::HashSet;
use std::net::IpAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::output::crawl_log;
use common::site::{html, not_found, Request, TestSite};
use common::tools::run_with_timeout;

/// Sites in the crawl: far more than 64 descriptors if all were opened at once.
const SITES: usize = 150;

/// Every host: no robots.txt, `/` links to `/a`, `/a` is a page. Answers a little late, so the
/// crawler's connections pile up while the server works.
fn handler() -> common::site::Handler {
    Arc::new(|req: &Request| {
        std::thread::sleep(Duration::from_millis(3));
        match req.target.as_str() {
            "/robots.txt" => not_found(),
            "/" => html(b"<a href=/a>a</a>"),
            _ => html(b"<p>page</p>"),
        }
    })
}

#[test]
fn many_sites_under_a_low_open_file_limit_are_all_fetched_without_an_error() {
    let ip: IpAddr = "127.0.0.1".parse().expect("ip");
    let site = TestSite::start(ip, handler());
    let port = site.addr.port();
    let hosts: Vec<String> = (0..SITES).map(|i| format!("s{i}.fd.test")).collect();
    let seeds: Vec<String> = hosts
        .iter()
        .map(|h| format!("\"http://{h}:{port}/\""))
        .collect();
    let resolve: Vec<String> = hosts
        .iter()
        .map(|h| format!("\"{h}\" = \"127.0.0.1\""))
        .collect();
    let profile = format!(
        "[crawl]\nname = \"descriptors\"\nseeds = [{}]\nsites_at_once = {}\n\n\
         [identity]\nuser_agent = \"{}\"\n\n\
         [politeness]\nmin_delay = 0.0\ndelay_factor = 0.0\nbudget = \"host\"\n\n\
         [discovery]\nsitemaps = false\n\n[output]\ndir = \"out\"\n\n[resolve]\n{}\n",
        seeds.join(", "),
        SITES * 4,
        common::profile::TESTS_UA,
        resolve.join("\n")
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("p.toml"), profile).expect("write profile");

    // `ulimit -n` sets the soft and the hard limit: the crawler cannot raise it.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -n 64 && exec \"$0\" crawl --profile p.toml"])
        .arg(env!("CARGO_BIN_EXE_archiver"))
        .current_dir(dir.path());
    let done = run_with_timeout(cmd, dir.path(), "crawl", Duration::from_secs(120));
    let out = dir.path().join("out");
    let run_log = std::fs::read_to_string(out.join("run.log")).unwrap_or_default();
    assert_eq!(done.code, Some(0), "{}\n{run_log}", done.stderr);
    assert!(
        !done.stderr.contains("open files") && !run_log.contains("open files"),
        "{}\n{run_log}",
        done.stderr
    );

    let lines = crawl_log(&out);
    let errors: Vec<&str> = lines
        .iter()
        .filter(|l| l.status < 0 || l.status >= 500)
        .map(|l| l.raw.as_str())
        .collect();
    assert!(
        errors.is_empty(),
        "URLs not fetched:\n{}",
        errors.join("\n")
    );
    let pages: HashSet<&str> = lines
        .iter()
        .filter(|l| l.status == 200)
        .map(|l| l.uri.as_str())
        .collect();
    for h in &hosts {
        for path in ["/", "/a"] {
            let url = format!("http://{h}:{port}{path}");
            assert!(pages.contains(url.as_str()), "{url} was not fetched");
        }
    }
    assert_eq!(pages.len(), SITES * 2, "each page once");
    assert!(
        run_log.contains("open-file limit 64"),
        "run.log does not say the limit capped the requests:\n{run_log}"
    );
}
