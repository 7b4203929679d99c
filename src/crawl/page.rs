//! What a fetched page offers the crawl: its outlinks (HTML, CSS, the redirect target), its
//! robots directives, and the decoded start of its body (for challenge-page markers and the
//! repeated-content trap).

use std::io::Read as _;

use url::Url;

use crate::extract::{self, Directives, Hop, Outlink};
use crate::net::fetch::Fetched;

/// Decoded HTML larger than this is cut before link extraction (decompression bombs).
const MAX_DECODED_HTML: usize = 50 << 20;

/// Decoded stylesheet bytes read for links (a stylesheet is parsed whole, so it is capped
/// lower than HTML, which streams).
const MAX_DECODED_CSS: usize = 8 << 20;

/// Decoded bytes of a page held in memory for its text fingerprint and challenge markers.
const FINGERPRINT_BYTES: usize = 1 << 20;

/// What a fetched page offers the crawl.
pub(super) struct Page {
    pub(super) links: Vec<Outlink>,
    pub(super) directives: Directives,
    /// The decoded start of an HTML body (for challenge-page markers).
    pub(super) text: Vec<u8>,
    /// Set when the page repeats pages already seen under ever-new URLs.
    pub(super) trap: Option<crate::scope::traps::Trap>,
    /// A redirect's `Location` that is no URL at all (logged, never fetched).
    pub(super) bad_location: Option<String>,
    /// Links left out past `[limits] max_outlinks`.
    pub(super) left_out: usize,
    /// The HTML parse stopped at its memory cap (see [`extract::MAX_PARSER_MEMORY`]): the
    /// links after that point were never read.
    pub(super) links_cut: bool,
}

/// The profile's rules for reading a page.
pub(super) struct PageRules<'a> {
    /// The product token meta robots tags are read for.
    pub(super) robots_token: &'a str,
    /// `[limits] max_outlinks`: links past it are left out (and counted).
    pub(super) max_outlinks: usize,
    /// The repeated-content trap rule is on: the page's visible text is hashed.
    pub(super) text_hash: bool,
}

/// Reads a page: its outlinks (HTML links and the redirect target), robots directives (meta
/// and header), and the decoded start of an HTML body (for challenge-page markers); with the
/// repeated-content rule on, the hash of its visible text (the scheduler judges whether it
/// repeats the site's other pages: [`Page::trap`] is left for it to set). A pure function of
/// the answer and the rules.
pub(super) fn read(f: &Fetched, rules: &PageRules<'_>) -> (Page, Option<u64>) {
    let token = rules.robots_token;
    let mut directives = extract::x_robots_tag(&f.header_all("x-robots-tag"), token);
    let mut links = Vec::new();
    let mut bad_location = None;
    match location_of(f) {
        Some(Location::Target(url)) => links.push(Outlink {
            url,
            hop: Hop::Redirect,
            context: "header/@location",
        }),
        Some(Location::Junk(text)) => bad_location = Some(text),
        None => {}
    }
    let mut text = Vec::new();
    let mut text_hash = None;
    let mut left_out = 0;
    let mut links_cut = false;
    if !f.payload.is_empty() && is_html(&f.headers) {
        let encoding = f.header("content-encoding");
        // Only the start of the page is held decoded (fingerprint, challenge markers);
        // links are taken from a stream, so a huge or bomb page costs no memory.
        let decoded = extract::decode_slice(encoding, &f.payload, FINGERPRINT_BYTES);
        let stream = extract::decoding_reader(encoding, &f.payload[..]);
        if let (true, Ok(Some(reader))) = ((200..300).contains(&f.status), stream) {
            // extract_html cleans the label (quotes, case) itself.
            let charset = f.header("content-type").and_then(charset_of);
            let max = rules.max_outlinks.saturating_sub(links.len());
            let reader = reader.take(MAX_DECODED_HTML as u64);
            // The page text comes from the links' parse when that parse reads the whole
            // body the fingerprint reads (not cut, not corrupt).
            let whole = !decoded.capped && decoded.error.is_none();
            let text_max = crate::scope::traps::MAX_VISIBLE_TEXT;
            let (page, page_text) = if rules.text_hash && whole {
                extract::extract_html_and_text(reader, charset, &f.url, token, max, text_max)
            } else {
                let page = extract::extract_html_limited(reader, charset, &f.url, token, max);
                (page, None)
            };
            directives.merge(page.directives);
            links.extend(page.links);
            left_out = page.left_out;
            links_cut = page.cut;
            if rules.text_hash {
                let text =
                    page_text.unwrap_or_else(|| crate::scope::traps::visible_text(&decoded.bytes));
                text_hash = Some(crate::scope::traps::text_hash(&text));
            }
        }
        text = decoded.bytes;
        text.truncate(16 * 1024);
    } else if !f.payload.is_empty() && is_css(&f.headers) && (200..300).contains(&f.status) {
        let encoding = f.header("content-encoding");
        let decoded = extract::decode_slice(encoding, &f.payload, MAX_DECODED_CSS);
        // References in a stylesheet are relative to the stylesheet itself.
        let mut found =
            crate::extract::css::css_links(&crate::extract::css::decode(&decoded.bytes), &f.url);
        let room = rules.max_outlinks.saturating_sub(links.len());
        if found.len() > room {
            left_out = found.len() - room;
            found.truncate(room);
        }
        links.extend(found);
    }
    let page = Page {
        links,
        directives,
        text,
        trap: None,
        bad_location,
        left_out,
        links_cut,
    };
    (page, text_hash)
}

/// Is this response HTML worth extracting links from?
pub(super) fn is_html(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("text/html") || v.contains("application/xhtml")
        })
        .unwrap_or(false)
}

/// Is this response a stylesheet, whose `url()`s and `@import`s are requisites?
pub(super) fn is_css(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("text/css"))
}

/// The charset parameter of a Content-Type value.
fn charset_of(content_type: &str) -> Option<&str> {
    content_type.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then_some(v)
    })
}

/// What a redirect's `Location` header points to.
pub(super) enum Location {
    /// A URL, of any scheme (scope rejects what is not http(s), and says so).
    Target(Url),
    /// Empty, or not a URL even relative to the redirecting one: the text as received.
    Junk(String),
}

/// The `Location` of a redirect response, resolved against the URL that answered. Bytes that
/// are not ASCII are read as UTF-8 (as browsers do) and end up percent-encoded in the URL.
pub(super) fn location_of(f: &Fetched) -> Option<Location> {
    if !(300..400).contains(&f.status) {
        return None;
    }
    let raw = f.headers.get("location")?;
    let text = String::from_utf8_lossy(raw.as_bytes());
    let text = text.trim();
    if text.is_empty() {
        return Some(Location::Junk(String::new()));
    }
    Some(match f.url.join(text) {
        Ok(mut target) => {
            target.set_fragment(None);
            Location::Target(target)
        }
        Err(_) => Location::Junk(text.to_string()),
    })
}

/// The http(s) target of a redirect response, if it has one.
pub(super) fn redirect_target(f: &Fetched) -> Option<Url> {
    match location_of(f)? {
        Location::Target(url) if matches!(url.scheme(), "http" | "https") => Some(url),
        _ => None,
    }
}
