//! Every value of a profile checked and translated into the settings types of the modules
//! that use them; every problem found is reported together.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use url::Url;

use super::locate::Checker;
use super::raw::*;
use super::{is_loopback_host, Profile, ProfileError};
use crate::politeness::{BudgetKind, PolitenessSettings, MIN_DELAY_FLOOR};
use crate::scope::rules::{self, RuleSettings};
use crate::scope::ScopeSettings;
use crate::warc::WarcVersion;

impl Checker<'_> {
    /// Checks every value; every problem found is reported together.
    pub(super) fn validate(&self, raw: RawProfile) -> Result<Profile, ProfileError> {
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
        let dns_cache = keep(
            &mut errors,
            self.seconds(
                "politeness.dns_cache_seconds",
                raw.politeness.dns_cache_seconds,
            ),
        );
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
        let recrawl = keep(&mut errors, self.recrawl(base, &raw.recrawl));
        let dedup_max_digests = match raw.dedup.max_digests {
            None => Some(crate::dedup::DedupSettings::default().max_digests),
            Some(n) => keep(
                &mut errors,
                usize::try_from(n)
                    .map_err(|_| self.error("dedup.max_digests", "must be 0 or more")),
            ),
        };
        let extra_roots = keep(&mut errors, self.extra_roots(base, &raw.tls.extra_roots));
        let frontier = keep(&mut errors, self.frontier(&raw.frontier));
        let control = keep(&mut errors, self.control(&raw.control));
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
            Some(dns_cache),
            Some(recrawl),
            Some(control),
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
            dns_cache,
            recrawl,
            control,
        )
        else {
            return Err(self.error("-", "the profile could not be checked"));
        };
        let (user_agent, agent_token) = if raw.robots.obey {
            (user_agent, robots_token.clone())
        } else {
            unrestricted_identity(&user_agent, &robots_token)
        };
        let fetch = crate::net::fetch::FetchSettings {
            user_agent: user_agent.clone(),
            timeout,
            max_body_bytes,
            extra_roots,
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
            dedup: crate::dedup::DedupSettings {
                previous: dedup_previous,
                max_digests: dedup_max_digests,
            },
            optout_lists,
            optout,
            fetch,
            dns: crate::net::dns::DnsSettings {
                overrides: resolve,
                cache: dns_cache,
            },
            max_outlinks,
            guard,
            output_dir: base.join(&out.dir),
            prefix: out.prefix.clone(),
            warc_max_bytes,
            warc_version,
            wacz: out.wacz,
            frontier,
            discovery: crate::extract::sitemap::DiscoverySettings {
                sitemaps: raw.discovery.sitemaps,
            },
            recrawl,
            control,
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

    /// `[dedup] previous`: earlier crawls, relative to the profile's folder; each must name a
    /// CDXJ index (a crawl's output folder, its `indexes/`, or `.cdxj` files), else the crawl
    /// would find no earlier digest and write no revisit, silently.
    fn dedup_paths(&self, base: &Path, raw: &[String]) -> Result<Vec<PathBuf>, ProfileError> {
        self.existing_paths("dedup.previous", base, raw)
    }

    /// Paths relative to the profile's folder, each naming an earlier crawl's index (its output
    /// folder, its `indexes/`, or `.cdxj` files): one resolver for every option that names one.
    fn existing_paths(
        &self,
        field: &str,
        base: &Path,
        raw: &[String],
    ) -> Result<Vec<PathBuf>, ProfileError> {
        raw.iter()
            .map(|p| {
                let path = base.join(p);
                crate::cdx::locate::crawl_indexes(&path)
                    .map(|_| path)
                    .map_err(|e| self.error(field, e.to_string()))
            })
            .collect()
    }

    /// `[recrawl]`: each earlier crawl must be one (an output folder, its indexes, a .cdxj).
    fn recrawl(
        &self,
        base: &Path,
        raw: &RawRecrawl,
    ) -> Result<crate::recrawl::RecrawlSettings, ProfileError> {
        let previous = self.existing_paths("recrawl.previous", base, &raw.previous)?;
        for path in &previous {
            crate::recrawl::place_of(path)
                .map_err(|e| self.error("recrawl.previous", e.to_string()))?;
        }
        Ok(crate::recrawl::RecrawlSettings {
            previous,
            revisit_unlinked: raw.revisit_unlinked,
        })
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

    /// `[browser]`: a known mode, a share from 0 to 1, a timeout above 0, counts above 0.
    fn browser(&self, raw: &RawBrowser) -> Result<crate::browser::BrowserSettings, ProfileError> {
        use crate::browser::RenderMode;
        let mut p = Problems::default();
        let render = match raw.render.as_str() {
            "empty" => RenderMode::Empty,
            // "none" as people (and qa's manual) also say it.
            "never" | "none" => RenderMode::Never,
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
        let tabs = p.take(self.positive("browser.tabs", raw.tabs)) as usize;
        let per_page = self.positive("browser.max_dom_links_per_page", raw.max_dom_links_per_page);
        let per_page = p.take(per_page) as usize;
        let per_site = self.positive("browser.max_dom_links_per_site", raw.max_dom_links_per_site);
        let per_site = p.take(per_site) as usize;
        p.finish(crate::browser::BrowserSettings {
            render,
            max_share: raw.max_share,
            executable: (!executable.is_empty()).then(|| PathBuf::from(executable)),
            render_timeout,
            tabs,
            rerender_duplicates: raw.rerender_duplicates,
            max_dom_links_per_page: per_page,
            max_dom_links_per_site: per_site,
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
