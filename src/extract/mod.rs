//! HTML → outlinks and robots directives; X-Robots-Tag parsing; content decoding for extraction.
//!
//! The crawler hands every HTML response body (transfer- and content-decoded, see
//! [`decode_body`]) to [`extract_html`] and the response's `X-Robots-Tag` headers to
//! [`x_robots_tag`]. Both produce [`Directives`]; merged, they decide whether the page is
//! archived ([`Directives::discard_reason`]) and whether its links are queued
//! ([`Directives::follow_links`]).
//!
//! Inline CSS (`<style>` elements and `style="…"` attributes) is handed to [`crate::extract::css`],
//! resolved against the document's base like every other reference.
//!
//! Parsing streams through `lol_html`, which never builds a DOM, so big pages cost linear time
//! and little memory. Attribute values are collected raw during the parse and resolved after it,
//! because a `<base href>` applies to every relative URL of the document, including those that
//! come before it.

pub mod css;

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::io::{Cursor, Read};

use lol_html::html_content::{Element, TextChunk};
use lol_html::{ElementContentHandlers, HtmlRewriter, Selector, Settings};
use url::Url;

/// Heritrix hop types: how a URL was discovered from the page that links to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hop {
    /// A navigational link (`a`, `area`, plain `link`).
    Link,
    /// A resource the page needs to render (images, scripts, stylesheets, frames, …).
    Embed,
    /// A redirect (here: `<meta http-equiv=refresh>`).
    Redirect,
}

impl Hop {
    /// The letter used in crawl.log discovery paths: `L`, `E` or `R`.
    pub fn letter(self) -> char {
        match self {
            Hop::Link => 'L',
            Hop::Embed => 'E',
            Hop::Redirect => 'R',
        }
    }
}

/// One URL found in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outlink {
    /// Absolute http(s) URL, fragment removed.
    pub url: Url,
    pub hop: Hop,
    /// Where it was found, e.g. `"a/@href"`, `"img/@srcset"`, `"meta/@refresh"`.
    pub context: &'static str,
}

/// Robots directives from meta tags and/or X-Robots-Tag headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    pub noindex: bool,
    pub nofollow: bool,
    pub noarchive: bool,
    /// `none` was given (it also sets `noindex` and `nofollow` when parsed).
    pub none: bool,
}

impl Directives {
    /// Union of both sets: a directive given anywhere applies.
    pub fn merge(&mut self, other: Directives) {
        self.noindex |= other.noindex;
        self.nofollow |= other.nofollow;
        self.noarchive |= other.noarchive;
        self.none |= other.none;
    }

    /// Why the page must be discarded: `"none"`, `"noindex"` or `"noarchive"` (in that
    /// priority; the value is the crawl.log annotation), or `None` to keep it.
    pub fn discard_reason(&self) -> Option<&'static str> {
        if self.none {
            Some("none")
        } else if self.noindex {
            Some("noindex")
        } else if self.noarchive {
            Some("noarchive")
        } else {
            None
        }
    }

    /// Links are not followed when `nofollow` or `none` was given.
    pub fn follow_links(&self) -> bool {
        !(self.nofollow || self.none)
    }

    /// Applies one directive token (case-insensitive); `all`, `index`, `follow` and unknown
    /// tokens change nothing.
    fn apply_token(&mut self, token: &str) {
        if token.eq_ignore_ascii_case("noindex") {
            self.noindex = true;
        } else if token.eq_ignore_ascii_case("nofollow") {
            self.nofollow = true;
        } else if token.eq_ignore_ascii_case("noarchive") {
            self.noarchive = true;
        } else if token.eq_ignore_ascii_case("none") {
            self.none = true;
            self.noindex = true;
            self.nofollow = true;
        }
    }

    /// Applies every token of a directive list. Commas are the separator; ASCII whitespace is
    /// accepted too, because "noindex nofollow" is a common mistake whose intent is plain.
    fn apply_list(&mut self, list: &str) {
        for token in list.split(|c: char| c == ',' || is_ascii_ws(c)) {
            if !token.is_empty() {
                self.apply_token(token);
            }
        }
    }
}

/// What [`extract_html`] found.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Deduplicated outlinks in document order (first occurrence wins).
    pub links: Vec<Outlink>,
    /// Directives from `<meta name="robots">` and `<meta name="AGENT">`.
    pub directives: Directives,
    /// Link values left out once the page reached its link limit (or too long to be a URL
    /// worth fetching); counted, never kept.
    pub left_out: usize,
}

/// Attribute values longer than this are not taken as links (a URL over 2,000 characters is
/// a trap anyway); holding them would let one page pin megabytes per link.
pub const MAX_LINK_VALUE: usize = 8 * 1024;

/// Text of `<noscript>` elements kept for their links, per page.
const MAX_NOSCRIPT_TEXT: usize = 1 << 20;

/// Inline CSS (`<style>` text and `style` attributes) kept for its links, per page; past it
/// each piece is counted as left out.
const MAX_INLINE_CSS: usize = 2 << 20;

/// Links and meta robots directives of an HTML page (already transfer- and content-decoded).
///
/// `charset` is the Content-Type header's charset, if any. It wins over the document's own
/// `<meta charset>`; when it is absent or not an ASCII-compatible encoding lol_html knows, the
/// first `<meta charset>`/`<meta http-equiv=content-type>` of the document decides, else UTF-8.
/// A byte order mark beats both (UTF-16 pages are transcoded first).
/// `agent_token` is the crawler's robots product token (e.g. "archiver").
///
/// Links inside `<noscript>` are extracted too (lol_html, like a browser with scripts on,
/// reads them as text, yet they are often the only plain `<img>` of a lazy-loading page);
/// `<base>` and meta robots inside `<noscript>` are not honoured.
///
/// Empty and unparsable URL values are skipped. Non-ASCII characters are percent-encoded as
/// UTF-8 everywhere, also in the query (a browser would use the page's encoding for the
/// query of a non-UTF-8 page; that needs `encoding_rs` as a direct dependency).
///
/// Never fails: broken markup or a parser error yields whatever was collected so far.
pub fn extract_html(
    html: &[u8],
    charset: Option<&str>,
    page_url: &Url,
    agent_token: &str,
) -> Extracted {
    extract_html_limited(
        std::io::Cursor::new(html),
        charset,
        page_url,
        agent_token,
        usize::MAX,
    )
}

/// [`extract_html`] over a stream, keeping at most `max_links` links: memory stays bounded
/// whatever the page (the body is parsed in pieces as it is read; at most `max_links`
/// distinct link values are held, further ones are only counted in `left_out`). Only a
/// UTF-16 page, which must be transcoded first, is read whole.
pub fn extract_html_limited(
    mut body: impl Read,
    charset: Option<&str>,
    page_url: &Url,
    agent_token: &str,
    max_links: usize,
) -> Extracted {
    let scope = Scope::Document { agent_token };
    let head = read_head(&mut body, 3).unwrap_or_default();
    let utf16_bom = head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF");
    let utf16_label = charset
        .and_then(clean_label)
        .is_some_and(|l| l.starts_with("utf-16") || UTF16_LABELS.contains(&l.as_str()));
    let collector = if utf16_bom || utf16_label {
        let mut all = head;
        if let Err(e) = body.read_to_end(&mut all) {
            tracing::debug!("reading a UTF-16 page for links stopped: {e}");
        }
        let input = prepare_input(&all, charset);
        let reader = Cursor::new(&input.bytes[..]);
        collect_from(
            reader,
            input.label.as_deref(),
            input.sniff_meta,
            scope,
            max_links,
        )
    } else if let Some(rest) = head.strip_prefix(b"\xEF\xBB\xBF") {
        let reader = Cursor::new(rest.to_vec()).chain(body);
        collect_from(reader, None, false, scope, max_links)
    } else {
        let label = charset.and_then(clean_label);
        let reader = Cursor::new(head).chain(body);
        collect_from(reader, label.as_deref(), true, scope, max_links)
    };
    let base = document_base(page_url, collector.base_href.as_deref());
    let mut links = LinkList {
        limit: max_links,
        ..LinkList::default()
    };
    links.add_all(&collector, &base);
    Extracted {
        links: links.links,
        directives: collector.directives,
        left_out: collector.left_out + links.left_out,
    }
}

/// Charset labels that mean UTF-16 (besides those starting with `utf-16`).
const UTF16_LABELS: &[&str] = &[
    "unicode",
    "unicodefeff",
    "unicodefffe",
    "ucs-2",
    "csunicode",
    "iso-10646-ucs-2",
];

/// X-Robots-Tag header values (each header occurrence one entry) → directives for `agent_token`.
///
/// A value is a comma-separated list of directives. An item may start with `AGENT:`; from there
/// to the next such prefix (or the end of that header value) the directives apply only to
/// AGENT, and we keep them only when AGENT equals `agent_token` (case-insensitive). Items before
/// any prefix apply to every crawler. So `"googlebot: noindex, archiver: nofollow"` gives us
/// `nofollow` only, and `"otherbot: noindex, nofollow"` gives us nothing.
///
/// A prefix is one token before the item's first colon that looks like a robots product token
/// (starts with an ASCII letter; letters, digits, `-`, `_`) and is not a directive name, so
/// `unavailable_after: 25 Jun 2030 15:00:00 PST` and `max-snippet: 20` are directives (which we
/// ignore), not agents.
pub fn x_robots_tag(values: &[&str], agent_token: &str) -> Directives {
    let mut directives = Directives::default();
    for value in values {
        let mut applies = true;
        for item in value.split(',') {
            let mut item = item.trim_matches(is_ascii_ws);
            if let Some((head, rest)) = item.split_once(':') {
                let head = head.trim_matches(is_ascii_ws);
                if is_agent_prefix(head) {
                    applies = head.eq_ignore_ascii_case(agent_token.trim());
                    item = rest;
                }
            }
            if applies {
                directives.apply_list(item);
            }
        }
    }
    directives
}

/// Directive names that may be followed by a colon and so must not be read as an agent prefix.
const DIRECTIVE_NAMES: &[&str] = &[
    "all",
    "index",
    "follow",
    "noindex",
    "nofollow",
    "none",
    "noarchive",
    "nocache",
    "nosnippet",
    "notranslate",
    "noimageindex",
    "indexifembedded",
    "max-snippet",
    "max-image-preview",
    "max-video-preview",
    "unavailable_after",
    "noodp",
    "noydir",
];

fn is_agent_prefix(head: &str) -> bool {
    let mut chars = head.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    starts_with_letter
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !DIRECTIVE_NAMES.iter().any(|d| head.eq_ignore_ascii_case(d))
}

// ---------------------------------------------------------------------------------------------
// Content decoding
// ---------------------------------------------------------------------------------------------

/// A body decoded by [`decode_body`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Decoded bytes: at most `cap` of them.
    pub bytes: Vec<u8>,
    /// More decoded data existed past `cap` (a large page or a decompression bomb).
    pub capped: bool,
    /// Corrupt or unsupported coding; `bytes` holds what was decoded before the error.
    pub error: Option<String>,
}

/// Content-Encoding decoding, for link extraction only (the WARC keeps the bytes as received).
///
/// Handles identity, gzip, x-gzip and deflate (zlib-wrapped or raw, told apart by the zlib
/// header as browsers do), and lists such as `"gzip, deflate"` (undone last first). Reads from
/// `body` and returns at most `cap` decoded bytes: a decompression bomb stops at the cap with
/// `capped` set. Corrupt data (including a truncated stream) or an unsupported coding (br,
/// zstd, compress, …) sets `error` and keeps what was decoded before it. An empty body decodes
/// to nothing without error whatever the coding (servers send that for 204/304 responses).
pub fn decode_body(content_encoding: Option<&str>, body: impl Read, cap: usize) -> Decoded {
    match decoding_reader(content_encoding, body) {
        Ok(Some(reader)) => read_capped(reader, cap),
        Ok(None) => Decoded::default(),
        Err(DecodeError::Unsupported(error)) => Decoded {
            error: Some(error),
            ..Decoded::default()
        },
        Err(DecodeError::Io(e)) => decode_error(Vec::new(), &e),
    }
}

/// Why [`decoding_reader`] could not start.
#[derive(Debug)]
pub enum DecodeError {
    /// A coding we do not undo (br, zstd, compress, …).
    Unsupported(String),
    Io(std::io::Error),
}

/// A reader of the decoded body, for streaming (see [`decode_body`] for the codings); `None`
/// for an empty body. Read errors later on mean corrupt data.
pub fn decoding_reader<'a>(
    content_encoding: Option<&str>,
    body: impl Read + 'a,
) -> Result<Option<Box<dyn Read + 'a>>, DecodeError> {
    let mut codings = Vec::new();
    for coding in content_encoding.unwrap_or("").split(',') {
        let coding = coding.trim_matches(is_ascii_ws).to_ascii_lowercase();
        match coding.as_str() {
            "" | "identity" => {}
            "gzip" | "x-gzip" | "deflate" => codings.push(coding),
            _ => {
                return Err(DecodeError::Unsupported(format!(
                    "unsupported content-encoding {coding:?}"
                )))
            }
        }
    }
    let mut body = body;
    let head = read_head(&mut body, 1).map_err(DecodeError::Io)?;
    if head.is_empty() {
        return Ok(None);
    }
    let mut reader: Box<dyn Read + 'a> = Box::new(Cursor::new(head).chain(body));
    for coding in codings.iter().rev() {
        reader = match coding.as_str() {
            "deflate" => deflate_reader(reader).map_err(DecodeError::Io)?,
            _ => Box::new(flate2::read::MultiGzDecoder::new(reader)),
        };
    }
    Ok(Some(reader))
}

fn decode_error(bytes: Vec<u8>, e: &std::io::Error) -> Decoded {
    Decoded {
        bytes,
        capped: false,
        error: Some(format!("content decoding failed: {e}")),
    }
}

/// Reads up to `n` bytes (fewer only at end of stream).
fn read_head(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// "deflate" is meant to be zlib (RFC 1950) but many servers send raw deflate (RFC 1951):
/// look at the first two bytes for a valid zlib header to choose.
fn deflate_reader<'a>(mut r: Box<dyn Read + 'a>) -> std::io::Result<Box<dyn Read + 'a>> {
    let head = read_head(&mut r, 2)?;
    let zlib = head.len() == 2
        && head[0] & 0x0f == 8
        && head[0] >> 4 <= 7
        && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
    let rejoined = Cursor::new(head).chain(r);
    Ok(if zlib {
        Box::new(flate2::read::ZlibDecoder::new(rejoined))
    } else {
        Box::new(flate2::read::DeflateDecoder::new(rejoined))
    })
}

fn read_capped(mut r: impl Read, cap: usize) -> Decoded {
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX);
    if let Err(e) = r.by_ref().take(limit).read_to_end(&mut bytes) {
        return decode_error(bytes, &e);
    }
    if bytes.len() < cap {
        return Decoded {
            bytes,
            ..Decoded::default()
        };
    }
    // Exactly `cap` bytes so far: one more byte tells a page that just fits from a bigger one.
    let mut probe = [0u8; 1];
    loop {
        return match r.read(&mut probe) {
            Ok(0) => Decoded {
                bytes,
                ..Decoded::default()
            },
            Ok(_) => Decoded {
                bytes,
                capped: true,
                error: None,
            },
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => decode_error(bytes, &e),
        };
    }
}

// ---------------------------------------------------------------------------------------------
// Input encoding
// ---------------------------------------------------------------------------------------------

/// The bytes handed to lol_html and how to tell it their encoding.
struct Input<'a> {
    bytes: Cow<'a, [u8]>,
    /// Encoding label announced to lol_html through a synthetic leading `<meta charset>`.
    label: Option<String>,
    /// Let the document's own `<meta charset>` choose the encoding (if no label did).
    sniff_meta: bool,
}

/// Chooses the encoding. lol_html only takes encodings it can name itself and only through
/// its `<meta charset>` handling (its `AsciiCompatibleEncoding` needs the `encoding_rs` crate
/// to build), so the header's charset is fed as a synthetic `<meta charset="LABEL">` before the
/// page: lol_html adopts the first acceptable meta charset and ignores later ones, which gives
/// the header precedence over the document, and falls back to the document's meta when the
/// label is unknown or not ASCII-compatible. UTF-16 (lol_html cannot parse it) is transcoded
/// to UTF-8 here.
fn prepare_input<'a>(html: &'a [u8], charset: Option<&str>) -> Input<'a> {
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
fn clean_label(charset: &str) -> Option<String> {
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

// ---------------------------------------------------------------------------------------------
// Collecting raw attribute values
// ---------------------------------------------------------------------------------------------

/// An attribute that holds URLs and the element it belongs to.
struct AttrRule {
    selector: &'static str,
    attr: &'static str,
    hop: Hop,
    context: &'static str,
    srcset: bool,
}

const fn rule(
    selector: &'static str,
    attr: &'static str,
    hop: Hop,
    context: &'static str,
) -> AttrRule {
    AttrRule {
        selector,
        attr,
        hop,
        context,
        srcset: false,
    }
}

const fn srcset_rule(selector: &'static str, context: &'static str) -> AttrRule {
    AttrRule {
        selector,
        attr: "srcset",
        hop: Hop::Embed,
        context,
        srcset: true,
    }
}

/// Attributes taken as they are; `link`, `input`, `meta` and `base` need a look at other
/// attributes and have their own handlers.
const ATTR_RULES: &[AttrRule] = &[
    rule("a[href]", "href", Hop::Link, "a/@href"),
    rule("area[href]", "href", Hop::Link, "area/@href"),
    rule("img[src]", "src", Hop::Embed, "img/@src"),
    srcset_rule("img[srcset]", "img/@srcset"),
    rule("source[src]", "src", Hop::Embed, "source/@src"),
    srcset_rule("source[srcset]", "source/@srcset"),
    rule("script[src]", "src", Hop::Embed, "script/@src"),
    rule("iframe[src]", "src", Hop::Embed, "iframe/@src"),
    rule("frame[src]", "src", Hop::Embed, "frame/@src"),
    rule("embed[src]", "src", Hop::Embed, "embed/@src"),
    rule("object[data]", "data", Hop::Embed, "object/@data"),
    rule("video[src]", "src", Hop::Embed, "video/@src"),
    rule("video[poster]", "poster", Hop::Embed, "video/@poster"),
    rule("audio[src]", "src", Hop::Embed, "audio/@src"),
    rule("audio[poster]", "poster", Hop::Embed, "audio/@poster"),
    rule("track[src]", "src", Hop::Embed, "track/@src"),
    rule(
        "body[background]",
        "background",
        Hop::Embed,
        "body/@background",
    ),
    rule(
        "table[background]",
        "background",
        Hop::Embed,
        "table/@background",
    ),
    rule("td[background]", "background", Hop::Embed, "td/@background"),
];

/// `link` relations whose target the page needs to render.
const EMBED_RELS: &[&str] = &[
    "stylesheet",
    "icon",
    "preload",
    "modulepreload",
    "manifest",
    "apple-touch-icon",
    "apple-touch-icon-precomposed",
];

/// A URL-bearing attribute value, entity-decoded and trimmed, not yet resolved.
enum Raw {
    Url {
        value: String,
        hop: Hop,
        context: &'static str,
    },
    Srcset {
        value: String,
        context: &'static str,
    },
    /// The n-th `<noscript>`'s text, parsed after the document in this place.
    Noscript(usize),
    /// CSS: a `style="…"` attribute's declarations (decoded), or the n-th `<style>` element.
    StyleAttr(String),
    StyleElement(usize),
}

#[derive(Default)]
struct Collector {
    raws: Vec<Raw>,
    /// href of the first `<base>` that has one.
    base_href: Option<String>,
    directives: Directives,
    noscripts: Vec<String>,
    /// Text of each `<style>` element, in document order.
    styles: Vec<String>,
    /// Bytes held in `noscripts`.
    noscript_bytes: usize,
    /// Most distinct link values kept.
    limit: usize,
    /// The distinct values kept so far (a page repeating one link a million times holds it
    /// once).
    values: HashSet<String>,
    /// Values not kept: past the limit, or too long.
    left_out: usize,
    /// Bytes of inline CSS (`<style>` text, `style` attributes) held.
    css_bytes: usize,
}

impl Collector {
    fn with_limit(limit: usize) -> Collector {
        Collector {
            limit,
            ..Collector::default()
        }
    }

    /// True when a value is to be kept (it is then remembered).
    fn admit(&mut self, value: &str) -> bool {
        if value.is_empty() || self.values.contains(value) {
            return false;
        }
        if value.len() > MAX_LINK_VALUE || self.values.len() >= self.limit {
            self.left_out += 1;
            return false;
        }
        self.values.insert(value.to_string());
        true
    }

    fn push(&mut self, value: &str, hop: Hop, context: &'static str) {
        let value = clean_attr(value);
        if self.admit(&value) {
            self.raws.push(Raw::Url {
                value: value.into_owned(),
                hop,
                context,
            });
        }
    }

    /// True while the page's inline CSS stays within `MAX_INLINE_CSS` (then `len` is counted).
    fn admit_css(&mut self, len: usize) -> bool {
        if self.css_bytes + len > MAX_INLINE_CSS {
            self.left_out += 1;
            return false;
        }
        self.css_bytes += len;
        true
    }

    fn push_srcset(&mut self, value: &str, context: &'static str) {
        let value = clean_attr(value);
        if self.admit(&value) {
            self.raws.push(Raw::Srcset {
                value: value.into_owned(),
                context,
            });
        }
    }

    /// A new `<noscript>`; past `SEPARATE_NOSCRIPTS` they share one text (see `add_all`).
    fn open_noscript(&mut self) {
        if self.noscripts.len() <= SEPARATE_NOSCRIPTS {
            let index = self.noscripts.len();
            self.noscripts.push(String::new());
            self.raws.push(Raw::Noscript(index));
        }
    }

    fn noscript_text(&mut self, text: &str) {
        if self.noscript_bytes + text.len() > MAX_NOSCRIPT_TEXT {
            return;
        }
        if let Some(current) = self.noscripts.last_mut() {
            current.push_str(text);
            self.noscript_bytes += text.len();
        }
    }
}

/// What a parse may look at: the whole document, or the text of a `<noscript>` (links only).
#[derive(Clone, Copy)]
enum Scope<'a> {
    Document { agent_token: &'a str },
    Noscript,
}

/// Runs lol_html over `input`; stops quietly at the first parser error.
fn collect(
    input: &[u8],
    label: Option<&str>,
    sniff_meta: bool,
    scope: Scope<'_>,
    limit: usize,
) -> Collector {
    collect_from(Cursor::new(input), label, sniff_meta, scope, limit)
}

/// Runs lol_html over a stream, 64 KiB at a time; stops quietly at the first parser or read
/// error (what was collected before it stands).
fn collect_from(
    mut input: impl Read,
    label: Option<&str>,
    sniff_meta: bool,
    scope: Scope<'_>,
    limit: usize,
) -> Collector {
    let state = RefCell::new(Collector::with_limit(limit));
    {
        let settings = Settings {
            element_content_handlers: handlers(&state, scope),
            strict: false,
            adjust_charset_on_meta_tag: sniff_meta,
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let mut ok = match label {
            Some(label) => rewriter
                .write(format!("<meta charset=\"{label}\">").as_bytes())
                .is_ok(),
            None => true,
        };
        let mut buf = vec![0u8; 64 * 1024];
        while ok {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break, // a corrupt compressed body: keep what was parsed
            };
            ok = rewriter.write(&buf[..n]).is_ok();
        }
        // After an error lol_html must not be called again.
        if ok {
            let _ = rewriter.end();
        }
    }
    state.into_inner()
}

type Handlers<'h> = Vec<(Cow<'static, Selector>, ElementContentHandlers<'h>)>;

fn handlers<'h>(state: &'h RefCell<Collector>, scope: Scope<'h>) -> Handlers<'h> {
    let mut list: Handlers<'h> = Vec::new();
    let mut add = |selector: &str, handler: ElementContentHandlers<'h>| {
        // The selectors are constants known to parse; a failure would only lose that rule.
        if let Ok(selector) = selector.parse::<Selector>() {
            list.push((Cow::Owned(selector), handler));
        }
    };
    for rule in ATTR_RULES {
        add(
            rule.selector,
            ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
                if let Some(value) = el.get_attribute(rule.attr) {
                    let mut st = state.borrow_mut();
                    if rule.srcset {
                        st.push_srcset(&value, rule.context);
                    } else {
                        st.push(&value, rule.hop, rule.context);
                    }
                }
                Ok(())
            }),
        );
    }
    add(
        "link[href]",
        ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
            if let Some(href) = el.get_attribute("href") {
                let rel = el.get_attribute("rel").unwrap_or_default();
                let embed = rel
                    .split(is_ascii_ws)
                    .any(|r| EMBED_RELS.iter().any(|e| r.eq_ignore_ascii_case(e)));
                let hop = if embed { Hop::Embed } else { Hop::Link };
                state.borrow_mut().push(&href, hop, "link/@href");
            }
            Ok(())
        }),
    );
    add(
        "input[src]",
        ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
            let is_image = el
                .get_attribute("type")
                .is_some_and(|t| clean_attr(&t).eq_ignore_ascii_case("image"));
            if let (true, Some(src)) = (is_image, el.get_attribute("src")) {
                state.borrow_mut().push(&src, Hop::Embed, "input/@src");
            }
            Ok(())
        }),
    );
    add(
        "image",
        ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
            // SVG `<image>`: SVG 2 `href`, else SVG 1.1 `xlink:href`.
            let href = el
                .get_attribute("href")
                .or_else(|| el.get_attribute("xlink:href"));
            if let Some(href) = href {
                state.borrow_mut().push(&href, Hop::Embed, "image/@href");
            }
            Ok(())
        }),
    );
    add(
        "[style]",
        ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
            if let Some(style) = el.get_attribute("style") {
                let css = decode_entities(&style).into_owned();
                // Every reference is a function (`url(…)`, `image-set(…)`): no `(`, nothing to parse.
                let mut st = state.borrow_mut();
                if css.contains('(') && st.admit_css(css.len()) {
                    st.raws.push(Raw::StyleAttr(css));
                }
            }
            Ok(())
        }),
    );
    add(
        "style",
        ElementContentHandlers::default()
            .element(move |_: &mut Element<'_, '_>| {
                let mut st = state.borrow_mut();
                let index = st.styles.len();
                st.styles.push(String::new());
                st.raws.push(Raw::StyleElement(index));
                Ok(())
            })
            .text(move |text: &mut TextChunk<'_>| {
                let mut st = state.borrow_mut();
                if st.admit_css(text.as_str().len()) {
                    if let Some(current) = st.styles.last_mut() {
                        current.push_str(text.as_str());
                    }
                }
                Ok(())
            }),
    );
    add(
        "meta[content]",
        ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
            on_meta(el, &mut state.borrow_mut(), scope);
            Ok(())
        }),
    );
    if let Scope::Document { .. } = scope {
        add(
            "base[href]",
            ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
                let mut st = state.borrow_mut();
                if st.base_href.is_none() {
                    st.base_href = el
                        .get_attribute("href")
                        .map(|h| clean_attr(&h).into_owned());
                }
                Ok(())
            }),
        );
        add(
            "noscript",
            ElementContentHandlers::default()
                .element(move |_: &mut Element<'_, '_>| {
                    state.borrow_mut().open_noscript();
                    Ok(())
                })
                .text(move |text: &mut TextChunk<'_>| {
                    state.borrow_mut().noscript_text(text.as_str());
                    Ok(())
                }),
        );
    }
    list
}

/// `<meta http-equiv=refresh>` anywhere; `<meta name=robots|AGENT>` in the document only.
fn on_meta(el: &Element<'_, '_>, st: &mut Collector, scope: Scope<'_>) {
    let Some(content) = el.get_attribute("content") else {
        return;
    };
    let content = decode_entities(&content);
    if let Some(http_equiv) = el.get_attribute("http-equiv") {
        if clean_attr(&http_equiv).eq_ignore_ascii_case("refresh") {
            if let Some(target) = refresh_url(&content) {
                st.push(target, Hop::Redirect, "meta/@refresh");
            }
        }
    }
    if let (Scope::Document { agent_token }, Some(name)) = (scope, el.get_attribute("name")) {
        let name = clean_attr(&name);
        let agent_token = agent_token.trim();
        if name.eq_ignore_ascii_case("robots")
            || (!agent_token.is_empty() && name.eq_ignore_ascii_case(agent_token))
        {
            st.directives.apply_list(&content);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resolving
// ---------------------------------------------------------------------------------------------

/// The document's base URL: the first `<base href>` resolved against the page URL, unless it
/// does not parse or is not http(s) (then the page URL, as a browser falls back to it).
fn document_base(page_url: &Url, base_href: Option<&str>) -> Url {
    base_href
        .and_then(|href| page_url.join(href).ok())
        .filter(is_http)
        .unwrap_or_else(|| page_url.clone())
}

fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// Each `<noscript>` is parsed on its own (an unclosed tag in one must not hide the next) up
/// to this many; the rest are parsed together in one go, because setting up a parser costs
/// about as much as parsing a few kilobytes and a page could hold a million noscripts.
const SEPARATE_NOSCRIPTS: usize = 256;

/// Resolved, filtered, deduplicated outlinks.
#[derive(Default)]
struct LinkList {
    links: Vec<Outlink>,
    seen: HashSet<Url>,
    /// Most links kept.
    limit: usize,
    /// Distinct links found past the limit.
    left_out: usize,
}

impl LinkList {
    fn add_all(&mut self, collector: &Collector, base: &Url) {
        for raw in &collector.raws {
            match raw {
                Raw::Url {
                    value,
                    hop,
                    context,
                } => self.add(base, value, *hop, context),
                Raw::Srcset { value, context } => {
                    for candidate in srcset_urls(value) {
                        self.add(base, candidate, Hop::Embed, context);
                    }
                }
                Raw::StyleAttr(css) => self.add_css(css, base),
                Raw::StyleElement(index) => {
                    if let Some(css) = collector.styles.get(*index) {
                        self.add_css(css, base);
                    }
                }
                Raw::Noscript(index) => {
                    let all = &collector.noscripts;
                    let text: Option<Cow<'_, str>> = match index.cmp(&SEPARATE_NOSCRIPTS) {
                        Ordering::Less => all.get(*index).map(|t| Cow::Borrowed(t.as_str())),
                        Ordering::Equal => all.get(*index..).map(|rest| Cow::Owned(rest.concat())),
                        Ordering::Greater => None,
                    };
                    if let Some(text) = text.filter(|t| t.contains('<')) {
                        let room = self.limit.saturating_sub(self.links.len());
                        let inner = collect(text.as_bytes(), None, false, Scope::Noscript, room);
                        self.left_out += inner.left_out;
                        self.add_all(&inner, base);
                    }
                }
            }
        }
    }

    /// Adds what inline CSS references (resolved against the document's base, as browsers do).
    fn add_css(&mut self, css: &str, base: &Url) {
        if self.links.len() >= self.limit {
            self.left_out += 1;
            return;
        }
        crate::extract::css::add_links(css, base, &mut self.links, &mut self.seen);
        if self.links.len() > self.limit {
            self.left_out += self.links.len() - self.limit;
            self.links.truncate(self.limit);
        }
    }

    /// Adds one URL: resolved against `base`, fragment dropped, http(s) only, first wins.
    fn add(&mut self, base: &Url, value: &str, hop: Hop, context: &'static str) {
        if value.is_empty() {
            return;
        }
        let Ok(mut url) = base.join(value) else {
            return;
        };
        if !is_http(&url) {
            return;
        }
        url.set_fragment(None);
        if self.seen.contains(&url) {
            return;
        }
        if self.links.len() >= self.limit {
            self.left_out += 1;
            return;
        }
        self.seen.insert(url.clone());
        self.links.push(Outlink { url, hop, context });
    }
}

// ---------------------------------------------------------------------------------------------
// Attribute value micro-parsers
// ---------------------------------------------------------------------------------------------

/// HTML's "ASCII whitespace": tab, LF, FF, CR, space.
fn is_ascii_ws(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// An attribute value as the HTML parser would give it (character references decoded),
/// stripped of leading and trailing ASCII whitespace as URL-valued attributes are.
fn clean_attr(raw: &str) -> Cow<'_, str> {
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
fn srcset_urls(srcset: &str) -> Vec<&str> {
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
fn refresh_url(content: &str) -> Option<&str> {
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

/// Decodes character references as HTML does in attribute values (lol_html leaves them).
///
/// Numeric references are complete. Named ones cover the 106 legacy names that may omit the
/// `;` (Latin-1 letters and signs, `amp`, `lt`, `gt`, `quot`, …), applying the attribute rule
/// that keeps `&copy=2` literal when the `;` is missing and `=` or an alphanumeric follows, plus
/// the ASCII punctuation names and a few typographic ones. Any other name stays literal: the
/// full table (over 2,000 names) would be dead weight for URLs.
fn decode_entities(s: &str) -> Cow<'_, str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const AGENT: &str = "archiver";

    fn page() -> Url {
        Url::parse("http://example.com/dir/page.html").unwrap()
    }

    fn extract(html: &str) -> Extracted {
        extract_html(html.as_bytes(), None, &page(), AGENT)
    }

    fn urls(html: &str) -> Vec<String> {
        extract(html)
            .links
            .into_iter()
            .map(|l| l.url.to_string())
            .collect()
    }

    fn triples(html: &str) -> Vec<(String, char, &'static str)> {
        extract(html)
            .links
            .into_iter()
            .map(|l| (l.url.to_string(), l.hop.letter(), l.context))
            .collect()
    }

    fn t(url: &str, hop: char, context: &'static str) -> (String, char, &'static str) {
        (url.to_string(), hop, context)
    }

    #[test]
    fn hop_letters() {
        assert_eq!(Hop::Link.letter(), 'L');
        assert_eq!(Hop::Embed.letter(), 'E');
        assert_eq!(Hop::Redirect.letter(), 'R');
    }

    #[test]
    fn every_element_and_attribute() {
        let html = r#"<html><body background="bg.png">
            <a href="a.html">a</a>
            <map><area href="area.html"></map>
            <img src="img.png" srcset="img2.png 2x">
            <picture><source src="s.webm" srcset="s1.jpg 1x, s2.jpg 2x"></picture>
            <script src="app.js"></script>
            <iframe src="frame1.html"></iframe>
            <frameset><frame src="frame2.html"></frameset>
            <embed src="movie.swf">
            <object data="obj.svg"></object>
            <video src="v.mp4" poster="poster.jpg"></video>
            <audio src="a.mp3" poster="apost.jpg"></audio>
            <input type="IMAGE" src="button.png">
            <input type="text" src="not-an-image.png">
            <table background="table.png"><tr><td background="td.png">x</td></tr></table>
            </body></html>"#;
        let b = "http://example.com/dir/";
        assert_eq!(
            triples(html),
            vec![
                t(&format!("{b}bg.png"), 'E', "body/@background"),
                t(&format!("{b}a.html"), 'L', "a/@href"),
                t(&format!("{b}area.html"), 'L', "area/@href"),
                t(&format!("{b}img.png"), 'E', "img/@src"),
                t(&format!("{b}img2.png"), 'E', "img/@srcset"),
                t(&format!("{b}s.webm"), 'E', "source/@src"),
                t(&format!("{b}s1.jpg"), 'E', "source/@srcset"),
                t(&format!("{b}s2.jpg"), 'E', "source/@srcset"),
                t(&format!("{b}app.js"), 'E', "script/@src"),
                t(&format!("{b}frame1.html"), 'E', "iframe/@src"),
                t(&format!("{b}frame2.html"), 'E', "frame/@src"),
                t(&format!("{b}movie.swf"), 'E', "embed/@src"),
                t(&format!("{b}obj.svg"), 'E', "object/@data"),
                t(&format!("{b}v.mp4"), 'E', "video/@src"),
                t(&format!("{b}poster.jpg"), 'E', "video/@poster"),
                t(&format!("{b}a.mp3"), 'E', "audio/@src"),
                t(&format!("{b}apost.jpg"), 'E', "audio/@poster"),
                t(&format!("{b}button.png"), 'E', "input/@src"),
                t(&format!("{b}table.png"), 'E', "table/@background"),
                t(&format!("{b}td.png"), 'E', "td/@background"),
            ]
        );
    }

    #[test]
    fn requisites_in_tracks_svg_and_styles() {
        let html = r#"<html><head>
            <style>@import "imp.css"; /* url(no.png) */ body { background: url('../up.png') }</style>
            <base href="/base/">
            </head><body>
            <video><track src="subs.vtt"></video>
            <svg><image href="svg2.png"/><image xlink:href="svg1.png"/></svg>
            <div style="background: url(&quot;attr.png&quot;) no-repeat">x</div>
            <p style="color: red">no url</p>
            <span style="background-image: image-set('x1.png' 1x, 'x2.png' 2x)">y</span>
            <img src="up.png">
            </body></html>"#;
        let b = "http://example.com/";
        assert_eq!(
            triples(html),
            vec![
                t(&format!("{b}base/imp.css"), 'E', "css/@import"),
                t(&format!("{b}up.png"), 'E', "css/url()"),
                t(&format!("{b}base/subs.vtt"), 'E', "track/@src"),
                t(&format!("{b}base/svg2.png"), 'E', "image/@href"),
                t(&format!("{b}base/svg1.png"), 'E', "image/@href"),
                t(&format!("{b}base/attr.png"), 'E', "css/url()"),
                t(&format!("{b}base/x1.png"), 'E', "css/image-set()"),
                t(&format!("{b}base/x2.png"), 'E', "css/image-set()"),
                t(&format!("{b}base/up.png"), 'E', "img/@src"),
            ]
        );
    }

    #[test]
    fn tag_and_attribute_names_any_case() {
        let html = r#"<A HREF="up.html">x</A><IMG SrC="i.png"><META HTTP-EQUIV="REFRESH" CONTENT="0;URL=r">
            <Meta Name="ROBOTS" Content="NOARCHIVE">"#;
        let got = extract(html);
        let got_triples: Vec<_> = got
            .links
            .iter()
            .map(|l| (l.url.path().to_string(), l.hop.letter(), l.context))
            .collect();
        assert_eq!(
            got_triples,
            vec![
                ("/dir/up.html".to_string(), 'L', "a/@href"),
                ("/dir/i.png".to_string(), 'E', "img/@src"),
                ("/dir/r".to_string(), 'R', "meta/@refresh"),
            ]
        );
        assert_eq!(got.directives.discard_reason(), Some("noarchive"));
    }

    #[test]
    fn link_rel_decides_embed_or_link() {
        let html = r#"
            <link rel="stylesheet" href="/s.css">
            <link rel="shortcut icon" href="/favicon.ico">
            <link rel="PRELOAD" href="/font.woff2" as="font">
            <link rel="modulepreload" href="/m.js">
            <link rel="manifest" href="/app.webmanifest">
            <link rel="apple-touch-icon" href="/touch.png">
            <link rel="alternate" href="/feed.xml">
            <link rel="canonical" href="/canonical">
            <link href="/norel">"#;
        assert_eq!(
            triples(html),
            vec![
                t("http://example.com/s.css", 'E', "link/@href"),
                t("http://example.com/favicon.ico", 'E', "link/@href"),
                t("http://example.com/font.woff2", 'E', "link/@href"),
                t("http://example.com/m.js", 'E', "link/@href"),
                t("http://example.com/app.webmanifest", 'E', "link/@href"),
                t("http://example.com/touch.png", 'E', "link/@href"),
                t("http://example.com/feed.xml", 'L', "link/@href"),
                t("http://example.com/canonical", 'L', "link/@href"),
                t("http://example.com/norel", 'L', "link/@href"),
            ]
        );
    }

    #[test]
    fn srcset_commas_and_descriptors() {
        assert_eq!(
            srcset_urls("a.jpg 1x, b.jpg 2x"),
            vec!["a.jpg", "b.jpg"],
            "plain list"
        );
        assert_eq!(
            srcset_urls(" a,b.jpg 100w,c,d.jpg 200w "),
            vec!["a,b.jpg", "c,d.jpg"],
            "commas inside URLs"
        );
        assert_eq!(srcset_urls("a.jpg,b.jpg"), vec!["a.jpg,b.jpg"]);
        assert_eq!(srcset_urls("a.jpg, b.jpg"), vec!["a.jpg", "b.jpg"]);
        assert_eq!(srcset_urls("a.jpg,, ,b.jpg 2x,"), vec!["a.jpg", "b.jpg"]);
        assert_eq!(
            srcset_urls("a.jpg (foo, bar) 1x, b.jpg"),
            vec!["a.jpg", "b.jpg"],
            "comma inside parentheses does not end the descriptors"
        );
        assert_eq!(
            srcset_urls("/img?w=100,h=50 1x,\n/img?w=200,h=100\t2x"),
            vec!["/img?w=100,h=50", "/img?w=200,h=100"]
        );
        assert!(srcset_urls("  , ,").is_empty());
        assert_eq!(
            urls(r#"<img srcset="/x,1.jpg 1x, /y.jpg 2x">"#),
            vec!["http://example.com/x,1.jpg", "http://example.com/y.jpg"]
        );
    }

    #[test]
    fn base_href_relative_and_first_wins() {
        // A relative base is resolved against the page; it applies to links before it too.
        let html = r#"<a href="before.html"></a><base href="/other/"><a href="x.html"></a>
                      <base href="http://elsewhere.org/"><a href="y.html"></a>"#;
        assert_eq!(
            urls(html),
            vec![
                "http://example.com/other/before.html",
                "http://example.com/other/x.html",
                "http://example.com/other/y.html",
            ]
        );
        // A base without href does not count.
        let html =
            r#"<base target="_top"><base href="http://cdn.example.net/a/"><img src="i.png">"#;
        assert_eq!(urls(html), vec!["http://cdn.example.net/a/i.png"]);
    }

    #[test]
    fn invalid_or_non_http_base_is_ignored() {
        assert_eq!(
            urls(r#"<base href="http://[::1"><a href="x"></a>"#),
            vec!["http://example.com/dir/x"]
        );
        assert_eq!(
            urls(r#"<base href="javascript:void(0)"><a href="x"></a>"#),
            vec!["http://example.com/dir/x"]
        );
    }

    #[test]
    fn meta_refresh_forms() {
        assert_eq!(refresh_url("0;URL='x.html'"), Some("x.html"));
        assert_eq!(refresh_url("5; url=x.html"), Some("x.html"));
        assert_eq!(
            refresh_url("5 ; URL = \"x y.html\" trailing"),
            Some("x y.html")
        );
        assert_eq!(
            refresh_url("3, http://a.example/"),
            Some("http://a.example/")
        );
        assert_eq!(refresh_url("0;'quoted.html"), Some("quoted.html"));
        assert_eq!(refresh_url("1.5; url=x"), Some("x"));
        assert_eq!(refresh_url(".5;url=x"), Some("x"));
        assert_eq!(refresh_url("0; urlx"), Some("urlx"));
        assert_eq!(refresh_url("5"), None);
        assert_eq!(refresh_url("5;"), None);
        assert_eq!(refresh_url("0; url="), None);
        assert_eq!(refresh_url("url=x"), None);
        assert_eq!(refresh_url("5x; url=x"), None);
        assert_eq!(refresh_url(""), None);

        let html = r#"<meta http-equiv="Refresh" content="0;URL='/next?a=1&amp;b=2#top'">
                      <meta http-equiv="refresh" content="30">"#;
        assert_eq!(
            triples(html),
            vec![t("http://example.com/next?a=1&b=2", 'R', "meta/@refresh")]
        );
    }

    #[test]
    fn non_http_schemes_dropped() {
        let html = r#"<a href="mailto:a@b.c"></a><a href="javascript:go()"></a>
            <a href=" JavaScript:go()"></a><img src="data:image/png;base64,AAAA">
            <a href="tel:+123"></a><a href="ftp://f.example/x"></a><a href="about:blank"></a>
            <a href="https://secure.example/ok"></a>"#;
        assert_eq!(urls(html), vec!["https://secure.example/ok"]);
    }

    #[test]
    fn fragments_dropped_and_duplicates_removed() {
        let html = r##"<a href="#top"></a><a href="x.html#a"></a><img src="x.html#b">
            <a href="x.html"></a><a href="y.html"></a><a href="X.html"></a>"##;
        assert_eq!(
            triples(html),
            vec![
                t("http://example.com/dir/page.html", 'L', "a/@href"),
                t("http://example.com/dir/x.html", 'L', "a/@href"),
                t("http://example.com/dir/y.html", 'L', "a/@href"),
                t("http://example.com/dir/X.html", 'L', "a/@href"),
            ]
        );
    }

    #[test]
    fn relative_forms_and_whitespace() {
        let html = r#"<a href="../up.html"></a><a href="//cdn.example.org/x"></a>
            <a href="  spaced.html
            "></a><a href="sp&#x20;ace.html"></a><a href="new
line.html"></a><a href="?q=1"></a><a href="/abs"></a><a href=""></a><a href="   "></a>
            <a href="http://[broken"></a><a href="HTTP://Other.Example:80/A"></a>"#;
        assert_eq!(
            urls(html),
            vec![
                "http://example.com/up.html",
                "http://cdn.example.org/x",
                "http://example.com/dir/spaced.html",
                "http://example.com/dir/sp%20ace.html",
                "http://example.com/dir/newline.html",
                "http://example.com/dir/page.html?q=1",
                "http://example.com/abs",
                "http://other.example/A",
            ]
        );
    }

    #[test]
    fn character_references_in_attributes() {
        assert_eq!(decode_entities("a&amp;b"), "a&b");
        assert_eq!(
            decode_entities("a&ampb"),
            "a&ampb",
            "alnum follows a bare legacy name"
        );
        assert_eq!(decode_entities("a&amp b"), "a& b");
        assert_eq!(decode_entities("?x=1&copy=2"), "?x=1&copy=2", "= follows");
        assert_eq!(decode_entities("&copy;&eacute;"), "\u{a9}\u{e9}");
        assert_eq!(decode_entities("&#47;&#x2F;&#X2f"), "///");
        assert_eq!(
            decode_entities("&#0;&#x110000;&#xD800;"),
            "\u{FFFD}\u{FFFD}\u{FFFD}"
        );
        assert_eq!(decode_entities("&#128;"), "\u{20AC}");
        assert_eq!(decode_entities("&#;&#x;&;&unknown;"), "&#;&#x;&;&unknown;");
        assert_eq!(decode_entities("&#99999999999999999999;"), "\u{FFFD}");
        assert_eq!(
            decode_entities("&colon;&sol;&apos&notin;"),
            ":/&apos&notin;"
        );
        assert_eq!(
            urls(r#"<a href="/s?a=1&amp;b=2&lang=en&not=3"></a>"#),
            vec!["http://example.com/s?a=1&b=2&lang=en&not=3"]
        );
    }

    #[test]
    fn charset_from_header_and_meta() {
        // "café" in windows-1252; paths are always UTF-8 percent-encoded.
        let latin = b"<a href=\"caf\xe9.html\"></a>";
        let url = |html: &[u8], cs: Option<&str>| {
            extract_html(html, cs, &page(), AGENT).links[0]
                .url
                .to_string()
        };
        assert_eq!(
            url(latin, Some("windows-1252")),
            "http://example.com/dir/caf%C3%A9.html"
        );
        assert_eq!(
            url(latin, Some("ISO-8859-1")),
            "http://example.com/dir/caf%C3%A9.html"
        );
        assert_eq!(
            url(latin, None),
            "http://example.com/dir/caf%EF%BF%BD.html",
            "UTF-8 by default"
        );
        assert_eq!(
            url(latin, Some("no-such-charset")),
            "http://example.com/dir/caf%EF%BF%BD.html"
        );
        let with_meta = b"<meta charset=\"windows-1252\"><a href=\"caf\xe9.html\"></a>";
        assert_eq!(
            url(with_meta, None),
            "http://example.com/dir/caf%C3%A9.html",
            "document meta when the header says nothing"
        );
        let utf8_meta_latin_header = "<meta charset=\"windows-1252\"><a href=\"café.html\"></a>";
        assert_eq!(
            url(utf8_meta_latin_header.as_bytes(), Some("utf-8")),
            "http://example.com/dir/caf%C3%A9.html",
            "header beats meta"
        );
        // Hostile label: never injected as markup.
        assert_eq!(
            url(b"<a href=\"x\"></a>", Some("\"><a href=evil>")),
            "http://example.com/dir/x"
        );
    }

    #[test]
    fn utf16_and_bom() {
        let text = "<a href=\"caf\u{e9}.html\"></a>";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        let want = "http://example.com/dir/caf%C3%A9.html";
        let first = |html: &[u8], cs: Option<&str>| {
            extract_html(html, cs, &page(), AGENT).links[0]
                .url
                .to_string()
        };
        assert_eq!(first(&[&[0xFF, 0xFE][..], &le].concat(), None), want);
        assert_eq!(first(&[&[0xFE, 0xFF][..], &be].concat(), None), want);
        assert_eq!(first(&le, Some("utf-16")), want);
        assert_eq!(first(&be, Some("UTF-16BE")), want);
        let bom8 = [&b"\xEF\xBB\xBF"[..], text.as_bytes()].concat();
        assert_eq!(first(&bom8, Some("windows-1252")), want, "BOM beats header");
    }

    #[test]
    fn noscript_links_in_place() {
        let html = r#"<img src="lazy.gif" data-src="real.jpg">
            <noscript><img src="real.jpg"><link rel=stylesheet href="ns.css"></noscript>
            <noscript><meta name="robots" content="noindex"></noscript>
            <a href="after.html"></a>"#;
        let got = extract(html);
        let got: Vec<_> = got
            .links
            .iter()
            .map(|l| (l.url.path().to_string(), l.hop))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/dir/lazy.gif".to_string(), Hop::Embed),
                ("/dir/real.jpg".to_string(), Hop::Embed),
                ("/dir/ns.css".to_string(), Hop::Embed),
                ("/dir/after.html".to_string(), Hop::Link),
            ]
        );
        assert_eq!(extract(html).directives, Directives::default());
    }

    #[test]
    fn many_noscripts_all_parsed() {
        let mut html = String::new();
        for i in 0..SEPARATE_NOSCRIPTS + 50 {
            html.push_str(&format!("<noscript><img src=\"/n{i}\"></noscript>"));
        }
        html.push_str("<noscript><img src=\"/unclosed");
        let links = extract(&html).links;
        assert_eq!(links.len(), SEPARATE_NOSCRIPTS + 50);
        for (i, link) in links.iter().enumerate() {
            assert_eq!(link.url.path(), format!("/n{i}"));
        }
    }

    #[test]
    fn meta_robots_combinations() {
        let d = |html: &str| extract(html).directives;
        assert_eq!(d("<p>nothing</p>"), Directives::default());
        assert_eq!(
            d(r#"<meta name="robots" content="noindex, nofollow">"#),
            Directives {
                noindex: true,
                nofollow: true,
                ..Default::default()
            }
        );
        assert_eq!(
            d(r#"<meta name="ROBOTS" content=" NONE ">"#),
            Directives {
                noindex: true,
                nofollow: true,
                none: true,
                noarchive: false
            }
        );
        let archive = d(r#"<meta name="Robots" content="index,follow,noarchive,max-snippet:20">"#);
        assert_eq!(
            archive,
            Directives {
                noarchive: true,
                ..Default::default()
            }
        );
        assert_eq!(archive.discard_reason(), Some("noarchive"));
        assert!(archive.follow_links());
        assert_eq!(
            d(r#"<meta name="robots" content="all"><meta name="robots" content="bogus">"#),
            Directives::default()
        );
        // Two tags add up; our own agent's name counts; whitespace-separated is accepted.
        assert_eq!(
            d(
                r#"<meta name="robots" content="nofollow"><meta name=" Archiver " content="noindex noarchive">"#
            ),
            Directives {
                noindex: true,
                nofollow: true,
                noarchive: true,
                none: false
            }
        );
        assert_eq!(
            d(r#"<meta name="robots" content="noindex&#44;nofollow">"#).discard_reason(),
            Some("noindex")
        );
    }

    #[test]
    fn other_agents_meta_ignored() {
        let d = extract(
            r#"<meta name="googlebot" content="noindex"><meta name="archiver-x" content="none">
               <meta name="description" content="noindex"><meta property="robots" content="noindex">"#,
        )
        .directives;
        assert_eq!(d, Directives::default());
        // An empty agent token matches nothing, not every empty name.
        let d = extract_html(br#"<meta name="" content="noindex">"#, None, &page(), "").directives;
        assert_eq!(d, Directives::default());
    }

    #[test]
    fn directives_logic() {
        let mut d = Directives::default();
        assert_eq!(d.discard_reason(), None);
        assert!(d.follow_links());
        d.merge(Directives {
            noarchive: true,
            ..Default::default()
        });
        assert_eq!(d.discard_reason(), Some("noarchive"));
        d.merge(Directives {
            noindex: true,
            ..Default::default()
        });
        assert_eq!(d.discard_reason(), Some("noindex"));
        assert!(d.follow_links());
        d.merge(Directives {
            none: true,
            ..Default::default()
        });
        assert_eq!(d.discard_reason(), Some("none"));
        assert!(!d.follow_links(), "none alone stops following");
        assert!(!Directives {
            nofollow: true,
            ..Default::default()
        }
        .follow_links());
        assert!(d.noarchive && d.noindex, "merge keeps earlier flags");
    }

    #[test]
    fn x_robots_tag_forms() {
        let x = |v: &[&str]| x_robots_tag(v, AGENT);
        let flags = |d: Directives| (d.noindex, d.nofollow, d.noarchive, d.none);
        assert_eq!(flags(x(&[])), (false, false, false, false));
        assert_eq!(flags(x(&["noindex, nofollow"])), (true, true, false, false));
        assert_eq!(flags(x(&["NoArchive"])), (false, false, true, false));
        assert_eq!(flags(x(&["none"])), (true, true, false, true));
        assert_eq!(
            flags(x(&["archiver: noindex"])),
            (true, false, false, false)
        );
        assert_eq!(
            flags(x(&["ARCHIVER:noarchive"])),
            (false, false, true, false)
        );
        assert_eq!(
            flags(x(&["otherbot: noarchive"])),
            (false, false, false, false)
        );
        assert_eq!(
            flags(x(&["otherbot: noindex, nofollow"])),
            (false, false, false, false),
            "an agent prefix covers the following items"
        );
        assert_eq!(
            flags(x(&["noarchive, googlebot: noindex, archiver: nofollow"])),
            (false, true, true, false)
        );
        assert_eq!(
            flags(x(&["otherbot: noindex", "nofollow"])),
            (false, true, false, false),
            "the scope ends with the header value"
        );
        assert_eq!(
            flags(x(&["unavailable_after: 25 Jun 2030 15:00:00 PST, noindex"])),
            (true, false, false, false),
            "unavailable_after is a directive, not an agent"
        );
        assert_eq!(
            flags(x(&[
                "unavailable_after: Friday, 25-Jun-2030 15:00:00 GMT, noarchive"
            ])),
            (false, false, true, false)
        );
        assert_eq!(
            flags(x(&["max-snippet: 20, max-image-preview: large, nofollow"])),
            (false, true, false, false)
        );
        assert_eq!(
            flags(x(&["archiver: max-snippet: 20, noindex"])),
            (true, false, false, false)
        );
        assert_eq!(
            flags(x(&["all", "index, follow", ""])),
            (false, false, false, false)
        );
    }

    #[test]
    fn broken_html_never_fails() {
        let cases: &[&[u8]] = &[
            b"",
            b"<",
            b"<a href=\"unterminated",
            b"<a href=x.html",
            b"<<<>>><a href='a.html'>",
            b"\xff\xfe\x00<\x00a",
            b"<select><xmp><script>\"use strict\";</script></select><a href=\"z\">",
            b"<svg><a href=\"in-svg.html\"></a></svg><math><mi><a href=\"m\">",
            b"<!-- <a href=\"commented.html\"> --><a href=\"real.html\">",
            b"<script>document.write('<a href=\"in-script.html\">')</script>",
            b"\0\0\0<a\0 href=\"nul\">",
        ];
        for html in cases {
            let _ = extract_html(html, Some("utf-8"), &page(), AGENT);
        }
        let got = urls("<!-- <a href=\"commented.html\"> --><a href=\"real.html\">");
        assert_eq!(got, vec!["http://example.com/dir/real.html"]);
        let got = urls("<script>document.write('<a href=\"in.html\">')</script>");
        assert!(got.is_empty(), "script text is not markup: {got:?}");
    }

    #[test]
    fn large_page_all_links() {
        let mut html = String::from("<html><body>");
        for i in 0..20_000 {
            html.push_str(&format!(
                "<a href=\"/p/{}\">x</a><img src=\"/i/{}.png\">",
                i,
                i % 100
            ));
        }
        let links = extract(&html).links;
        assert_eq!(links.len(), 20_000 + 100);
        assert_eq!(links[0].url.as_str(), "http://example.com/p/0");
        assert_eq!(links[1].url.as_str(), "http://example.com/i/0.png");
        assert_eq!(
            links.last().unwrap().url.as_str(),
            "http://example.com/p/19999"
        );
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    const BODY: &[u8] = b"<html><a href=\"/x\">hello hello hello</a></html>";

    fn ok(bytes: &[u8]) -> Decoded {
        Decoded {
            bytes: bytes.to_vec(),
            capped: false,
            error: None,
        }
    }

    #[test]
    fn decode_identity_and_gzip() {
        assert_eq!(decode_body(None, BODY, 1 << 20), ok(BODY));
        assert_eq!(decode_body(Some("identity"), BODY, 1 << 20), ok(BODY));
        let gz = gzip(BODY);
        assert_eq!(decode_body(Some("gzip"), &gz[..], 1 << 20), ok(BODY));
        assert_eq!(decode_body(Some(" X-GZIP "), &gz[..], 1 << 20), ok(BODY));
        // Two gzip members, as some servers concatenate.
        let two = [gzip(b"ab"), gzip(b"cd")].concat();
        assert_eq!(decode_body(Some("gzip"), &two[..], 100), ok(b"abcd"));
        // Stacked codings are undone last first.
        let stacked = gzip(&zlib(BODY));
        assert_eq!(
            decode_body(Some("deflate, gzip"), &stacked[..], 1 << 20),
            ok(BODY)
        );
    }

    #[test]
    fn decode_deflate_zlib_and_raw() {
        assert_eq!(
            decode_body(Some("deflate"), &zlib(BODY)[..], 1 << 20),
            ok(BODY)
        );
        assert_eq!(
            decode_body(Some("Deflate"), &raw_deflate(BODY)[..], 1 << 20),
            ok(BODY)
        );
    }

    #[test]
    fn decode_empty_body_is_fine() {
        for coding in [None, Some("gzip"), Some("deflate")] {
            assert_eq!(decode_body(coding, &b""[..], 10), Decoded::default());
        }
    }

    #[test]
    fn decode_corrupt_keeps_prefix() {
        let d = decode_body(Some("gzip"), &b"this is not gzip at all"[..], 1 << 20);
        assert!(d.error.is_some());
        assert!(d.bytes.is_empty());

        let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let gz = gzip(&big);
        // Truncated stream: what came before the cut, and an error.
        let d = decode_body(Some("gzip"), &gz[..gz.len() / 2], usize::MAX);
        assert!(d.error.is_some(), "truncation must be reported");
        assert!(!d.bytes.is_empty());
        assert_eq!(&big[..d.bytes.len()], &d.bytes[..]);
        // Garbage in the middle.
        let mut bad = gz.clone();
        let mid = bad.len() / 2;
        bad[mid..mid + 64].fill(0xFF);
        let d = decode_body(Some("gzip"), &bad[..], usize::MAX);
        assert!(d.error.is_some());
        assert_eq!(&big[..d.bytes.len()], &d.bytes[..]);

        let d = decode_body(Some("br"), BODY, 100);
        assert_eq!(d.bytes, b"");
        assert!(d.error.unwrap().contains("br"));
    }

    #[test]
    fn decode_cap_stops_bombs() {
        let zeros = vec![0u8; 10 << 20];
        let bomb = gzip(&zeros);
        assert!(bomb.len() < 100_000);
        let d = decode_body(Some("gzip"), &bomb[..], 4096);
        assert_eq!(d.bytes.len(), 4096);
        assert!(d.capped);
        assert_eq!(d.error, None);
        // Exactly at the cap is not capped; one byte more is.
        assert_eq!(
            decode_body(Some("gzip"), &gzip(b"12345")[..], 5),
            ok(b"12345")
        );
        let d = decode_body(Some("deflate"), &zlib(b"123456")[..], 5);
        assert_eq!((d.bytes.as_slice(), d.capped), (&b"12345"[..], true));
        let d = decode_body(None, &b"123456"[..], 0);
        assert_eq!((d.bytes.len(), d.capped), (0, true));
    }
}
