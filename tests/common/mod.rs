//! Helpers shared by the integration tests: a hand-written HTTP/1.1 test site, its pages, test
//! profiles, readers for the crawler's output, the real tools (warcio, cdxj-indexer, pywb),
//! and (in `commands`) what the offline-command tests need: small crawls written with the
//! library's own WARC writer, a fixed-page server for wget, pywb on its own config.

pub mod commands;
pub mod hostile;
pub mod output;
pub mod pages;
pub mod pg_cluster;
pub mod profile;
pub mod site;
pub mod tools;

use std::path::Path;

/// Settings of a test profile that vary between tests.
pub struct ProfileOptions<'a> {
    pub name: &'a str,
    pub seeds: &'a [String],
    pub embeds_off_site: bool,
}

/// A crawl profile for the loopback test sites: no delay of our own (robots.txt Crawl-delay
/// sets the pace), a 1 MB body limit and small WARCs so rotation happens.
pub fn profile_toml(o: &ProfileOptions) -> String {
    let seeds: Vec<String> = o.seeds.iter().map(|s| format!("{s:?}")).collect();
    format!(
        r#"# profile written by tests/common/mod.rs
[crawl]
name = "{name}"
seeds = [{seeds}]
sites_at_once = 4

[identity]
user_agent = "{ua}"
operator = "archiver end-to-end tests"

[scope]
max_hops = 20
max_pages_per_site = 1000
include = []
exclude = []
embeds_off_site = {embeds}
keep_mime = ["*/*"]

[politeness]
min_delay = 0.0
delay_factor = 0.0
max_delay = 1.0
max_crawl_delay = 5.0
max_retries = 1

[robots]
obey = true

[limits]
max_body_bytes = 1000000
timeout = 10.0

[output]
dir = "out"
prefix = "E2E"
warc_max_bytes = 200000
warc_version = "1.1"
"#,
        name = o.name,
        seeds = seeds.join(", "),
        ua = pages::USER_AGENT,
        embeds = o.embeds_off_site,
    )
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
    p
}
