//! The bytes of a WARC file as the reader walks them: [`Source`] (the file through a large
//! buffer, counting the offset of every byte consumed, able to search forward when
//! resynchronising after damage) and [`Member`] (the inflated bytes of one gzip member, with
//! the inflate state reused from member to member and its CRC and size checked at the end).
//! [`find_member_end`] finds where a member ends without inflating it (skimming).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::{Crc, Decompress, FlushDecompress, Status};

use crate::warc::head::{is_py_space_byte, MAX_LINE};

/// Read buffer over the file: large, because inflating is the hot loop.
pub(crate) const INPUT_BUF: usize = 256 * 1024;

/// Bytes [`Source::find`] looks through per step.
const FIND_STEP: usize = 4096;

/// Inflated bytes handed out per step, at most.
pub(crate) const OUTPUT_BUF: usize = 64 * 1024;

/// Inflated bytes of the first step of a member. Steps double from here, so reading the
/// headers inflates little more than the headers (the rest may be skimmed, not inflated).
pub(crate) const FIRST_STEP: usize = 1024;

/// The file, read through a large buffer, counting the bytes consumed (the offset of the next
/// byte), and able to jump to another offset when resynchronising after damage.
pub(crate) struct Source {
    pub(crate) inner: BufReader<File>,
    pub(crate) pos: u64,
    /// The first error the file itself gave (a failing disk, even an interrupted read), as
    /// opposed to damaged bytes: the walker stops on it instead of skipping on as if the data
    /// were bad, so that crash recovery never cuts good records after a read error.
    pub(crate) failed: Option<io::Error>,
}

impl Source {
    pub(crate) fn open(path: &Path) -> io::Result<Source> {
        let file = File::open(path)?;
        if file.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a directory",
            ));
        }
        Ok(Source {
            inner: BufReader::with_capacity(INPUT_BUF, file),
            pos: 0,
            failed: None,
        })
    }

    /// Keeps `e` as the file's failure (the first one) and hands on an error like it.
    fn fail(&mut self, e: io::Error) -> io::Error {
        let like = io::Error::new(e.kind(), e.to_string());
        self.failed.get_or_insert(e);
        like
    }

    pub(crate) fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        let delta = i128::from(pos) - i128::from(self.pos);
        let moved = match i64::try_from(delta) {
            // Keeps what is buffered when the target lies within it, backwards too: the search
            // after damage steps back a little from where a failed record stopped, once per
            // false start, and re-reading the buffer each time made that quadratic.
            Ok(relative) => self.inner.seek_relative(relative),
            Err(_) => self.inner.seek(SeekFrom::Start(pos)).map(drop),
        };
        moved.map_err(|e| self.fail(e))?;
        self.pos = pos;
        Ok(())
    }

    /// What is buffered at the current offset (empty at the end of the file).
    pub(crate) fn peek(&mut self) -> io::Result<&[u8]> {
        self.fill_buf()
    }

    /// The offset of the next occurrence of `pattern` at or after `from` (at a line start when
    /// `line_start`), leaving the source there; `None` at the end of the file.
    pub(crate) fn find(
        &mut self,
        from: u64,
        pattern: &[u8],
        line_start: bool,
    ) -> io::Result<Option<u64>> {
        self.seek_to(from)?;
        let mut prev_newline = from == 0;
        if from > 0 && line_start {
            self.seek_to(from - 1)?;
            let mut one = [0u8; 1];
            self.read_exact(&mut one)?;
            prev_newline = one[0] == b'\n';
        }
        let mut window: Vec<u8> = Vec::with_capacity(FIND_STEP + pattern.len());
        let mut window_start = self.pos;
        loop {
            let buf = self.fill_buf()?;
            if buf.is_empty() {
                return Ok(None);
            }
            // A step at a time, not the whole buffer: the match is usually near, and the
            // step back to it then stays inside the buffer.
            let n = buf.len().min(FIND_STEP);
            window.extend_from_slice(&buf[..n]);
            self.consume(n);
            for i in 0..window.len().saturating_sub(pattern.len() - 1) {
                let at_line = if i == 0 {
                    prev_newline
                } else {
                    window[i - 1] == b'\n'
                };
                if window[i..].starts_with(pattern) && (!line_start || at_line) {
                    let found = window_start + i as u64;
                    self.seek_to(found)?;
                    return Ok(Some(found));
                }
            }
            let keep = pattern.len() - 1;
            let cut = window.len() - keep.min(window.len());
            if cut > 0 {
                prev_newline = window[cut - 1] == b'\n';
            }
            window.drain(..cut);
            window_start += cut as u64;
        }
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.pos += n as u64;
                Ok(n)
            }
            Err(e) => Err(self.fail(e)),
        }
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if let Err(e) = self.inner.fill_buf() {
            return Err(self.fail(e));
        }
        Ok(self.inner.buffer())
    }
    fn consume(&mut self, amt: usize) {
        self.pos += amt as u64;
        self.inner.consume(amt);
    }
}

/// Inflate state and output buffer, reused from member to member.
pub(crate) struct Inflater {
    pub(crate) z: Decompress,
    pub(crate) crc: Crc,
    pub(crate) out: Vec<u8>,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) done: bool,
    /// Output room of the next step.
    pub(crate) step: usize,
}

impl Inflater {
    pub(crate) fn new() -> Inflater {
        Inflater {
            z: Decompress::new(false),
            crc: Crc::new(),
            out: vec![0; OUTPUT_BUF],
            start: 0,
            end: 0,
            done: false,
            step: FIRST_STEP,
        }
    }

    /// Inflated bytes of this member handed out so far.
    pub(crate) fn out_pos(&self) -> u64 {
        self.z.total_out() - (self.end - self.start) as u64
    }

    pub(crate) fn reset(&mut self) {
        self.z.reset(false);
        self.crc.reset();
        self.start = 0;
        self.end = 0;
        self.done = false;
        self.step = FIRST_STEP;
    }
}

pub(crate) fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

pub(crate) fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the file ends inside this gzip member (truncated)",
    )
}

/// Reads a gzip member header (RFC 1952). `Ok(false)` at the end of the file.
pub(crate) fn read_gzip_header(src: &mut Source) -> io::Result<bool> {
    if src.peek()?.is_empty() {
        return Ok(false);
    }
    let mut fixed = [0u8; 10];
    src.read_exact(&mut fixed).map_err(|_| truncated())?;
    if fixed[..3] != [0x1f, 0x8b, 0x08] {
        return Err(invalid(format!(
            "not a gzip member (starts with {:02x} {:02x} {:02x})",
            fixed[0], fixed[1], fixed[2]
        )));
    }
    let flags = fixed[3];
    if flags & 0xe0 != 0 {
        return Err(invalid("gzip header with reserved flags set"));
    }
    if flags & 0x04 != 0 {
        let mut len = [0u8; 2];
        src.read_exact(&mut len).map_err(|_| truncated())?;
        let len = u64::from(u16::from_le_bytes(len));
        let skipped = io::copy(&mut Read::take(&mut *src, len), &mut io::sink())?;
        if skipped != len {
            return Err(truncated());
        }
    }
    for flag in [0x08, 0x10] {
        if flags & flag != 0 {
            let mut text = Vec::new();
            Read::take(&mut *src, MAX_LINE).read_until(0, &mut text)?;
            if text.last() != Some(&0) {
                return Err(invalid("gzip header name or comment not terminated"));
            }
        }
    }
    if flags & 0x02 != 0 {
        let mut crc = [0u8; 2];
        src.read_exact(&mut crc).map_err(|_| truncated())?;
    }
    Ok(true)
}

/// The inflated bytes of one gzip member; its CRC and size are checked at its end, after which
/// it reads as empty.
pub(crate) struct Member<'a> {
    pub(crate) src: &'a mut Source,
    pub(crate) inf: &'a mut Inflater,
}

impl Member<'_> {
    /// Inflates the next piece into the output buffer.
    pub(crate) fn inflate_some(&mut self) -> io::Result<()> {
        let inf = &mut *self.inf;
        let input = self.src.fill_buf()?;
        if input.is_empty() {
            return Err(truncated());
        }
        let (in0, out0) = (inf.z.total_in(), inf.z.total_out());
        let room = inf.step;
        inf.step = (inf.step * 2).min(OUTPUT_BUF);
        let status = inf
            .z
            .decompress(input, &mut inf.out[..room], FlushDecompress::None)
            .map_err(|e| invalid(format!("corrupt deflate data: {e}")))?;
        let used = (inf.z.total_in() - in0) as usize;
        let made = (inf.z.total_out() - out0) as usize;
        self.src.consume(used);
        inf.crc.update(&inf.out[..made]);
        inf.start = 0;
        inf.end = made;
        match status {
            Status::StreamEnd => self.finish(),
            _ if used == 0 && made == 0 => Err(invalid("deflate data makes no progress")),
            _ => Ok(()),
        }
    }

    /// Reads and checks the 8-byte trailer (CRC-32 and size of the inflated data).
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        let mut trailer = [0u8; 8];
        self.src.read_exact(&mut trailer).map_err(|_| truncated())?;
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        if crc != self.inf.crc.sum() || size != self.inf.z.total_out() as u32 {
            return Err(invalid("gzip member fails its CRC or size check"));
        }
        self.inf.done = true;
        Ok(())
    }

    /// Inflates the rest of the member; says whether anything but whitespace was left, and
    /// whether that looks like another record.
    pub(crate) fn drain(&mut self) -> io::Result<Leftover> {
        let mut left = Leftover::default();
        loop {
            let buf = self.fill_buf()?;
            if buf.is_empty() {
                return Ok(left);
            }
            if !left.data {
                if let Some(i) = buf.iter().position(|&b| !is_py_space_byte(b)) {
                    left.data = true;
                    left.record = buf[i..].starts_with(b"WARC/");
                }
            }
            let n = buf.len();
            self.consume(n);
        }
    }
}

/// What followed a record inside its gzip member.
#[derive(Default)]
pub(crate) struct Leftover {
    /// Something other than the blank lines that end a record.
    pub(crate) data: bool,
    /// …and it starts like a WARC record.
    pub(crate) record: bool,
}

impl Read for Member<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Member<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.inf.start == self.inf.end && !self.inf.done {
            self.inflate_some()?;
        }
        Ok(&self.inf.out[self.inf.start..self.inf.end])
    }
    fn consume(&mut self, amt: usize) {
        self.inf.start = (self.inf.start + amt).min(self.inf.end);
    }
}

/// The first index in `window` preceded by `size` (a gzip trailer's size field) and followed by
/// a gzip member's magic bytes.
pub(crate) fn find_member_end(window: &[u8], size: [u8; 4]) -> Option<usize> {
    let n = window.len();
    let mut i = 4;
    while i + 3 <= n {
        let next = find_byte(&window[i..n - 2], 0x1f)? + i;
        if window[next + 1] == 0x8b && window[next + 2] == 0x08 && window[next - 4..next] == size {
            return Some(next);
        }
        i = next + 1;
    }
    None
}

/// The first `byte` in `hay`, eight bytes at a time (this scan is most of what skimming
/// costs).
pub(crate) fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(byte);
    let mut chunks = hay.chunks_exact(8);
    for (k, chunk) in chunks.by_ref().enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        if x.wrapping_sub(LOW) & !x & HIGH != 0 {
            return chunk.iter().position(|&b| b == byte).map(|j| k * 8 + j);
        }
    }
    let done = hay.len() - chunks.remainder().len();
    chunks
        .remainder()
        .iter()
        .position(|&b| b == byte)
        .map(|j| done + j)
}

/// Reads up to `buf.len()` bytes at `offset` (fewer only at the end of the file).
pub(crate) fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
