//! Step 1: the URL split into scheme, host, port, path and query the way Python `surt`
//! splits it (userinfo and fragment dropped).

use super::Parts;

/// ASCII whitespace as Python `bytes.strip()` sees it.
fn is_py_bytes_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Splits `url` into its parts; `None` where Python raises.
pub(super) fn split_url(url: &[u8]) -> Option<Parts> {
    let start = url.iter().position(|&b| !is_py_bytes_space(b))?;
    let end = url.iter().rposition(|&b| !is_py_bytes_space(b))? + 1;
    // Tabs and line breaks inside the URL vanish (plain spaces inside stay).
    let mut s: Vec<u8> = url[start..end]
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\t' | b'\n' | b'\r'))
        .collect();
    if s.is_empty() {
        return None;
    }
    if scheme_len(&s).is_none() {
        // Anything without a scheme is taken as http, including "host:port/..." whose "host"
        // already looks like a scheme and so is kept as one.
        s.splice(0..0, b"http://".iter().copied());
    }
    let s = collapse_repeated_http_prefixes(&s);
    let colon = scheme_len(&s)?;
    let scheme = s[..colon].to_vec();
    let rest = &s[colon + 1..];

    let (netloc, after_netloc): (&[u8], &[u8]) = match rest.strip_prefix(b"//") {
        Some(r) => {
            let n = r
                .iter()
                .position(|b| matches!(b, b'/' | b'?' | b'#'))
                .unwrap_or(r.len());
            (&r[..n], &r[n..])
        }
        None => (&[], rest),
    };
    let path_end = after_netloc
        .iter()
        .position(|b| matches!(b, b'?' | b'#'))
        .unwrap_or(after_netloc.len());
    let mut path = after_netloc[..path_end].to_vec();
    let after_path = &after_netloc[path_end..];
    let query = match after_path.strip_prefix(b"?") {
        Some(q) => {
            let q = &q[..q.iter().position(|&b| b == b'#').unwrap_or(q.len())];
            (!q.is_empty()).then(|| q.to_vec())
        }
        None => None,
    };

    // A host followed by ':' and no port is fine: all trailing colons go.
    let mut netloc_len = netloc.len();
    while netloc_len > 0 && netloc[netloc_len - 1] == b':' {
        netloc_len -= 1;
    }
    let (host_raw, port_raw) = host_and_port(&netloc[..netloc_len]);
    let port = parse_port(port_raw)?;
    let mut host = lower_host_before_zone(host_raw);

    // "http:////host/x" and "http:host" put the host in the path; Python fishes it out (without
    // looking for a port in it). Only for schemes spelled with a lower-case "http" prefix.
    if scheme.starts_with(b"http") && host.is_empty() && !path.is_empty() {
        let trimmed = &path[path.iter().position(|&b| b != b'/').unwrap_or(path.len())..];
        let (h, p) = match trimmed.iter().position(|&b| b == b'/') {
            Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
            None => (trimmed, &[][..]),
        };
        let mut new_path = Vec::with_capacity(p.len() + 1);
        new_path.push(b'/');
        new_path.extend_from_slice(p);
        host = h.to_vec();
        path = new_path;
    }

    Some(Parts {
        scheme,
        host,
        port,
        path,
        query,
    })
}

/// Length of a leading `scheme` in `scheme:...` (letter, then letters, digits, `+-.`).
fn scheme_len(s: &[u8]) -> Option<usize> {
    if !s.first()?.is_ascii_alphabetic() {
        return None;
    }
    let n = s
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (s[n] == b':').then_some(n)
}

/// `http://https://host/` becomes `https://host/`: of a run of `http://` / `https://` prefixes
/// only the last is kept.
fn collapse_repeated_http_prefixes(s: &[u8]) -> Vec<u8> {
    fn prefix_len(s: &[u8]) -> Option<usize> {
        if s.starts_with(b"http://") {
            Some(7)
        } else if s.starts_with(b"https://") {
            Some(8)
        } else {
            None
        }
    }
    let mut pos = 0;
    let mut last = None;
    while let Some(n) = prefix_len(&s[pos..]) {
        last = Some(pos);
        pos += n;
    }
    match last {
        Some(l) => s[l..].to_vec(),
        None => s.to_vec(),
    }
}

/// Host and port text of a netloc: userinfo (up to the last `@`) is dropped; a `[`...`]` host
/// is taken between the brackets, the port after the first `:` that follows `]`.
fn host_and_port(netloc: &[u8]) -> (&[u8], &[u8]) {
    let hostinfo = match netloc.iter().rposition(|&b| b == b'@') {
        Some(at) => &netloc[at + 1..],
        None => netloc,
    };
    if let Some(open) = hostinfo.iter().position(|&b| b == b'[') {
        let inner = &hostinfo[open + 1..];
        match inner.iter().position(|&b| b == b']') {
            Some(close) => {
                let after = &inner[close + 1..];
                let port = match after.iter().position(|&b| b == b':') {
                    Some(c) => &after[c + 1..],
                    None => &[][..],
                };
                (&inner[..close], port)
            }
            None => (inner, &[][..]),
        }
    } else {
        match hostinfo.iter().position(|&b| b == b':') {
            Some(c) => (&hostinfo[..c], &hostinfo[c + 1..]),
            None => (hostinfo, &[][..]),
        }
    }
}

/// `Some(None)` for no port (or port 0), `None` where Python raises (not all ASCII digits, or
/// above 65535).
fn parse_port(raw: &[u8]) -> Option<Option<u16>> {
    if raw.is_empty() {
        return Some(None);
    }
    if !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let significant = &raw[raw.iter().position(|&b| b != b'0').unwrap_or(raw.len())..];
    if significant.len() > 5 {
        return None;
    }
    let value = significant
        .iter()
        .fold(0u32, |acc, &b| acc * 10 + u32::from(b - b'0'));
    let port = u16::try_from(value).ok()?;
    Some((port != 0).then_some(port))
}

/// ASCII-lower-cases the host up to its first `%` (an IPv6 zone after it keeps its case).
fn lower_host_before_zone(host: &[u8]) -> Vec<u8> {
    let zone = host.iter().position(|&b| b == b'%').unwrap_or(host.len());
    let mut out = host[..zone].to_ascii_lowercase();
    out.extend_from_slice(&host[zone..]);
    out
}
