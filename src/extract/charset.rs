//! The encoding a page is parsed in: the header's charset first, else the document's own.

use std::borrow::Cow;

use super::attr::is_ascii_ws;

/// Charset labels that mean UTF-16 (besides those starting with `utf-16`).
pub(super) const UTF16_LABELS: &[&str] = &[
    "unicode",
    "unicodefeff",
    "unicodefffe",
    "ucs-2",
    "csunicode",
    "iso-10646-ucs-2",
];

/// The bytes handed to lol_html and how to tell it their encoding.
pub(super) struct Input<'a> {
    pub(super) bytes: Cow<'a, [u8]>,
    /// Encoding label announced to lol_html through a synthetic leading `<meta charset>`.
    pub(super) label: Option<String>,
    /// Let the document's own `<meta charset>` choose the encoding (if no label did).
    pub(super) sniff_meta: bool,
}

/// Chooses the encoding. lol_html only takes encodings it can name itself and only through
/// its `<meta charset>` handling (its `AsciiCompatibleEncoding` needs the `encoding_rs` crate
/// to build), so the header's charset is fed as a synthetic `<meta charset="LABEL">` before the
/// page: lol_html adopts the first acceptable meta charset and ignores later ones, which gives
/// the header precedence over the document, and falls back to the document's meta when the
/// label is unknown or not ASCII-compatible. UTF-16 (lol_html cannot parse it) is transcoded
/// to UTF-8 here.
pub(super) fn prepare_input<'a>(html: &'a [u8], charset: Option<&str>) -> Input<'a> {
    let forced = |bytes: Cow<'a, [u8]>| Input {
        bytes,
        label: None,
        sniff_meta: false,
    };
    if let Some(rest) = html.strip_prefix(b"\xEF\xBB\xBF") {
        return forced(Cow::Borrowed(rest));
    }
    if let Some(rest) = html.strip_prefix(b"\xFF\xFE") {
        return forced(Cow::Owned(utf16_to_utf8(rest, false)));
    }
    if let Some(rest) = html.strip_prefix(b"\xFE\xFF") {
        return forced(Cow::Owned(utf16_to_utf8(rest, true)));
    }
    let label = charset.and_then(clean_label);
    match label.as_deref() {
        Some("utf-16be" | "unicodefffe") => forced(Cow::Owned(utf16_to_utf8(html, true))),
        Some(
            "utf-16" | "utf-16le" | "unicode" | "unicodefeff" | "ucs-2" | "csunicode"
            | "iso-10646-ucs-2",
        ) => forced(Cow::Owned(utf16_to_utf8(html, false))),
        _ => Input {
            bytes: Cow::Borrowed(html),
            label,
            sniff_meta: true,
        },
    }
}

/// A charset label safe to put into markup: lower case, only `[a-z0-9._:-]`, at most 40 bytes.
pub(super) fn clean_label(charset: &str) -> Option<String> {
    let label = charset
        .trim_matches(|c: char| is_ascii_ws(c) || c == '"' || c == '\'')
        .to_ascii_lowercase();
    let ok = !label.is_empty()
        && label.len() <= 40
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    ok.then_some(label)
}

fn utf16_to_utf8(bytes: &[u8], big_endian: bool) -> Vec<u8> {
    let units = bytes.chunks(2).map(|pair| match pair {
        [a, b] if big_endian => u16::from_be_bytes([*a, *b]),
        [a, b] => u16::from_le_bytes([*a, *b]),
        _ => 0xFFFD, // odd trailing byte
    });
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect::<String>()
        .into_bytes()
}
