//! Character references in attribute values, decoded as an HTML parser would.

use std::borrow::Cow;

/// Decodes character references as HTML does in attribute values (lol_html leaves them).
///
/// Numeric references are complete. Named ones cover the 106 legacy names that may omit the
/// `;` (Latin-1 letters and signs, `amp`, `lt`, `gt`, `quot`, …), applying the attribute rule
/// that keeps `&copy=2` literal when the `;` is missing and `=` or an alphanumeric follows, plus
/// the ASCII punctuation names and a few typographic ones. Any other name stays literal: the
/// full table (over 2,000 names) would be dead weight for URLs.
pub(super) fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        match char_ref(after) {
            Some((c, used)) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The character referenced by the text after a `&`, and how many bytes of it were used.
fn char_ref(after: &str) -> Option<(char, usize)> {
    let b = after.as_bytes();
    if b.first() == Some(&b'#') {
        let hex = matches!(b.get(1), Some(b'x' | b'X'));
        let start = if hex { 2 } else { 1 };
        let radix = if hex { 16 } else { 10 };
        let mut end = start;
        let mut value: u32 = 0;
        while let Some(d) = b.get(end).and_then(|&c| char::from(c).to_digit(radix)) {
            value = value.saturating_mul(radix).saturating_add(d).min(0x11_0000);
            end += 1;
        }
        if end == start {
            return None;
        }
        let used = if b.get(end) == Some(&b';') {
            end + 1
        } else {
            end
        };
        return Some((numeric_char(value), used));
    }
    let len = b.iter().take_while(|c| c.is_ascii_alphanumeric()).count();
    let name = &after[..len];
    if len == 0 {
        return None;
    }
    if b.get(len) == Some(&b';') {
        if let Some(c) = legacy_entity(name).or_else(|| semicolon_entity(name)) {
            return Some((c, len + 1));
        }
    }
    if b.get(len) != Some(&b'=') {
        return legacy_entity(name).map(|c| (c, len));
    }
    None
}

/// HTML's numeric reference fix-ups: NUL, surrogates and out-of-range become U+FFFD,
/// 0x80–0x9F are read as windows-1252.
fn numeric_char(value: u32) -> char {
    const C1: [u32; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    let value = match value {
        0x80..=0x9F => C1[(value - 0x80) as usize],
        0 => 0xFFFD,
        v => v,
    };
    char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Names of U+00A0..=U+00FF, in code point order (all are legacy names).
const LATIN1_NAMES: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

/// The legacy names, which HTML also accepts without the trailing `;`.
fn legacy_entity(name: &str) -> Option<char> {
    let c = match name {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "COPY" => '\u{A9}',
        "REG" => '\u{AE}',
        _ => {
            let index = LATIN1_NAMES.iter().position(|n| *n == name)?;
            char::from_u32(0xA0 + index as u32)?
        }
    };
    Some(c)
}

/// Names valid only with `;` that plausibly occur in URLs.
fn semicolon_entity(name: &str) -> Option<char> {
    let c = match name {
        "apos" => '\'',
        "sol" => '/',
        "bsol" => '\\',
        "colon" => ':',
        "semi" => ';',
        "comma" => ',',
        "period" => '.',
        "lowbar" | "UnderBar" => '_',
        "quest" => '?',
        "equals" => '=',
        "num" => '#',
        "percnt" => '%',
        "plus" => '+',
        "excl" => '!',
        "dollar" => '$',
        "commat" => '@',
        "ast" | "midast" => '*',
        "lpar" => '(',
        "rpar" => ')',
        "lsqb" | "lbrack" => '[',
        "rsqb" | "rbrack" => ']',
        "lcub" | "lbrace" => '{',
        "rcub" | "rbrace" => '}',
        "verbar" | "vert" | "VerticalLine" => '|',
        "grave" | "DiacriticalGrave" => '`',
        "Hat" => '^',
        "Tab" => '\t',
        "NewLine" => '\n',
        "ndash" => '\u{2013}',
        "mdash" => '\u{2014}',
        "lsquo" => '\u{2018}',
        "rsquo" => '\u{2019}',
        "ldquo" => '\u{201C}',
        "rdquo" => '\u{201D}',
        "bull" => '\u{2022}',
        "hellip" => '\u{2026}',
        "euro" => '\u{20AC}',
        "trade" => '\u{2122}',
        _ => return None,
    };
    Some(c)
}
