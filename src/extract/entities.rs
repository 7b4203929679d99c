//! Character references, decoded as an HTML parser would: the one decoder for every module
//! that reads HTML (links and `style` here, page text for traps and diff, WACZ page titles).
//!
//! `htmlize` follows the WHATWG algorithm with the whole table of 2,231 names, the windows-1252
//! reading of `&#128;`–`&#159;`, U+FFFD for NUL, surrogates and out-of-range numbers, and the
//! two contexts: in an attribute value a legacy name without `;` stays literal before `=` or an
//! alphanumeric (`?a=1&copy=2` keeps `&copy`), in text it is decoded.

use std::borrow::Cow;

/// An attribute value with its character references decoded (lol_html hands values on raw).
/// Borrows when there is no `&`.
pub(crate) fn decode_entities(s: &str) -> Cow<'_, str> {
    htmlize::unescape_attribute(s)
}

/// Text content (outside attribute values) with its character references decoded. Borrows
/// when there is no `&`.
pub(crate) fn decode_text(s: &str) -> Cow<'_, str> {
    htmlize::unescape(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_decodes_bare_legacy_names_attributes_do_not() {
        assert_eq!(decode_text("?a=1&copy=2"), "?a=1\u{a9}=2");
        assert_eq!(decode_entities("?a=1&copy=2"), "?a=1&copy=2");
        assert_eq!(
            decode_text("Fish &amp; Chips&nbsp;&hellip;"),
            "Fish & Chips\u{a0}\u{2026}"
        );
        assert_eq!(
            decode_text("&#128;&#0;&#x27;&unknown;"),
            "\u{20ac}\u{fffd}'&unknown;"
        );
        assert!(matches!(decode_text("no references"), Cow::Borrowed(_)));
    }
}
