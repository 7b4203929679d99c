//! [`MemberWriter`]: one gzip member (RFC 1952) per record, made with compressor states and
//! buffers kept for the life of the writer.
//!
//! Nearly every record is small (a request, a page of a few KB), and for a small input the set-up
//! of a deflate stream costs more than compressing it: zlib's reset clears a 128 KB hash table and
//! builds its Huffman trees per block. So a member of at most [`WHOLE_MAX`] bytes is gathered and
//! compressed in one call by libdeflate, which for the ~800-byte records of a many-sites crawl
//! took about half zlib-rs's time at the same size (64.6% of the input at level 6 for both;
//! tools/bench/RESULTS.md, "Many sites: one async worker"). A bigger member (a large page or file, which may be spooled on
//! disk) streams through zlib's deflate instead, so no record is ever held whole in memory. Both
//! write plain DEFLATE behind the same header and trailer, so readers see no difference.

use std::io::{self, Write};

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// The member header: deflate, no flags, no time, no extra flags, OS "unknown". The same
/// ten bytes `flate2`'s `GzEncoder` writes at the default level.
const HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff];

/// Members up to this many uncompressed bytes are compressed whole; bigger ones stream.
const WHOLE_MAX: usize = 256 * 1024;

/// Members up to this many uncompressed bytes (a request, a revisit, a small answer: nearly
/// every record of a many-sites crawl) are compressed at libdeflate's level 1. At that size
/// level 6 finds almost nothing more: on the records of the nginx many-sites bench (730-980
/// bytes, WARC and HTTP heads) 0.612 of the input at level 1 against 0.611 at level 6, on
/// slices of this repository's prose 1.1% bigger at most; and level 1 took 26% less time
/// (6.6 against 9.0 us a record). Bigger members, where the levels differ, stay at level 6.
const FAST_MAX: usize = 2048;

/// Compressed bytes gathered before they go to the file (a big record is written in pieces
/// of about this size, a small one at once).
const FLUSH_AT: usize = 256 * 1024;

/// Room added to the output buffer before each deflate step.
const STEP_ROOM: usize = 64 * 1024;

/// A reusable gzip member encoder.
pub(super) struct MemberWriter {
    /// The member so far, while it is small enough to be compressed whole.
    whole: Vec<u8>,
    /// Compresses a small member in one call (level 6, as zlib's default).
    one_shot: libdeflater::Compressor,
    /// Compresses a member of at most [`FAST_MAX`] bytes in one call (level 1).
    fast: libdeflater::Compressor,
    /// Streams a big member.
    z: Compress,
    /// The member outgrew [`WHOLE_MAX`]: it goes through `z`.
    streaming: bool,
    crc: Crc,
    out: Vec<u8>,
    /// Compressed bytes of the current member already handed to the file.
    flushed: u64,
}

impl MemberWriter {
    pub(super) fn new() -> MemberWriter {
        MemberWriter {
            whole: Vec::new(),
            one_shot: libdeflater::Compressor::new(libdeflater::CompressionLvl::default()),
            // Level 1: libdeflate's "fastest" is 0, which stores without compressing.
            fast: libdeflater::Compressor::new(
                libdeflater::CompressionLvl::new(1).unwrap_or_default(),
            ),
            z: Compress::new(Compression::default(), false),
            streaming: false,
            crc: Crc::new(),
            out: Vec::with_capacity(FLUSH_AT + STEP_ROOM),
            flushed: 0,
        }
    }

    /// Starts a member: the state is reset whatever the last member left (an error may have
    /// cut it short).
    pub(super) fn begin(&mut self) {
        self.whole.clear();
        self.streaming = false;
        self.crc.reset();
        self.out.clear();
        self.out.extend_from_slice(&HEADER);
        self.flushed = 0;
    }

    /// Adds `data` to the member: gathered while the member is small, else compressed and
    /// written to `file` whenever enough has gathered.
    pub(super) fn add(&mut self, data: &[u8], file: &mut impl Write) -> io::Result<()> {
        self.crc.update(data);
        if !self.streaming {
            if self.whole.len() + data.len() <= WHOLE_MAX {
                self.whole.extend_from_slice(data);
                return Ok(());
            }
            // Too big to hold: what was gathered goes first into the stream.
            self.streaming = true;
            self.z.reset();
            let held = std::mem::take(&mut self.whole);
            let streamed = self.stream(&held, file);
            self.whole = held;
            self.whole.clear();
            streamed?;
        }
        self.stream(data, file)
    }

    /// Ends the member (the compressed data, then CRC-32 and size) and writes what is left;
    /// returns the member's length in bytes.
    pub(super) fn finish(&mut self, file: &mut impl Write) -> io::Result<u64> {
        if self.streaming {
            while self.deflate(&[], FlushCompress::Finish)? != Status::StreamEnd {}
        } else {
            self.compress_whole()?;
        }
        self.out.extend_from_slice(&self.crc.sum().to_le_bytes());
        // ISIZE is the length modulo 2^32 (RFC 1952), as the CRC's byte count keeps it.
        self.out.extend_from_slice(&self.crc.amount().to_le_bytes());
        self.flush(file)?;
        Ok(self.flushed)
    }

    /// Compresses the gathered member in one call, after the header in `out`.
    fn compress_whole(&mut self) -> io::Result<()> {
        let start = self.out.len();
        let compressor = if self.whole.len() <= FAST_MAX {
            &mut self.fast
        } else {
            &mut self.one_shot
        };
        let bound = compressor.deflate_compress_bound(self.whole.len());
        self.out.resize(start + bound, 0);
        let made = compressor
            .deflate_compress(&self.whole, &mut self.out[start..])
            .map_err(|e| io::Error::other(format!("deflate: {e:?}")))?;
        self.out.truncate(start + made);
        Ok(())
    }

    /// Streams `data` through zlib's deflate, writing to `file` whenever enough has gathered.
    fn stream(&mut self, data: &[u8], file: &mut impl Write) -> io::Result<()> {
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

    /// Text that compresses like a web page: words from a small vocabulary, some markup.
    fn page_like(len: usize) -> Vec<u8> {
        let words = [
            "<p>",
            "the",
            "archive",
            "of",
            "pages",
            "</p>\n",
            "a",
            "crawler",
            "<a href=\"/x\">",
        ];
        let mut out = Vec::with_capacity(len + 16);
        let mut i = 7usize;
        while out.len() < len {
            i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345) % 1_000_003;
            out.extend_from_slice(words[i % words.len()].as_bytes());
            out.push(b' ');
        }
        out.truncate(len);
        out
    }

    fn gz_encoder(text: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(text).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn members_read_back_whole_or_streamed() {
        let mut w = MemberWriter::new();
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
            .collect();
        let edge = page_like(WHOLE_MAX);
        let over = page_like(WHOLE_MAX + 1);
        let texts: [&[u8]; 6] = [
            b"",
            b"WARC/1.1\r\n\r\n",
            &edge,
            &over,
            &data,
            &page_like(3_000_000),
        ];
        for text in texts {
            let got = member(&mut w, &[text]);
            assert_eq!(got[..10], gz_encoder(text)[..10], "the header");
            assert_eq!(inflate(&got), text, "{} bytes", text.len());
        }
        // Pieces that cross the limit: the gathered part goes into the stream first.
        let halves = member(&mut w, &[&data[..150_000], &data[150_000..]]);
        assert_eq!(inflate(&halves), data);
        let many: Vec<&[u8]> = over.chunks(1000).collect();
        assert_eq!(inflate(&member(&mut w, &many)), over);
    }

    #[test]
    fn small_members_are_no_bigger_than_zlibs() {
        // Real text: this repository's benchmark diary and two manual pages (about 100 KB), in
        // slices of a request's, a page's and a big page's size.
        let prose = [
            include_bytes!("../../tools/bench/RESULTS.md").as_slice(),
            include_bytes!("../../docs/design.md"),
            include_bytes!("../../docs/crawling.md"),
        ]
        .concat();
        let mut w = MemberWriter::new();
        for len in [800, 5_000, 60_000, WHOLE_MAX] {
            let text = &prose[..len.min(prose.len())];
            let ours = member(&mut w, &[text]).len();
            let zlib = gz_encoder(text).len();
            assert!(
                ours <= zlib + zlib / 50,
                "{len} bytes: {ours} against zlib's {zlib}"
            );
        }
    }

    #[test]
    fn a_member_cut_short_leaves_nothing_for_the_next() {
        let mut w = MemberWriter::new();
        let mut sink = Vec::new();
        // Cut short while gathered, then while streaming: the next members start clean.
        for cut in [100_000, WHOLE_MAX + 10_000] {
            w.begin();
            w.add(&vec![7u8; cut], &mut sink).unwrap();
            let two = [
                member(&mut w, &[b"one ", b"record"]),
                member(&mut w, &[b"two"]),
            ]
            .concat();
            assert_eq!(inflate(&two), b"one recordtwo");
        }
    }
}
