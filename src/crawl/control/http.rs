//! The control endpoint: hyper's HTTP/1 server (the crawler links hyper already, for its
//! fetcher), one task per connection, every request but the console page checked for the
//! bearer token, every body cut at 64 KiB. Routes and JSON in and out are in docs/control.md.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use std::io::Write as _;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::actions::{parse_origin, Action, SiteAction};
use super::Sampler;
use crate::crawl::engine::Crawler;
use crate::crawl::locks::Root;
use crate::crawl::operator::rules::Rule;
use crate::crawl::operator::Refused;

/// The largest request body read.
const MAX_BODY: usize = 64 * 1024;

/// The console: one page, its CSS and JavaScript inside, nothing fetched from elsewhere.
const CONSOLE: &str = include_str!("console.html");

/// A running endpoint; `close` stops it and removes `control.json`.
pub(in crate::crawl) struct Endpoint {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// `state/control.json` (None: the endpoint is off, only other workers' orders followed).
    file: Option<PathBuf>,
}

impl Endpoint {
    pub(in crate::crawl) fn close(self) {
        for t in self.tasks {
            t.abort();
        }
        if let Some(file) = &self.file {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// What every connection's handler shares.
struct Shared {
    crawler: Arc<Crawler>,
    token: String,
    sampler: Sampler,
}

/// Starts the endpoint the profile's `[control]` asks for (None: it is off), writes
/// `state/control.json` (mode 0600) and prints where it is.
pub(in crate::crawl) async fn serve(crawler: Arc<Crawler>) -> anyhow::Result<Option<Endpoint>> {
    let follow = crawler
        .operator
        .shared()
        .then(|| tokio::spawn(follow(crawler.clone())));
    let Some(listen) = crawler.profile.control.listen else {
        crawler
            .desks
            .runlog
            .line("control endpoint: off ([control] listen = \"off\")");
        return Ok(follow.map(|f| Endpoint {
            tasks: vec![f],
            file: None,
        }));
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen} ([control] listen)"))?;
    let addr = listener.local_addr()?;
    let token = uuid::Uuid::new_v4().simple().to_string();
    let url = format!("http://{}", shown(addr));
    let file = crawler
        .profile
        .output_dir
        .join("state")
        .join("control.json");
    write_control_file(&file, &url, &token)?;
    let remote = &crawler.profile.control.remote_reason;
    crawler.desks.runlog.line(&format!(
        "control endpoint: {url} (token in {}){}",
        file.display(),
        if remote.is_empty() {
            String::new()
        } else {
            format!("; off loopback: {remote}")
        }
    ));
    eprintln!("archiver: control endpoint {url}/?token={token}");
    let shared = Arc::new(Shared {
        crawler,
        token,
        sampler: Sampler::default(),
    });
    let sampling = tokio::spawn(sample(shared.clone()));
    let accepting = tokio::spawn(accept(listener, shared));
    let mut tasks = vec![sampling, accepting];
    tasks.extend(follow);
    Ok(Some(Endpoint {
        tasks,
        file: Some(file),
    }))
}

/// A shared crawl: the orders another worker received, taken up within half a second.
async fn follow(crawler: Arc<Crawler>) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut root = Root::new();
    loop {
        tick.tick().await;
        if let Some(narrower) = crawler.operator.adopt_newer() {
            let dropped = root.with(|key| super::actions::steer_sched(&crawler, key, narrower));
            crawler.desks.runlog.line(&format!(
                "operator: orders from another worker taken up ({}; {dropped} queued URLs \
                 dropped)",
                crate::crawl::operator::summary(&crawler.operator.orders())
            ));
        }
    }
}

/// The address as a URL shows it: an unspecified address is reached on loopback.
fn shown(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => format!("127.0.0.1:{}", a.port()),
        SocketAddr::V6(a) if a.ip().is_unspecified() => format!("[::1]:{}", a.port()),
        a => a.to_string(),
    }
}

fn write_control_file(file: &std::path::Path, url: &str, token: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let text = serde_json::to_string_pretty(&json!({ "url": url, "token": token }))?;
    let dir = file.parent().unwrap_or(std::path::Path::new("."));
    // A shared crawl keeps no frontier in state/: the folder may not exist yet.
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Written to a file only its owner may read, then renamed: the token is never readable
    // by others, not even for a moment.
    let mut tmp = tempfile::Builder::new()
        .prefix(".control.json.")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(format!("{text}\n").as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(file)
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}

/// The counters once a second, for the rates.
async fn sample(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut root = Root::new();
    loop {
        tick.tick().await;
        root.with(|key| shared.sampler.sample(&shared.crawler, key));
    }
}

async fn accept(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again in a moment rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper::service::service_fn(move |req| handle(shared.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

type Answer = Response<Full<Bytes>>;

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Answer, Infallible> {
    let path = req.uri().path().to_string();
    if path == "/" || path == "/index.html" {
        // The page holds no data: it asks the API for everything, with the token.
        return Ok(match *req.method() {
            Method::GET | Method::HEAD => console(),
            _ => refused(405, "the console is read with GET"),
        });
    }
    if !authorized(&req, &shared.token) {
        let mut r = refused(
            401,
            "a valid token is needed: Authorization: Bearer TOKEN (from state/control.json)",
        );
        r.headers_mut().insert(
            "www-authenticate",
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return Ok(r);
    }
    let method = req.method().clone();
    Ok(match (method, path.as_str()) {
        (Method::GET, "/api/status") => {
            let value = blocking(shared, |c, key, s| Ok(super::status::status(c, key, s))).await;
            answer_json(value)
        }
        (Method::GET, "/metrics") => {
            let text = run_blocking(shared, super::status::metrics).await;
            match text {
                Ok(t) => text_answer(200, "text/plain; version=0.0.4; charset=utf-8", t),
                Err(r) => refused(r.status, &r.message),
            }
        }
        (_, "/api/status" | "/metrics") => refused(405, "use GET"),
        (Method::POST, _) => post(shared, &path, req).await,
        _ if is_action(&path) => refused(405, "use POST"),
        _ => refused(404, "no such path; see docs/control.md"),
    })
}

/// A POST: its body read (64 KiB at most), its action carried out.
async fn post(shared: Arc<Shared>, path: &str, req: Request<Incoming>) -> Answer {
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return refused(413, "the body is over 64 KiB");
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return refused(413, "the body is over 64 KiB (or was cut off)"),
    };
    let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => return refused(400, &format!("the body is not JSON: {e}")),
        }
    };
    let action = match route(path, &value) {
        Ok(a) => a,
        Err(r) => return refused(r.status, &r.message),
    };
    answer_json(blocking(shared, move |c, key, _| super::actions::act(c, key, action)).await)
}

/// The action a POST path and body ask for.
fn route(path: &str, body: &Value) -> Result<Action, Refused> {
    match path {
        "/api/pause" => Ok(Action::Pause),
        "/api/resume" => Ok(Action::Resume),
        "/api/report" => Ok(Action::Report),
        "/api/seeds" => Ok(Action::Seeds(parse::<SeedsBody>(body)?.urls)),
        "/api/exclusions" => exclusion(body).map(Action::Exclude),
        _ => {
            let rest = path
                .strip_prefix("/api/sites/")
                .ok_or_else(|| Refused::not_found("no such path; see docs/control.md"))?;
            let (site, verb) = rest.rsplit_once('/').ok_or_else(|| {
                Refused::not_found("POST /api/sites/{origin}/delay|hold|release|retire")
            })?;
            let site = percent_encoding::percent_decode_str(site)
                .decode_utf8()
                .map_err(|_| Refused::bad("the site is not UTF-8 once decoded"))?;
            let order = match verb {
                "delay" => SiteAction::Delay(parse::<DelayBody>(body)?.min_delay),
                "hold" => SiteAction::Hold,
                "release" => SiteAction::Release,
                "retire" => SiteAction::Retire,
                _ => {
                    return Err(Refused::not_found(
                        "a site's orders are delay, hold, release, retire",
                    ))
                }
            };
            Ok(Action::Site(parse_origin(&site)?, order))
        }
    }
}

/// A path of an action (answered 405 to any method but POST).
fn is_action(path: &str) -> bool {
    let fixed = [
        "/api/pause",
        "/api/resume",
        "/api/report",
        "/api/seeds",
        "/api/exclusions",
    ];
    fixed.contains(&path) || path.starts_with("/api/sites/")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedsBody {
    urls: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DelayBody {
    min_delay: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExclusionBody {
    surt_prefix: Option<String>,
    regex: Option<String>,
}

fn exclusion(body: &Value) -> Result<Rule, Refused> {
    let b: ExclusionBody = parse(body)?;
    match (b.surt_prefix, b.regex) {
        (Some(p), None) => Ok(Rule::SurtPrefix(p)),
        (None, Some(r)) => Ok(Rule::Regex(r)),
        _ => Err(Refused::bad("give one of \"surt_prefix\" and \"regex\"")),
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &Value) -> Result<T, Refused> {
    if body.is_null() {
        return Err(Refused::bad("this action needs a JSON body"));
    }
    serde_json::from_value(body.clone()).map_err(|e| Refused::bad(format!("bad body: {e}")))
}

/// Runs `f` on a blocking thread with a fresh lock root (it takes the engine's locks and may
/// read files): the connection's task never blocks the runtime.
async fn run_blocking<T: Send + 'static>(
    shared: Arc<Shared>,
    f: impl FnOnce(&Crawler, &mut crate::crawl::locks::Key<crate::crawl::locks::Free>, &Sampler) -> T
        + Send
        + 'static,
) -> Result<T, Refused> {
    tokio::task::spawn_blocking(move || {
        let mut root = Root::new();
        root.with(|key| f(&shared.crawler, key, &shared.sampler))
    })
    .await
    .map_err(|e| Refused::server(format!("the request failed: {e}")))
}

async fn blocking(
    shared: Arc<Shared>,
    f: impl FnOnce(
            &Crawler,
            &mut crate::crawl::locks::Key<crate::crawl::locks::Free>,
            &Sampler,
        ) -> Result<Value, Refused>
        + Send
        + 'static,
) -> Result<Value, Refused> {
    run_blocking(shared, f).await.and_then(|r| r)
}

/// The bearer token, compared in constant time.
fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn console() -> Answer {
    let mut r = text_answer(200, "text/html; charset=utf-8", CONSOLE.to_string());
    let csp = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
               img-src 'self' data:; frame-ancestors 'none'";
    if let Ok(v) = hyper::header::HeaderValue::from_str(csp) {
        r.headers_mut().insert("content-security-policy", v);
    }
    r
}

fn answer_json(value: Result<Value, Refused>) -> Answer {
    match value {
        Ok(v) => text_answer(200, "application/json", v.to_string()),
        Err(r) => refused(r.status, &r.message),
    }
}

fn refused(status: u16, message: &str) -> Answer {
    text_answer(
        status,
        "application/json",
        json!({ "error": message }).to_string(),
    )
}

fn text_answer(status: u16, content_type: &str, body: String) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_their_bad_bodies() {
        assert!(matches!(
            route("/api/pause", &Value::Null),
            Ok(Action::Pause)
        ));
        let seeds = json!({ "urls": ["http://a.test/"] });
        assert!(matches!(route("/api/seeds", &seeds), Ok(Action::Seeds(u)) if u.len() == 1));
        assert_eq!(route("/api/seeds", &Value::Null).unwrap_err().status, 400);
        assert_eq!(
            route("/api/seeds", &json!({ "url": "x" }))
                .unwrap_err()
                .status,
            400
        );
        let both = json!({ "surt_prefix": "a", "regex": "b" });
        assert_eq!(route("/api/exclusions", &both).unwrap_err().status, 400);
        let site = "/api/sites/http%3A%2F%2F127.0.0.1%3A8080/delay";
        let delay = json!({ "min_delay": 7.5 });
        assert!(matches!(
            route(site, &delay),
            Ok(Action::Site(o, SiteAction::Delay(d))) if o == "http://127.0.0.1:8080" && d == 7.5
        ));
        assert_eq!(
            route(site, &json!({ "min_delay": "slow" }))
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            route("/api/sites/x/explode", &Value::Null)
                .unwrap_err()
                .status,
            404
        );
        assert_eq!(route("/api/nothing", &Value::Null).unwrap_err().status, 404);
        assert!(is_action("/api/seeds") && is_action("/api/sites/x/hold"));
        assert!(!is_action("/api/status") && !is_action("/metrics"));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
