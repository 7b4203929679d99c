//! Content-Encoding decoding of a response body, for link extraction only.

use std::io::{Cursor, Read};

use super::attr::is_ascii_ws;

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

/// [`decode_body`] of a body in memory: one without Content-Encoding is its own first `cap`
/// bytes, copied without a reader (the usual page).
pub fn decode_slice(content_encoding: Option<&str>, body: &[u8], cap: usize) -> Decoded {
    match content_encoding {
        None => Decoded {
            bytes: body[..body.len().min(cap)].to_vec(),
            capped: body.len() > cap,
            error: None,
        },
        Some(_) => decode_body(content_encoding, body, cap),
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
pub(super) fn read_head(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
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
