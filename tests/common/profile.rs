//! Crawl profiles for the loopback test sites, written with only the keys a test sets (every
//! other key keeps the crawler's default), so a test's profile says what the test is about.

use std::path::Path;

/// The user agent of the tests whose crawls need no user agent of their own.
pub const TESTS_UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";

/// A profile's `[crawl]`, `[identity]`, `[politeness]` and `[output]` tables.
pub struct Loopback<'a> {
    pub name: &'a str,
    pub seeds: Vec<String>,
    /// More lines of `[crawl]`.
    pub crawl: &'a str,
    pub user_agent: &'a str,
    /// More lines after `user_agent`: keys of `[identity]`, then any other tables.
    pub identity: &'a str,
    /// The lines of `[politeness]`.
    pub politeness: &'a str,
    /// `[output] dir`, relative to the profile.
    pub dir: &'a str,
    /// More lines of `[output]`, then any other tables.
    pub output: &'a str,
    /// `[discovery] sitemaps`: off unless a test is about sitemaps, since most tests count
    /// their requests and a `/sitemap.xml` would be one more.
    pub sitemaps: bool,
}

impl<'a> Loopback<'a> {
    /// A crawl of `seeds` under `name` with no delay of our own, into `out`.
    pub fn new(name: &'a str, seeds: Vec<String>) -> Loopback<'a> {
        Loopback {
            name,
            seeds,
            crawl: "",
            user_agent: TESTS_UA,
            identity: "",
            politeness: "min_delay = 0.0\ndelay_factor = 0.0",
            dir: "out",
            output: "",
            sitemaps: false,
        }
    }

    /// The profile's text.
    pub fn toml(&self) -> String {
        let seeds: Vec<String> = self.seeds.iter().map(|s| format!("{s:?}")).collect();
        format!(
            "[crawl]\nname = {name:?}\nseeds = [{seeds}]\n{crawl}\n\n\
             [identity]\nuser_agent = {ua:?}\n{identity}\n\n\
             [politeness]\n{politeness}\n\n\
             [discovery]\nsitemaps = {sitemaps}\n\n\
             [output]\ndir = {dir:?}\n{output}\n",
            name = self.name,
            seeds = seeds.join(", "),
            crawl = self.crawl,
            ua = self.user_agent,
            identity = self.identity,
            politeness = self.politeness,
            sitemaps = self.sitemaps,
            dir = self.dir,
            output = self.output,
        )
    }

    /// Writes the profile to `dir/file`; its path, for `--profile`.
    pub fn write(&self, dir: &Path, file: &str) -> String {
        let path = dir.join(file);
        std::fs::write(&path, self.toml())
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path.to_string_lossy().to_string()
    }
}

/// A profile for the browser tests: two sites at once, a second between requests to a site,
/// pages rendered when they are empty without JavaScript; `browser`: more lines of `[browser]`.
pub fn rendering(name: &str, seed: &str, browser: &str) -> String {
    let browser = format!("\n[browser]\nrender = \"empty\"\n{browser}");
    Loopback {
        crawl: "sites_at_once = 2",
        politeness: "min_delay = 1.0\ndelay_factor = 0.0",
        output: &browser,
        ..Loopback::new(name, vec![seed.to_string()])
    }
    .toml()
}
