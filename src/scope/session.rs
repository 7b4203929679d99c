//! Session ids in URLs: the same page under ever-new ids is one page to the seen-set.

use url::Url;

/// The URL without session ids, for the seen-set: variants of one page that differ only in
/// their session id become one URL. Fetch the URL as discovered; use this only for the key.
///
/// Removed (parameter names compared case-insensitively; other parameters keep their order
/// and exact bytes; an emptied query is dropped):
/// - query parameters named `jsessionid`, `phpsessid` or `aspsessionid…` (ASP's
///   `ASPSESSIONIDXXXXXXXX`), whatever the value: these names only ever carry session ids;
/// - query parameters whose name ends in `sid` or `sessionid` once `_` and `-` are dropped
///   (`sid`, `osCsid`, `SessionID`, `session_id`) when the value looks machine-made: 16–128
///   letters, digits, `-`, `_` or `.`, at least one a digit. `sid=42` or `sessionid=7` (a
///   conference talk) stay;
/// - query `cfid` and `cftoken` (ColdFusion), when both are present;
/// - path parameters `;jsessionid=…`, `;phpsessid=…`, `;sessionid=…`, `;sid=…` (Java servlet
///   URL rewriting puts the session id there);
/// - ASP.NET cookieless segments: `/(S(…))/`, `/(A(…)S(…)F(…))/` (each value 16 or more
///   letters and digits), and `/(` + 24 letters and digits + `)/` when a later part of the
///   path names an `.aspx` page.
///
/// Python surt's IA canonicaliser (pywb's keys) strips a subset of this: `jsessionid`,
/// `phpsessid` and names ending in `sid` with exactly 32 letters and digits, ASPSESSIONID
/// with 24 letters, `cfid` directly followed by `cftoken`, and the two ASP.NET path forms.
/// Apart from oddities of its regexes (a 32-character value without a single digit, which is
/// no machine-made id; `sid=` inside another parameter's value), what it strips goes here
/// too. Beyond it: the `;jsessionid=` path form, which surt leaves
/// alone, and ids of other lengths (Tomcat appends `.node1` to its 32 hex digits; PHP ids
/// are often 26 characters). Where surt cuts a name mid-way (`?fsid=…&b=1` becomes `?fb=1`),
/// this removes the whole parameter.
pub(crate) fn strip_session_ids(url: &Url) -> Url {
    let mut out = url.clone();
    let path = url.path();
    // Every path form starts a segment with `(` or holds a `;`: without either there is
    // nothing to strip (and no segment list to build, for the many URLs of every page).
    if path.contains(['(', ';']) {
        let stripped_path = strip_path_sessions(path);
        if stripped_path != path {
            out.set_path(&stripped_path);
        }
    }
    if let Some(query) = url.query() {
        let stripped = strip_query_sessions(query);
        if stripped != query {
            out.set_query((!stripped.is_empty()).then_some(stripped.as_str()));
        }
    }
    out
}

fn strip_path_sessions(path: &str) -> String {
    let segs: Vec<&str> = path.split('/').collect();
    let mut kept: Vec<String> = Vec::with_capacity(segs.len());
    for (i, seg) in segs.iter().enumerate() {
        let later_aspx = || {
            segs[i + 1..]
                .iter()
                .any(|s| s.to_ascii_lowercase().contains(".aspx"))
        };
        if i > 0 && (is_aspnet_cookieless(seg) || (is_aspnet_bare(seg) && later_aspx())) {
            continue;
        }
        kept.push(strip_matrix_sessions(seg));
    }
    kept.join("/")
}

/// `(S(token))`, `(A(token)S(token)F(token))`: ASP.NET's cookieless session and auth segment.
fn is_aspnet_cookieless(seg: &str) -> bool {
    let Some(inner) = seg.strip_prefix('(').and_then(|s| s.strip_suffix(')')) else {
        return false;
    };
    let mut rest = inner;
    let mut parts = 0;
    while !rest.is_empty() {
        let mut chars = rest.chars();
        let letter_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        let after = chars.as_str();
        let Some(body) = after.strip_prefix('(') else {
            return false;
        };
        let Some(close) = body.find(')') else {
            return false;
        };
        let value = &body[..close];
        if !letter_ok || value.len() < 16 || !value.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return false;
        }
        rest = &body[close + 1..];
        parts += 1;
    }
    parts > 0
}

/// `(` + 24 letters and digits + `)`: ASP.NET 1.x's cookieless session segment.
fn is_aspnet_bare(seg: &str) -> bool {
    seg.strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .is_some_and(|v| v.len() == 24 && v.bytes().all(|b| b.is_ascii_alphanumeric()))
}

const PATH_SESSION_PARAMS: &[&str] = &["jsessionid", "phpsessid", "sessionid", "sid"];

/// A segment without its `;jsessionid=…`-style path parameters.
fn strip_matrix_sessions(seg: &str) -> String {
    if !seg.contains(';') {
        return seg.to_string();
    }
    let mut parts = seg.split(';');
    let mut out = parts.next().unwrap_or("").to_string();
    for param in parts {
        let name = param.split('=').next().unwrap_or("").to_ascii_lowercase();
        if param.contains('=') && PATH_SESSION_PARAMS.contains(&name.as_str()) {
            continue;
        }
        out.push(';');
        out.push_str(param);
    }
    out
}

fn strip_query_sessions(query: &str) -> String {
    let pairs: Vec<&str> = query.split('&').collect();
    let name_of = |p: &str| {
        let raw = p.split('=').next().unwrap_or("");
        percent_encoding::percent_decode_str(raw)
            .decode_utf8_lossy()
            .to_ascii_lowercase()
    };
    let names: Vec<String> = pairs.iter().map(|p| name_of(p)).collect();
    let coldfusion = names.iter().any(|n| n == "cfid") && names.iter().any(|n| n == "cftoken");
    let kept: Vec<&str> = pairs
        .iter()
        .zip(&names)
        .filter(|(pair, name)| {
            let value = pair.split_once('=').map_or("", |(_, v)| v);
            let cf = coldfusion && (name.as_str() == "cfid" || name.as_str() == "cftoken");
            !(cf || is_session_param(name, value))
        })
        .map(|(pair, _)| *pair)
        .collect();
    if kept.len() == pairs.len() {
        return query.to_string();
    }
    kept.join("&")
}

fn is_session_param(name: &str, value: &str) -> bool {
    if name == "jsessionid" || name == "phpsessid" || name.starts_with("aspsessionid") {
        return true;
    }
    let squashed: String = name.chars().filter(|c| *c != '_' && *c != '-').collect();
    (squashed.ends_with("sid") || squashed.ends_with("sessionid")) && is_token(value)
}

/// A value that looks machine-made: 16–128 characters of `[A-Za-z0-9._-]`, with a digit.
fn is_token(value: &str) -> bool {
    (16..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && value.bytes().any(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strip(s: &str) -> String {
        strip_session_ids(&u(s)).to_string()
    }

    #[test]
    fn session_id_variants_collapse() {
        let variants = [
            "http://h/shop/item?id=5",
            "http://h/shop/item;jsessionid=0123456789ABCDEF0123456789ABCDEF?id=5",
            "http://h/shop/item;jsessionid=FEDCBA9876543210FEDCBA9876543210.node1?id=5",
            "http://h/shop/item?jsessionid=0123456789ABCDEF0123456789ABCDEF&id=5",
            "http://h/shop/item?id=5&PHPSESSID=k2jlc3v1o7kq6n3h1f0dm5sp21",
            "http://h/shop/item?sid=9f8e7d6c5b4a39281706f5e4d3c2b1a0&id=5",
            "http://h/shop/item?id=5&osCsid=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            "http://h/shop/item?SessionID=a1b2c3d4e5f6a7b8c9d0&id=5",
            "http://h/shop/item?session_id=a1b2c3d4e5f6a7b8c9d0&id=5",
            "http://h/shop/item?ASPSESSIONIDQQGGGNCU=ABCDEFGHIJKLMNOPQRSTUVWX&id=5",
            "http://h/shop/item?CFID=123456&id=5&CFTOKEN=98765432",
        ];
        for v in variants {
            assert_eq!(strip(v), "http://h/shop/item?id=5", "{v}");
        }
        assert_eq!(
            strip("http://h/x/(S(abcdefghijklmnopqrstuvwx))/page.aspx?a=1"),
            "http://h/x/page.aspx?a=1"
        );
        assert_eq!(
            strip("http://h/x/(A(abcdefghijklmnopqrstuvwx)S(abcdefghijklmnopqrstuvwx))/p.aspx"),
            "http://h/x/p.aspx"
        );
        assert_eq!(
            strip("http://h/x/(abcdefghijklmnopqrstuvwx)/dir/Page.ASPX"),
            "http://h/x/dir/Page.ASPX"
        );
        assert_eq!(strip("http://h/a?jsessionid=123"), "http://h/a");
        // Python surt leaves "?f" glued to the next parameter here; whole names go.
        assert_eq!(
            strip("http://h/a?fsid=0123456789abcdef0123456789abcdef&b=1"),
            "http://h/a?b=1"
        );
    }

    #[test]
    fn lookalikes_are_kept() {
        for url in [
            "http://h/story?sid=42",
            "http://h/talks?sessionid=7",
            "http://h/a?sid=abcdefghijklmnopqrstuvwxyz",
            "http://h/x/(abcdefghijklmnopqrstuvwx)/dir/page.html",
            "http://h/a?cfid=1",
            "http://h/a;v=2/b",
            "http://h/a?x=1&&y=2",
        ] {
            assert_eq!(strip(url), url, "{url}");
        }
    }
}
