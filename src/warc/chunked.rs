//! Chunked transfer coding (RFC 9112 §7.1) taken off a body as it streams by: the one
//! dechunker for the tools that read HTTP messages back out of WARC records (`verify`'s payload
//! digests, `diff` and `wacz` through `commands::http`) and for the tests' HTTP clients. The
//! crawler's own fetcher leaves this to hyper.

/// The body without its chunked framing, and whether the framing held (the last chunk was
/// seen). A body that is not chunked after all (some recorders store it de-chunked under a
/// head that still says chunked) comes back as it is, its framing taken as sound.
pub fn dechunk(body: &[u8]) -> (Vec<u8>, bool) {
    let mut d = Dechunker::default();
    let mut out = Vec::with_capacity(body.len());
    d.feed(body, |piece| out.extend_from_slice(piece));
    // Not one chunk found (not even a size line ended): the body was never chunked.
    if d.unframed() || (!d.complete() && d.data == 0) {
        return (body.to_vec(), true);
    }
    (out, d.complete())
}

/// Removes chunked framing from a stream fed piece by piece.
#[derive(Default)]
pub struct Dechunker {
    state: ChunkState,
    size_line: Vec<u8>,
    /// Chunk data seen so far (a body broken before any is not chunked at all).
    data: u64,
}

#[derive(Default, PartialEq, Eq)]
enum ChunkState {
    /// Reading a chunk-size line.
    #[default]
    Size,
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// The CRLF after chunk data.
    DataEnd,
    /// After the last chunk: trailers, until an empty line.
    Trailer,
    Done,
    Broken,
}

impl Dechunker {
    pub fn feed(&mut self, mut input: &[u8], mut out: impl FnMut(&[u8])) {
        while !input.is_empty() {
            match self.state {
                ChunkState::Size | ChunkState::Trailer => {
                    let Some(nl) = input.iter().position(|&b| b == b'\n') else {
                        self.size_line.extend_from_slice(input);
                        if self.size_line.len() > 4096 {
                            self.state = ChunkState::Broken;
                        }
                        return;
                    };
                    self.size_line.extend_from_slice(&input[..nl]);
                    input = &input[nl + 1..];
                    let line = String::from_utf8_lossy(&self.size_line).trim().to_string();
                    self.size_line.clear();
                    if self.state == ChunkState::Trailer {
                        if line.is_empty() {
                            self.state = ChunkState::Done;
                        }
                        continue;
                    }
                    let hex = line.split(';').next().unwrap_or("").trim();
                    self.state = match u64::from_str_radix(hex, 16) {
                        Ok(0) => ChunkState::Trailer,
                        Ok(n) => ChunkState::Data(n),
                        Err(_) => ChunkState::Broken,
                    };
                }
                ChunkState::Data(left) => {
                    let n = (left.min(input.len() as u64)) as usize;
                    out(&input[..n]);
                    self.data += n as u64;
                    input = &input[n..];
                    self.state = if left == n as u64 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - n as u64)
                    };
                }
                ChunkState::DataEnd => {
                    let Some(nl) = input.iter().position(|&b| b == b'\n') else {
                        if input.iter().any(|&b| b != b'\r') {
                            self.state = ChunkState::Broken;
                        }
                        return;
                    };
                    if input[..nl].iter().any(|&b| b != b'\r') {
                        self.state = ChunkState::Broken;
                        return;
                    }
                    input = &input[nl + 1..];
                    self.state = ChunkState::Size;
                }
                // Anything after the end is not payload (as warcio's and our fetcher's
                // reading of a chunked body stops there).
                ChunkState::Done | ChunkState::Broken => return,
            }
        }
    }

    /// The last chunk was seen (a body cut before it counts as broken framing).
    pub fn complete(&self) -> bool {
        matches!(self.state, ChunkState::Done | ChunkState::Trailer)
    }

    /// The body does not start with a chunk at all: stored de-chunked although the head still
    /// says chunked (some recorders do this).
    pub fn unframed(&self) -> bool {
        self.state == ChunkState::Broken && self.data == 0
    }
}

/// The body without its chunked framing when the framing is whole (the last chunk seen);
/// `None` otherwise. For readers that must not guess, such as a test's HTTP client.
pub fn dechunk_strict(body: &[u8]) -> Option<Vec<u8>> {
    let mut d = Dechunker::default();
    let mut out = Vec::with_capacity(body.len());
    d.feed(body, |piece| out.extend_from_slice(piece));
    d.complete().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(pieces: &[&[u8]]) -> (Vec<u8>, bool) {
        let mut d = Dechunker::default();
        let mut out = Vec::new();
        for p in pieces {
            d.feed(p, |b| out.extend_from_slice(b));
        }
        (out, d.complete())
    }

    #[test]
    fn chunks_are_unframed_however_the_input_is_cut() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(feed(&[body]), (b"hello, world".to_vec(), true));
        let pieces: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(feed(&pieces), (b"hello, world".to_vec(), true));
        assert!(!feed(&[b"5\r\nhel"]).1);
        assert!(!feed(&[b"zz\r\nhello\r\n0\r\n\r\n"]).1);
    }

    #[test]
    fn a_body_stored_without_its_chunks_comes_back_as_it_is() {
        assert_eq!(dechunk(b"<p>plain</p>"), (b"<p>plain</p>".to_vec(), true));
        assert_eq!(dechunk(b"3\r\nabc\r\n0\r\n\r\n"), (b"abc".to_vec(), true));
        assert_eq!(dechunk(b"5\r\nabc"), (b"abc".to_vec(), false));
    }

    #[test]
    fn strict_reading_wants_the_last_chunk() {
        assert_eq!(
            dechunk_strict(b"3\r\nabc\r\n0\r\n\r\n"),
            Some(b"abc".to_vec())
        );
        assert_eq!(dechunk_strict(b"5\r\nabc"), None);
        assert_eq!(dechunk_strict(b"<p>plain</p>"), None);
    }
}
