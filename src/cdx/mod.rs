//! CDXJ index lines, character for character what `cdxj-indexer` 1.5.0 writes for the same
//! WARC record.
//!
//! pywb replays straight from these lines (no re-indexing), so they must carry the same key,
//! timestamp and JSON fields as the reference indexer computes: the key is [`surt`] of the
//! URL, the JSON is Python's `json.dumps` of an ordered dict (`", "` and `": "` separators,
//! everything outside printable ASCII escaped), and `mime` and `status` come from the HTTP head
//! parsed the lenient way warcio parses it. The odd cases below are warcio's behaviour, kept on
//! purpose.

pub mod canon;
pub mod locate;
pub(crate) mod sort;

use crate::cdx::canon::surt;
pub use crate::cdx::sort::LineSorter;

/// What the indexer needs to know about one written WARC record.
#[derive(Debug, Clone, Copy)]
pub struct CdxRecord<'a> {
    /// WARC-Target-URI as written.
    pub url: &'a str,
    /// WARC-Date value as written (1.0 seconds or 1.1 microseconds).
    pub warc_date: &'a str,
    /// "response" | "revisit" | "resource" | "metadata" (others are never indexed).
    pub record_type: &'a str,
    /// The WARC Content-Type header (used for resource and metadata records).
    pub content_type: Option<&'a str>,
    /// The start of the record block: at least the whole HTTP head when the block is HTTP (or
    /// the whole block when it has no blank line).
    pub http_head: &'a [u8],
    /// WARC-Payload-Digest value ("sha1:BASE32"). cdxj-indexer computes one when a response,
    /// resource or metadata record lacks it; this module cannot, so pass it for those.
    pub payload_digest: Option<&'a str>,
    /// Compressed length of the record's gzip member.
    pub length: u64,
    /// Offset of the record's gzip member in the file.
    pub offset: u64,
    /// Bare WARC file name.
    pub filename: &'a str,
}

/// Whether cdxj-indexer writes a line for this record at all: responses, revisits, resources
/// and metadata, except resources and metadata typed `application/warc-fields` exactly.
pub fn is_indexed(r: &CdxRecord) -> bool {
    match r.record_type {
        "response" | "revisit" => true,
        "resource" | "metadata" => r.content_type.map(py_strip) != Some("application/warc-fields"),
        _ => false,
    }
}

/// The 14-digit timestamp of a WARC-Date: its first six runs of digits, zero-padded
/// (`2024-05-06T07:08:09.123456Z` gives `20240506070809`; fractions are dropped).
///
/// cdxj-indexer raises on a malformed date; this never fails and pads what is missing with
/// zeros.
pub fn timestamp14(warc_date: &str) -> String {
    let mut out = String::with_capacity(14);
    push_timestamp14(&mut out, warc_date);
    out
}

/// A CDXJ timestamp (14 digits; more are ignored) as a WARC date, `YYYY-MM-DDThh:mm:ssZ`
/// (the reverse of [`timestamp14`]); `None` unless it is a real date. For WARC-Refers-To-Date,
/// which must be a full date (pywb turns it back into these 14 digits), and WACZ's `ts`.
pub fn warc_date_of(timestamp: &str) -> Option<String> {
    if timestamp.len() < 14 || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let when = chrono::NaiveDateTime::parse_from_str(&timestamp[..14], "%Y%m%d%H%M%S").ok()?;
    Some(when.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// [`timestamp14`] appended to `out` (one line is built in one buffer: this runs per record).
fn push_timestamp14(out: &mut String, warc_date: &str) {
    let mut fields = warc_date
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|digits| {
            digits.bytes().fold(0u64, |acc, b| {
                acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))
            })
        });
    for width in [4, 2, 2, 2, 2, 2] {
        let value = fields.next().unwrap_or(0);
        push_padded(out, value, width);
    }
}

/// `value` in decimal, zero-padded to `width` digits (more digits when it needs them).
fn push_padded(out: &mut String, value: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut n = value;
    let mut len = 0;
    loop {
        digits[19 - len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for _ in len..width {
        out.push('0');
    }
    for &d in &digits[20 - len..] {
        out.push(char::from(d));
    }
}

/// A CDXJ line's three parts, `(SURT key, timestamp, JSON)`; None if it has fewer. The key
/// and timestamp never hold a space, while the JSON may (and a URL in the key may hold `{`).
pub fn split_line(line: &str) -> Option<(&str, &str, &str)> {
    let mut parts = line.splitn(3, ' ');
    Some((parts.next()?, parts.next()?, parts.next()?))
}

/// The CDXJ line for `r`, without a newline: `SURTKEY TIMESTAMP14 {json}`.
///
/// Fields, in this order, each left out where cdxj-indexer has none: `url` (the target URI,
/// `<...>` unwrapped and spaces written `%20`, as warcio fixes it), `mime`, `status`
/// (responses and revisits with an HTTP head), `digest` (with its `sha1:` prefix), `length`,
/// `offset`, `filename`. Check [`is_indexed`] first: this writes a line for any record.
pub fn cdxj_line(r: &CdxRecord) -> String {
    let url = indexed_url(r.url);
    let head = if has_http_head(r.record_type, &url) {
        parse_http_head(r.http_head)
    } else {
        None
    };
    // One buffer for the whole line: this runs once per record, and building the fields as
    // separate strings first cost more than finding them.
    let mut out = String::with_capacity(2 * url.len() + r.filename.len() + 256);
    out.push_str(&surt(&url));
    out.push(' ');
    push_timestamp14(&mut out, r.warc_date);
    out.push_str(" {");
    push_field(&mut out, "url", &url);
    if let Some(mime) = mime(r, head.as_ref()) {
        out.push_str(", ");
        push_field(&mut out, "mime", &mime);
    }
    if matches!(r.record_type, "response" | "revisit") {
        if let Some(h) = &head {
            out.push_str(", ");
            push_field(&mut out, "status", h.status_code());
        }
    }
    if let Some(digest) = r.payload_digest {
        out.push_str(", ");
        push_field(&mut out, "digest", py_strip(digest));
    }
    out.push_str(", ");
    push_number_field(&mut out, "length", r.length);
    out.push_str(", ");
    push_number_field(&mut out, "offset", r.offset);
    out.push_str(", ");
    push_field(&mut out, "filename", r.filename);
    out.push('}');
    out
}

/// `"key": "value"` as `json.dumps` writes one entry of a dict.
fn push_field(out: &mut String, key: &str, value: &str) {
    push_json_string(out, key);
    out.push_str(": ");
    push_json_string(out, value);
}

/// `"key": "123"`: cdxj-indexer writes lengths and offsets as strings.
fn push_number_field(out: &mut String, key: &str, value: u64) {
    push_json_string(out, key);
    out.push_str(": \"");
    push_padded(out, value, 1);
    out.push('"');
}

/// A JSON string literal as Python's `json.dumps(s)` writes it (`ensure_ascii`): `"` and `\`
/// escaped, `\b \f \n \r \t` by name, every other character outside `' '..='~'` as `\uxxxx`
/// (lower-case hex), characters beyond the BMP as surrogate pairs.
pub fn python_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// [`python_json_string`] appended to `out`.
fn push_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    // Runs of plain printable ASCII (nearly everything) are copied whole.
    let mut plain = 0;
    for (i, c) in s.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{08}' => "\\b",
            '\u{0C}' => "\\f",
            ' '..='~' => continue,
            _ => "",
        };
        out.push_str(&s[plain..i]);
        plain = i + c.len_utf8();
        if !escape.is_empty() {
            out.push_str(escape);
            continue;
        }
        let mut units = [0u16; 2];
        for &unit in c.encode_utf16(&mut units).iter() {
            out.push_str("\\u");
            for shift in [12, 8, 4, 0] {
                out.push(char::from(HEX[usize::from((unit >> shift) & 0xf)]));
            }
        }
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

/// Sorts lines the way Python sorts `str` (by code point), which is the order pywb's binary
/// search expects. Byte order of UTF-8 is code point order, so a plain sort does it.
#[allow(clippy::ptr_arg)] // the agreed interface of this module takes the Vec
pub fn sort_lines(lines: &mut Vec<String>) {
    lines.sort_unstable();
}

/// Python's `str.isspace()`: Unicode White_Space plus the four information separators.
fn py_is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// Python's `str.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_is_space)
}

/// The URL as warcio hands it on: unwrapped from `<...>` (a wget bug), spaces as `%20`.
fn indexed_url(url: &str) -> String {
    let url = py_strip(url);
    let url = if url.len() >= 2 && url.starts_with('<') && url.ends_with('>') {
        &url[1..url.len() - 1]
    } else {
        url
    };
    url.replace(' ', "%20")
}

/// warcio reads an HTTP head only from these record types, only when the (fixed) target URI
/// starts with `http:` or `https:` (case-sensitive) and the block is not empty.
fn has_http_head(record_type: &str, url: &str) -> bool {
    matches!(record_type, "response" | "revisit" | "request")
        && (url.starts_with("http:") || url.starts_with("https:"))
}

/// The `mime` field: `warc/revisit` for revisits; otherwise the first Content-Type (of the
/// HTTP head for responses, of the WARC headers for the rest) cut at the first `;` or
/// whitespace. An empty header gives an empty mime, a missing one none.
fn mime(r: &CdxRecord, head: Option<&HttpHead>) -> Option<String> {
    let value = match r.record_type {
        "revisit" => return Some("warc/revisit".to_string()),
        "response" | "request" => head?.content_type()?.to_string(),
        _ => py_strip(r.content_type?).to_string(),
    };
    let cut = value
        .find(|c: char| c == ';' || py_is_space(c))
        .unwrap_or(value.len());
    Some(py_strip(&value[..cut]).to_string())
}

/// What the index needs of an HTTP head, as warcio's lenient parser (no verification) sees it.
#[derive(Debug)]
struct HttpHead {
    /// The status line after the protocol and the first space, stripped: `200 OK`.
    status: String,
    /// The value of the first Content-Type header, continuation lines included.
    content_type: Option<String>,
}

impl HttpHead {
    /// Text up to the first space of the status (`200`); empty when the status line had
    /// nothing after the protocol; with a tab instead of a space, whatever follows the last
    /// word (warcio splits on spaces only).
    fn status_code(&self) -> &str {
        self.status.split(' ').next().unwrap_or("")
    }

    /// The first Content-Type header (names compared ignoring case).
    fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }
}

/// One line of the head, as warcio decodes it: UTF-8, or Latin-1 when that fails; trailing
/// whitespace (line end included) removed. Borrowed when the line is UTF-8: this runs for
/// every header line of every record.
fn decode_line(line: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(s) => std::borrow::Cow::Borrowed(s.trim_end_matches(py_is_space)),
        Err(_) => {
            let text: String = line.iter().map(|&b| char::from(b)).collect();
            std::borrow::Cow::Owned(text.trim_end_matches(py_is_space).to_string())
        }
    }
}

/// Parses the head the way warcio does without verification. `None` where warcio ends up
/// with no head (empty block, empty first line, or a first line with no space and no headers
/// after it). Lines end at `\n`; a header line without `:` is dropped together with its
/// continuation lines; continuation lines (leading space or tab) are appended to the value
/// as they are, leading whitespace included; the head ends at the first blank line.
fn parse_http_head(block: &[u8]) -> Option<HttpHead> {
    let mut lines = block.split_inclusive(|&b| b == b'\n').map(decode_line);
    let first = lines.next()?;
    if first.is_empty() {
        return None;
    }
    let mut headers = 0;
    let mut content_type: Option<String> = None;
    let mut line = lines.next().unwrap_or_default();
    while !line.is_empty() {
        // Only the first Content-Type is kept; the other headers are only counted.
        let mut value = line.split_once(':').map(|(name, value)| {
            let name = name.trim_end_matches([' ', '\t']);
            let wanted = content_type.is_none() && name.eq_ignore_ascii_case("content-type");
            wanted.then(|| value.trim_start_matches(py_is_space).to_string())
        });
        let mut next = lines.next().unwrap_or_default();
        while next.starts_with([' ', '\t']) {
            if let Some(Some(v)) = value.as_mut() {
                v.push_str(&next);
            }
            next = lines.next().unwrap_or_default();
        }
        match value {
            Some(Some(v)) => {
                headers += 1;
                content_type = Some(v);
            }
            Some(None) => headers += 1,
            None => {}
        }
        line = next;
    }
    let status = match first.split_once(' ') {
        Some((_, rest)) => py_strip(rest).to_string(),
        None => String::new(),
    };
    if status.is_empty() && headers == 0 {
        return None;
    }
    Some(HttpHead {
        status,
        content_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// One record read back from a fixture WARC.
    struct Member {
        headers: Vec<(String, String)>,
        block: Vec<u8>,
        offset: u64,
        length: u64,
    }

    impl Member {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    /// Splits a `.warc.gz` into its gzip members (one record each) and parses the WARC
    /// headers minimally.
    fn read_members(data: &[u8]) -> Vec<Member> {
        let mut members = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let offset = (data.len() - rest.len()) as u64;
            let mut decoder = flate2::bufread::GzDecoder::new(rest);
            let mut record = Vec::new();
            decoder.read_to_end(&mut record).expect("gzip member");
            let after = decoder.into_inner();
            let length = (rest.len() - after.len()) as u64;
            rest = after;

            let end = record
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("end of WARC headers");
            let head = std::str::from_utf8(&record[..end]).expect("UTF-8 WARC headers");
            let headers: Vec<(String, String)> = head
                .split("\r\n")
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.to_string(), v.trim().to_string()))
                .collect();
            let body_len: usize = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
                .and_then(|(_, v)| v.parse().ok())
                .expect("Content-Length");
            let block = record[end + 4..end + 4 + body_len].to_vec();
            members.push(Member {
                headers,
                block,
                offset,
                length,
            });
        }
        members
    }

    fn lines_for(path: &std::path::Path) -> Vec<String> {
        let data = std::fs::read(path).expect("fixture WARC");
        let filename = path.file_name().and_then(|n| n.to_str()).expect("name");
        read_members(&data)
            .iter()
            .filter_map(|m| {
                let r = CdxRecord {
                    url: m.header("WARC-Target-URI").unwrap_or(""),
                    warc_date: m.header("WARC-Date").expect("WARC-Date"),
                    record_type: m.header("WARC-Type").expect("WARC-Type"),
                    content_type: m.header("Content-Type"),
                    http_head: &m.block,
                    payload_digest: m.header("WARC-Payload-Digest"),
                    length: m.length,
                    offset: m.offset,
                    filename,
                };
                is_indexed(&r).then(|| cdxj_line(&r))
            })
            .collect()
    }

    fn fixture_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cdx")
    }

    fn fixtures() -> Vec<std::path::PathBuf> {
        let mut warcs: Vec<_> = std::fs::read_dir(fixture_dir())
            .expect("tests/data/cdx")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
            .collect();
        warcs.sort();
        warcs
    }

    #[test]
    fn lines_match_cdxj_indexer() {
        let warcs = fixtures();
        assert!(
            warcs.len() >= 2,
            "fixtures missing: run tools/gen_cdx_cases.py"
        );
        let mut failures = Vec::new();
        let mut count = 0;
        for warc in &warcs {
            let expected_path = warc.with_extension("").with_extension("cdxj");
            let expected = std::fs::read_to_string(&expected_path).expect("expected .cdxj");
            let expected: Vec<&str> = expected.lines().collect();
            let got = lines_for(warc);
            assert_eq!(
                got.len(),
                expected.len(),
                "line count for {}",
                warc.display()
            );
            for (g, e) in got.iter().zip(&expected) {
                count += 1;
                if g != e {
                    failures.push(format!("python {e}\nrust   {g}"));
                }
            }
        }
        assert!(count >= 20, "only {count} lines compared");
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    }

    #[test]
    fn a_line_splits_at_its_first_two_spaces_only() {
        let line = r#"com,example)/?q={x} 20261202000000 {"url": "http://example.com/?q={x}", "mime": "text/html"}"#;
        let (key, ts, json) = split_line(line).unwrap();
        assert_eq!(key, "com,example)/?q={x}");
        assert_eq!(ts, "20261202000000");
        assert!(json.starts_with("{\"url\""), "{json}");
        assert_eq!(split_line("com,example)/ 20261202000000"), None);
    }

    #[test]
    fn sorted_lines_match_cdxj_indexer_sort() {
        let mut lines = lines_for(&fixture_dir().join("basic.warc.gz"));
        let unsorted = lines.clone();
        sort_lines(&mut lines);
        let expected = std::fs::read_to_string(fixture_dir().join("basic.sorted.cdxj"))
            .expect("basic.sorted.cdxj");
        let expected: Vec<&str> = expected.lines().collect();
        assert_ne!(unsorted, expected, "fixture should need sorting");
        assert_eq!(lines, expected);
    }

    #[test]
    fn json_strings_like_python() {
        assert_eq!(
            python_json_string("a\u{7f}\u{0}\u{8}\u{c}\n\r\t\"\\/é😀\u{2028}"),
            r#""a\u007f\u0000\b\f\n\r\t\"\\/\u00e9\ud83d\ude00\u2028""#
        );
    }

    #[test]
    fn timestamps_become_full_warc_dates() {
        assert_eq!(
            warc_date_of("20261130233813").as_deref(),
            Some("2026-11-30T23:38:13Z")
        );
        assert_eq!(
            warc_date_of("20261130233813123").as_deref(),
            Some("2026-11-30T23:38:13Z")
        );
        assert_eq!(warc_date_of("2026113023381"), None);
        assert_eq!(warc_date_of("20261332233813"), None);
        assert_eq!(warc_date_of("2026113023381x"), None);
    }

    #[test]
    fn timestamps() {
        assert_eq!(timestamp14("2024-05-06T07:08:09Z"), "20240506070809");
        assert_eq!(timestamp14("2024-05-06T07:08:09.123456Z"), "20240506070809");
        assert_eq!(timestamp14("2024-5-6T7:8:9Z"), "20240506070809");
        assert_eq!(timestamp14("garbage"), "00000000000000");
    }

    #[test]
    fn odd_heads() {
        let h = parse_http_head(b"HTTP/1.1\t200 OK\r\n\r\n").expect("head");
        assert_eq!(h.status_code(), "OK");
        assert!(parse_http_head(b"HTTP/1.1\r\n\r\n").is_none());
        let h = parse_http_head(b"HTTP/1.1\r\nX: y\r\n\r\n").expect("head");
        assert_eq!(h.status_code(), "");
        let h = parse_http_head(b"HTTP/1.1 302 Found\nNoColon\n cont\nLocation: /x\n\nbody: no")
            .expect("head");
        assert_eq!(h.status_code(), "302");
        assert_eq!(h.content_type(), None);
        let h = parse_http_head(
            b"HTTP/1.1 200 OK\nX: 1\ncontent-TYPE : text/html;\n  q=1\nContent-Type: b\n\n",
        )
        .expect("head");
        assert_eq!(h.content_type(), Some("text/html;  q=1"));
        assert!(parse_http_head(b"").is_none());
        assert!(parse_http_head(b"\r\nHTTP/1.1 200 OK\r\n").is_none());
    }

    #[test]
    fn warc_fields_records_are_not_indexed() {
        let mut r = CdxRecord {
            url: "urn:x",
            warc_date: "2024-01-01T00:00:00Z",
            record_type: "metadata",
            content_type: Some("application/warc-fields"),
            http_head: b"",
            payload_digest: None,
            length: 1,
            offset: 0,
            filename: "f.warc.gz",
        };
        assert!(!is_indexed(&r));
        r.content_type = Some("application/warc-fields; x=1");
        assert!(is_indexed(&r));
        r.record_type = "request";
        assert!(!is_indexed(&r));
        r.record_type = "warcinfo";
        assert!(!is_indexed(&r));
    }
}
