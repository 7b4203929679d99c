//! The crawl profile: a TOML file turned into validated settings.
//!
//! People write profiles by hand, so every error names the file, the line and the key, and
//! unknown keys are errors (a misspelt `min_dealy` must not silently leave the default in force).

use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use url::Url;

use crate::politeness::{BudgetKind, PolitenessSettings, MIN_DELAY_FLOOR};
use crate::scope::rules::{self, MimeRule, RuleSettings};
use crate::scope::ScopeSettings;

mod shape;
use crate::warc::WarcVersion;

/// A profile that could not be used, with where the problem is: the first problem found (in
/// file order), and in `more` every other one, so one run shows them all.
#[derive(Debug)]
pub struct ProfileError {
    pub file: String,
    /// 1-based line; 0 when the problem is not on one line (e.g. a missing table).
    pub line: usize,
    /// The key as a dotted path, e.g. `politeness.min_delay`; "-" when there is none.
    pub key: String,
    pub message: String,
    /// The offending line and a caret under the spot, when the problem is on one line.
    pub excerpt: Option<Box<str>>,
    /// The other problems of the same profile.
    pub more: Vec<ProfileError>,
}

impl ProfileError {
    /// A problem with the file itself (missing, unreadable, not text).
    fn plain(file: &Path, message: String) -> ProfileError {
        ProfileError {
            file: file.display().to_string(),
            line: 0,
            key: "-".to_string(),
            message,
            excerpt: None,
            more: Vec::new(),
        }
    }

    /// How many problems in all.
    pub fn count(&self) -> usize {
        1 + self.more.len()
    }

    /// Every problem, the first one first.
    pub fn all(&self) -> impl Iterator<Item = &ProfileError> {
        std::iter::once(self).chain(self.more.iter())
    }

    /// One problem, without the others.
    fn write_one(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.key.as_str()) {
            (0, "-") => write!(f, "{}: {}", self.file, self.message)?,
            (0, key) => write!(f, "{}: {key}: {}", self.file, self.message)?,
            (line, "-") => write!(f, "{}:{line}: {}", self.file, self.message)?,
            (line, key) => write!(f, "{}:{line}: {key}: {}", self.file, self.message)?,
        }
        if let Some(excerpt) = &self.excerpt {
            write!(f, "\n{excerpt}")?;
        }
        Ok(())
    }

    /// Sorts problems by line and makes the first one the head of the list.
    fn from_many(errors: Vec<ProfileError>) -> Option<ProfileError> {
        // A problem may carry others (a table checked as a whole): one flat list.
        let mut errors: Vec<ProfileError> = errors
            .into_iter()
            .flat_map(|mut e| {
                let more = std::mem::take(&mut e.more);
                std::iter::once(e).chain(more)
            })
            .collect();
        errors.sort_by_key(|e| (e.line == 0, e.line));
        let mut it = errors.into_iter();
        let mut first = it.next()?;
        first.more.extend(it);
        Some(first)
    }
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_one(f)?;
        for e in &self.more {
            writeln!(f)?;
            e.write_one(f)?;
        }
        Ok(())
    }
}

impl std::error::Error for ProfileError {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    crawl: RawCrawl,
    identity: RawIdentity,
    #[serde(default)]
    scope: RawScope,
    #[serde(default)]
    politeness: RawPoliteness,
    #[serde(default)]
    robots: RawRobots,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    output: RawOutput,
    #[serde(default)]
    resolve: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    dedup: RawDedup,
    #[serde(default)]
    optout: RawOptOut,
    #[serde(default)]
    tls: RawTls,
    #[serde(default)]
    traps: RawTraps,
    #[serde(default)]
    frontier: RawFrontier,
    #[serde(default)]
    browser: RawBrowser,
}

/// `[browser]`: when pages are rendered in headless Chromium (see `crate::browser`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawBrowser {
    render: String,
    max_share: f64,
    executable: String,
    render_timeout: f64,
}

impl Default for RawBrowser {
    fn default() -> Self {
        let d = crate::browser::BrowserSettings::default();
        RawBrowser {
            render: "empty".into(),
            max_share: d.max_share,
            executable: String::new(),
            render_timeout: d.render_timeout.as_secs_f64(),
        }
    }
}

/// `[frontier]`: where the crawl's frontier lives (see `crate::frontier::FrontierSettings`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawFrontier {
    database: Option<String>,
    lease_seconds: f64,
}

impl Default for RawFrontier {
    fn default() -> Self {
        RawFrontier {
            database: None,
            lease_seconds: 60.0,
        }
    }
}

/// `[traps]`: every crawler-trap rule, tunable (see `crate::scope::traps::TrapSettings`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawTraps {
    enabled: bool,
    max_url_chars: i64,
    max_path_segments: i64,
    max_query_params: i64,
    repeated_param: i64,
    repeated_segment: i64,
    calendar: bool,
    calendar_years_ahead: i64,
    calendar_min_year: i64,
    calendar_min_bare_year: i64,
    repeated_content: i64,
}

impl Default for RawTraps {
    fn default() -> Self {
        let d = crate::scope::traps::TrapSettings::default();
        let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        RawTraps {
            enabled: d.enabled,
            max_url_chars: n(d.max_url_chars),
            max_path_segments: n(d.max_path_segments),
            max_query_params: n(d.max_query_params),
            repeated_param: n(d.repeated_param),
            repeated_segment: n(d.repeated_segment),
            calendar: d.calendar,
            calendar_years_ahead: d.calendar_years_ahead,
            calendar_min_year: d.calendar_min_year,
            calendar_min_bare_year: d.calendar_min_bare_year,
            repeated_content: i64::from(d.repeated_content),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawTls {
    extra_roots: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawOptOut {
    lists: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawDedup {
    previous: Vec<String>,
    max_digests: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCrawl {
    #[serde(default = "default_name")]
    name: String,
    seeds: Vec<String>,
    #[serde(default = "default_sites_at_once")]
    sites_at_once: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdentity {
    user_agent: String,
    #[serde(default)]
    operator: String,
    #[serde(default = "default_true")]
    send_referer: bool,
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawScope {
    max_hops: i64,
    max_pages_per_site: i64,
    include: Vec<String>,
    exclude: Vec<String>,
    embeds_off_site: bool,
    surt_prefixes: Vec<String>,
    max_path_depth: i64,
    max_bytes_per_site: i64,
    keep_mime: Vec<String>,
}

impl Default for RawScope {
    fn default() -> Self {
        RawScope {
            max_hops: 20,
            max_pages_per_site: 100_000,
            include: Vec::new(),
            exclude: Vec::new(),
            embeds_off_site: false,
            surt_prefixes: Vec::new(),
            max_path_depth: 20,
            max_bytes_per_site: 0,
            keep_mime: vec!["*/*".to_string()],
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawPoliteness {
    min_delay: f64,
    delay_factor: f64,
    max_delay: f64,
    max_crawl_delay: f64,
    max_retries: i64,
    budget: String,
    refusals_before_suspend: i64,
    suspend_hours: f64,
    dns_cache_seconds: f64,
}

impl Default for RawPoliteness {
    fn default() -> Self {
        RawPoliteness {
            min_delay: 5.0,
            delay_factor: 5.0,
            max_delay: 30.0,
            max_crawl_delay: 300.0,
            max_retries: 3,
            budget: "ip".to_string(),
            refusals_before_suspend: 5,
            suspend_hours: 6.0,
            dns_cache_seconds: 600.0,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawRobots {
    obey: bool,
    reason: String,
}

impl Default for RawRobots {
    fn default() -> Self {
        RawRobots {
            obey: true,
            reason: String::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawLimits {
    max_body_bytes: i64,
    timeout: f64,
    max_outlinks: i64,
    allow_addresses: Vec<String>,
}

impl Default for RawLimits {
    fn default() -> Self {
        RawLimits {
            max_body_bytes: 100_000_000,
            timeout: 60.0,
            max_outlinks: 6000,
            allow_addresses: Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawOutput {
    dir: String,
    prefix: String,
    warc_max_bytes: i64,
    warc_version: String,
    wacz: bool,
}

impl Default for RawOutput {
    fn default() -> Self {
        RawOutput {
            dir: "crawls/example".to_string(),
            prefix: "ARCHIVER".to_string(),
            warc_max_bytes: 1_000_000_000,
            warc_version: "1.1".to_string(),
            wacz: false,
        }
    }
}

fn default_name() -> String {
    "crawl".to_string()
}

fn default_sites_at_once() -> i64 {
    50
}

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
    /// Earlier crawls' CDXJ files or folders: payloads archived there become revisits here.
    pub dedup_previous: Vec<PathBuf>,
    /// Most payload digests kept in memory for revisits (about 200 bytes each).
    pub dedup_max_digests: usize,
    /// Extra trusted root certificates (DER), besides the Mozilla roots: for local mirrors and
    /// tests served with a private certificate authority.
    pub extra_roots: Vec<Vec<u8>>,
    /// Opt-out list files, and what they say: nothing they match is requested.
    pub optout_lists: Vec<PathBuf>,
    pub optout: crate::scope::optout::OptOutList,
    /// Host names mapped to addresses by the profile, like curl's `--resolve`.
    pub resolve: std::collections::HashMap<String, std::net::IpAddr>,
    pub max_body_bytes: u64,
    pub timeout: Duration,
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

    /// The effective settings as TOML-like text, for `archiver profile check`.
    pub fn describe(&self) -> String {
        let p = &self.politeness;
        let s = &self.scope;
        let list = |v: &[Regex]| {
            let items: Vec<String> = v.iter().map(|r| format!("{:?}", r.as_str())).collect();
            format!("[{}]", items.join(", "))
        };
        let seeds: Vec<String> = self
            .seeds
            .iter()
            .map(|u| format!("{:?}", u.as_str()))
            .collect();
        format!(
            "# effective settings of {}\n[crawl]\nname = {:?}\nseeds = [{}]\nsites_at_once = {}\n\n\
             [identity]\nuser_agent = {:?}\n# robots.txt product token: {}\noperator = {:?}\nsend_referer = {}\n\n\
             [scope]\nmax_hops = {}\nmax_pages_per_site = {}\ninclude = {}\nexclude = {}\nembeds_off_site = {}\n{}\n\
                          [politeness]\nmin_delay = {}\ndelay_factor = {}\nmax_delay = {}\nmax_crawl_delay = {}\nmax_retries = {}\n\
             budget = {:?}\nrefusals_before_suspend = {}\nsuspend_hours = {}\ndns_cache_seconds = {}\n\n\
             [robots]\nobey = {}\nreason = {:?}\n# robots.txt product token: {}\n\n[limits]\nmax_body_bytes = {}\ntimeout = {}\nmax_outlinks = {}\nallow_addresses = [{}]\n\n\
             [output]\ndir = {:?}\nprefix = {:?}\nwarc_max_bytes = {}\nwarc_version = {:?}\nwacz = {}\n",
            self.path.display(),
            self.name,
            seeds.join(", "),
            self.sites_at_once,
            self.user_agent,
            self.agent_token,
            self.operator,
            self.send_referer,
            s.max_hops,
            s.max_pages_per_site,
            list(&s.include),
            list(&s.exclude),
            s.embeds_off_site,
            self.describe_rules(),
            p.min_delay.as_secs_f64(),
            p.delay_factor,
            p.max_delay.as_secs_f64(),
            p.max_crawl_delay.as_secs_f64(),
                        p.max_retries,
            match p.budget {
                BudgetKind::Ip => "ip",
                BudgetKind::Host => "host",
            },
            p.refusals.threshold,
            p.refusals.away.as_secs_f64() / 3600.0,
            p.dns_cache.as_secs_f64(),
            self.obey_robots,
            self.unrestricted_reason,
            self.robots_token,
            self.max_body_bytes,
            self.timeout.as_secs_f64(),
            self.max_outlinks,
            self.guard
                .allowed()
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", "),
            self.output_dir.display().to_string(),
            self.prefix,
            self.warc_max_bytes,
                        match self.warc_version {
                WarcVersion::V1_0 => "1.0",
                WarcVersion::V1_1 => "1.1",
            },
            self.wacz,
        ) + &self.describe_dedup()
            + &self.describe_traps()
            + &self.describe_browser()
            + &self.describe_resolve()
    }

    fn describe_dedup(&self) -> String {
        let paths: Vec<String> = self
            .dedup_previous
            .iter()
            .map(|p| format!("{:?}", p.display().to_string()))
            .collect();
        let lists: Vec<String> = self
            .optout_lists
            .iter()
            .map(|p| format!("{:?}", p.display().to_string()))
            .collect();
        format!(
            "\n[dedup]\nprevious = [{}]\nmax_digests = {}\n\n[optout]\nlists = [{}]\n# {} opt-out entries\n\n\
             [tls]\n# {} extra root certificates\n",
            paths.join(", "),
            self.dedup_max_digests,
            lists.join(", "),
            self.optout.entries().len(),
            self.extra_roots.len()
        )
    }

    fn describe_browser(&self) -> String {
        let b = &self.browser;
        let render = match b.render {
            crate::browser::RenderMode::Empty => "empty",
            crate::browser::RenderMode::Never => "never",
            crate::browser::RenderMode::All => "all",
        };
        format!(
            "\n[browser]\nrender = \"{render}\"\nmax_share = {}\nexecutable = {:?}\nrender_timeout = {}\n",
            b.max_share,
            b.executable
                .as_ref()
                .map(|e| e.display().to_string())
                .unwrap_or_default(),
            b.render_timeout.as_secs_f64()
        )
    }

    fn describe_traps(&self) -> String {
        let t = &self.traps;
        format!(
            "\n[traps]\nenabled = {}\nmax_url_chars = {}\nmax_path_segments = {}\nmax_query_params = {}\n\
             repeated_param = {}\nrepeated_segment = {}\ncalendar = {}\ncalendar_years_ahead = {}\n\
             calendar_min_year = {}\ncalendar_min_bare_year = {}\nrepeated_content = {}\n",
            t.enabled,
            t.max_url_chars,
            t.max_path_segments,
            t.max_query_params,
            t.repeated_param,
            t.repeated_segment,
            t.calendar,
            t.calendar_years_ahead,
            t.calendar_min_year,
            t.calendar_min_bare_year,
            t.repeated_content
        )
    }

    /// The `[scope]` keys of [`RuleSettings`], one per line.
    fn describe_rules(&self) -> String {
        let r = &self.rules;
        let quoted = |items: Vec<String>| {
            let items: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
            format!("[{}]", items.join(", "))
        };
        format!(
            "surt_prefixes = {}\nmax_path_depth = {}\nmax_bytes_per_site = {}\nkeep_mime = {}\n",
            quoted(r.surt_prefixes.clone()),
            r.max_path_depth,
            r.max_bytes_per_site,
            quoted(r.keep_mime.iter().map(MimeRule::to_string).collect()),
        )
    }

    fn describe_resolve(&self) -> String {
        if self.resolve.is_empty() {
            return String::new();
        }
        let mut names: Vec<_> = self.resolve.iter().collect();
        names.sort();
        let lines: Vec<String> = names
            .iter()
            .map(|(h, ip)| format!("{h:?} = \"{ip}\""))
            .collect();
        format!("\n[resolve]\n{}\n", lines.join("\n"))
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

/// Validation with access to the source text, so errors can point at lines.
struct Checker<'a> {
    path: &'a Path,
    source: &'a str,
}

impl Checker<'_> {
    fn error(&self, key: &str, message: impl Into<String>) -> ProfileError {
        self.error_at(key, true, message.into())
    }

    /// An error about a key, pointing at its value (`in_value`) or at the key itself.
    fn error_at(&self, key: &str, in_value: bool, message: String) -> ProfileError {
        let span = self.span_of(key, in_value);
        ProfileError {
            file: self.path.display().to_string(),
            line: span.as_ref().map_or(0, |s| self.line_at(s.start)),
            key: key.to_string(),
            message,
            excerpt: span.map(|s| self.excerpt(s).into()),
            more: Vec::new(),
        }
    }

    /// A TOML syntax error: the line and column toml_edit found, shown with a caret.
    fn syntax_error(&self, e: &toml_edit::TomlError) -> ProfileError {
        let span = e.span();
        ProfileError {
            file: self.path.display().to_string(),
            line: span.as_ref().map_or(0, |s| self.line_at(s.start)),
            key: "-".to_string(),
            message: format!("TOML syntax error: {}", e.message().trim()),
            excerpt: span.map(|s| self.excerpt(s).into()),
            more: Vec::new(),
        }
    }

    /// The line holding `span`, numbered, with carets under the span (one line's worth).
    fn excerpt(&self, span: std::ops::Range<usize>) -> String {
        let start = span.start.min(self.source.len());
        let line_start = self.source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.source[line_start..]
            .find('\n')
            .map_or(self.source.len(), |i| line_start + i);
        // A line may hold a password (`database = "postgresql://u:secret@…"`): never shown;
        // the caret is placed on the masked line.
        let masked = |s: &str| crate::frontier::mask_secrets(s);
        let text = masked(self.source[line_start..line_end].trim_end_matches('\r'));
        let column = masked(&self.source[line_start..start]).chars().count();
        let end = span.end.clamp(start, line_end.max(start));
        let width = masked(&self.source[line_start..end])
            .chars()
            .count()
            .saturating_sub(column)
            .max(1);
        let number = self.line_at(start).to_string();
        let pad = " ".repeat(number.len());
        format!(
            "{pad} |\n{number} | {text}\n{pad} | {}{}",
            " ".repeat(column),
            "^".repeat(width)
        )
    }

    /// The span of a dotted key (or of its value), found with toml_edit's spans.
    fn span_of(&self, key: &str, in_value: bool) -> Option<std::ops::Range<usize>> {
        let doc = self.source.parse::<toml_edit::ImDocument<String>>().ok()?;
        let mut table: &dyn toml_edit::TableLike = doc.as_table();
        let mut span = None;
        // Only the first dot separates table and key: `resolve.site-a.test` names a host.
        for part in key.splitn(2, '.') {
            let Some((k, it)) = table.get_key_value(part) else {
                break;
            };
            let value_span = it.span().or_else(|| it.as_value().and_then(|v| v.span()));
            span = if in_value {
                value_span.or_else(|| k.span())
            } else {
                k.span().or(value_span)
            };
            match it.as_table_like() {
                Some(t) => table = t,
                None => break,
            }
        }
        span
    }

    fn line_at(&self, offset: usize) -> usize {
        let end = offset.min(self.source.len());
        self.source.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// Turns a TOML/serde error into one that names the line and the key.
    fn toml_error(&self, e: &toml::de::Error) -> ProfileError {
        let line = e.span().map(|s| self.line_at(s.start)).unwrap_or(0);
        let key = e
            .span()
            .map(|s| self.key_at(s.start))
            .unwrap_or_else(|| "-".to_string());
        let message = e.message().trim().to_string();
        let message = match message.strip_prefix("missing field ") {
            Some(field) => format!("missing required key {field}"),
            None => message.replace("unknown field", "unknown key"),
        };
        let excerpt = e.span().map(|s| self.excerpt(s).into());
        ProfileError {
            file: self.path.display().to_string(),
            line,
            key,
            message,
            excerpt,
            more: Vec::new(),
        }
    }

    /// The dotted key of the line at `offset`: `[table]` header above it + the key on the line.
    fn key_at(&self, offset: usize) -> String {
        let end = offset.min(self.source.len());
        let before = &self.source[..end];
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = self.source[line_start..].lines().next().unwrap_or("");
        let table = before[..line_start]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('[') && !l.starts_with("[["))
            .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            return trimmed
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
        }
        let key = trimmed
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        match (table, key.is_empty()) {
            (Some(t), false) => format!("{t}.{key}"),
            (Some(t), true) => t,
            (None, false) => key.to_string(),
            (None, true) => "-".to_string(),
        }
    }

    /// Checks every value; every problem found is reported together.
    fn validate(&self, raw: RawProfile) -> Result<Profile, ProfileError> {
        let mut errors = Vec::new();
        // Keeps an Ok value, records an error and goes on with a stand-in.
        fn keep<T>(errors: &mut Vec<ProfileError>, r: Result<T, ProfileError>) -> Option<T> {
            r.map_err(|e| errors.push(e)).ok()
        }
        let seeds = keep(&mut errors, self.seeds(&raw.crawl.seeds)).unwrap_or_default();
        let identity = keep(&mut errors, self.user_agent(&raw.identity.user_agent));
        let resolve = keep(&mut errors, self.resolve(&raw.resolve));
        // With a broken [resolve] table, whether a seed is on loopback cannot be told (and
        // must not be asked of DNS for names the table meant to map): that check waits.
        let loopback_seeds = if resolve.is_some() { &seeds[..] } else { &[] };
        let resolve = resolve.unwrap_or_default();
        let politeness = keep(
            &mut errors,
            self.politeness(&raw.politeness, loopback_seeds, &resolve),
        );
        let reason = raw.robots.reason.trim().to_string();
        if reason.contains(['\r', '\n']) {
            errors.push(self.error("robots.reason", "must be a single line"));
        }
        if !raw.robots.obey && reason.is_empty() {
            errors.push(self.error(
                "robots.obey",
                "obey = false needs a written reason: set [robots] reason = \"…\" (who asked \
                 for this crawl and why robots.txt does not apply)",
            ));
        }
        let scope = keep(&mut errors, self.scope(&raw.scope));
        let rules = keep(&mut errors, self.scope_rules(&raw.scope));
        let traps = keep(&mut errors, self.traps(&raw.traps));
        let browser = keep(&mut errors, self.browser(&raw.browser));
        let sites_at_once = keep(
            &mut errors,
            self.positive("crawl.sites_at_once", raw.crawl.sites_at_once),
        );
        if raw.crawl.name.trim().is_empty() || raw.crawl.name.contains(['\r', '\n']) {
            errors.push(self.error("crawl.name", "must be a non-empty single line"));
        }
        let max_body_bytes = keep(
            &mut errors,
            self.positive("limits.max_body_bytes", raw.limits.max_body_bytes),
        );
        let timeout = keep(
            &mut errors,
            self.seconds("limits.timeout", raw.limits.timeout),
        );
        if timeout.is_some_and(|t| t.is_zero()) {
            errors.push(self.error("limits.timeout", "must be more than 0 seconds"));
        }
        let max_outlinks = self.positive("limits.max_outlinks", raw.limits.max_outlinks)? as usize;
        let guard = self.guard(&raw.limits.allow_addresses, &seeds, &resolve)?;
        let out = &raw.output;
        if out.prefix.is_empty()
            || !out
                .prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            errors.push(self.error(
                "output.prefix",
                "must be non-empty and use only letters, digits, '-', '_' and '.'",
            ));
        }
        if out.dir.trim().is_empty() {
            errors.push(self.error("output.dir", "must not be empty"));
        }
        let warc_version = match out.warc_version.as_str() {
            "1.1" => Some(WarcVersion::V1_1),
            "1.0" => Some(WarcVersion::V1_0),
            other => {
                errors.push(self.error(
                    "output.warc_version",
                    format!("must be \"1.1\" or \"1.0\", not {other:?}"),
                ));
                None
            }
        };
        let warc_max_bytes = keep(
            &mut errors,
            self.positive("output.warc_max_bytes", out.warc_max_bytes),
        );
        let base = self.path.parent().unwrap_or(Path::new("."));
        let dedup_previous = keep(&mut errors, self.dedup_paths(base, &raw.dedup.previous));
        let dedup_max_digests = match raw.dedup.max_digests {
            None => Some(1_000_000),
            Some(n) => keep(
                &mut errors,
                usize::try_from(n)
                    .map_err(|_| self.error("dedup.max_digests", "must be 0 or more")),
            ),
        };
        let extra_roots = keep(&mut errors, self.extra_roots(base, &raw.tls.extra_roots));
        let frontier = keep(&mut errors, self.frontier(&raw.frontier));
        let optout_lists: Vec<PathBuf> = raw.optout.lists.iter().map(|l| base.join(l)).collect();
        let optout = keep(
            &mut errors,
            crate::scope::optout::OptOutList::load(&optout_lists)
                .map_err(|e| self.error("optout.lists", e.to_string())),
        );
        if let Some(e) = ProfileError::from_many(errors) {
            return Err(e);
        }
        // Every piece is there: an error would have been returned above.
        let (
            Some((user_agent, robots_token)),
            Some(politeness),
            Some(scope),
            Some(rules),
            Some(traps),
            Some(sites_at_once),
            Some(max_body_bytes),
            Some(timeout),
            Some(warc_version),
            Some(warc_max_bytes),
            Some(dedup_previous),
            Some(dedup_max_digests),
            Some(extra_roots),
            Some(optout),
            Some(frontier),
            Some(browser),
        ) = (
            identity,
            politeness,
            scope,
            rules,
            traps,
            sites_at_once,
            max_body_bytes,
            timeout,
            warc_version,
            warc_max_bytes,
            dedup_previous,
            dedup_max_digests,
            extra_roots,
            optout,
            frontier,
            browser,
        )
        else {
            return Err(self.error("-", "the profile could not be checked"));
        };
        let (user_agent, agent_token) = if raw.robots.obey {
            (user_agent, robots_token.clone())
        } else {
            unrestricted_identity(&user_agent, &robots_token)
        };
        Ok(Profile {
            path: self.path.to_path_buf(),
            source: self.source.to_string(),
            name: raw.crawl.name.trim().to_string(),
            seeds,
            sites_at_once: sites_at_once as usize,
            user_agent,
            agent_token,
            operator: raw.identity.operator.trim().to_string(),
            send_referer: raw.identity.send_referer,
            scope,
            traps,
            browser,
            rules,
            politeness,
            obey_robots: raw.robots.obey,
            unrestricted_reason: if raw.robots.obey {
                String::new()
            } else {
                reason
            },
            robots_token,
            dedup_previous,
            dedup_max_digests,
            optout_lists,
            optout,
            extra_roots,
            resolve,
            max_body_bytes,
            timeout,
            max_outlinks,
            guard,
            output_dir: base.join(&out.dir),
            prefix: out.prefix.clone(),
            warc_max_bytes,
            warc_version,
            wacz: out.wacz,
            frontier,
        })
    }

    /// `[frontier]`: a PostgreSQL URL (or none: SQLite) and the lease of a shared crawl.
    fn frontier(
        &self,
        raw: &RawFrontier,
    ) -> Result<crate::frontier::FrontierSettings, ProfileError> {
        let lease = self.seconds("frontier.lease_seconds", raw.lease_seconds)?;
        if lease < Duration::from_secs(1) {
            return Err(self.error(
                "frontier.lease_seconds",
                format!("must be 1 second or more, not {}", raw.lease_seconds),
            ));
        }
        let database = match raw.database.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(url) if crate::frontier::is_postgres_url(url) => Some(url.to_string()),
            Some(other) => {
                return Err(self.error(
                    "frontier.database",
                    format!(
                        "must be a PostgreSQL URL (postgresql://user@host:port/database), not \
                         {:?}",
                        crate::frontier::postgres::shown(other)
                    ),
                ))
            }
        };
        Ok(crate::frontier::FrontierSettings { database, lease })
    }

    /// The address guard: loopback is open when every seed is on loopback; `allow_addresses`
    /// opens CIDR ranges.
    fn guard(
        &self,
        allow: &[String],
        seeds: &[Url],
        resolve: &std::collections::HashMap<String, IpAddr>,
    ) -> Result<crate::net::guard::Guard, ProfileError> {
        let allowed = allow
            .iter()
            .map(|c| {
                c.parse()
                    .map_err(|e| self.error("limits.allow_addresses", e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let loopback = seeds.iter().all(|u| is_loopback_seed(u, resolve));
        Ok(crate::net::guard::Guard::new(loopback, allowed))
    }

    fn seeds(&self, raw: &[String]) -> Result<Vec<Url>, ProfileError> {
        if raw.is_empty() {
            return Err(self.error("crawl.seeds", "needs at least one seed URL"));
        }
        raw.iter()
            .map(|s| {
                let mut url = Url::parse(s.trim())
                    .map_err(|e| self.error("crawl.seeds", format!("{s:?} is not a URL: {e}")))?;
                if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                    return Err(self.error(
                        "crawl.seeds",
                        format!("{s:?}: only http:// and https:// URLs with a host can be crawled"),
                    ));
                }
                url.set_fragment(None);
                Ok(url)
            })
            .collect()
    }

    /// The user agent must carry a contact URL; its first product token names us in robots.txt.
    fn user_agent(&self, raw: &str) -> Result<(String, String), ProfileError> {
        let ua = raw.trim();
        if ua.contains(['\r', '\n']) || !ua.is_ascii() {
            return Err(self.error("identity.user_agent", "must be one line of ASCII text"));
        }
        if !(ua.contains("http://") || ua.contains("https://")) {
            return Err(self.error(
                "identity.user_agent",
                "must contain a contact URL (http:// or https://) so webmasters can reach you, \
                 e.g. \"archiver/0.1 (+https://example.org/contact)\"",
            ));
        }
        let token: String = ua
            .split(['/', ' '])
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect::<String>()
            .to_ascii_lowercase();
        if token.is_empty() {
            return Err(self.error(
                "identity.user_agent",
                "must start with a product token such as \"archiver/0.1\"",
            ));
        }
        Ok((ua.to_string(), token))
    }

    /// `[tls] extra_roots`: PEM files of certificates to trust, relative to the profile.
    fn extra_roots(&self, base: &Path, raw: &[String]) -> Result<Vec<Vec<u8>>, ProfileError> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = Vec::new();
        for file in raw {
            let path = base.join(file);
            let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(&path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| self.error("tls.extra_roots", format!("{}: {e}", path.display())))?;
            if certs.is_empty() {
                let msg = format!("{} holds no PEM certificate", path.display());
                return Err(self.error("tls.extra_roots", msg));
            }
            roots.extend(certs.into_iter().map(|c| c.to_vec()));
        }
        Ok(roots)
    }

    /// `[dedup] previous`: paths relative to the profile's folder, which must exist.
    fn dedup_paths(&self, base: &Path, raw: &[String]) -> Result<Vec<PathBuf>, ProfileError> {
        raw.iter()
            .map(|p| {
                let path = base.join(p);
                if path.exists() {
                    Ok(path)
                } else {
                    Err(self.error(
                        "dedup.previous",
                        format!("{} does not exist", path.display()),
                    ))
                }
            })
            .collect()
    }

    fn resolve(
        &self,
        raw: &std::collections::BTreeMap<String, String>,
    ) -> Result<std::collections::HashMap<String, IpAddr>, ProfileError> {
        raw.iter()
            .map(|(host, addr)| {
                let ip: IpAddr = addr.trim().parse().map_err(|_| {
                    self.error(
                        &format!("resolve.{host}"),
                        format!("{addr:?} is not an IP address"),
                    )
                })?;
                Ok((host.trim().trim_end_matches('.').to_ascii_lowercase(), ip))
            })
            .collect()
    }

    fn politeness(
        &self,
        raw: &RawPoliteness,
        seeds: &[Url],
        resolve: &std::collections::HashMap<String, IpAddr>,
    ) -> Result<PolitenessSettings, ProfileError> {
        // Every bad value of the table is reported, not only the first.
        let mut errors = Vec::new();
        let mut keep =
            |r: Result<Duration, ProfileError>| r.map_err(|e| errors.push(e)).unwrap_or_default();
        let min_delay = keep(self.seconds("politeness.min_delay", raw.min_delay));
        let max_delay = keep(self.seconds("politeness.max_delay", raw.max_delay));
        let max_crawl_delay = keep(self.seconds("politeness.max_crawl_delay", raw.max_crawl_delay));
        let dns_cache = keep(self.seconds("politeness.dns_cache_seconds", raw.dns_cache_seconds));
        if !(raw.delay_factor.is_finite() && raw.delay_factor >= 0.0 && raw.delay_factor <= 1000.0)
        {
            errors.push(self.error("politeness.delay_factor", "must be a number from 0 to 1000"));
        }
        if raw.min_delay < MIN_DELAY_FLOOR {
            if let Some(host) = seeds.iter().find(|u| !is_loopback_seed(u, resolve)) {
                errors.push(self.error(
                    "politeness.min_delay",
                    format!(
                        "{} s is below the {MIN_DELAY_FLOOR} s floor; a shorter delay is allowed only \
                         for hosts on loopback addresses, and seed {} is not",
                        raw.min_delay, host
                    ),
                ));
            }
        }
        if max_delay < min_delay {
            errors.push(self.error("politeness.max_delay", "must not be less than min_delay"));
        }
        let max_retries = u32::try_from(raw.max_retries)
            .ok()
            .filter(|&n| n <= 100)
            .unwrap_or_else(|| {
                errors.push(self.error("politeness.max_retries", "must be from 0 to 100"));
                0
            });
        let budget = match raw.budget.as_str() {
            "ip" => BudgetKind::Ip,
            "host" => BudgetKind::Host,
            other => {
                errors.push(self.error(
                    "politeness.budget",
                    format!("must be \"ip\" or \"host\", not {other:?}"),
                ));
                BudgetKind::Ip
            }
        };
        let threshold = u32::try_from(raw.refusals_before_suspend)
            .ok()
            .filter(|&n| (1..=1000).contains(&n))
            .unwrap_or_else(|| {
                errors.push(self.error(
                    "politeness.refusals_before_suspend",
                    "must be from 1 to 1000",
                ));
                1
            });
        let hours_ok =
            raw.suspend_hours.is_finite() && (0.0..=24.0 * 365.0).contains(&raw.suspend_hours);
        if !hours_ok {
            errors.push(self.error(
                "politeness.suspend_hours",
                "must be a number of hours from 0 to 8760",
            ));
        }
        if let Some(e) = ProfileError::from_many(errors) {
            return Err(e);
        }
        Ok(PolitenessSettings {
            min_delay,
            delay_factor: raw.delay_factor,
            max_delay,
            max_crawl_delay,
            max_retries,
            budget,
            refusals: crate::politeness::RefusalSettings {
                threshold,
                away: Duration::from_secs_f64(raw.suspend_hours * 3600.0),
            },
            dns_cache,
        })
    }

    fn scope(&self, raw: &RawScope) -> Result<ScopeSettings, ProfileError> {
        let regexes = |key: &str, list: &[String]| -> Result<Vec<Regex>, ProfileError> {
            list.iter()
                .map(|r| {
                    Regex::new(r)
                        .map_err(|e| self.error(key, format!("{r:?} is not a valid regex: {e}")))
                })
                .collect()
        };
        let mut p = Problems::default();
        let max_hops = p.take(
            u32::try_from(raw.max_hops)
                .map_err(|_| self.error("scope.max_hops", "must be 0 or more")),
        );
        let settings = ScopeSettings {
            max_hops,
            max_pages_per_site: p
                .take(self.positive("scope.max_pages_per_site", raw.max_pages_per_site)),
            include: p.take(regexes("scope.include", &raw.include)),
            exclude: p.take(regexes("scope.exclude", &raw.exclude)),
            embeds_off_site: raw.embeds_off_site,
        };
        p.finish(settings)
    }

    /// `surt_prefixes`, `max_path_depth`, `max_bytes_per_site` and `keep_mime` of `[scope]`.
    fn scope_rules(&self, raw: &RawScope) -> Result<RuleSettings, ProfileError> {
        let mut p = Problems::default();
        let surt_prefixes = p.take(
            raw.surt_prefixes
                .iter()
                .map(|p| {
                    rules::parse_surt_prefix(p).map_err(|m| self.error("scope.surt_prefixes", m))
                })
                .collect::<Result<Vec<_>, _>>(),
        );
        let keep_mime = p.take(
            raw.keep_mime
                .iter()
                .map(|m| rules::parse_mime_rule(m).map_err(|e| self.error("scope.keep_mime", e)))
                .collect::<Result<Vec<_>, _>>(),
        );
        let max_path_depth = p.take(u32::try_from(raw.max_path_depth).map_err(|_| {
            self.error(
                "scope.max_path_depth",
                format!(
                    "must be a whole number of path segments, 0 for no limit, not {}",
                    raw.max_path_depth
                ),
            )
        }));
        let max_bytes_per_site = p.take(u64::try_from(raw.max_bytes_per_site).map_err(|_| {
            self.error(
                "scope.max_bytes_per_site",
                format!(
                    "must be a whole number of bytes, 0 for no limit, not {}",
                    raw.max_bytes_per_site
                ),
            )
        }));
        p.finish(RuleSettings {
            surt_prefixes,
            max_path_depth,
            max_bytes_per_site,
            keep_mime,
        })
    }

    /// `[traps]`: thresholds are whole numbers, 0 turning a rule off; years are plain years.
    fn traps(&self, raw: &RawTraps) -> Result<crate::scope::traps::TrapSettings, ProfileError> {
        let count = |key: &str, v: i64| {
            usize::try_from(v)
                .map_err(|_| self.error(key, format!("must be 0 (off) or more, not {v}")))
        };
        let year = |key: &str, v: i64| {
            if (0..=9999).contains(&v) {
                Ok(v)
            } else {
                Err(self.error(key, format!("must be a year from 0 to 9999, not {v}")))
            }
        };
        let mut p = Problems::default();
        let repeated_content = p.take(u32::try_from(raw.repeated_content).map_err(|_| {
            self.error(
                "traps.repeated_content",
                format!("must be 0 (off) or more, not {}", raw.repeated_content),
            )
        }));
        let settings = crate::scope::traps::TrapSettings {
            enabled: raw.enabled,
            max_url_chars: p.take(count("traps.max_url_chars", raw.max_url_chars)),
            max_path_segments: p.take(count("traps.max_path_segments", raw.max_path_segments)),
            max_query_params: p.take(count("traps.max_query_params", raw.max_query_params)),
            repeated_param: p.take(count("traps.repeated_param", raw.repeated_param)),
            repeated_segment: p.take(count("traps.repeated_segment", raw.repeated_segment)),
            calendar: raw.calendar,
            calendar_years_ahead: p
                .take(year("traps.calendar_years_ahead", raw.calendar_years_ahead)),
            calendar_min_year: p.take(year("traps.calendar_min_year", raw.calendar_min_year)),
            calendar_min_bare_year: p.take(year(
                "traps.calendar_min_bare_year",
                raw.calendar_min_bare_year,
            )),
            repeated_content,
        };
        p.finish(settings)
    }

    /// `[browser]`: a known mode, a share from 0 to 1, a timeout above 0.
    fn browser(&self, raw: &RawBrowser) -> Result<crate::browser::BrowserSettings, ProfileError> {
        use crate::browser::RenderMode;
        let mut p = Problems::default();
        let render = match raw.render.as_str() {
            "empty" => RenderMode::Empty,
            "never" => RenderMode::Never,
            "all" => RenderMode::All,
            other => {
                p.0.push(self.error(
                    "browser.render",
                    format!("must be \"empty\", \"never\" or \"all\", not {other:?}"),
                ));
                RenderMode::Never
            }
        };
        if !(0.0..=1.0).contains(&raw.max_share) {
            p.0.push(self.error(
                "browser.max_share",
                format!("must be a share from 0 to 1, not {}", raw.max_share),
            ));
        }
        let render_timeout = p.take(self.seconds("browser.render_timeout", raw.render_timeout));
        if raw.render_timeout == 0.0 {
            p.0.push(self.error("browser.render_timeout", "must be more than 0 seconds"));
        }
        let executable = raw.executable.trim();
        p.finish(crate::browser::BrowserSettings {
            render,
            max_share: raw.max_share,
            executable: (!executable.is_empty()).then(|| PathBuf::from(executable)),
            render_timeout,
        })
    }

    fn positive(&self, key: &str, value: i64) -> Result<u64, ProfileError> {
        u64::try_from(value)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| self.error(key, format!("must be a whole number above 0, not {value}")))
    }

    fn seconds(&self, key: &str, value: f64) -> Result<Duration, ProfileError> {
        if !value.is_finite() || !(0.0..=86_400.0).contains(&value) {
            return Err(self.error(
                key,
                format!("must be a number of seconds from 0 to 86400, not {value}"),
            ));
        }
        Ok(Duration::from_secs_f64(value))
    }
}

/// The problems of one table, gathered so that every bad value is reported at once rather
/// than only the first: a bad value is stood in for by its type's default, which is never used
/// because `finish` then fails with all of them.
#[derive(Default)]
struct Problems(Vec<ProfileError>);

impl Problems {
    fn take<T: Default>(&mut self, r: Result<T, ProfileError>) -> T {
        r.unwrap_or_else(|e| {
            self.0.push(e);
            T::default()
        })
    }

    fn finish<T>(self, value: T) -> Result<T, ProfileError> {
        match ProfileError::from_many(self.0) {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

/// The user agent and robots token of an unrestricted run: `archiver/0.1 (+…)` becomes
/// `archiver-unrestricted/0.1 (+…)`, so webmasters can tell such runs apart in their logs.
fn unrestricted_identity(user_agent: &str, token: &str) -> (String, String) {
    let new_token = format!("{token}-unrestricted");
    let first_len = user_agent.find(['/', ' ']).unwrap_or(user_agent.len());
    (
        format!("{new_token}{}", &user_agent[first_len..]),
        new_token,
    )
}

/// Seeds count as loopback when the profile maps their host to a loopback address, or when
/// they resolve only to loopback addresses.
fn is_loopback_seed(url: &Url, resolve: &std::collections::HashMap<String, IpAddr>) -> bool {
    let mapped = url
        .host_str()
        .and_then(|h| resolve.get(&h.to_ascii_lowercase()));
    match mapped {
        Some(ip) => ip.is_loopback(),
        None => is_loopback_host(url),
    }
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
mod tests {
    use super::*;

    const GOOD: &str = r#"
[crawl]
name = "t"
seeds = ["http://127.0.0.1:8080/"]
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact)"
[politeness]
min_delay = 0.5
"#;

    fn parse(src: &str) -> Result<Profile, ProfileError> {
        Profile::parse(Path::new("/p/site.toml"), src)
    }

    #[test]
    fn good_profile_gets_defaults() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.agent_token, "archiver");
        assert_eq!(p.politeness.min_delay, Duration::from_millis(500));
        assert_eq!(p.scope.max_hops, 20);
        assert_eq!(p.output_dir, Path::new("/p/crawls/example"));
        assert_eq!(p.warc_version, WarcVersion::V1_1);
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let src = GOOD.replace("min_delay = 0.5", "min_delay = 0.5\nmin_dealy = 3");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.file, "/p/site.toml");
        assert_eq!(e.line, 9);
        assert_eq!(e.key, "politeness.min_dealy");
        assert!(e.message.contains("unknown key"), "{e}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let src = GOOD.replace("min_delay = 0.5", "min_delay = \"fast\"");
        let e = parse(&src).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (8, "politeness.min_delay"), "{e}");
    }

    #[test]
    fn short_delay_refused_off_loopback() {
        let src = GOOD.replace("http://127.0.0.1:8080/", "http://192.0.2.1/");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.key, "politeness.min_delay");
        assert_eq!(e.line, 8);
        assert!(e.message.contains("loopback"), "{e}");
    }

    #[test]
    fn user_agent_needs_contact_url() {
        let src = GOOD.replace("(+https://example.org/contact)", "(no contact)");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.key, "identity.user_agent");
        assert_eq!(e.line, 6);
    }

    #[test]
    fn missing_seeds_is_named() {
        let src = GOOD.replace("seeds = [\"http://127.0.0.1:8080/\"]\n", "");
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("seeds"), "{e}");
    }

    #[test]
    fn bad_regex_and_version_are_named() {
        let src = format!("{GOOD}[scope]\nexclude = [\"(\"]\n");
        assert_eq!(parse(&src).unwrap_err().key, "scope.exclude");
        let src = format!("{GOOD}[output]\nwarc_version = \"2.0\"\n");
        let e = parse(&src).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("output.warc_version", 10));
    }

    #[test]
    fn unrestricted_needs_a_reason_and_says_so_in_its_user_agent() {
        let off = format!("{GOOD}[robots]\nobey = false\n");
        let e = parse(&off).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("robots.obey", 10), "{e}");
        let p = parse(&format!(
            "{off}reason = \"legal deposit, letter 2026-11\"\n"
        ))
        .unwrap();
        assert_eq!(
            p.user_agent,
            "archiver-unrestricted/0.1 (+https://example.org/contact)"
        );
        assert_eq!(p.agent_token, "archiver-unrestricted");
        assert_eq!(p.robots_token, "archiver");
        assert_eq!(p.unrestricted_reason, "legal deposit, letter 2026-11");
    }

    #[test]
    fn resolve_table_maps_names_and_counts_as_loopback() {
        let src = GOOD.replace("http://127.0.0.1:8080/", "http://site-a.test/")
            + "[resolve]\n\"site-a.test\" = \"127.0.0.5\"\n";
        let p = parse(&src).unwrap();
        assert_eq!(
            p.resolve["site-a.test"],
            "127.0.0.5".parse::<IpAddr>().unwrap()
        );
        let bad = src.replace("127.0.0.5", "not-an-ip");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.key, "resolve.site-a.test");
        assert_eq!(e.line, 10);
        let budget = format!("{GOOD}budget = \"server\"\n");
        assert_eq!(parse(&budget).unwrap_err().key, "politeness.budget");
    }

    #[test]
    fn browser_table() {
        use crate::browser::RenderMode;
        let p = parse(GOOD).unwrap();
        assert_eq!(p.browser.render, RenderMode::Empty);
        assert_eq!(p.browser.max_share, 0.1);
        assert_eq!(p.browser.render_timeout, Duration::from_secs(120));
        assert!(p.browser.executable.is_none());
        let src = format!(
            "{GOOD}[browser]\nrender = \"all\"\nmax_share = 0.5\nexecutable = \"/opt/c/chrome\"\n\
             render_timeout = 30\n"
        );
        let p = parse(&src).unwrap();
        assert_eq!(p.browser.render, RenderMode::All);
        assert_eq!(p.browser.max_share, 0.5);
        assert_eq!(
            p.browser.executable.as_deref(),
            Some(Path::new("/opt/c/chrome"))
        );
        assert!(p
            .describe()
            .contains("[browser]\nrender = \"all\"\nmax_share = 0.5\n"));
        let bad = format!("{GOOD}[browser]\nrender = \"sometimes\"\nmax_share = 2\n");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("browser.render", 10), "{e}");
        assert!(e.to_string().contains("browser.max_share"), "{e}");
        let zero = format!("{GOOD}[browser]\nrender_timeout = 0\n");
        assert_eq!(parse(&zero).unwrap_err().key, "browser.render_timeout");
    }

    #[test]
    fn traps_table_and_referer() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.traps, crate::scope::traps::TrapSettings::default());
        assert!(p.send_referer);
        let src = format!(
            "{GOOD}[traps]\ncalendar = false\nrepeated_content = 0\nmax_url_chars = 500\n\
             calendar_years_ahead = 5\n"
        );
        let p = parse(&src).unwrap();
        assert!(!p.traps.calendar);
        assert_eq!(p.traps.repeated_content, 0);
        assert_eq!(p.traps.max_url_chars, 500);
        assert_eq!(p.traps.calendar_years_ahead, 5);
        let text = p.describe();
        assert!(
            text.contains("[traps]\nenabled = true\nmax_url_chars = 500\n"),
            "{text}"
        );
        assert!(text.contains("send_referer = true"), "{text}");
        let bad = format!("{GOOD}[traps]\nrepeated_param = -1\n");
        let e = parse(&bad).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("traps.repeated_param", 10),
            "{e}"
        );
        assert!(e.message.contains("0 (off) or more"), "{e}");
        let typo = format!("{GOOD}[traps]\ncalender = false\n");
        assert!(parse(&typo).unwrap_err().message.contains("unknown key"));
        let off = format!("{GOOD}[identity]\n");
        assert!(
            parse(&off).is_err(),
            "a second [identity] table is a TOML error"
        );
        let no_referer = GOOD.replace(
            "user_agent = \"archiver/0.1 (+https://example.org/contact)\"",
            "user_agent = \"archiver/0.1 (+https://example.org/contact)\"\nsend_referer = false",
        );
        assert!(!parse(&no_referer).unwrap().send_referer);
    }

    #[test]
    fn scope_rules_defaults_and_values() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.rules, RuleSettings::default());
        assert_eq!(p.rules.max_path_depth, 20);
        assert_eq!(p.rules.keep_mime[0].to_string(), "*/*");
        let src = format!(
            "{GOOD}[scope]\nsurt_prefixes = [\"example.com\", \"https://(org,site,)/docs/\"]\n\
             max_path_depth = 0\nmax_bytes_per_site = 5000000\n\
             keep_mime = [\"embeds\", \"application/pdf\", \"!video/*\"]\n"
        );
        let p = parse(&src).unwrap();
        assert_eq!(
            p.rules.surt_prefixes,
            ["http://(com,example,", "http://(org,site,)/docs/"]
        );
        assert_eq!(p.rules.max_path_depth, 0);
        assert_eq!(p.rules.max_bytes_per_site, 5_000_000);
        assert_eq!(p.rules.keep_mime.len(), 3);
        let text = p.describe();
        assert!(
            text.contains("embeds_off_site = false\nsurt_prefixes = [\"http://(com,example,\""),
            "{text}"
        );
        assert!(
            text.contains(
                "keep_mime = [\"embeds\", \"application/pdf\", \"!video/*\"]\n\n[politeness]"
            ),
            "{text}"
        );
    }

    #[test]
    fn bad_scope_rules_name_file_line_and_key() {
        for (line, key) in [
            (
                "surt_prefixes = [\"ftp://example.com/\"]",
                "scope.surt_prefixes",
            ),
            ("surt_prefixes = [\"(com,example,\"]", "scope.surt_prefixes"),
            ("max_path_depth = -1", "scope.max_path_depth"),
            ("max_bytes_per_site = -5", "scope.max_bytes_per_site"),
            ("keep_mime = [\"embeds\", \"pdf\"]", "scope.keep_mime"),
            ("max_path_depth = \"deep\"", "scope.max_path_depth"),
            ("keep_mimes = []", "scope.keep_mimes"),
        ] {
            let src = format!("{GOOD}[scope]\nmax_hops = 3\n{line}\n");
            let e = parse(&src).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, 11), "{line}: {e}");
            assert_eq!(e.file, "/p/site.toml");
        }
        let src = format!("{GOOD}[scope]\nkeep_mime = [\"text/\"]\n");
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("\"text/\""), "{e}");
    }

    #[test]
    fn every_bad_value_of_scope_and_traps_is_reported() {
        let src = GOOD.to_string()
            + "[scope]\nmax_hops = -1\ninclude = [\"(\"]\nmax_path_depth = -2\nkeep_mime = [\"\"]\n"
            + "[traps]\nmax_url_chars = -1\ncalendar_min_year = 10000\n";
        let e = parse(&src).unwrap_err();
        let mut keys: Vec<&str> = e.all().map(|e| e.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "scope.include",
                "scope.keep_mime",
                "scope.max_hops",
                "scope.max_path_depth",
                "traps.calendar_min_year",
                "traps.max_url_chars"
            ],
            "{e}"
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let src = GOOD.replace(
            "min_delay = 0.5",
            "min_delay = 0.5\nmax_retries = -1\nbudget = \"server\"",
        ) + "[output]\nprefix = \"a b\"\nwarc_version = \"2\"\n";
        let e = parse(&src).unwrap_err();
        let keys: Vec<&str> = e.all().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "politeness.max_retries",
                "politeness.budget",
                "output.prefix",
                "output.warc_version"
            ],
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("/p/site.toml:9: politeness.max_retries"),
            "{text}"
        );
        assert!(
            text.contains("9 | max_retries = -1\n  |               ^^"),
            "{text}"
        );
        // Unknown keys and wrong types: all of them too, in file order.
        let src = GOOD.replace("min_delay = 0.5", "min_dealy = 0.5\nmax_delay = \"x\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.count(), 2, "{e}");
        assert_eq!((e.line, e.more[0].line), (8, 9));
        assert!(e.message.contains("did you mean min_delay?"), "{e}");
        assert!(e.more[0].message.contains("must be a number"), "{e}");
    }

    #[test]
    fn a_syntax_error_shows_its_line_with_a_caret() {
        let src = GOOD.replace("min_delay = 0.5", "min_delay = 0.5\nname = \"unclosed");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, 9, "{e}");
        assert!(e.message.starts_with("TOML syntax error"), "{e}");
        let excerpt = e.excerpt.as_deref().unwrap_or("");
        assert!(excerpt.contains("9 | name = \"unclosed"), "{excerpt}");
        assert!(
            excerpt
                .lines()
                .last()
                .unwrap_or("")
                .trim_end()
                .ends_with('^'),
            "{excerpt}"
        );
        let src = "[crawl\nseeds = []\n";
        assert_eq!(parse(src).unwrap_err().line, 1);
    }

    #[test]
    fn a_missing_file_says_so_plainly() {
        let e = Profile::load(Path::new("/nonexistent/site.toml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/nonexistent/site.toml: there is no such file"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = Profile::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
    }

    #[test]
    fn the_reference_and_a_quick_profile_are_valid() {
        let p = Profile::parse(Path::new("/x/site.toml"), REFERENCE).unwrap();
        assert_eq!(p.politeness.min_delay, Duration::from_secs(5));
        let seeds = [
            "https://example.org/".to_string(),
            "http://a.example/x".to_string(),
        ];
        let text = quick_profile(&seeds, "https://me.example/bot", "example.org");
        let p = Profile::parse(Path::new("/c/q/profile.toml"), &text).unwrap();
        assert_eq!(p.seeds.len(), 2);
        assert_eq!(p.name, "example.org");
        assert_eq!(p.output_dir, Path::new("/c/q/."));
        assert!(
            p.user_agent.ends_with("(+https://me.example/bot)"),
            "{}",
            p.user_agent
        );
        assert_eq!(
            p.politeness.min_delay,
            Duration::from_secs(5),
            "the defaults"
        );
    }

    #[test]
    fn frontier_database_and_lease() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.frontier, crate::frontier::FrontierSettings::default());
        let src = format!(
            "{GOOD}[frontier]\ndatabase = \"postgresql://crawl@db.example:5432/c\"\nlease_seconds = 5\n"
        );
        let p = parse(&src).unwrap();
        assert_eq!(
            p.frontier.database.as_deref(),
            Some("postgresql://crawl@db.example:5432/c")
        );
        assert_eq!(p.frontier.lease, Duration::from_secs(5));
        let src = format!("{GOOD}[frontier]\ndatabase = \"mysql://u:pw@h/c\"\n");
        let e = parse(&src).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("frontier.database", 10), "{e}");
        assert!(!e.message.contains("pw"), "{e}");
        let src = format!("{GOOD}[frontier]\nlease_seconds = 0.5\n");
        let e = parse(&src).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("frontier.lease_seconds", 10),
            "{e}"
        );
    }

    #[test]
    fn a_database_password_is_never_shown() {
        // A wrong scheme, a syntax error on the line, a wrong type: the quoted line is masked.
        for line in [
            "database = \"mysql://crawler:hunter2@db/c\"",
            "database = \"postgresql://crawler:hunter2@db/c\" oops",
            "database = [\"postgresql://crawler:hunter2@db/c\"]",
            "database = \"postgres://db/c?password=hunter2\" lease_seconds = 3",
        ] {
            let src = format!("{GOOD}[frontier]\n{line}\n");
            let e = parse(&src).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains(":10:") && e.contains("***"), "{e}");
        }
        // The caret stays under the value on the masked line.
        let src = format!("{GOOD}[frontier]\ndatabase = \"mysql://u:hunter2@db/c\"\n");
        let e = parse(&src).unwrap_err().to_string();
        let lines: Vec<&str> = e.lines().collect();
        let (text, caret) = (lines[lines.len() - 2], lines[lines.len() - 1]);
        let at = caret.find('^').unwrap();
        assert_eq!(&text[at..], "\"mysql://u:***@db/c\"", "{e}");
        assert_eq!(caret.trim_end().len() - at, text.len() - at, "{e}");
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback_host(&Url::parse("http://127.0.0.9/").unwrap()));
        assert!(is_loopback_host(&Url::parse("http://[::1]:81/").unwrap()));
        assert!(!is_loopback_host(&Url::parse("http://192.0.2.1/").unwrap()));
    }
}
