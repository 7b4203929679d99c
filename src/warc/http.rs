//! The HTTP message inside a response record: where its head ends. Its own file because the
//! record writer (which stores a revisit's head) and the checks of what callers hand the writer
//! (`check`) both need it, and neither should import the other for it.

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
