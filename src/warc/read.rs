//! The one reader of WARC and ARC files (gzip per record, or plain): a member walker that hands
//! every record to a [`Visitor`] (its head, then its block as a stream), in the manner of
//! warcio's `ArchiveIterator`. `archiver index`, `optout`, `diff`, `verify`, `wacz` and crash
//! recovery (`recover.rs`) read through it.
//!
//! A CDXJ line needs the offset and the *compressed* length of its record, which one
//! `MultiGzDecoder` over the file hides, so the walker reads one gzip member at a time and
//! counts the compressed bytes each takes (see [`crate::warc::member`]). Nothing is held whole
//! in memory: a record's block streams through the visitor and the rest is skipped, or with
//! [`walk_skimming`] not even inflated.
//!
//! Damaged input is reported, never fatal for the rest of the file: a corrupt or truncated
//! member is reported with its offset and the walk resumes at the next gzip member (or `WARC/`
//! line) found after it. A read error of the file itself (the disk, not the data) ends the walk
//! with that error instead, so no user takes good records for damaged ones.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use crate::warc::head::{is_py_space_byte, read_head, HeadRead, WarcHead};
use crate::warc::member::{
    find_member_end, read_at_most, read_gzip_header, Inflater, Member, Source,
};

/// Blocks of a plain WARC with at least this much left unread are skipped by a seek rather
/// than read (see [`walk_skimming`]; gzip members are skimmed whatever is left).
const SKIM_MIN: u64 = 2 * 1024;

/// Input bytes an inflater may have taken in without using them yet (a 64-bit bit buffer).
const HELD_INPUT: u64 = 8;

/// Compressed bytes looked at per read while skimming.
const SKIM_CHUNK: usize = 1024 * 1024;

/// Why a whole file could not be indexed (damage inside a file is a [`Problem`] instead).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: not a WARC or ARC file (it starts with {start:?})", .path.display())]
    NotWarc { path: PathBuf, start: String },
    #[error(
        "{}: the gzip member at offset {offset} holds more than one record, so records have no \
         offsets of their own; recompress it one member per record (`warcio recompress`)",
        .path.display()
    )]
    NotPerRecordGzip { path: PathBuf, offset: u64 },
    #[error("{}: no record starts at offset {offset}: {message}", .path.display())]
    NoRecordAt {
        path: PathBuf,
        offset: u64,
        message: String,
    },
}

/// Damage found inside a file: where, and what. The walk went on after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub offset: u64,
    pub message: String,
    /// The record's block stops at the end of the file (or of its gzip member) before its
    /// Content-Length says: damage, but the record is read as warcio reads it and its span
    /// (to that end) is exact, so the file can still be rewritten record by record.
    pub cut_short: bool,
}

impl Problem {
    /// Damage at `offset`.
    pub fn at(offset: u64, message: String) -> Problem {
        Problem {
            offset,
            message,
            cut_short: false,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.message)
    }
}

/// Where a record sits in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte of the record (of its gzip member in a `.warc.gz`).
    pub offset: u64,
    /// The CDXJ length: the whole gzip member, or in a plain WARC the header and block
    /// without the blank lines after it (as warcio counts it).
    pub length: u64,
    /// Where the next record starts: copying `offset..end` copies the record whole.
    pub end: u64,
}

impl Span {
    /// A record whose CDXJ length runs to where the next one starts (a gzip member).
    fn whole(offset: u64, end: u64) -> Span {
        Span {
            offset,
            length: end - offset,
            end,
        }
    }
}

/// What a walk over one file reports to its user, record by record.
pub trait Visitor {
    /// What `record` hands on to `done`.
    type Item;

    /// Reads what it needs of the record's block (at most Content-Length bytes; the walker
    /// skips the rest). An I/O error here is damage in the file: the record is dropped.
    fn record(
        &mut self,
        offset: u64,
        head: &WarcHead,
        block: &mut dyn BufRead,
    ) -> io::Result<Self::Item>;

    /// The record was read to its end without damage; `span` says where it is.
    fn done(&mut self, span: Span, head: WarcHead, item: Self::Item);

    /// Damage found; the walk goes on after it where it can.
    fn problem(&mut self, problem: Problem);
}

/// Walks every record of the WARC file at `path` (gzip per record, or plain), calling
/// `visitor` for each. Fails only when the file cannot be read at all, is not a WARC, or is
/// gzipped as one stream (then no record has an offset of its own).
pub fn walk<V: Visitor>(path: &Path, visitor: &mut V) -> Result<(), IndexError> {
    walk_with(path, visitor, false)
}

/// [`walk`], but the part of a block the visitor did not read is skipped instead of inflated
/// when that is safe to do: a gzip member ends with the size of what it holds, and the WARC
/// headers say what that size is (head + Content-Length + the closing blank lines), so the end
/// of the member is the first place after which the size field and the next member's magic
/// bytes (or the end of the file) follow. Where no such place turns up the member is inflated
/// as usual. The price: a skipped body's CRC is not checked (damage there goes unnoticed;
/// `warcio check` and [`walk`] do check it). Plain WARCs simply seek over the block.
pub fn walk_skimming<V: Visitor>(path: &Path, visitor: &mut V) -> Result<(), IndexError> {
    walk_with(path, visitor, true)
}

pub(crate) fn walk_with<V: Visitor>(
    path: &Path,
    visitor: &mut V,
    skim: bool,
) -> Result<(), IndexError> {
    walk_range(path, visitor, skim, 0, u64::MAX).map(|_| ())
}

/// Walks the records that start in `start..stop` (`start` must be where a gzip member
/// starts); returns where the walk stopped: the end of the last record read (the start of the
/// first record at or after `stop`, when it stopped there).
pub(crate) fn walk_range<V: Visitor>(
    path: &Path,
    visitor: &mut V,
    skim: bool,
    start: u64,
    stop: u64,
) -> Result<u64, IndexError> {
    let io_err = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut src = Source::open(path).map_err(io_err)?;
    src.seek_to(start).map_err(io_err)?;
    let skim = if skim {
        let file = File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        Some((file, len))
    } else {
        None
    };
    let gzip = src
        .peek()
        .map_err(|source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .starts_with(&[0x1f, 0x8b]);
    let mut walker = Walker {
        path,
        src,
        inflater: Inflater::new(),
        pending: None,
        // A walk from inside the file follows records already found.
        records: u64::from(start > 0),
        skim,
        skim_buf: vec![0; SKIM_CHUNK],
        stop,
    };
    walker.walk_records(visitor, gzip)?;
    Ok(walker.src.pos)
}

/// Reads the one record starting at `offset` (as a CDXJ line gives it): its head and up to
/// `max_block` bytes of its block.
pub fn read_record_at(
    path: &Path,
    offset: u64,
    max_block: u64,
) -> Result<(WarcHead, Vec<u8>), IndexError> {
    let io_err = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let no_record = |message: String| IndexError::NoRecordAt {
        path: path.to_path_buf(),
        offset,
        message,
    };
    let mut src = Source::open(path).map_err(io_err)?;
    src.seek_to(offset).map_err(io_err)?;
    let gzip = src.peek().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
    let mut inflater = Inflater::new();
    let mut member;
    let reader: &mut dyn BufRead = if gzip {
        read_gzip_header(&mut src).map_err(|e| no_record(e.to_string()))?;
        member = Member {
            src: &mut src,
            inf: &mut inflater,
        };
        &mut member
    } else {
        &mut src
    };
    let head = match read_head(reader).map_err(|e| no_record(e.to_string()))? {
        HeadRead::Head(head) => head,
        HeadRead::Eof => return Err(no_record("the file ends there".into())),
        HeadRead::NotWarc(line) => return Err(no_record(format!("it starts with {line:?}"))),
    };
    let limit = match head.content_length() {
        Some(Ok(n)) => n.min(max_block),
        Some(Err(e)) => return Err(no_record(e)),
        None => max_block,
    };
    let mut block = Vec::new();
    reader
        .take(limit)
        .read_to_end(&mut block)
        .map_err(|e| no_record(e.to_string()))?;
    Ok((head, block))
}

/// Reading one file.
struct Walker<'p> {
    path: &'p Path,
    src: Source,
    inflater: Inflater,
    /// Damage waiting to be reported once we know where reading resumed.
    pending: Option<Problem>,
    /// Records read so far (a damaged first record of a non-WARC file is fatal).
    records: u64,
    /// When skimming: a second handle on the file (to look ahead without moving the
    /// inflater's input) and the file's length.
    skim: Option<(File, u64)>,
    /// Look-ahead buffer of the skim.
    skim_buf: Vec<u8>,
    /// No record starting at or after this offset is read (another thread reads them).
    stop: u64,
}

/// How one attempt to read a record ended.
enum Step<I> {
    Record(Span, WarcHead, I),
    /// An empty gzip member or trailing blank lines: nothing to report.
    Nothing,
    End,
}

impl Walker<'_> {
    fn io(&self, source: io::Error) -> IndexError {
        IndexError::Io {
            path: self.path.to_path_buf(),
            source,
        }
    }

    /// A read error of the file is not damage in it: the walk ends with that error.
    fn check_disk(&mut self) -> Result<(), IndexError> {
        match self.src.failed.take() {
            Some(source) => Err(self.io(source)),
            None => Ok(()),
        }
    }

    /// Reads record after record: gzip members, or plain records after the blank lines that
    /// end the one before. After damage the walk resumes at the next gzip magic (or `WARC/` at
    /// a line start) after the damaged record's first byte.
    fn walk_records<V: Visitor>(&mut self, visitor: &mut V, gzip: bool) -> Result<(), IndexError> {
        let resync: &[u8] = if gzip { &[0x1f, 0x8b, 0x08] } else { b"WARC/" };
        loop {
            if !gzip {
                skip_blank_lines(&mut self.src).map_err(|e| self.io(e))?;
            }
            let offset = self.src.pos;
            if offset >= self.stop {
                break;
            }
            let step = if gzip {
                self.gzip_record(offset, visitor)
            } else {
                self.plain_record(offset, visitor)
            };
            self.check_disk()?;
            match step {
                Ok(Step::Record(span, head, item)) => {
                    self.resumed(visitor, offset);
                    self.records += 1;
                    visitor.done(span, head, item);
                }
                Ok(Step::Nothing) => {}
                Ok(Step::End) => break,
                Err(RecordError::Fatal(e)) => return Err(e),
                Err(RecordError::Damage(message)) => {
                    self.damaged(offset, message);
                    match self.src.find(offset + 1, resync, !gzip) {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => return Err(self.io(e)),
                    }
                }
            }
        }
        self.give_up(visitor);
        Ok(())
    }

    /// Reads the gzip member at the current offset as one record.
    fn gzip_record<V: Visitor>(
        &mut self,
        offset: u64,
        visitor: &mut V,
    ) -> Result<Step<V::Item>, RecordError> {
        match read_gzip_header(&mut self.src) {
            Ok(false) => return Ok(Step::End),
            Ok(true) => {}
            Err(e) if offset == 0 => {
                return Err(RecordError::Fatal(IndexError::NotWarc {
                    path: self.path.to_path_buf(),
                    start: e.to_string(),
                }))
            }
            Err(e) => return Err(RecordError::Damage(e.to_string())),
        }
        self.inflater.reset();
        let mut member = Member {
            src: &mut self.src,
            inf: &mut self.inflater,
        };
        let read = read_head(&mut member).map_err(damage)?;
        let first = self.records == 0 && self.pending.is_none();
        let Some(head) = head_or_why(read, first, self.path, |line| {
            format!("gzip member does not hold a WARC record (it starts with {line:?})")
        })?
        else {
            return Ok(Step::Nothing);
        };
        let limit = match head.content_length() {
            Some(Ok(n)) => n,
            // warcio reads a record with an unreadable length as empty.
            Some(Err(_)) => 0,
            None => u64::MAX,
        };
        let mut block = (&mut member).take(limit);
        let item = visitor.record(offset, &head, &mut block).map_err(damage)?;
        let remaining = block.limit();
        // Once the inflater has met the member's end (a large step can inflate all of a small
        // member), the member ends where the input stands: nothing is left to skim, and a
        // search from there would only find a later member of the same size. Otherwise even
        // a few bytes left are skimmed: on WARCs of small records, inflating the rest of each
        // member (request records, short pages) was most of the time `index` spent.

        if limit != u64::MAX && !self.inflater.done {
            let expected = self.inflater.out_pos() + remaining + head.trailer_len();
            if let Some(end) = self.member_end(offset, expected).map_err(damage)? {
                self.src.seek_to(end).map_err(damage)?;
                return Ok(Step::Record(Span::whole(offset, end), head, item));
            }
        }
        let mut member = Member {
            src: &mut self.src,
            inf: &mut self.inflater,
        };
        let copied =
            io::copy(&mut (&mut member).take(remaining), &mut io::sink()).map_err(damage)?;
        // As in a plain file, a block cut short is read (warcio reads it) and reported.
        if copied < remaining {
            visitor.problem(truncated(offset, "gzip member", remaining - copied, limit));
        }
        let left = member.drain().map_err(damage)?;
        if left.record {
            return Err(RecordError::Fatal(IndexError::NotPerRecordGzip {
                path: self.path.to_path_buf(),
                offset,
            }));
        }
        if left.data {
            visitor.problem(Problem::at(
                offset,
                "unexpected bytes after the record inside its gzip member (bad \
                 Content-Length?)"
                    .into(),
            ));
        }
        Ok(Step::Record(Span::whole(offset, self.src.pos), head, item))
    }

    /// Where the current gzip member (starting at `member`) ends, found without inflating it:
    /// the first offset from a few bytes before the inflater's input position on that is
    /// preceded by `isize` (the member's inflated size, little-endian, modulo 2^32) and followed
    /// by a gzip magic or the end of the file. `None` when not skimming or when nothing fits
    /// (the caller then inflates). Only called while the member is not yet inflated to its end:
    /// a search that starts past the true end finds a later member of the same size.
    fn member_end(&mut self, member: u64, isize: u64) -> io::Result<Option<u64>> {
        let Some((file, len)) = &self.skim else {
            return Ok(None);
        };
        let size = (isize as u32).to_le_bytes();
        let start = self.src.pos;
        // Stored deflate blocks add 5 bytes per 64 KiB: the member cannot end much later.
        let limit = (start + isize + isize / 1000 + 1024).min(*len);
        // An inflater may hold input it has read but not yet used (its bit buffer), so the
        // trailer can begin a few bytes before `start`: look there first.
        let back = start.saturating_sub(HELD_INPUT).max(member + 18);
        if back < start {
            let mut near = [0u8; 2 * HELD_INPUT as usize + 8];
            let want = ((start + 8 - back) as usize + 3).min(near.len());
            let n = read_at_most(file, &mut near[..want], back)?;
            if let Some(i) = find_member_end(&near[..n], size) {
                return Ok(Some(back + i as u64));
            }
        }
        // Small members are usually in the read buffer already.
        let buffered = self.src.inner.buffer();
        if let Some(i) = find_member_end(buffered, size) {
            return Ok(Some(start + i as u64));
        }
        let mut at = start + (buffered.len() as u64).saturating_sub(7);
        let buf = &mut self.skim_buf;
        while at + 8 <= limit {
            let want = ((limit - at) as usize + 3).min(SKIM_CHUNK);
            let n = read_at_most(file, &mut buf[..want], at)?;
            if let Some(i) = find_member_end(&buf[..n], size) {
                return Ok(Some(at + i as u64));
            }
            if n < 8 || at + n as u64 >= *len {
                break;
            }
            at += (n - 7) as u64;
        }
        // The last member of the file.
        if *len >= member + 18 && *len <= limit {
            let mut tail = [0u8; 4];
            if read_at_most(file, &mut tail, *len - 4)? == 4 && tail == size {
                return Ok(Some(*len));
            }
        }
        Ok(None)
    }

    /// Reads the plain record at the current offset.
    fn plain_record<V: Visitor>(
        &mut self,
        offset: u64,
        visitor: &mut V,
    ) -> Result<Step<V::Item>, RecordError> {
        let read = read_head(&mut self.src).map_err(damage)?;
        let first = self.records == 0 && self.pending.is_none();
        let Some(head) = head_or_why(read, first, self.path, |line| {
            format!("no WARC record here (the line is {line:?})")
        })?
        else {
            return Ok(Step::End);
        };
        let limit = match head.content_length() {
            Some(Ok(n)) => n,
            Some(Err(e)) => return Err(RecordError::Damage(e)),
            None => return Err(RecordError::Damage("record without Content-Length".into())),
        };
        let mut block = (&mut self.src).take(limit);
        let item = visitor.record(offset, &head, &mut block).map_err(damage)?;
        let remaining = block.limit();
        match &self.skim {
            Some((_, len)) if remaining >= SKIM_MIN && self.src.pos + remaining <= *len => {
                let to = self.src.pos + remaining;
                self.src.seek_to(to).map_err(damage)?;
            }
            _ => {
                let copied = io::copy(&mut (&mut self.src).take(remaining), &mut io::sink())
                    .map_err(damage)?;
                // The file ends inside the block. warcio (and so cdxj-indexer) still reads
                // the record, up to the end of the file; so does the walk, and says so.
                if copied < remaining {
                    visitor.problem(truncated(offset, "file", remaining - copied, limit));
                }
            }
        }
        let length = self.src.pos - offset;
        let clean = skip_blank_lines(&mut self.src).map_err(damage)?;
        if !clean {
            visitor.problem(Problem::at(
                offset,
                "record not followed by a blank line (bad Content-Length?)".into(),
            ));
        }
        let end = self.src.pos;
        Ok(Step::Record(
            Span {
                offset,
                length,
                end,
            },
            head,
            item,
        ))
    }

    /// Remembers damage at `offset`; reported once we know where reading resumed.
    fn damaged(&mut self, offset: u64, message: String) {
        if self.pending.is_none() {
            self.pending = Some(Problem::at(offset, message));
        }
    }

    /// A record was read again after damage: report the damage with the resume point.
    fn resumed<V: Visitor>(&mut self, visitor: &mut V, at: u64) {
        if let Some(mut p) = self.pending.take() {
            p.message = format!(
                "{}; skipped {} bytes to the record at offset {at}",
                p.message,
                at - p.offset
            );
            visitor.problem(p);
        }
    }

    /// The file ended while looking for a record after damage.
    fn give_up<V: Visitor>(&mut self, visitor: &mut V) {
        if let Some(mut p) = self.pending.take() {
            p.message = format!("{}; no further record found", p.message);
            visitor.problem(p);
        }
    }
}

/// Why reading one record failed.
enum RecordError {
    /// The whole file is unusable.
    Fatal(IndexError),
    /// This record is damaged; look for the next one.
    Damage(String),
}

/// The head a record starts with; `None` at the end of the input. When the `first` record of
/// the file is not WARC the file is not a WARC; a later one is damage, said by `why`.
fn head_or_why(
    read: HeadRead,
    first: bool,
    path: &Path,
    why: impl FnOnce(&str) -> String,
) -> Result<Option<WarcHead>, RecordError> {
    match read {
        HeadRead::Head(head) => Ok(Some(head)),
        HeadRead::Eof => Ok(None),
        HeadRead::NotWarc(line) if first => Err(RecordError::Fatal(IndexError::NotWarc {
            path: path.to_path_buf(),
            start: line,
        })),
        HeadRead::NotWarc(line) => Err(RecordError::Damage(why(&line))),
    }
}

/// The damage of a record whose block ends before its Content-Length does (`missing` bytes
/// short), in a file or in a gzip member (`what`).
fn truncated(offset: u64, what: &str, missing: u64, length: u64) -> Problem {
    Problem {
        offset,
        message: format!(
            "the {what} ends inside this record (truncated: {missing} of its {length} block \
             bytes are missing)"
        ),
        cut_short: true,
    }
}

fn damage(e: io::Error) -> RecordError {
    RecordError::Damage(e.to_string())
}

/// Consumes whitespace-only lines. `false` when what follows is neither the end of the file nor
/// a blank line (the record before was longer than its Content-Length said).
fn skip_blank_lines(src: &mut Source) -> io::Result<bool> {
    let mut skipped_any = false;
    loop {
        let buf = src.peek()?;
        if buf.is_empty() {
            return Ok(true);
        }
        let line_end = buf.iter().position(|&b| b == b'\n');
        let upto = line_end.map(|i| i + 1).unwrap_or(buf.len());
        let blank = buf[..upto].iter().all(|&b| is_py_space_byte(b));
        if !blank {
            return Ok(skipped_any || buf.starts_with(b"WARC/"));
        }
        src.consume(upto);
        skipped_any = true;
    }
}
