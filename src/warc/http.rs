//! The HTTP message inside a response record: where its head ends, and what its header fields
//! say (one field's value; chunked or not), for every reader of a recorded answer (the offline
//! tools, a re-crawl's earlier captures). Its own file because the record writer (which stores
//! a revisit's head) and the checks of what callers hand the writer (`check`) both need it, and
//! neither should import the other for it.

/// The HTTP status line and headers at the start of `response`, up to and including the blank
/// line that ends them (CRLF CRLF, or a bare LF LF from sloppy servers); `None` if `response`
/// holds no complete head. A revisit stores exactly this.
pub fn http_head(response: &[u8]) -> Option<&[u8]> {
    let mut line_start = 0;
    for (i, &b) in response.iter().enumerate() {
        if b != b'\n' {
            continue;
        }
        let blank = matches!(&response[line_start..i], b"" | b"\r");
        if blank {
            // A blank first line is no status line: not a head at all.
            return (line_start > 0).then(|| &response[..=i]);
        }
        line_start = i + 1;
    }
    None
}

/// The value of the first header field `name` (any case) of an HTTP head, trimmed.
pub fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// Whether the HTTP head says `Transfer-Encoding: chunked`.
pub fn is_chunked(head: &str) -> bool {
    head.lines().skip(1).any(|l| {
        l.split_once(':').is_some_and(|(n, v)| {
            n.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
        })
    })
}
