//! [`MemberWriter`]: one gzip member (RFC 1952) per record, made with one deflate state and
//! one output buffer kept for the life of the writer.
//!
//! A fresh `GzEncoder` per record allocates and clears its deflate window and hash tables
//! (a few hundred KB) and writes its header, each output piece and its trailer as separate
//! system calls. Most records are a few KB, so that set-up was most of their cost. Here the
//! state is reset, not rebuilt, and a small member reaches the file in one `write`.

use std::io::{self, Write};

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// The member header: deflate, no flags, no time, no extra flags, OS "unknown". The same
/// ten bytes `flate2`'s `GzEncoder` writes at the default level, so files do not change.
const HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff];

/// Compressed bytes gathered before they go to the file (a big record is written in pieces
/// of about this size, a small one at once).
const FLUSH_AT: usize = 256 * 1024;

/// Room added to the output buffer before each deflate step.
const STEP_ROOM: usize = 64 * 1024;

/// A reusable gzip member encoder.
pub(super) struct MemberWriter {
    z: Compress,
    crc: Crc,
    out: Vec<u8>,
    /// Compressed bytes of the current member already handed to the file.
    flushed: u64,
}

impl MemberWriter {
    pub(super) fn new() -> MemberWriter {
        MemberWriter {
            z: Compress::new(Compression::default(), false),
            crc: Crc::new(),
            out: Vec::with_capacity(FLUSH_AT + STEP_ROOM),
            flushed: 0,
        }
    }

    /// Starts a member: the state is reset whatever the last member left (an error may have
    /// cut it short).
    pub(super) fn begin(&mut self) {
        self.z.reset();
        self.crc.reset();
        self.out.clear();
        self.out.extend_from_slice(&HEADER);
        self.flushed = 0;
    }

    /// Compresses `data` into the member, writing to `file` whenever enough has gathered.
    pub(super) fn add(&mut self, data: &[u8], file: &mut impl Write) -> io::Result<()> {
        self.crc.update(data);
        let mut input = data;
        while !input.is_empty() {
            let before = self.z.total_in();
            self.deflate(input, FlushCompress::None)?;
            let used = (self.z.total_in() - before) as usize;
            input = &input[used..];
            if self.out.len() >= FLUSH_AT {
                self.flush(file)?;
            }
        }
        Ok(())
    }

    /// Ends the member (deflate's last block, then CRC-32 and size) and writes what is left;
    /// returns the member's length in bytes.
    pub(super) fn finish(&mut self, file: &mut impl Write) -> io::Result<u64> {
        loop {
            if self.deflate(&[], FlushCompress::Finish)? == Status::StreamEnd {
                break;
            }
        }
        self.out.extend_from_slice(&self.crc.sum().to_le_bytes());
        // ISIZE is the length modulo 2^32 (RFC 1952), as the CRC's byte count keeps it.
        self.out.extend_from_slice(&self.crc.amount().to_le_bytes());
        self.flush(file)?;
        Ok(self.flushed)
    }

    /// One deflate step into the spare room of the output buffer.
    fn deflate(&mut self, input: &[u8], flush: FlushCompress) -> io::Result<Status> {
        self.out.reserve(STEP_ROOM);
        self.z
            .compress_vec(input, &mut self.out, flush)
            .map_err(io::Error::other)
    }

    fn flush(&mut self, file: &mut impl Write) -> io::Result<()> {
        file.write_all(&self.out)?;
        self.flushed += self.out.len() as u64;
        self.out.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::MultiGzDecoder;
    use flate2::write::GzEncoder;
    use std::io::Read;

    fn member(w: &mut MemberWriter, parts: &[&[u8]]) -> Vec<u8> {
        let mut file = Vec::new();
        w.begin();
        for p in parts {
            w.add(p, &mut file).unwrap();
        }
        let n = w.finish(&mut file).unwrap();
        assert_eq!(n, file.len() as u64);
        file
    }

    fn inflate(member: &[u8]) -> Vec<u8> {
        let mut text = Vec::new();
        MultiGzDecoder::new(member).read_to_end(&mut text).unwrap();
        text
    }

    #[test]
    fn members_read_back_and_small_ones_are_gz_encoders_bytes() {
        let mut w = MemberWriter::new();
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
            .collect();
        for text in [&b""[..], b"WARC/1.1\r\n\r\n", &data] {
            let mut enc = GzEncoder::new(Vec::new(), Compression::default());
            enc.write_all(text).unwrap();
            let expected = enc.finish().unwrap();
            let got = member(&mut w, &[text]);
            assert_eq!(got[..10], expected[..10], "the header");
            assert_eq!(inflate(&got), text, "{} bytes", text.len());
            if text.len() < 1000 {
                assert_eq!(got, expected);
            }
        }
        let halves = member(&mut w, &[&data[..150_000], &data[150_000..]]);
        assert_eq!(inflate(&halves), data);
    }

    #[test]
    fn a_member_cut_short_leaves_nothing_for_the_next() {
        let mut w = MemberWriter::new();
        let mut sink = Vec::new();
        w.begin();
        w.add(&[7u8; 100_000], &mut sink).unwrap();
        // No finish: the next member starts clean.
        let two = [
            member(&mut w, &[b"one ", b"record"]),
            member(&mut w, &[b"two"]),
        ]
        .concat();
        assert_eq!(inflate(&two), b"one recordtwo");
    }
}
