//! Micro-parsers for URL-valued attribute values: whitespace, `srcset`, meta refresh.

use std::borrow::Cow;

use super::entities::decode_entities;

/// HTML's "ASCII whitespace": tab, LF, FF, CR, space.
pub(super) fn is_ascii_ws(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// An attribute value as the HTML parser would give it (character references decoded),
/// stripped of leading and trailing ASCII whitespace as URL-valued attributes are.
pub(super) fn clean_attr(raw: &str) -> Cow<'_, str> {
    match decode_entities(raw) {
        Cow::Borrowed(s) => Cow::Borrowed(s.trim_matches(is_ascii_ws)),
        Cow::Owned(s) => {
            let trimmed = s.trim_matches(is_ascii_ws);
            if trimmed.len() == s.len() {
                Cow::Owned(s)
            } else {
                Cow::Owned(trimmed.to_string())
            }
        }
    }
}

/// URLs of a `srcset` (HTML "parse a srcset attribute"): candidates are separated by commas
/// that follow whitespace-delimited URLs, so a URL may itself contain commas
/// (`a,b.jpg 1x` is one URL); descriptors run to the next comma outside parentheses.
/// Candidates with odd descriptors are kept: the archive should rather have the image.
pub(super) fn srcset_urls(srcset: &str) -> Vec<&str> {
    let bytes = srcset.as_bytes();
    let ws = |b: u8| is_ascii_ws(char::from(b));
    let mut urls = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && (ws(bytes[i]) || bytes[i] == b',') {
            i += 1;
        }
        if i >= bytes.len() {
            return urls;
        }
        let start = i;
        while i < bytes.len() && !ws(bytes[i]) {
            i += 1;
        }
        let url = &srcset[start..i];
        if url.ends_with(',') {
            // "a.jpg,b.jpg 2x" → "a.jpg,b.jpg"; but "a.jpg, b.jpg" → "a.jpg" and no descriptors.
            urls.push(url.trim_end_matches(','));
            continue;
        }
        urls.push(url);
        let mut in_parens = false;
        while i < bytes.len() {
            let b = bytes[i];
            i += 1;
            match b {
                b'(' => in_parens = true,
                b')' => in_parens = false,
                b',' if !in_parens => break,
                _ => {}
            }
        }
    }
}

/// The URL of a `<meta http-equiv=refresh content=…>` (HTML "shared declarative refresh
/// steps"): `N`, `N; url=X`, `N, URL='X'`, `N; X`. None when it refreshes the page itself or
/// the content is malformed.
pub(super) fn refresh_url(content: &str) -> Option<&str> {
    let b = content.as_bytes();
    let ws = |i: usize| b.get(i).is_some_and(|&c| is_ascii_ws(char::from(c)));
    let skip_ws = |mut i: usize| {
        while ws(i) {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(0);
    let digits = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if i == digits && b.get(i) != Some(&b'.') {
        return None;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'.') {
        i += 1;
    }
    if i >= b.len() || !(ws(i) || b[i] == b';' || b[i] == b',') {
        return None;
    }
    i = skip_ws(i);
    if matches!(b.get(i), Some(b';' | b',')) {
        i += 1;
    }
    i = skip_ws(i);
    let whole = i;
    let lower = |j: usize| b.get(j).map(u8::to_ascii_lowercase);
    let url = if lower(i) != Some(b'u') {
        unquote(&content[i..])
    } else if lower(i + 1) == Some(b'r') && lower(i + 2) == Some(b'l') {
        let j = skip_ws(i + 3);
        if b.get(j) == Some(&b'=') {
            unquote(&content[skip_ws(j + 1)..])
        } else {
            &content[whole..]
        }
    } else {
        &content[whole..]
    };
    let url = url.trim_matches(is_ascii_ws);
    (!url.is_empty()).then_some(url)
}

/// `'x'` → `x`; an opening quote ends the URL at the next same quote (or the end).
fn unquote(s: &str) -> &str {
    match s.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let inner = &s[1..];
            inner.find(q).map_or(inner, |end| &inner[..end])
        }
        _ => s,
    }
}
