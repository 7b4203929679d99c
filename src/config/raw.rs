//! The profile as serde reads it: one struct per TOML table, unknown keys refused, defaults
//! filled in. Nothing here is checked yet; `validate` turns these into settings.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    pub(super) crawl: RawCrawl,
    pub(super) identity: RawIdentity,
    #[serde(default)]
    pub(super) scope: RawScope,
    #[serde(default)]
    pub(super) politeness: RawPoliteness,
    #[serde(default)]
    pub(super) robots: RawRobots,
    #[serde(default)]
    pub(super) limits: RawLimits,
    #[serde(default)]
    pub(super) output: RawOutput,
    #[serde(default)]
    pub(super) resolve: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub(super) dedup: RawDedup,
    #[serde(default)]
    pub(super) optout: RawOptOut,
    #[serde(default)]
    pub(super) tls: RawTls,
    #[serde(default)]
    pub(super) traps: RawTraps,
    #[serde(default)]
    pub(super) frontier: RawFrontier,
    #[serde(default)]
    pub(super) browser: RawBrowser,
    #[serde(default)]
    pub(super) discovery: RawDiscovery,
    #[serde(default)]
    pub(super) recrawl: RawRecrawl,
    #[serde(default)]
    pub(super) control: super::control::RawControl,
}

/// `[discovery]`: where URLs are found besides links (see `crate::extract::sitemap`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawDiscovery {
    pub(super) sitemaps: bool,
}

impl Default for RawDiscovery {
    fn default() -> Self {
        RawDiscovery {
            sitemaps: crate::extract::sitemap::DiscoverySettings::default().sitemaps,
        }
    }
}

/// `[recrawl]`: earlier crawls asked again with conditional requests (see `crate::recrawl`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawRecrawl {
    pub(super) previous: Vec<String>,
    pub(super) revisit_unlinked: bool,
}

impl Default for RawRecrawl {
    fn default() -> Self {
        RawRecrawl {
            previous: Vec::new(),
            revisit_unlinked: crate::recrawl::RecrawlSettings::default().revisit_unlinked,
        }
    }
}

/// `[browser]`: when pages are rendered in headless Chromium (see `crate::browser`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawBrowser {
    pub(super) render: String,
    pub(super) max_share: f64,
    pub(super) executable: String,
    pub(super) render_timeout: f64,
    pub(super) tabs: i64,
    pub(super) rerender_duplicates: bool,
    pub(super) max_dom_links_per_page: i64,
    pub(super) max_dom_links_per_site: i64,
}

impl Default for RawBrowser {
    fn default() -> Self {
        let d = crate::browser::BrowserSettings::default();
        RawBrowser {
            render: "empty".into(),
            max_share: d.max_share,
            executable: String::new(),
            render_timeout: d.render_timeout.as_secs_f64(),
            tabs: d.tabs as i64,
            rerender_duplicates: d.rerender_duplicates,
            max_dom_links_per_page: d.max_dom_links_per_page as i64,
            max_dom_links_per_site: d.max_dom_links_per_site as i64,
        }
    }
}

/// `[frontier]`: where the crawl's frontier lives (see `crate::frontier::FrontierSettings`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawFrontier {
    pub(super) database: Option<String>,
    pub(super) lease_seconds: f64,
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
pub(super) struct RawTraps {
    pub(super) enabled: bool,
    pub(super) max_url_chars: i64,
    pub(super) max_path_segments: i64,
    pub(super) max_query_params: i64,
    pub(super) repeated_param: i64,
    pub(super) repeated_segment: i64,
    pub(super) calendar: bool,
    pub(super) calendar_years_ahead: i64,
    pub(super) calendar_min_year: i64,
    pub(super) calendar_min_bare_year: i64,
    pub(super) repeated_content: i64,
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
pub(super) struct RawTls {
    pub(super) extra_roots: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawOptOut {
    pub(super) lists: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawDedup {
    pub(super) previous: Vec<String>,
    pub(super) max_digests: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCrawl {
    #[serde(default = "default_name")]
    pub(super) name: String,
    pub(super) seeds: Vec<String>,
    #[serde(default = "default_sites_at_once")]
    pub(super) sites_at_once: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIdentity {
    pub(super) user_agent: String,
    #[serde(default)]
    pub(super) operator: String,
    #[serde(default = "default_true")]
    pub(super) send_referer: bool,
}

pub(super) fn default_true() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawScope {
    pub(super) max_hops: i64,
    pub(super) max_pages_per_site: i64,
    pub(super) include: Vec<String>,
    pub(super) exclude: Vec<String>,
    pub(super) embeds_off_site: bool,
    pub(super) surt_prefixes: Vec<String>,
    pub(super) max_path_depth: i64,
    pub(super) max_bytes_per_site: i64,
    pub(super) keep_mime: Vec<String>,
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
pub(super) struct RawPoliteness {
    pub(super) min_delay: f64,
    pub(super) delay_factor: f64,
    pub(super) max_delay: f64,
    pub(super) max_crawl_delay: f64,
    pub(super) max_retries: i64,
    pub(super) budget: String,
    pub(super) refusals_before_suspend: i64,
    pub(super) suspend_hours: f64,
    pub(super) dns_cache_seconds: f64,
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
pub(super) struct RawRobots {
    pub(super) obey: bool,
    pub(super) reason: String,
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
pub(super) struct RawLimits {
    pub(super) max_body_bytes: i64,
    pub(super) timeout: f64,
    pub(super) max_outlinks: i64,
    pub(super) allow_addresses: Vec<String>,
}

impl Default for RawLimits {
    fn default() -> Self {
        RawLimits {
            max_body_bytes: 100_000_000,
            timeout: 60.0,
            // High enough that no page of a real documentation site is cut (rustdoc's
            // `core::arch::x86_64` index has 6,655 links); links are streamed, so memory stays
            // bounded by this many distinct values.
            max_outlinks: 100_000,
            allow_addresses: Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawOutput {
    pub(super) dir: String,
    pub(super) prefix: String,
    pub(super) warc_max_bytes: i64,
    pub(super) warc_version: String,
    pub(super) wacz: bool,
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

pub(super) fn default_name() -> String {
    "crawl".to_string()
}

pub(super) fn default_sites_at_once() -> i64 {
    50
}
