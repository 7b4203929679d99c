//! Scope rules in the manner of Heritrix's decide rules, on top of [`crate::scope`]: SURT
//! prefixes, maximum path depth, a byte budget per site and the MIME types worth archiving.
//!
//! [`crate::scope::Scope`] keeps deciding by seed origin, include/exclude regexes, hops and
//! off-site embeds; [`ScopeRules::decide`] wraps it and adds the rules below, so the crawl loop
//! asks one question per discovered URL. Settings come from the profile's `[scope]` table
//! (`surt_prefixes`, `max_path_depth`, `max_bytes_per_site`, `keep_mime`), validated by
//! [`parse_surt_prefix`] and [`parse_mime_rule`].
//!
//! ## SURT prefix form
//!
//! Heritrix writes a URL with its host reversed so that a string prefix selects a domain, a
//! host, or a folder: [`surt_prefix_form`] turns `http://www.Example.com:8080/Docs/a?b=1` into
//! `http://(com,example,www,:8080)/docs/a?b=1` — scheme, `://(`, host labels last to first
//! each followed by `,`, then `:port` when not the scheme's default, `@userinfo` if any, `)`,
//! path and query; all lower case; IP addresses are not reversed (`http://(127.0.0.1:8080)/`).
//! A URL matches a prefix when its form starts with it; `https` counts as `http` on both
//! sides, as in Heritrix, so one prefix covers both schemes. Examples:
//!
//! | prefix | matches |
//! | --- | --- |
//! | `http://(com,example,` | example.com and every subdomain |
//! | `http://(com,example,)/` | the host example.com only (any port-less http or https URL) |
//! | `http://(com,example,www,)/docs/` | www.example.com/docs/… |
//!
//! Profile entries may also be plain URLs or host names, turned into prefixes the way Heritrix
//! does for seeds: `example.com` → `http://(com,example,` (subdomains included);
//! `https://example.com/` → `http://(com,example,)/`; `http://example.com/docs/page.html` →
//! `http://(com,example,)/docs/` (the last path segment is dropped, so write folders with a
//! trailing `/`).

use std::borrow::Cow;
use std::fmt;

use regex::Regex;
use url::{Host, Url};

use crate::extract::Hop;
use crate::scope::{Rejection, Scope};

/// Scope rules beyond [`crate::scope::ScopeSettings`], in the same `[scope]` table (see `crate::scope::rules`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSettings {
    /// Matched prefixes (`http://(com,example,)/docs/`), already normalised.
    pub surt_prefixes: Vec<String>,
    /// Most path segments a URL may have; 0 = no limit.
    pub max_path_depth: u32,
    /// Bytes a site may archive before it stops; 0 = no limit.
    pub max_bytes_per_site: u64,
    /// Which non-HTML responses are written to the WARC.
    pub keep_mime: Vec<MimeRule>,
}

impl Default for RuleSettings {
    fn default() -> Self {
        RuleSettings {
            surt_prefixes: Vec::new(),
            max_path_depth: 20,
            max_bytes_per_site: 0,
            keep_mime: vec![MimeRule::Pattern {
                negate: false,
                kind: None,
                subtype: None,
            }],
        }
    }
}

/// crawl.log annotation: outside every SURT prefix.
pub const SURT: &str = "scope:surt";
/// crawl.log annotation: more path segments than `max_path_depth`.
pub const PATH_DEPTH: &str = "scope:path-depth";
/// crawl.log annotation for URLs left unfetched because their site used up `max_bytes_per_site`.
pub const BYTE_BUDGET: &str = "scope:max-bytes-per-site";
/// crawl.log annotation for a fetched response not written to the WARC because of `keep_mime`.
pub const MIME_NOT_KEPT: &str = "scope:mime";

/// One entry of the profile's `keep_mime` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MimeRule {
    /// `embeds`: whatever a page embeds (images, stylesheets, scripts, fonts, frames…),
    /// whatever its type, because replay needs it.
    Embeds,
    /// `type/subtype`, `type/*` or `*/*`; with a leading `!` (`negate`) it drops instead.
    Pattern {
        negate: bool,
        /// `None` for `*`.
        kind: Option<String>,
        /// `None` for `*`.
        subtype: Option<String>,
    },
}

impl MimeRule {
    fn matches(&self, essence: &str) -> bool {
        let MimeRule::Pattern { kind, subtype, .. } = self else {
            return false;
        };
        let (k, s) = essence.split_once('/').unwrap_or((essence, ""));
        kind.as_deref().is_none_or(|want| want == k)
            && subtype.as_deref().is_none_or(|want| want == s)
    }

    fn negated(&self) -> bool {
        matches!(self, MimeRule::Pattern { negate: true, .. })
    }
}

impl fmt::Display for MimeRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MimeRule::Embeds => f.write_str("embeds"),
            MimeRule::Pattern {
                negate,
                kind,
                subtype,
            } => write!(
                f,
                "{}{}/{}",
                if *negate { "!" } else { "" },
                kind.as_deref().unwrap_or("*"),
                subtype.as_deref().unwrap_or("*")
            ),
        }
    }
}

/// Parses one `keep_mime` entry: `embeds`, `type/subtype`, `type/*`, `*/*`, each optionally
/// preceded by `!` (drop). Case-insensitive. The error says what is wrong, for the profile's
/// file:line:key message.
pub fn parse_mime_rule(entry: &str) -> Result<MimeRule, String> {
    let text = entry.trim().to_ascii_lowercase();
    if text == "embeds" {
        return Ok(MimeRule::Embeds);
    }
    let (negate, pattern) = match text.strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, text.as_str()),
    };
    let bad = || {
        format!(
            "{entry:?} is not a MIME pattern: use \"embeds\", \"type/subtype\", \"type/*\" or \
             \"*/*\", optionally preceded by \"!\" to drop"
        )
    };
    let (kind, subtype) = pattern.split_once('/').ok_or_else(bad)?;
    let part = |p: &str| -> Result<Option<String>, String> {
        match p {
            "*" => Ok(None),
            _ if !p.is_empty() && p.bytes().all(is_token_byte) => Ok(Some(p.to_string())),
            _ => Err(bad()),
        }
    };
    let (kind, subtype) = (part(kind)?, part(subtype)?);
    if kind.is_none() && subtype.is_some() {
        return Err(bad());
    }
    Ok(MimeRule::Pattern {
        negate,
        kind,
        subtype,
    })
}

/// RFC 9110 token characters, as used in media types.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The SURT prefix form of a URL (see the module documentation); fragment dropped.
pub fn surt_prefix_form(url: &Url) -> String {
    let mut s = String::with_capacity(url.as_str().len() + 4);
    s.push_str(url.scheme());
    s.push_str("://(");
    match url.host() {
        Some(Host::Domain(name)) => {
            for label in name.trim_end_matches('.').rsplit('.') {
                s.push_str(label);
                s.push(',');
            }
        }
        Some(Host::Ipv4(ip)) => s.push_str(&ip.to_string()),
        Some(Host::Ipv6(ip)) => s.push_str(&format!("[{ip}]")),
        None => {}
    }
    if let Some(port) = url.port() {
        s.push(':');
        s.push_str(&port.to_string());
    }
    if !url.username().is_empty() {
        s.push('@');
        s.push_str(url.username());
        if let Some(pass) = url.password() {
            s.push(':');
            s.push_str(pass);
        }
    }
    s.push(')');
    s.push_str(url.path());
    if let Some(q) = url.query() {
        s.push('?');
        s.push_str(q);
    }
    s.make_ascii_lowercase();
    s
}

/// `https://…` compared as `http://…`.
fn comparable(form: &str) -> Cow<'_, str> {
    match form.strip_prefix("https://") {
        Some(rest) => Cow::Owned(format!("http://{rest}")),
        None => Cow::Borrowed(form),
    }
}

/// Turns a `surt_prefixes` entry into the prefix that is matched: a SURT prefix as written
/// (`http://(com,example,)/docs/`, lower-cased, https as http) or a plain URL or host name
/// converted as the module documentation describes. The error says what is wrong.
pub fn parse_surt_prefix(entry: &str) -> Result<String, String> {
    let text = entry.trim();
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return Err(format!(
            "{entry:?} is not a SURT prefix or URL (empty or contains spaces)"
        ));
    }
    if text.contains('(') {
        let lower = text.to_ascii_lowercase();
        let prefix = comparable(&lower).into_owned();
        if !prefix.starts_with("http://(") || prefix.len() <= "http://(".len() {
            return Err(format!(
                "{entry:?}: a SURT prefix starts with \"http://(\" or \"https://(\" and a \
                 reversed host, e.g. \"http://(com,example,)/docs/\""
            ));
        }
        return Ok(prefix);
    }
    let (with_scheme, rest) = match text.split_once("://") {
        Some((_, rest)) => (text.to_string(), rest),
        None => (format!("http://{text}"), text),
    };
    let mut url = Url::parse(&with_scheme)
        .map_err(|e| format!("{entry:?} is neither a SURT prefix nor a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!(
            "{entry:?}: only http:// and https:// URLs with a host can be scope prefixes"
        ));
    }
    url.set_query(None);
    url.set_fragment(None);
    let form = comparable(&surt_prefix_form(&url)).into_owned();
    let Some(close) = form.find(')') else {
        return Err(format!("{entry:?}: cannot be turned into a SURT prefix"));
    };
    let has_path = rest.contains('/');
    let open_domain = matches!(url.host(), Some(Host::Domain(_))) && url.port().is_none();
    if !has_path && open_domain {
        // A bare host name stands for the domain with its subdomains.
        return Ok(form[..close].to_string());
    }
    if !has_path {
        return Ok(form[..=close].to_string());
    }
    // Up to the last '/' of the path: the folder the URL is in.
    let cut = form.rfind('/').unwrap_or(close);
    Ok(form[..=cut.max(close)].to_string())
}

/// The hop that decides `keep_mime` for a URL with this Heritrix discovery path (e.g.
/// `"LLE"`, `"LER"`): the last letter that is not a redirect, so an image reached through a
/// redirect still counts as embedded. Seeds (`""`) and everything else count as links.
pub fn mime_hop(discovery_path: &str) -> Hop {
    match discovery_path.chars().rev().find(|c| *c != 'R') {
        Some('E') => Hop::Embed,
        _ => Hop::Link,
    }
}

/// The decide rules beyond [`Scope`], built once per crawl from the profile.
#[derive(Debug, Clone)]
pub struct ScopeRules {
    prefixes: Vec<String>,
    max_path_depth: u32,
    max_bytes_per_site: u64,
    keep_mime: Vec<MimeRule>,
    include: Vec<Regex>,
}

impl ScopeRules {
    /// `include` is the profile's `scope.include` list: a URL it names is in scope even when
    /// SURT prefixes are set and it is outside them.
    pub fn new(settings: &RuleSettings, include: &[Regex]) -> ScopeRules {
        ScopeRules {
            prefixes: settings.surt_prefixes.clone(),
            max_path_depth: settings.max_path_depth,
            max_bytes_per_site: settings.max_bytes_per_site,
            keep_mime: settings.keep_mime.clone(),
            include: include.to_vec(),
        }
    }

    /// True when the URL's SURT form starts with one of the profile's prefixes (false when
    /// there are none).
    pub fn in_surt_prefixes(&self, url: &Url) -> bool {
        if self.prefixes.is_empty() {
            return false;
        }
        let form = surt_prefix_form(url);
        let form = comparable(&form);
        self.prefixes.iter().any(|p| form.starts_with(p.as_str()))
    }

    /// The rules that need nothing but the URL: path depth (`scope:path-depth`), and, when
    /// SURT prefixes are set, being inside one (`scope:surt`). No exceptions for embeds or
    /// include regexes: the crawl loop should call [`ScopeRules::decide`].
    pub fn url_allowed(&self, url: &Url) -> Result<(), &'static str> {
        self.path_depth_ok(url)?;
        if !self.prefixes.is_empty() && !self.in_surt_prefixes(url) {
            return Err(SURT);
        }
        Ok(())
    }

    /// Decides a discovered URL like Heritrix's chain of decide rules; the error is the
    /// crawl.log annotation. Seeds are not passed through here.
    ///
    /// 1. [`Scope::decide`]: scheme, `exclude`, `max_hops`, then accepted when on a seed's
    ///    origin, matched by `include`, or an off-site embed allowed by `embeds_off_site`.
    /// 2. SURT prefixes, when set, replace the seed origins as the accepted set: a URL off the
    ///    seed origins but inside a prefix is accepted (so `http://(com,example,` takes in the
    ///    subdomains), and a URL on a seed origin but outside every prefix is rejected
    ///    (`scope:surt`) unless `include` names it or it was reached by an embed or redirect
    ///    hop — the requisites of an accepted page are archived wherever they live on the
    ///    site, as Heritrix's transclusion rule does.
    /// 3. `max_path_depth` (`scope:path-depth`), for every URL.
    pub fn decide(
        &self,
        scope: &Scope,
        url: &Url,
        hops: usize,
        hop: Hop,
        via: &Url,
    ) -> Result<(), &'static str> {
        let inside = self.in_surt_prefixes(url);
        match scope.decide(url, hops, hop, via) {
            Err(Rejection::OffSite) if inside => {}
            Err(r) => return Err(r.annotation()),
            Ok(()) => {
                let narrowed = !self.prefixes.is_empty() && !inside && scope.on_seed_origin(url);
                let excused = hop != Hop::Link || self.included(url);
                if narrowed && !excused {
                    return Err(SURT);
                }
            }
        }
        self.path_depth_ok(url)
    }

    fn included(&self, url: &Url) -> bool {
        self.include.iter().any(|r| r.is_match(url.as_str()))
    }

    fn path_depth_ok(&self, url: &Url) -> Result<(), &'static str> {
        if self.max_path_depth > 0 && path_depth(url) > self.max_path_depth as usize {
            return Err(PATH_DEPTH);
        }
        Ok(())
    }

    /// Whether a response with this Content-Type is written to the WARC. `hop` is
    /// [`mime_hop`] of the URL's discovery path.
    ///
    /// - HTML (`text/html`, `application/xhtml+xml`) is always kept: pages are what the crawl
    ///   is for, and `!` entries cannot drop them.
    /// - Otherwise a `!` entry that matches drops the response;
    /// - else `embeds` keeps whatever was reached by an embed hop;
    /// - else a plain entry that matches keeps it;
    /// - else, when the list holds only `!` entries (`["!video/*"]`), it is kept: such a list
    ///   says what to leave out of "everything";
    /// - else it is not kept.
    ///
    /// The type is compared without parameters and case (`Image/PNG; q=1` is `image/png`); a
    /// missing type counts as `application/octet-stream`. The default list, `["*/*"]`, keeps
    /// everything in scope, as an archival crawl should; `["embeds"]` keeps pages and what they
    /// embed but not linked files (PDFs, archives, videos); `[]` keeps HTML only. robots.txt is
    /// archived regardless and is not decided here.
    pub fn mime_kept(&self, mime: Option<&str>, hop: Hop) -> bool {
        let essence = mime
            .and_then(|m| m.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "application/octet-stream".to_string());
        if matches!(essence.as_str(), "text/html" | "application/xhtml+xml") {
            return true;
        }
        if self
            .keep_mime
            .iter()
            .any(|r| r.negated() && r.matches(&essence))
        {
            return false;
        }
        if hop == Hop::Embed && self.keep_mime.contains(&MimeRule::Embeds) {
            return true;
        }
        let only_exclusions =
            !self.keep_mime.is_empty() && self.keep_mime.iter().all(MimeRule::negated);
        only_exclusions
            || self
                .keep_mime
                .iter()
                .any(|r| !r.negated() && r.matches(&essence))
    }

    /// True when a site has archived `site_bytes` or more and `max_bytes_per_site` is set.
    /// The crawl adds each archived response's size (crawl.log's size field) to its site's
    /// total and asks before each fetch; a site over budget stops, and its remaining queued
    /// URLs are logged with [`BYTE_BUDGET`]. The budget is checked between fetches, so a site
    /// may end up to one response over it.
    pub fn over_byte_budget(&self, site_bytes: u64) -> bool {
        self.max_bytes_per_site > 0 && site_bytes >= self.max_bytes_per_site
    }
}

/// Path segments of a URL, not counting the empty one after a trailing `/`: `/` is 0,
/// `/a/` is 1, `/a/b/c.html` is 3.
pub fn path_depth(url: &Url) -> usize {
    let path = url.path();
    let trimmed = path.strip_prefix('/').unwrap_or(path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    if trimmed.is_empty() {
        0
    } else {
        trimmed.split('/').count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::ScopeSettings;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn settings(prefixes: &[&str], depth: u32, keep: &[&str]) -> RuleSettings {
        RuleSettings {
            surt_prefixes: prefixes
                .iter()
                .map(|p| parse_surt_prefix(p).unwrap())
                .collect(),
            max_path_depth: depth,
            max_bytes_per_site: 1000,
            keep_mime: keep.iter().map(|k| parse_mime_rule(k).unwrap()).collect(),
        }
    }

    fn scope(embeds_off_site: bool) -> Scope {
        let s = ScopeSettings {
            max_hops: 5,
            max_pages_per_site: 10,
            include: vec![Regex::new("^https?://site\\.example/special/").unwrap()],
            exclude: vec![Regex::new("/private/").unwrap()],
            embeds_off_site,
        };
        Scope::new(s, &[u("http://site.example/")])
    }

    #[test]
    fn surt_form() {
        assert_eq!(
            surt_prefix_form(&u("http://www.Example.com:8080/Docs/a?B=1#frag")),
            "http://(com,example,www,:8080)/docs/a?b=1"
        );
        assert_eq!(
            surt_prefix_form(&u("https://example.com/")),
            "https://(com,example,)/"
        );
        assert_eq!(
            surt_prefix_form(&u("http://127.0.0.1:8080/x")),
            "http://(127.0.0.1:8080)/x"
        );
        assert_eq!(
            surt_prefix_form(&u("http://user:pw@example.com./")),
            "http://(com,example,@user:pw)/"
        );
        assert_eq!(surt_prefix_form(&u("http://[::1]/")), "http://([::1])/");
    }

    #[test]
    fn prefix_entries() {
        let p = |s| parse_surt_prefix(s).unwrap();
        assert_eq!(
            p("http://(com,example,)/docs/"),
            "http://(com,example,)/docs/"
        );
        assert_eq!(p("HTTPS://(Com,Example,"), "http://(com,example,");
        assert_eq!(p("example.com"), "http://(com,example,");
        assert_eq!(p("www.example.com"), "http://(com,example,www,");
        assert_eq!(p("https://example.com/"), "http://(com,example,)/");
        assert_eq!(p("http://example.com"), "http://(com,example,");
        assert_eq!(
            p("http://example.com/docs/page.html?x=1"),
            "http://(com,example,)/docs/"
        );
        assert_eq!(p("example.com/docs/"), "http://(com,example,)/docs/");
        assert_eq!(p("127.0.0.1:8080"), "http://(127.0.0.1:8080)");
        assert_eq!(p("example.com:8080"), "http://(com,example,:8080)");
        for bad in [
            "",
            "a b",
            "ftp://example.com/",
            "(com,example,",
            "http://",
            "http://[x",
        ] {
            assert!(parse_surt_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn prefixes_match_urls() {
        let r = ScopeRules::new(
            &settings(&["example.com", "http://(org,site,)/docs/"], 0, &[]),
            &[],
        );
        for yes in [
            "http://example.com/",
            "https://www.example.com/a",
            "http://deep.sub.example.com:8080/",
            "http://site.org/docs/",
            "https://site.org/Docs/x",
        ] {
            assert!(r.in_surt_prefixes(&u(yes)), "{yes}");
            assert_eq!(r.url_allowed(&u(yes)), Ok(()), "{yes}");
        }
        for no in [
            "http://notexample.com/",
            "http://example.com.evil/",
            "http://site.org/blog/",
            "http://www.site.org/docs/",
        ] {
            assert!(!r.in_surt_prefixes(&u(no)), "{no}");
            assert_eq!(r.url_allowed(&u(no)), Err(SURT), "{no}");
        }
        let none = ScopeRules::new(&settings(&[], 0, &[]), &[]);
        assert!(!none.in_surt_prefixes(&u("http://example.com/")));
        assert_eq!(none.url_allowed(&u("http://anything.example/")), Ok(()));
    }

    #[test]
    fn path_depth_rule() {
        assert_eq!(path_depth(&u("http://h/")), 0);
        assert_eq!(path_depth(&u("http://h/a/")), 1);
        assert_eq!(path_depth(&u("http://h/a/b/c.html?x=/y/z")), 3);
        let r = ScopeRules::new(&settings(&[], 3, &[]), &[]);
        assert_eq!(r.url_allowed(&u("http://h/a/b/c.html")), Ok(()));
        assert_eq!(r.url_allowed(&u("http://h/a/b/c/")), Ok(()));
        assert_eq!(r.url_allowed(&u("http://h/a/b/c/d")), Err(PATH_DEPTH));
        // Ordinary deep documentation paths pass the default of 20.
        let r = ScopeRules::new(&RuleSettings::default(), &[]);
        let docs = "http://h/docs/en/v2/api/reference/modules/core/http/client/builder.html";
        assert_eq!(r.url_allowed(&u(docs)), Ok(()));
        let too_deep: String = (0..21).map(|i| format!("/{i}")).collect();
        assert_eq!(
            r.url_allowed(&u(&format!("http://h{too_deep}"))),
            Err(PATH_DEPTH)
        );
        // 0 means no limit.
        let r = ScopeRules::new(&settings(&[], 0, &[]), &[]);
        assert_eq!(r.url_allowed(&u(&format!("http://h{too_deep}"))), Ok(()));
    }

    #[test]
    fn decide_without_prefixes_is_scope_plus_depth() {
        let r = ScopeRules::new(&settings(&[], 2, &[]), &[]);
        let s = scope(false);
        let via = u("http://site.example/");
        let d = |url: &str, hop| r.decide(&s, &u(url), 1, hop, &via);
        assert_eq!(d("http://site.example/a/b", Hop::Link), Ok(()));
        assert_eq!(d("http://site.example/a/b/c", Hop::Link), Err(PATH_DEPTH));
        assert_eq!(d("http://other.example/", Hop::Link), Err("scope:off-site"));
        assert_eq!(
            d("http://site.example/private/", Hop::Link),
            Err("scope:exclude")
        );
        assert_eq!(
            r.decide(&s, &u("http://site.example/x"), 6, Hop::Link, &via),
            Err("scope:max-hops")
        );
    }

    #[test]
    fn decide_with_prefixes_widens_and_narrows() {
        let rules = settings(
            &["http://(example,site,)/docs/", "http://(example,cdn,"],
            0,
            &[],
        );
        let include = [Regex::new("^https?://site\\.example/special/").unwrap()];
        let r = ScopeRules::new(&rules, &include);
        let s = scope(false);
        let page = u("http://site.example/docs/");
        let d = |url: &str, hop| r.decide(&s, &u(url), 1, hop, &page);
        // Inside the prefixes.
        assert_eq!(d("http://site.example/docs/a", Hop::Link), Ok(()));
        assert_eq!(d("https://img.cdn.example/a.png", Hop::Link), Ok(()));
        // On the seed origin but outside: only requisites and include matches.
        assert_eq!(d("http://site.example/blog/", Hop::Link), Err(SURT));
        assert_eq!(d("http://site.example/static/s.css", Hop::Embed), Ok(()));
        assert_eq!(d("http://site.example/moved", Hop::Redirect), Ok(()));
        assert_eq!(d("http://site.example/special/x", Hop::Link), Ok(()));
        // Off-site and outside: still off-site; excludes and hops still reject first.
        assert_eq!(d("http://other.example/", Hop::Link), Err("scope:off-site"));
        assert_eq!(
            d("http://site.example/docs/private/", Hop::Link),
            Err("scope:exclude")
        );
        assert_eq!(
            r.decide(&s, &u("http://site.example/docs/x"), 6, Hop::Link, &page),
            Err("scope:max-hops")
        );
    }

    #[test]
    fn mime_rules_parse_and_print() {
        for (text, shown) in [
            ("embeds", "embeds"),
            ("Image/*", "image/*"),
            ("text/css", "text/css"),
            ("*/*", "*/*"),
            ("!video/*", "!video/*"),
            (" ! audio/mpeg ", "!audio/mpeg"),
            ("application/vnd.ms-excel", "application/vnd.ms-excel"),
        ] {
            assert_eq!(parse_mime_rule(text).unwrap().to_string(), shown, "{text}");
        }
        for bad in [
            "",
            "image",
            "*/png",
            "image/",
            "/png",
            "text/ html",
            "a/b/c",
            "!",
        ] {
            assert!(parse_mime_rule(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn default_keeps_everything_in_scope() {
        let r = ScopeRules::new(&RuleSettings::default(), &[]);
        assert!(r.mime_kept(Some("text/html; charset=utf-8"), Hop::Link));
        assert!(r.mime_kept(Some("image/png"), Hop::Embed));
        assert!(r.mime_kept(Some("application/pdf"), Hop::Link));
        assert!(r.mime_kept(Some("video/mp4"), Hop::Link));
        assert!(r.mime_kept(None, Hop::Link));
    }

    #[test]
    fn embeds_keeps_html_and_embeds_only() {
        let r = ScopeRules::new(&settings(&[], 0, &["embeds"]), &[]);
        assert!(r.mime_kept(Some("Application/XHTML+XML"), Hop::Link));
        assert!(r.mime_kept(Some("image/png"), Hop::Embed));
        assert!(r.mime_kept(None, Hop::Embed));
        assert!(!r.mime_kept(Some("application/pdf"), Hop::Link));
        assert!(!r.mime_kept(Some("image/png"), Hop::Link));
        assert!(!r.mime_kept(None, Hop::Link));
    }

    #[test]
    fn only_exclusions_keep_everything_else() {
        let r = ScopeRules::new(&settings(&[], 0, &["!video/*", "!application/zip"]), &[]);
        assert!(!r.mime_kept(Some("video/mp4"), Hop::Link));
        assert!(!r.mime_kept(Some("video/webm"), Hop::Embed));
        assert!(!r.mime_kept(Some("application/zip"), Hop::Link));
        assert!(r.mime_kept(Some("application/pdf"), Hop::Link));
        assert!(r.mime_kept(Some("image/png"), Hop::Embed));
        assert!(r.mime_kept(None, Hop::Link));
        assert!(r.mime_kept(Some("text/html"), Hop::Link));
    }

    #[test]
    fn keep_mime_patterns_and_drops() {
        let r = ScopeRules::new(
            &settings(
                &[],
                0,
                &["embeds", "application/pdf", "image/*", "!video/*"],
            ),
            &[],
        );
        assert!(r.mime_kept(Some("application/pdf"), Hop::Link));
        assert!(r.mime_kept(Some("IMAGE/JPEG"), Hop::Link));
        assert!(!r.mime_kept(Some("application/zip"), Hop::Link));
        assert!(r.mime_kept(Some("text/css"), Hop::Embed));
        assert!(!r.mime_kept(Some("video/mp4"), Hop::Embed));
        assert!(r.mime_kept(Some("text/html"), Hop::Embed));
        let html_only = ScopeRules::new(&settings(&[], 0, &[]), &[]);
        assert!(!html_only.mime_kept(Some("text/css"), Hop::Embed));
        assert!(html_only.mime_kept(Some("text/html"), Hop::Link));
        let all = ScopeRules::new(&settings(&[], 0, &["*/*", "!text/html"]), &[]);
        assert!(all.mime_kept(None, Hop::Link));
        assert!(all.mime_kept(Some("text/html"), Hop::Link));
    }

    #[test]
    fn hop_for_mime_skips_redirects() {
        assert_eq!(mime_hop(""), Hop::Link);
        assert_eq!(mime_hop("LLE"), Hop::Embed);
        assert_eq!(mime_hop("LERR"), Hop::Embed);
        assert_eq!(mime_hop("LR"), Hop::Link);
        assert_eq!(mime_hop("R"), Hop::Link);
        assert_eq!(mime_hop("LEL"), Hop::Link);
    }

    #[test]
    fn byte_budget() {
        let r = ScopeRules::new(&settings(&[], 0, &[]), &[]);
        assert!(!r.over_byte_budget(999));
        assert!(r.over_byte_budget(1000));
        let unlimited = ScopeRules::new(&RuleSettings::default(), &[]);
        assert!(!unlimited.over_byte_budget(u64::MAX));
    }
}
