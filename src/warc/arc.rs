//! ARC files (the Internet Archive's format before WARC, written by Heritrix 1 and the
//! Alexa/IA crawls): record header lines read the way warcio 1.8.1 reads them when it converts
//! ARC to WARC on the fly (`ARC2WARCHeadersParser`), so that `archiver index` gives the CDXJ
//! lines `cdxj-indexer` gives for the same file.
//!
//! An ARC record is one header line, `URL IP-ADDRESS DATE14 CONTENT-TYPE LENGTH`, then LENGTH
//! bytes (for web captures the HTTP response as received), then a newline. The file's first
//! record is `filedesc://NAME …`, whose block starts with two more lines (version and field
//! list) that LENGTH counts. Like warcio, only the five fields of ARC v1 are read, split from
//! the right, so a URL with spaces stays whole. This module only parses; the walker in
//! `warc/read.rs` reads the bytes.

/// The five fields of an ARC header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArcHeader {
    pub url: String,
    pub ip: String,
    /// 14 digits (longer dates are cut to 14, as warcio does).
    pub date: String,
    pub content_type: String,
    pub length: u64,
}

impl ArcHeader {
    /// The version block every ARC file starts with.
    pub(crate) fn is_filedesc(&self) -> bool {
        self.url.starts_with("filedesc://")
    }

    /// The WARC header fields warcio makes of this record: a `warcinfo` for the version block
    /// (its name as `WARC-Filename`), a `response` for everything else (Content-Type always
    /// `application/http;msgtype=response`, as warcio sets it). `extra` is what the header
    /// took beyond its line (the version block's two lines), which the block no longer holds.
    pub(crate) fn warc_fields(&self, extra: u64) -> Vec<(String, String)> {
        let field = |n: &str, v: &str| (n.to_string(), v.to_string());
        let mut fields = Vec::with_capacity(6);
        if self.is_filedesc() {
            fields.push(field("WARC-Type", "warcinfo"));
            fields.push(field("WARC-Filename", &self.url["filedesc://".len()..]));
        } else {
            fields.push(field("WARC-Type", "response"));
            fields.push(field("WARC-Target-URI", &self.url));
        }
        fields.push(field("WARC-IP-Address", &self.ip));
        fields.push(field("WARC-Date", &iso_date(&self.date)));
        let content_type = if self.is_filedesc() {
            self.content_type.as_str()
        } else {
            "application/http;msgtype=response"
        };
        fields.push(field("Content-Type", content_type));
        // warcio reads a block shorter than the lines its header took as empty.
        let length = self.length.saturating_sub(extra);
        fields.push(field("Content-Length", &length.to_string()));
        fields
    }
}

/// Parses an ARC v1 header line (without its newline). `None` when it is not one: fewer than
/// five fields or a date that is not at least 14 digits.
pub(crate) fn parse_header_line(line: &str) -> Option<ArcHeader> {
    let mut parts: Vec<&str> = line.rsplitn(5, ' ').collect();
    if parts.len() != 5 {
        return None;
    }
    parts.reverse();
    let date = parts[2];
    if date.len() < 14 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // warcio reads a negative or unreadable length as 0 (an empty record), not as damage.
    let length = parts[4].parse::<u64>().unwrap_or(0);
    if parts[0].is_empty() {
        return None;
    }
    Some(ArcHeader {
        url: parts[0].to_string(),
        ip: parts[1].to_string(),
        date: date[..14].to_string(),
        content_type: parts[3].to_string(),
        length,
    })
}

/// `YYYYMMDDhhmmss` → `YYYY-MM-DDThh:mm:ssZ`.
fn iso_date(d: &str) -> String {
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &d[0..4],
        &d[4..6],
        &d[6..8],
        &d[8..10],
        &d[10..12],
        &d[12..14]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_split_from_the_right() {
        let h = parse_header_line(
            "http://www.example.com/a b.html 93.184.216.34 20120101120000 text/html 1234",
        )
        .unwrap();
        assert_eq!(h.url, "http://www.example.com/a b.html");
        assert_eq!(h.ip, "93.184.216.34");
        assert_eq!(h.length, 1234);
        let f = h.warc_fields(0);
        assert!(f.contains(&("WARC-Date".into(), "2012-01-01T12:00:00Z".into())));
        assert!(f.contains(&("WARC-Type".into(), "response".into())));
        assert!(f.contains(&(
            "Content-Type".into(),
            "application/http;msgtype=response".into()
        )));
    }

    #[test]
    fn the_version_block_becomes_warcinfo_without_its_two_lines() {
        let h = parse_header_line("filedesc://x.arc 0.0.0.0 20120101120000 text/plain 76").unwrap();
        assert!(h.is_filedesc());
        let f = h.warc_fields(70);
        assert!(f.contains(&("WARC-Type".into(), "warcinfo".into())));
        assert!(f.contains(&("WARC-Filename".into(), "x.arc".into())));
        assert!(f.contains(&("Content-Length".into(), "6".into())));
    }

    #[test]
    fn bad_lengths_read_as_empty_records() {
        for line in [
            "u 1.2.3.4 20140401000000 text/html -1",
            "u 1.2.3.4 20140401000000 x abc",
        ] {
            assert_eq!(parse_header_line(line).unwrap().length, 0, "{line}");
        }
    }

    #[test]
    fn other_lines_are_not_arc_headers() {
        for line in [
            "hello world",
            "HTTP/1.1 200 OK",
            "a b 2012 text/html 5",
            "one two three four five six",
        ] {
            assert_eq!(parse_header_line(line), None, "{line}");
        }
    }
}
