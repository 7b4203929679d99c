//! TEMPORARY STUB of the CDXJ module (the real one is written elsewhere and replaces this file).
//! Only the interface matters here: the key is not a real SURT.

/// What the WARC writer knows about one record it wrote.
pub struct CdxRecord<'a> {
    pub url: &'a str,
    pub warc_date: &'a str,
    pub record_type: &'a str,
    pub content_type: Option<&'a str>,
    pub http_head: &'a [u8],
    pub payload_digest: Option<&'a str>,
    pub length: u64,
    pub offset: u64,
    pub filename: &'a str,
}

/// "SURTKEY TIMESTAMP14 {json}" (stub: the key is the lower-cased URL).
pub fn cdxj_line(r: &CdxRecord) -> String {
    let ts: String = r
        .warc_date
        .chars()
        .filter(|c| c.is_ascii_digit())
        .take(14)
        .collect();
    let status = std::str::from_utf8(r.http_head)
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .unwrap_or("-")
        .to_string();
    let json = serde_json::json!({
        "url": r.url,
        "mime": r.content_type.unwrap_or("-"),
        "status": status,
        "digest": r.payload_digest.unwrap_or("-"),
        "length": r.length.to_string(),
        "offset": r.offset.to_string(),
        "filename": r.filename,
        "type": r.record_type,
    });
    format!("{} {} {}", r.url.to_lowercase(), ts, json)
}

/// Sorts lines the way pywb expects (plain byte order).
#[allow(clippy::ptr_arg)] // interface fixed: the real one may drop duplicates
pub fn sort_lines(lines: &mut Vec<String>) {
    lines.sort();
}
