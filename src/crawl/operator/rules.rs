//! What the operator has ordered, as kept in `state/operator.json`, and its compiled form the
//! scheduler consults ([`Steering`]): exclusions (SURT prefixes, regexes), retired sites,
//! per-site delays and holds, and the pause.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::scope::origin_of;
use crate::scope::rules::{parse_surt_prefix, surt_prefix_form};

/// The crawl.log annotation of every URL the operator's orders keep from being fetched.
pub(crate) const OPERATOR: &str = "scope:operator";

/// The largest regex the operator may send, compiled (a bound on memory, not on patience).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// One exclusion rule as the operator sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Rule {
    /// A SURT prefix (`http://(com,example,)/trap/`, `com,example)/trap/`) or a URL (its folder).
    SurtPrefix(String),
    /// A regular expression matched against the whole URL.
    Regex(String),
}

impl Rule {
    /// The rule as text, for run.log and the crawl.log line's JSON.
    pub(crate) fn text(&self) -> String {
        match self {
            Rule::SurtPrefix(p) => format!("surt_prefix {p}"),
            Rule::Regex(r) => format!("regex {r}"),
        }
    }
}

/// A site's orders.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SiteOrders {
    /// Seconds at least between two requests to the site (never below the profile's floor).
    pub(crate) min_delay: Option<f64>,
    /// Nothing of the site is fetched until it is released.
    pub(crate) held: bool,
}

/// Everything the operator ordered, durable in `state/operator.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Orders {
    pub(crate) paused: bool,
    pub(crate) exclusions: Vec<Rule>,
    /// Origins whose queue was dropped and whose new URLs are refused.
    pub(crate) retired: Vec<String>,
    pub(crate) sites: BTreeMap<String, SiteOrders>,
    /// Seeds added while the crawl ran (their origins join the scope as profile seeds do).
    pub(crate) seeds: Vec<String>,
}

/// A rule that cannot be used, for a 400 answer.
#[derive(Debug)]
pub(crate) struct BadRule(pub(crate) String);

/// An exclusion ready to match.
#[derive(Debug)]
enum Matcher {
    /// The prefix in the one form of [`canonical`].
    Prefix(String),
    Regex(Regex),
}

/// The orders compiled: what the scheduler and the outlink judge consult (a snapshot, swapped
/// whole when an order changes, so nobody holds a lock to read it).
#[derive(Debug, Default)]
pub(crate) struct Steering {
    exclusions: Vec<(String, Matcher)>,
    retired: HashSet<String>,
    held: HashSet<String>,
    delays: HashMap<String, Duration>,
}

impl Steering {
    /// Compiles the orders; a rule that does not compile (only from a hand-edited file: the API
    /// checks each before it is kept) is left out, and said.
    pub(crate) fn new(orders: &Orders) -> (Steering, Vec<String>) {
        let mut s = Steering::default();
        let mut problems = Vec::new();
        for rule in &orders.exclusions {
            match compile(rule) {
                Ok(m) => s.exclusions.push((rule.text(), m)),
                Err(BadRule(why)) => problems.push(why),
            }
        }
        s.retired = orders.retired.iter().cloned().collect();
        for (origin, o) in &orders.sites {
            if o.held {
                s.held.insert(origin.clone());
            }
            if let Some(d) = o
                .min_delay
                .and_then(|d| Duration::try_from_secs_f64(d).ok())
            {
                s.delays.insert(origin.clone(), d);
            }
        }
        (s, problems)
    }

    /// The rule that covers a URL, if one does (a retired site's URLs are all covered).
    pub(crate) fn covers(&self, url: &Url) -> Option<String> {
        if self.exclusions.is_empty() && self.retired.is_empty() {
            return None;
        }
        let origin = origin_of(url);
        if self.retired.contains(&origin) {
            return Some(format!("retired {origin}"));
        }
        let form = canonical(&surt_prefix_form(url));
        self.exclusions
            .iter()
            .find(|(_, m)| match m {
                Matcher::Prefix(p) => form.starts_with(p.as_str()),
                Matcher::Regex(r) => r.is_match(url.as_str()),
            })
            .map(|(text, _)| text.clone())
    }

    pub(crate) fn held(&self, origin: &str) -> bool {
        self.held.contains(origin)
    }

    pub(crate) fn any_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// The pause before a site's next request: the operator's delay for it when that is
    /// longer than the pause its last answer asked for.
    pub(crate) fn pause(&self, origin: &str, asked: Duration) -> Duration {
        match self.delay(origin) {
            Some(d) if d > asked => d,
            _ => asked,
        }
    }

    /// The operator's delay for a site, if set.
    pub(crate) fn delay(&self, origin: &str) -> Option<Duration> {
        self.delays.get(origin).copied()
    }
}

/// Checks a rule and gives it the form it is kept in.
pub(crate) fn checked(rule: Rule) -> Result<Rule, BadRule> {
    compile(&rule)?;
    Ok(match rule {
        Rule::SurtPrefix(p) => Rule::SurtPrefix(p.trim().to_string()),
        r => r,
    })
}

fn compile(rule: &Rule) -> Result<Matcher, BadRule> {
    match rule {
        Rule::SurtPrefix(p) => surt_prefix(p).map(Matcher::Prefix),
        Rule::Regex(r) => {
            if r.is_empty() {
                return Err(BadRule("an empty regex would exclude everything".into()));
            }
            regex::RegexBuilder::new(r)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map(Matcher::Regex)
                .map_err(|e| BadRule(format!("the regex does not compile: {e}")))
        }
    }
}

/// A SURT prefix in any of its usual spellings, in the form URLs are matched in: Heritrix's
/// `http://(org,example,)/docs/`, Python `surt`'s `org,example)/docs` (addresses reversed:
/// `1,0,0,127:8080)/trap`, with or without `http://(`), or a URL (its folder; a bare host: the
/// host and its subdomains).
fn surt_prefix(text: &str) -> Result<String, BadRule> {
    let text = text.trim().to_ascii_lowercase();
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return Err(BadRule("a SURT prefix is one word, not empty".into()));
    }
    let surt = match text.split_once("://") {
        Some((_, rest)) if rest.starts_with('(') => text.clone(),
        Some(_) => parse_surt_prefix(&text).map_err(BadRule)?,
        None if text.contains(')') || text.contains(',') => text.clone(),
        None => parse_surt_prefix(&text).map_err(BadRule)?,
    };
    if let Some((scheme, _)) = surt.split_once("://") {
        if !matches!(scheme, "http" | "https") {
            return Err(BadRule(format!("{text:?}: only http(s) URLs are crawled")));
        }
    }
    let form = canonical(&surt);
    if form.starts_with([',', ':', ')']) || form.is_empty() {
        return Err(BadRule(format!("{text:?} names no host")));
    }
    Ok(form)
}

/// One form for every spelling of a SURT: no scheme, the host's labels reversed and each
/// followed by a comma (an IPv4 address too, as Python's `surt` writes it), `www` dropped (as
/// `surt` drops it), then `:port`, `)` and the path: `http://www.Example.com:8080/a` and
/// `com,example:8080)/a` are both `com,example,:8080)/a`. A prefix that stops inside the host
/// (`com,example,`: the domain and its subdomains) keeps its open end.
fn canonical(form: &str) -> String {
    let lower = form.to_ascii_lowercase();
    let rest = lower.split_once("://").map_or(lower.as_str(), |(_, r)| r);
    let rest = rest.strip_prefix('(').unwrap_or(rest);
    let (host, tail) = match rest.split_once(')') {
        Some((h, t)) => (h, Some(t)),
        None => (rest, None),
    };
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (n, Some(p)),
        _ => (host, None),
    };
    let mut labels: Vec<String> = match name.parse::<std::net::Ipv4Addr>() {
        Ok(ip) => ip.octets().iter().rev().map(u8::to_string).collect(),
        Err(_) => name
            .split(',')
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    };
    if labels.len() > 1 && labels.last().is_some_and(|l| l == "www") {
        labels.pop();
    }
    let mut out = String::with_capacity(form.len() + 2);
    for l in &labels {
        out.push_str(l);
        out.push(',');
    }
    let open_end = tail.is_none() && port.is_none() && !name.ends_with(',');
    if open_end {
        out.pop(); // `com,exam` is a prefix of `com,example,`
    }
    if let Some(p) = port {
        out.push(':');
        out.push_str(p);
    }
    if let Some(t) = tail {
        out.push(')');
        out.push_str(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steering(rules: &[Rule]) -> Steering {
        let orders = Orders {
            exclusions: rules.to_vec(),
            ..Orders::default()
        };
        let (s, problems) = Steering::new(&orders);
        assert!(problems.is_empty(), "{problems:?}");
        s
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_surt_prefix_in_each_spelling_covers_the_folder_only() {
        for p in [
            "http://(com,example,)/trap/",
            "com,example)/trap/",
            "http://(com,example)/trap/",
            "https://example.com/trap/x.html",
            "https://www.example.com/trap/",
        ] {
            let s = steering(&[Rule::SurtPrefix(p.into())]);
            assert!(s.covers(&url("http://example.com/trap/a")).is_some(), "{p}");
            assert!(s.covers(&url("https://example.com/trap/")).is_some(), "{p}");
            assert!(
                s.covers(&url("http://example.com/ok/trap/")).is_none(),
                "{p}"
            );
            assert!(s.covers(&url("http://example.org/trap/a")).is_none(), "{p}");
        }
        // An address as Heritrix writes it, as Python's `surt` does (reversed), and as a URL.
        for p in [
            "127.0.0.1:8080)/t",
            "1,0,0,127:8080)/t",
            "http://(1,0,0,127:8080)/t",
            "http://(127.0.0.1:8080)/t",
            "http://127.0.0.1:8080/t",
        ] {
            let s = steering(&[Rule::SurtPrefix(p.into())]);
            assert!(s.covers(&url("http://127.0.0.1:8080/t1")).is_some(), "{p}");
            assert!(s.covers(&url("http://127.0.0.1:8081/t1")).is_none(), "{p}");
            assert!(s.covers(&url("http://127.0.0.2:8080/t1")).is_none(), "{p}");
        }
        // A bare domain: the host and its subdomains, not a longer name.
        for p in ["example.com", "http://(com,example,", "com,example,"] {
            let s = steering(&[Rule::SurtPrefix(p.into())]);
            assert!(s.covers(&url("http://a.example.com/x")).is_some(), "{p}");
            assert!(s.covers(&url("http://example.com/")).is_some(), "{p}");
            assert!(s.covers(&url("http://example.community/")).is_none(), "{p}");
        }
    }

    #[test]
    fn a_regex_matches_the_url_and_a_bad_one_is_refused() {
        let s = steering(&[Rule::Regex(r"\?page=\d{3,}".into())]);
        assert!(s.covers(&url("http://a.test/x?page=1000")).is_some());
        assert!(s.covers(&url("http://a.test/x?page=99")).is_none());
        assert!(checked(Rule::Regex("(unclosed".into())).is_err());
        assert!(checked(Rule::Regex(String::new())).is_err());
        assert!(checked(Rule::SurtPrefix("  ".into())).is_err());
        assert!(checked(Rule::SurtPrefix("ftp://x/".into())).is_err());
    }

    #[test]
    fn retired_held_and_delayed_sites() {
        let mut orders = Orders::default();
        orders.retired.push("http://a.test".into());
        orders.sites.insert(
            "http://b.test".into(),
            SiteOrders {
                min_delay: Some(7.5),
                held: true,
            },
        );
        let (s, _) = Steering::new(&orders);
        assert!(s.covers(&url("http://a.test/x")).is_some());
        assert!(s.covers(&url("http://b.test/x")).is_none());
        assert!(s.held("http://b.test") && !s.held("http://a.test"));
        assert_eq!(s.delay("http://b.test"), Some(Duration::from_millis(7500)));
    }

    #[test]
    fn orders_read_back_as_written() {
        let mut orders = Orders {
            paused: true,
            ..Orders::default()
        };
        orders.exclusions.push(Rule::Regex("x".into()));
        orders.exclusions.push(Rule::SurtPrefix("com,a)/".into()));
        let text = serde_json::to_string(&orders).unwrap();
        assert!(text.contains(r#"{"surt_prefix":"com,a)/"}"#), "{text}");
        assert_eq!(serde_json::from_str::<Orders>(&text).unwrap(), orders);
    }
}
