//! The encoding a page is parsed in: the header's charset first, else the document's own.

use std::borrow::Cow;

use encoding_rs::Encoding;
use lol_html::html_content::Element;
use lol_html::AsciiCompatibleEncoding;

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
    /// The header's charset label, cleaned (see [`ascii_compatible`]).
    pub(super) label: Option<String>,
    /// Let the document's own `<meta charset>` choose the encoding (if no label did).
    pub(super) sniff_meta: bool,
}

/// Chooses the encoding: the header's charset (as a label lol_html is then told to read the page
/// in, see [`ascii_compatible`]), else the document's own `<meta charset>`. UTF-16 (lol_html
/// cannot parse it) is transcoded to UTF-8 here.
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

/// A charset label as a header gives it, cleaned: lower case, only `[a-z0-9._:-]`, at most 40 bytes.
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

/// The encoding a charset label names, when lol_html can parse in it (ASCII-compatible, not
/// `replacement`): the lookup lol_html makes of a `<meta charset>` itself.
pub(super) fn ascii_compatible(label: &str) -> Option<AsciiCompatibleEncoding> {
    AsciiCompatibleEncoding::new(Encoding::for_label_no_replacement(label.as_bytes())?)
}

/// Whether a charset label names UTF-8 (any case, ASCII whitespace around it ignored).
pub(super) fn is_utf8_label(label: &str) -> bool {
    Encoding::for_label(label.as_bytes()) == Some(encoding_rs::UTF_8)
}

/// Whether this `<meta>` could make lol_html, following the document's meta charset, read the
/// page as something other than UTF-8: a `charset` attribute naming anything else, or an
/// `http-equiv=content-type` whose content is not plainly `text/html` in UTF-8. Errs towards
/// yes (a yes only costs a second parse for the page text).
pub(super) fn meta_may_name_other_charset(el: &Element<'_, '_>) -> bool {
    let by_charset = el
        .get_attribute("charset")
        .is_some_and(|c| !is_utf8_label(&c));
    let content_type = el
        .get_attribute("http-equiv")
        .is_some_and(|h| h.eq_ignore_ascii_case("content-type"));
    by_charset || (content_type && !plain_utf8_html(el.get_attribute("content").as_deref()))
}

/// `text/html`, alone or with one parameter `charset=` naming UTF-8 (case and whitespace around
/// the parts aside): no reading of it names another charset.
fn plain_utf8_html(content: Option<&str>) -> bool {
    let Some(content) = content else {
        return true;
    };
    let mut parts = content.split(';').map(|p| p.trim_matches(is_ascii_ws));
    let html = parts
        .next()
        .is_some_and(|t| t.eq_ignore_ascii_case("text/html"));
    let charset = match parts.next() {
        None => true,
        Some(param) => param
            .get(..8)
            .filter(|name| name.eq_ignore_ascii_case("charset="))
            .and_then(|_| param.get(8..))
            .is_some_and(is_utf8_label),
    };
    html && charset && parts.next().is_none()
}
