//! Step 2, Python's "Google" canonicaliser: percent-decoding to a fixed point and re-encoding
//! once, the host (IDNA, numeric IPv4 forms, dots), dot-segment removal.

use super::idna::idna_encode;
use super::Parts;

pub(super) fn google_pass(p: &mut Parts) {
    if let Some(q) = p.query.take() {
        p.query = Some(escape_once(&unescape_repeatedly(&q)));
    }
    if !p.host.is_empty() {
        p.host = canonical_host(&p.host);
    }
    let path = unescape_repeatedly(&p.path);
    let path = if p.host.is_empty() {
        // Without a host the "path" is free text (mailto:, dns:, ...): no dot segments.
        path
    } else {
        normalize_path(&path)
    };
    p.path = escape_once(&path);
}

fn canonical_host(host: &[u8]) -> Vec<u8> {
    let mut h = unescape_repeatedly(host);
    if !h.is_ascii() {
        // A host IDNA cannot encode stays as raw bytes (and is percent-encoded below).
        if let Some(ascii) = idna_encode(&decode_utf8_ignoring_errors(&h)) {
            h = ascii;
        }
    }
    let h = replace_double_dots(&h);
    let h = trim_dots(&h);
    match ipv4_from_numeric_host(h) {
        Some(ip) => ip.into_bytes(),
        None => escape_once(&h.to_ascii_lowercase()),
    }
}

/// One left-to-right pass replacing `..` by `.` (so `...` becomes `..`, as in Python).
fn replace_double_dots(h: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(h.len());
    let mut i = 0;
    while i < h.len() {
        if h[i] == b'.' && h.get(i + 1) == Some(&b'.') {
            out.push(b'.');
            i += 2;
        } else {
            out.push(h[i]);
            i += 1;
        }
    }
    out
}

fn trim_dots(h: &[u8]) -> &[u8] {
    let start = h.iter().position(|&b| b != b'.').unwrap_or(h.len());
    let end = h.iter().rposition(|&b| b != b'.').map_or(start, |e| e + 1);
    &h[start..end]
}

/// Removes `.` and `..` segments and empty segments (doubled slashes). A `..` with nothing to
/// pop is kept. The trailing slash survives.
fn normalize_path(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b"/".to_vec();
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    // The text before the first '/' is dropped, like Python does.
    for seg in path.split(|&b| b == b'/').skip(1) {
        match seg {
            b"." => {}
            b".." => {
                if kept.pop().is_none() {
                    kept.push(seg);
                }
            }
            _ => kept.push(seg),
        }
    }
    let mut out = b"/".to_vec();
    if let Some((last, rest)) = kept.split_last() {
        for seg in rest.iter().filter(|s| !s.is_empty()) {
            out.extend_from_slice(seg);
            out.push(b'/');
        }
        out.extend_from_slice(last);
    }
    out
}

/// Decodes `%XX` escapes once; a `%` not followed by two hex digits stays.
fn unquote_once(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%' {
            if let (Some(hi), Some(lo)) = (
                input.get(i + 1).and_then(|&b| hex_value(b)),
                input.get(i + 2).and_then(|&b| hex_value(b)),
            ) {
                out.push(hi * 16 + lo);
                i += 3;
                continue;
            }
        }
        out.push(input[i]);
        i += 1;
    }
    out
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Decodes until nothing changes (`%2541` ends as `A`).
fn unescape_repeatedly(input: &[u8]) -> Vec<u8> {
    let mut cur = input.to_vec();
    while cur.contains(&b'%') {
        let next = unquote_once(&cur);
        if next == cur {
            break;
        }
        cur = next;
    }
    cur
}

/// Percent-encodes (upper-case hex) controls, space, `#`, `%`, DEL and every non-ASCII byte;
/// all other printable ASCII stays, `?` included.
fn escape_once(input: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(input.len());
    for &b in input {
        if b <= 0x20 || b >= 0x7f || b == b'#' || b == b'%' {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        } else {
            out.push(b);
        }
    }
    out
}

/// Python's `bytes.decode("utf-8", "ignore")`: invalid sequences are dropped.
fn decode_utf8_ignoring_errors(bytes: &[u8]) -> String {
    bytes.utf8_chunks().map(|chunk| chunk.valid()).collect()
}

/// Numeric hosts rewritten to a dotted quad, as Python does: all digits is one 32-bit number
/// (taken modulo 2^32); otherwise up to four dot-separated parts in `inet_aton` style (a part
/// with a leading 0 is octal; the last part fills the remaining bytes). Only two shapes are
/// tried: first part starting 1-9 with decimal digits after, or first part starting with 0 and
/// octal digits throughout. Anything `inet_aton` rejects stays a host name.
fn ipv4_from_numeric_host(host: &[u8]) -> Option<String> {
    if host.is_empty() {
        return None;
    }
    if host.iter().all(u8::is_ascii_digit) {
        let n = host.iter().fold(0u32, |acc, &b| {
            acc.wrapping_mul(10).wrapping_add(u32::from(b - b'0'))
        });
        return Some(std::net::Ipv4Addr::from(n).to_string());
    }
    let parts: Vec<&[u8]> = host.split(|&b| b == b'.').collect();
    let well_formed = parts.len() <= 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
    if !well_formed {
        return None;
    }
    let decimal_shape = parts[0][0] != b'0';
    let octal_shape = parts[0][0] == b'0' && parts.iter().flat_map(|p| p.iter()).all(|&b| b < b'8');
    if !(decimal_shape || octal_shape) {
        return None;
    }
    let values: Vec<u32> = parts
        .iter()
        .map(|p| inet_aton_part(p))
        .collect::<Option<_>>()?;
    let (last, leading) = values.split_last()?;
    if leading.iter().any(|&v| v > 0xff) {
        return None;
    }
    let last_bits = 8 * (4 - leading.len() as u32);
    if last_bits < 32 && u64::from(*last) >= 1u64 << last_bits {
        return None;
    }
    let mut addr = *last;
    for (i, &v) in leading.iter().enumerate() {
        addr |= v << (24 - 8 * i as u32);
    }
    Some(std::net::Ipv4Addr::from(addr).to_string())
}

/// One `inet_aton` number: octal with a leading 0, else decimal; at most 2^32-1.
fn inet_aton_part(p: &[u8]) -> Option<u32> {
    let (digits, radix) = match p {
        [b'0', rest @ ..] if !rest.is_empty() => (rest, 8),
        _ => (p, 10),
    };
    let mut value: u64 = 0;
    for &b in digits {
        let d = char::from(b).to_digit(radix)?;
        value = value * u64::from(radix) + u64::from(d);
        if value > u64::from(u32::MAX) {
            return None;
        }
    }
    u32::try_from(value).ok()
}
