//! `archiver control`: the operator's orders from the shell, sent to a running crawl's control
//! endpoint as the console sends them (the address and token read from `state/control.json`).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::Profile;

/// What to send.
#[derive(Debug)]
pub enum Order {
    Pause,
    Resume,
    Report,
    Seeds(Vec<String>),
    /// A SURT prefix (or URL), or with `regex` a regular expression.
    Exclude {
        rule: String,
        regex: bool,
    },
    /// `delay SECONDS`, `hold`, `release` or `retire` for a site (an origin, or `host[:port]`).
    Site {
        site: String,
        verb: String,
        delay: Option<f64>,
    },
    Status,
}

/// Why no answer came.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(
        "no running crawl: cannot read {path} ({why}); is the crawl running with [control] on?"
    )]
    NotRunning { path: PathBuf, why: String },
    #[error("cannot reach the crawl at {url}: {why}")]
    Unreachable { url: String, why: String },
}

/// The endpoint a running crawl wrote into its `state/control.json`.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    pub token: String,
}

impl Endpoint {
    pub fn of(profile: &Profile) -> Result<Endpoint, ControlError> {
        let path = profile.output_dir.join("state").join("control.json");
        let not = |why: String| ControlError::NotRunning {
            path: path.clone(),
            why,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| not(e.to_string()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| not(e.to_string()))?;
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match (field("url"), field("token")) {
            (Some(url), Some(token)) => Ok(Endpoint { url, token }),
            _ => Err(not("no \"url\" and \"token\" in it".into())),
        }
    }
}

/// Sends an order; the HTTP status and the JSON answer.
pub fn send(ep: &Endpoint, order: &Order) -> Result<(u16, Value), ControlError> {
    let (method, path, body) = request_of(order);
    let (status, text) = exchange(ep, method, &path, body.as_ref())?;
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, value))
}

fn request_of(order: &Order) -> (&'static str, String, Option<Value>) {
    match order {
        Order::Pause => ("POST", "/api/pause".into(), None),
        Order::Resume => ("POST", "/api/resume".into(), None),
        Order::Report => ("POST", "/api/report".into(), None),
        Order::Status => ("GET", "/api/status".into(), None),
        Order::Seeds(urls) => ("POST", "/api/seeds".into(), Some(json!({ "urls": urls }))),
        Order::Exclude { rule, regex: true } => (
            "POST",
            "/api/exclusions".into(),
            Some(json!({ "regex": rule })),
        ),
        Order::Exclude { rule, regex: false } => (
            "POST",
            "/api/exclusions".into(),
            Some(json!({ "surt_prefix": rule })),
        ),
        Order::Site { site, verb, delay } => {
            let site =
                percent_encoding::utf8_percent_encode(site, percent_encoding::NON_ALPHANUMERIC);
            let body = delay.map(|d| json!({ "min_delay": d }));
            ("POST", format!("/api/sites/{site}/{verb}"), body)
        }
    }
}

/// One HTTP/1.1 exchange over a fresh connection (`Connection: close`).
fn exchange(
    ep: &Endpoint,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, String), ControlError> {
    let fail = |why: String| ControlError::Unreachable {
        url: ep.url.clone(),
        why,
    };
    let authority = ep
        .url
        .strip_prefix("http://")
        .ok_or_else(|| fail("only http:// endpoints are supported".into()))?
        .trim_end_matches('/');
    let mut stream = TcpStream::connect(authority).map_err(|e| fail(e.to_string()))?;
    let timeout = Some(Duration::from_secs(60));
    let _ = stream.set_read_timeout(timeout);
    let body = body.map(Value::to_string).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        ep.token,
        body.len()
    );
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| fail(e.to_string()))?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| fail("the answer has no end of head".into()))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| fail("the answer has no status".into()))?;
    Ok((status, body.to_string()))
}

/// The status document in a few lines of text.
pub fn render_status(v: &Value) -> String {
    let t = &v["totals"];
    let r = &v["rates"];
    let mut out = format!(
        "crawl {}{}\n  {} URLs, {} fetched, {} archived, {} bytes, {} errors; {} queued, {} in flight\n  \
         URLs/s: {:.2} (10 s), {:.2} (1 min), {:.2} (10 min)\n",
        v["crawl"].as_str().unwrap_or("?"),
        if v["paused"].as_bool() == Some(true) { " (PAUSED)" } else { "" },
        t["urls"], t["fetched"], t["archived"], t["bytes"], t["errors"], t["queued"], t["in_flight"],
        r["10s"]["urls"].as_f64().unwrap_or(0.0),
        r["1m"]["urls"].as_f64().unwrap_or(0.0),
        r["10m"]["urls"].as_f64().unwrap_or(0.0),
    );
    let sites = v["sites"].as_array().cloned().unwrap_or_default();
    out.push_str(&format!(
        "  {:<40} {:>7} {:>7} {:>7}  waits\n",
        "site", "queued", "fetched", "errors"
    ));
    for s in &sites {
        out.push_str(&format!(
            "  {:<40} {:>7} {:>7} {:>7}  {}\n",
            s["site"].as_str().unwrap_or("?"),
            s["queued"],
            s["fetched"],
            s["errors"],
            s["waits"].as_str().unwrap_or("")
        ));
    }
    out
}
