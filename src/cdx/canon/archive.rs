//! Step 3, Python's "IA" canonicaliser: lower case, `www` stripped, default ports, session
//! ids out of path and query, query arguments sorted.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::Parts;

pub(super) fn archive_pass(p: &mut Parts) {
    p.host = p.host.to_ascii_lowercase();
    if !p.host.is_empty() && p.scheme != b"dns" {
        p.host = strip_www_prefix(&p.host).to_vec();
    }
    let default_port = match p.scheme.to_ascii_lowercase().as_slice() {
        b"http" => Some(80),
        b"https" => Some(443),
        _ => None,
    };
    if p.port.is_some() && p.port == default_port {
        p.port = None;
    }
    if !p.path.is_empty() {
        let mut path = strip_path_session_id(&p.path.to_ascii_lowercase());
        if path.len() > 1 && path.last() == Some(&b'/') {
            path.pop();
        }
        p.path = path;
    }
    if let Some(q) = p.query.take() {
        let q = strip_query_session_ids(&q).to_ascii_lowercase();
        let q = sort_query_args(&q);
        p.query = (!q.is_empty()).then_some(q);
    }
}

/// `www.`, `www2.`, `www123.` ... at the start of the host go (once).
fn strip_www_prefix(host: &[u8]) -> &[u8] {
    if let Some(rest) = host.strip_prefix(b"www") {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if rest.get(digits) == Some(&b'.') {
            return &rest[digits + 1..];
        }
    }
    host
}

/// Compiles a pattern written in this file.
fn pattern(re: &str) -> Regex {
    // The patterns are constants of this module, checked by the tests: failure is a bug here.
    Regex::new(re).unwrap_or_else(|e| panic!("bad built-in pattern {re}: {e}"))
}

/// ASP.NET cookieless session ids in the path: `/(S(24 chars))/page.aspx` and
/// `/(24 chars)/page.aspx`; the id segment goes.
static PATH_SESSION_IDS: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    [
        pattern(r"(?i-u)^(.*/)\((?:[a-z]\([0-9a-z]{24}\))+\)/([^?]+\.aspx.*)$"),
        pattern(r"(?i-u)^(.*/)\([0-9a-z]{24}\)/([^?]+\.aspx.*)$"),
    ]
});

fn strip_path_session_id(path: &[u8]) -> Vec<u8> {
    let mut path = path.to_vec();
    for re in PATH_SESSION_IDS.iter() {
        if let Some(c) = re.captures(&path) {
            let mut kept = c.get(1).map_or(&[][..], |m| m.as_bytes()).to_vec();
            kept.extend_from_slice(c.get(2).map_or(&[][..], |m| m.as_bytes()));
            path = kept;
        }
    }
    path
}

/// Session ids in the query, tried in this order, each at most once (the last occurrence):
/// the matched text goes, and so does the `&` after it (the `&` before it stays).
static QUERY_SESSION_IDS: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    [
        "jsessionid=[0-9a-z]{32}",
        "phpsessid=[0-9a-z]{32}",
        "sid=[0-9a-z]{32}",
        "aspsessionid[a-z]{8}=[a-z]{24}",
        "cfid=[^&]+&cftoken=[^&]+",
    ]
    .map(|id| pattern(&format!("(?i-u)^(.*){id}(?:&(.*))?$")))
});

fn strip_query_session_ids(query: &[u8]) -> Vec<u8> {
    let mut query = query.to_vec();
    for re in QUERY_SESSION_IDS.iter() {
        if let Some(c) = re.captures(&query) {
            let mut kept = c.get(1).map_or(&[][..], |m| m.as_bytes()).to_vec();
            kept.extend_from_slice(c.get(2).map_or(&[][..], |m| m.as_bytes()));
            query = kept;
        }
    }
    query
}

/// Sorts `&`-separated arguments by name, then value, bytewise; an argument without `=` sorts
/// before the same name with `=`. Empty arguments are kept (and sort first).
fn sort_query_args(query: &[u8]) -> Vec<u8> {
    if query.len() <= 1 {
        return query.to_vec();
    }
    let mut args: Vec<(&[u8], Option<&[u8]>)> = query
        .split(|&b| b == b'&')
        .map(|arg| match arg.iter().position(|&b| b == b'=') {
            Some(eq) => (&arg[..eq], Some(&arg[eq + 1..])),
            None => (arg, None),
        })
        .collect();
    args.sort();
    let mut out = Vec::with_capacity(query.len());
    for (i, (name, value)) in args.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(name);
        if let Some(v) = value {
            out.push(b'=');
            out.extend_from_slice(v);
        }
    }
    out
}
