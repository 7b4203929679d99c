//! Which discovered URLs are queued: one outlink of one parent page, judged by the decide rules
//! in Heritrix's order (scope rules, then the opt-out lists, then the URL trap rules).
//!
//! The judgement is pure: it reads the rules and returns a [`Verdict`]. Logging a drop is the
//! caller's single job (`Desks::log_drop`), so every URL not followed gets exactly one crawl.log
//! line, written in one place, whatever rule dropped it.

use url::Url;

#[cfg(test)]
use crate::extract::Hop;
use crate::extract::Outlink;
use crate::frontier::Candidate;
use crate::logs::crawllog::status;
use crate::scope::optout::OptOutList;
use crate::scope::rules::ScopeRules;
use crate::scope::traps::UrlTrapRules;
use crate::scope::Scope;

/// The decide rules one crawl applies to every outlink.
pub(super) struct Rules<'a> {
    pub(super) scope: &'a Scope,
    pub(super) rules: &'a ScopeRules,
    pub(super) optout: &'a OptOutList,
    /// None when `[traps]` is off.
    pub(super) url_traps: Option<&'a UrlTrapRules>,
}

/// What becomes of one outlink.
#[derive(Debug)]
pub(super) enum Verdict {
    /// In scope: queue it (once the seen-set says it is new).
    Queue(Candidate),
    /// Not followed, with the crawl.log line that says why.
    Drop(Dropped),
}

/// A URL not followed: its negative crawl.log status, the annotation, and details for the
/// line's JSON field.
#[derive(Debug)]
pub(super) struct Dropped {
    pub(super) candidate: Candidate,
    pub(super) status: i32,
    pub(super) why: &'static str,
    pub(super) extra: Option<serde_json::Value>,
}

/// Judges one outlink of `parent` (already new to the seen-set).
#[cfg(test)]
pub(super) fn judge(rules: &Rules<'_>, parent: &Candidate, link: Outlink) -> Verdict {
    let letter = link.hop.letter();
    judge_as(rules, parent, link, letter)
}

/// [`judge`], the URL's discovery path growing by `letter` rather than its hop's own letter
/// (a sitemap is `S`, a page a sitemap lists `M`; both are judged as links).
pub(super) fn judge_as(
    rules: &Rules<'_>,
    parent: &Candidate,
    link: Outlink,
    letter: char,
) -> Verdict {
    let candidate = child(parent, link.url, letter);
    let decision = rules.rules.decide(
        rules.scope,
        &candidate.url,
        candidate.hops(),
        link.hop,
        &parent.url,
    );
    if let Err(why) = decision {
        return Verdict::Drop(Dropped {
            candidate,
            status: status::OUT_OF_SCOPE,
            why,
            extra: None,
        });
    }
    if let Some(dropped) = opted_out(rules.optout, &candidate) {
        return Verdict::Drop(dropped);
    }
    if let Some(trap) = rules.url_traps.and_then(|r| r.check(&candidate.url)) {
        return Verdict::Drop(Dropped {
            candidate,
            status: status::OUT_OF_SCOPE,
            why: trap.rule,
            extra: Some(serde_json::json!({ "trap": trap.detail })),
        });
    }
    Verdict::Queue(candidate)
}

/// The opt-out rule alone, also for URLs that come from elsewhere than a page (seeds, queued
/// URLs checked again when their site is taken up): None when no list names the URL.
pub(super) fn opted_out(list: &OptOutList, candidate: &Candidate) -> Option<Dropped> {
    let entry = list.matches(&candidate.url)?;
    let extra = serde_json::json!({
        "optout": entry.text,
        "list": format!("{}:{}", entry.source.display(), entry.line),
    });
    Some(Dropped {
        candidate: candidate.clone(),
        status: status::BLOCKED_BY_USER,
        why: "optout",
        extra: Some(extra),
    })
}

/// The candidate for a URL found on `parent`: one more hop on its discovery path.
/// The candidate a URL found from `parent` becomes: its discovery path grown by `letter`, its
/// via the parent (also for URLs logged as not followed: a robots.txt redirect, a sitemap's).
pub(super) fn child(parent: &Candidate, url: Url, letter: char) -> Candidate {
    let mut path = parent.path.clone();
    path.push(letter);
    Candidate {
        url,
        path,
        via: Some(parent.url.clone()),
        attempts: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::rules::RuleSettings;
    use crate::scope::traps::TrapSettings;
    use crate::scope::ScopeSettings;

    /// The crawl's rules for one seed, `http://example.com/`, with an opt-out list.
    struct Fixture {
        scope: Scope,
        rules: ScopeRules,
        optout: OptOutList,
        traps: Option<UrlTrapRules>,
        _dir: tempfile::TempDir,
    }

    impl Fixture {
        fn new(optout_lines: &str) -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let list = dir.path().join("optout.txt");
            std::fs::write(&list, optout_lines).unwrap();
            let seed = Url::parse("http://example.com/").unwrap();
            let settings = ScopeSettings {
                max_hops: 2,
                max_pages_per_site: 0,
                include: Vec::new(),
                exclude: Vec::new(),
                embeds_off_site: false,
            };
            Fixture {
                scope: Scope::new(settings, &[seed]),
                rules: ScopeRules::new(&RuleSettings::default(), &[]),
                optout: OptOutList::load(&[list]).unwrap(),
                traps: UrlTrapRules::from_settings(&TrapSettings::default(), 2026),
                _dir: dir,
            }
        }

        fn judge(&self, parent: &Candidate, url: &str, hop: Hop) -> Verdict {
            let rules = Rules {
                scope: &self.scope,
                rules: &self.rules,
                optout: &self.optout,
                url_traps: self.traps.as_ref(),
            };
            let link = Outlink {
                url: Url::parse(url).unwrap(),
                hop,
                context: "a/@href",
            };
            judge(&rules, parent, link)
        }
    }

    fn seed() -> Candidate {
        Candidate::seed(Url::parse("http://example.com/").unwrap())
    }

    fn dropped(v: Verdict) -> Dropped {
        match v {
            Verdict::Drop(d) => d,
            Verdict::Queue(c) => panic!("{} was queued", c.url),
        }
    }

    #[test]
    fn a_link_on_the_seed_site_is_queued_one_hop_further() {
        let f = Fixture::new("");
        let Verdict::Queue(c) = f.judge(&seed(), "http://example.com/a", Hop::Link) else {
            panic!("dropped");
        };
        assert_eq!(c.url.as_str(), "http://example.com/a");
        assert_eq!(c.path, "L");
        assert_eq!(c.via.as_ref().map(Url::as_str), Some("http://example.com/"));
        assert_eq!(c.attempts, 0);
        let Verdict::Queue(e) = f.judge(&c, "http://example.com/a.png", Hop::Embed) else {
            panic!("dropped");
        };
        assert_eq!(e.path, "LE");
    }

    #[test]
    fn off_site_and_too_far_are_out_of_scope() {
        let f = Fixture::new("");
        let d = dropped(f.judge(&seed(), "http://other.example/", Hop::Link));
        assert_eq!((d.status, d.why), (status::OUT_OF_SCOPE, "scope:off-site"));
        assert!(d.extra.is_none());
        let mut far = seed();
        far.path = "LL".to_string();
        let d = dropped(f.judge(&far, "http://example.com/deep", Hop::Link));
        assert_eq!((d.status, d.why), (status::OUT_OF_SCOPE, "scope:max-hops"));
        assert_eq!(d.candidate.path, "LLL");
    }

    #[test]
    fn an_opted_out_url_is_blocked_and_names_the_list_line() {
        let f = Fixture::new("# asked by mail\nhttp://example.com/private/\n");
        let d = dropped(f.judge(&seed(), "http://example.com/private/x", Hop::Link));
        assert_eq!((d.status, d.why), (status::BLOCKED_BY_USER, "optout"));
        let extra = d.extra.expect("extra");
        assert_eq!(extra["optout"], "http://example.com/private/");
        assert!(extra["list"].as_str().unwrap().ends_with("optout.txt:2"));
        assert!(matches!(
            f.judge(&seed(), "http://example.com/public", Hop::Link),
            Verdict::Queue(_)
        ));
    }

    #[test]
    fn a_trap_url_is_dropped_with_its_rule() {
        let f = Fixture::new("");
        let url = format!("http://example.com/{}", "a".repeat(2100));
        let d = dropped(f.judge(&seed(), &url, Hop::Link));
        assert_eq!((d.status, d.why), (status::OUT_OF_SCOPE, "trap:long-url"));
        assert!(d.extra.expect("extra")["trap"].is_string());
    }

    #[test]
    fn scope_is_judged_before_the_opt_out_list() {
        // Heritrix's order: a URL both off-site and opted out is logged as out of scope.
        let f = Fixture::new("other.example\n");
        let d = dropped(f.judge(&seed(), "http://other.example/", Hop::Link));
        assert_eq!(d.why, "scope:off-site");
    }
}
