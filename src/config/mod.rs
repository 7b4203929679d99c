//! The crawl profile: a TOML file turned into validated settings.
//!
//! People write profiles by hand, so every error names the file, the line and the key, and
//! unknown keys are errors (a misspelt `min_dealy` must not silently leave the default in force).

//! The road through this folder: `raw` (serde's view of the TOML) → `shape` (unknown keys,
//! wrong types) → `validate` (every value, into each module's own settings type), with
//! `locate` pointing errors at their line and `describe` writing the result back out.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use url::Url;

use crate::politeness::PolitenessSettings;
use crate::scope::rules::RuleSettings;
use crate::scope::ScopeSettings;
use crate::warc::WarcVersion;

mod control;
mod describe;
mod error;
mod locate;
mod raw;
mod shape;
mod validate;

pub use control::ControlSettings;
pub use error::ProfileError;
use locate::Checker;
use raw::RawProfile;

/// Validated crawl settings.
#[derive(Debug, Clone)]
pub struct Profile {
    pub path: PathBuf,
    /// The profile file's bytes, for the warcinfo digest.
    pub source: String,
    pub name: String,
    pub seeds: Vec<Url>,
    pub sites_at_once: usize,
    pub user_agent: String,
    /// The first product token of the user agent, lower-cased: matched against robots.txt
    /// `User-agent` lines and `<meta name=…>`.
    pub agent_token: String,
    pub operator: String,
    /// Requests for discovered URLs carry `Referer: <the page they were found on>`.
    pub send_referer: bool,
    pub scope: ScopeSettings,
    /// The `[traps]` table: crawler-trap rules and their thresholds.
    pub traps: crate::scope::traps::TrapSettings,
    /// The `[browser]` table: which pages are rendered in headless Chromium.
    pub browser: crate::browser::BrowserSettings,
    /// The `[scope]` rules applied by `crate::scope::rules::ScopeRules`.
    pub rules: RuleSettings,
    pub politeness: PolitenessSettings,
    pub obey_robots: bool,
    /// Why robots.txt is not obeyed (required when `obey_robots` is false).
    pub unrestricted_reason: String,
    /// The product token matched against robots.txt groups for Crawl-delay (the configured
    /// token, even in an unrestricted run whose user agent says `-unrestricted`).
    pub robots_token: String,
    /// The `[dedup]` table: earlier crawls whose payloads become revisits here.
    pub dedup: crate::dedup::DedupSettings,
    /// What every request carries: the user agent, `[limits]` timeout and max_body_bytes, and
    /// the `[tls]` extra roots (for local mirrors and tests with a private authority).
    pub fetch: crate::net::fetch::FetchSettings,
    /// Opt-out list files, and what they say: nothing they match is requested.
    pub optout_lists: Vec<PathBuf>,
    pub optout: crate::scope::optout::OptOutList,
    /// The `[resolve]` table and `[politeness] dns_cache_seconds`.
    pub dns: crate::net::dns::DnsSettings,
    /// Most links taken from one page (Heritrix's default is 6,000 too).
    pub max_outlinks: usize,
    /// Which server addresses may be connected to (`[limits] allow_addresses`, loopback seeds).
    pub guard: crate::net::guard::Guard,
    pub output_dir: PathBuf,
    pub prefix: String,
    pub warc_max_bytes: u64,
    pub warc_version: WarcVersion,
    /// Pack the crawl as `OUT/NAME.wacz` when it ends.
    pub wacz: bool,
    /// `[frontier]`: embedded SQLite, or a PostgreSQL database shared by many workers.
    pub frontier: crate::frontier::FrontierSettings,
    /// `[discovery]`: sitemaps looked for.
    pub discovery: crate::extract::sitemap::DiscoverySettings,
    /// `[recrawl]`: earlier crawls asked again with conditional requests.
    pub recrawl: crate::recrawl::RecrawlSettings,
    /// `[control]`: where the control endpoint listens (None: off).
    pub control: ControlSettings,
}

impl Profile {
    /// Reads and validates a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let bytes = std::fs::read(path).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "there is no such file".to_string(),
                std::io::ErrorKind::PermissionDenied => {
                    "the file cannot be read (permission denied)".to_string()
                }
                _ if path.is_dir() => "this is a folder, not a profile file".to_string(),
                _ => format!("the file cannot be read: {e}"),
            };
            ProfileError::plain(path, why)
        })?;
        let source = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            ProfileError::plain(path, format!("not UTF-8 text (bad byte at offset {at})"))
        })?;
        Profile::parse(path, &source)
    }

    /// Validates a profile's text; `path` names it in errors and anchors relative paths.
    /// Every problem is reported, not only the first: a syntax error stops there (nothing
    /// after it can be trusted), else every unknown key and wrong type, else every bad value.
    pub fn parse(path: &Path, source: &str) -> Result<Profile, ProfileError> {
        let checker = Checker { path, source };
        source
            .parse::<toml_edit::ImDocument<String>>()
            .map_err(|e| checker.syntax_error(&e))?;
        let table: toml::Table = toml::from_str(source).map_err(|e| checker.toml_error(&e))?;
        let shape = shape::shape_errors(&table)
            .into_iter()
            .map(|(key, in_value, message)| checker.error_at(&key, in_value, message))
            .collect();
        if let Some(e) = ProfileError::from_many(shape) {
            return Err(e);
        }
        let raw: RawProfile = toml::from_str(source).map_err(|e| checker.toml_error(&e))?;
        checker.validate(raw)
    }
}

/// The commented reference profile (`profiles/site.toml`), as `archiver profile init` writes it.
pub const REFERENCE: &str = include_str!("../../profiles/site.toml");

/// The profile of a quick crawl (`archiver crawl URL… --contact URL`): the reference profile
/// with these seeds, a User-Agent carrying the contact URL, the name, and the output in the
/// profile's own folder. Every other setting keeps its default, the 5 s delay included.
pub fn quick_profile(seeds: &[String], contact: &str, name: &str) -> String {
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    let seeds: Vec<String> = seeds.iter().map(|s| quoted(s)).collect();
    let user_agent = format!("archiver/{} (+{contact})", env!("CARGO_PKG_VERSION"));
    let mut out = String::from(
        "# Written by `archiver crawl URL… --contact URL` from the reference profile.\n\
         # Resume or run this crawl again with:  archiver crawl --profile <this file>\n\n",
    );
    for line in REFERENCE.lines() {
        let replaced = match line.split_once(" = ").map(|(k, _)| k) {
            Some("name") => format!("name = {}", quoted(name)),
            Some("seeds") => format!("seeds = [{}]", seeds.join(", ")),
            Some("user_agent") => format!("user_agent = {}", quoted(&user_agent)),
            Some("dir") => "dir = \".\"".to_string(),
            _ => line.to_string(),
        };
        out.push_str(&replaced);
        out.push('\n');
    }
    out
}

/// When set, profile checks never look names up (they count as not loopback). The fuzz
/// targets set it: made-up seed names must not become DNS queries.
static NO_LOOKUPS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes profile parsing look no host names up (see `NO_LOOKUPS`).
pub fn disable_name_lookups() {
    NO_LOOKUPS.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// True when every address the URL's host resolves to is a loopback address.
/// Name resolution failures count as "not loopback", which keeps the 5 s floor.
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(_)) if NO_LOOKUPS.load(std::sync::atomic::Ordering::SeqCst) => false,
        Some(url::Host::Domain(name)) => {
            let port = url.port_or_known_default().unwrap_or(80);
            match (name, port).to_socket_addrs() {
                Ok(addrs) => {
                    let addrs: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
                    !addrs.is_empty() && addrs.iter().all(|ip| ip.is_loopback())
                }
                Err(_) => false,
            }
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_recrawl;
