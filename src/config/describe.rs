//! `archiver profile check`: the effective settings written back as TOML-like text.

use regex::Regex;

use super::Profile;
use crate::politeness::BudgetKind;
use crate::scope::rules::MimeRule;
use crate::warc::WarcVersion;

impl Profile {
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
            self.dns.cache.as_secs_f64(),
            self.obey_robots,
            self.unrestricted_reason,
            self.robots_token,
            self.fetch.max_body_bytes,
            self.fetch.timeout.as_secs_f64(),
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
            + &self.describe_recrawl()
            + &self.describe_traps()
            + &self.describe_browser()
            + &self.describe_control()
            + &self.describe_resolve()
    }

    fn describe_recrawl(&self) -> String {
        let paths: Vec<String> = self
            .recrawl
            .previous
            .iter()
            .map(|p| format!("{:?}", p.display().to_string()))
            .collect();
        format!(
            "\n[discovery]\nsitemaps = {}\n\n[recrawl]\nprevious = [{}]\nrevisit_unlinked = {}\n",
            self.discovery.sitemaps,
            paths.join(", "),
            self.recrawl.revisit_unlinked
        )
    }

    fn describe_dedup(&self) -> String {
        let paths: Vec<String> = self
            .dedup
            .previous
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
            self.dedup.max_digests,
            lists.join(", "),
            self.optout.entries().len(),
            self.fetch.extra_roots.len()
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

    fn describe_control(&self) -> String {
        let c = &self.control;
        match c.listen {
            None => "\n[control]\nlisten = \"off\"\n".to_string(),
            Some(addr) if c.remote_reason.is_empty() => {
                format!("\n[control]\nlisten = \"{addr}\"\n")
            }
            Some(addr) => format!(
                "\n[control]\nlisten = \"{addr}\"\nallow_remote = true\nreason = {:?}\n",
                c.remote_reason
            ),
        }
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
        if self.dns.overrides.is_empty() {
            return String::new();
        }
        let mut names: Vec<_> = self.dns.overrides.iter().collect();
        names.sort();
        let lines: Vec<String> = names
            .iter()
            .map(|(h, ip)| format!("{h:?} = \"{ip}\""))
            .collect();
        format!("\n[resolve]\n{}\n", lines.join("\n"))
    }
}
