//! The fetch step: a URL of a resolved site fetched at its address, through the address
//! guard, by the exact-bytes fetcher; and what to do with a body once its headers are in.

use std::net::SocketAddr;
use std::time::SystemTime;

use url::Url;

use super::admission::remote;
use super::desks::Desks;
use super::locks::{Free, Key, Root};
use super::page::{is_css, is_html};
use super::sched::{Heard, Pace};
use crate::extract::Hop;
use crate::frontier::Candidate;
use crate::net::dns::Resolver;
use crate::net::fetch::{BodyPlan, FetchError, Fetched, Fetcher};
use crate::net::guard::Guard;
use crate::politeness;
use crate::scope::origin_of;
use crate::scope::rules::ScopeRules;

/// The crawl's way to the network: the fetcher, the resolver (for a URL of another origin
/// met in a job) and the guard every address connected passes.
pub(super) struct Net {
    pub(super) fetcher: Fetcher,
    pub(super) resolver: Resolver,
    pub(super) guard: Guard,
}

/// One request: the URL, the page it was found on (for the Referer) and the validators that
/// make it conditional.
pub(super) struct Request<'a> {
    pub(super) candidate: &'a Candidate,
    pub(super) referer: Option<&'a Url>,
    pub(super) conditions: &'a [(&'static str, String)],
}

impl Net {
    /// Fetches a URL of a resolved site. Every job's URL is of its own site (a robots.txt
    /// redirect to another one is handed to that site); should a URL of another origin come
    /// here all the same, it is resolved as its own URL and connected at its own address, so
    /// the record never shows one server's answer under another's name. The guard checks the
    /// address actually connected, whatever resolved it.
    pub(super) async fn get(
        &self,
        desks: &Desks,
        root: &mut Root,
        origin: &str,
        request: Request<'_>,
        plan: impl Fn(u16, &hyper::HeaderMap) -> BodyPlan,
    ) -> Result<Fetched, FetchError> {
        let Request {
            candidate,
            referer,
            conditions,
        } = request;
        let url = &candidate.url;
        let addr = if origin_of(url) == origin {
            root.with(|key| desks.with_sched(key, |s| s.target(origin, url)))
                .ok_or_else(|| FetchError::Dns("the site's address is not known".into()))?
        } else {
            let host = url
                .host_str()
                .ok_or_else(|| FetchError::Other("URL has no host".into()))?;
            let ip = remote(self.resolver.resolve(host))
                .await
                .map_err(FetchError::Dns)?;
            let port = url
                .port_or_known_default()
                .ok_or_else(|| FetchError::Other("no port for this scheme".into()))?;
            SocketAddr::new(ip, port)
        };
        self.guard.check(addr.ip()).map_err(FetchError::Refused)?;
        // Connecting, sending, waiting for the answer: the job waits for a server, which does
        // not count against the dispatcher's limit of jobs held up inside the crawler.
        let get = self.fetcher.get_if(url, addr, referer, conditions, plan);
        remote(get).await
    }
}

/// What to do with a URL's body once its headers are in: a successful answer of a type
/// `keep_mime` drops is not read at all (the connection is closed), HTML and CSS are kept
/// in memory for their links, everything else streams to the record.
pub(super) fn body_plan(
    rules: &ScopeRules,
    hop: Hop,
    status: u16,
    headers: &hyper::HeaderMap,
) -> BodyPlan {
    let mime = headers.get("content-type").and_then(|v| v.to_str().ok());
    if (200..300).contains(&status) && !rules.mime_kept(mime, hop) {
        return BodyPlan::Skip;
    }
    BodyPlan::Read {
        keep: is_html(headers) || is_css(headers),
    }
}

/// The pause an answer calls for, as the scheduler's site rules reckon it (a `Retry-After`
/// also becomes the site's floor).
pub(super) fn pace_after(desks: &Desks, key: &mut Key<Free>, origin: &str, f: &Fetched) -> Pace {
    let heard = heard(f);
    desks.with_sched(key, |s| s.record_answer(origin, &heard))
}

/// What an answer tells the scheduler of its site.
fn heard(f: &Fetched) -> Heard {
    Heard {
        end: f.finished_at,
        took: f.duration(),
        status: f.status,
        from_loopback: f.ip.is_loopback(),
        retry_after: f
            .header("retry-after")
            .and_then(|v| politeness::parse_retry_after(v, SystemTime::now())),
    }
}
