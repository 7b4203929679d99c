//! In scope or not: the crawl's decide rules.
//!
//! A URL is in scope when it lives on a seed's origin (scheme, host, port) or matches an include
//! regex, matches no exclude regex, and is at most `max_hops` hops from its seed. With
//! `embeds_off_site`, an embedded resource of a page on a seed origin is in scope wherever it
//! lives (Heritrix's transclusion rule, one hop only).

pub mod optout;
pub mod rules;
pub(crate) mod session;
pub mod traps;

use std::borrow::Cow;
use std::collections::HashSet;

use regex::Regex;
use url::{Position, Url};

use crate::extract::Hop;

/// What is in scope.
#[derive(Debug, Clone)]
pub struct ScopeSettings {
    pub max_hops: u32,
    pub max_pages_per_site: u64,
    pub include: Vec<Regex>,
    pub exclude: Vec<Regex>,
    pub embeds_off_site: bool,
}

/// Why a URL was left out; the text goes into crawl.log annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    Scheme,
    Excluded,
    TooManyHops,
    OffSite,
}

impl Rejection {
    pub fn annotation(self) -> &'static str {
        match self {
            Rejection::Scheme => "scope:scheme",
            Rejection::Excluded => "scope:exclude",
            Rejection::TooManyHops => "scope:max-hops",
            Rejection::OffSite => "scope:off-site",
        }
    }
}

/// The scope of one crawl.
#[derive(Debug)]
pub struct Scope {
    settings: ScopeSettings,
    origins: HashSet<String>,
}

/// The origin of a URL as text (`http://host:port`): the unit of a site.
pub fn origin_of(url: &Url) -> String {
    origin_text(url).into_owned()
}

/// [`origin_of`], borrowed from the URL itself when it is http(s) without user or password:
/// its text up to the port is then exactly the origin's serialization (the parser lower-cases
/// the host and leaves the scheme's default port out, as the origin does). This is asked for
/// every link of every page.
fn origin_text(url: &Url) -> Cow<'_, str> {
    let plain = matches!(url.scheme(), "http" | "https")
        && url.username().is_empty()
        && url.password().is_none()
        && url.host().is_some();
    if plain {
        Cow::Borrowed(&url[..Position::AfterPort])
    } else {
        Cow::Owned(url.origin().ascii_serialization())
    }
}

impl Scope {
    pub fn new(settings: ScopeSettings, seeds: &[Url]) -> Scope {
        Scope {
            origins: seeds.iter().map(origin_of).collect(),
            settings,
        }
    }

    /// True when the URL is on a seed's origin.
    pub fn on_seed_origin(&self, url: &Url) -> bool {
        self.origins.contains(origin_text(url).as_ref())
    }

    /// Decides a discovered URL. `hops` is its hop count from the seed; `via` the page it was
    /// found on.
    pub fn decide(&self, url: &Url, hops: usize, hop: Hop, via: &Url) -> Result<(), Rejection> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Rejection::Scheme);
        }
        let text = url.as_str();
        if self.settings.exclude.iter().any(|r| r.is_match(text)) {
            return Err(Rejection::Excluded);
        }
        if hops > self.settings.max_hops as usize {
            return Err(Rejection::TooManyHops);
        }
        if self.on_seed_origin(url) || self.settings.include.iter().any(|r| r.is_match(text)) {
            return Ok(());
        }
        let transclusion = hop == Hop::Embed && self.on_seed_origin(via);
        if self.settings.embeds_off_site && transclusion {
            return Ok(());
        }
        Err(Rejection::OffSite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    fn scope(embeds: bool) -> Scope {
        let settings = ScopeSettings {
            max_hops: 3,
            max_pages_per_site: 10,
            include: vec![Regex::new("^https://cdn\\.example/").unwrap()],
            exclude: vec![Regex::new("/private/").unwrap()],
            embeds_off_site: embeds,
        };
        Scope::new(settings, &[Url::parse("http://site.example/").unwrap()])
    }

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_origin_text_is_the_origins_serialization() {
        let urls = [
            "http://site.example/a?b#c",
            "HTTP://Site.EXAMPLE:80/",
            "https://site.example:443/x",
            "https://site.example:8443",
            "http://user:pw@site.example:81/",
            "http://user@site.example/",
            "http://[::1]:8080/p",
            "http://127.1/",
            "http://b\u{fc}cher.example/",
            "http://site.example./",
            "ftp://files.example/",
            "file:///etc/passwd",
            "data:text/plain,x",
        ];
        for text in urls {
            let url = u(text);
            assert_eq!(
                origin_text(&url),
                url.origin().ascii_serialization(),
                "{text}"
            );
        }
    }

    #[test]
    fn origin_is_scheme_host_and_port() {
        let s = scope(false);
        let via = u("http://site.example/");
        assert_eq!(
            s.decide(&u("http://site.example/a"), 1, Hop::Link, &via),
            Ok(())
        );
        assert_eq!(
            s.decide(&u("https://site.example/a"), 1, Hop::Link, &via),
            Err(Rejection::OffSite)
        );
        assert_eq!(
            s.decide(&u("http://site.example:8080/a"), 1, Hop::Link, &via),
            Err(Rejection::OffSite)
        );
    }

    #[test]
    fn include_exclude_and_hops() {
        let s = scope(false);
        let via = u("http://site.example/");
        assert_eq!(
            s.decide(&u("https://cdn.example/x.css"), 1, Hop::Link, &via),
            Ok(())
        );
        assert_eq!(
            s.decide(&u("http://site.example/private/x"), 1, Hop::Link, &via),
            Err(Rejection::Excluded)
        );
        assert_eq!(
            s.decide(&u("http://site.example/deep"), 4, Hop::Link, &via),
            Err(Rejection::TooManyHops)
        );
    }

    #[test]
    fn embeds_off_site_only_when_asked_and_only_one_hop() {
        let via = u("http://site.example/page");
        let img = u("http://other.example/a.png");
        assert_eq!(
            scope(false).decide(&img, 1, Hop::Embed, &via),
            Err(Rejection::OffSite)
        );
        assert_eq!(scope(true).decide(&img, 1, Hop::Embed, &via), Ok(()));
        // A link is never transcluded, and an embed of an off-site page is not either.
        assert_eq!(
            scope(true).decide(&img, 1, Hop::Link, &via),
            Err(Rejection::OffSite)
        );
        let off = u("http://other.example/frame.html");
        assert_eq!(
            scope(true).decide(&u("http://third.example/b.png"), 2, Hop::Embed, &off),
            Err(Rejection::OffSite)
        );
    }
}
