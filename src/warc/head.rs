//! The head of one record as warcio reads it: a WARC header block ([`read_head`], lenient the
//! way warcio is: continuation lines, lines without `:` dropped, UTF-8 else Latin-1), or an ARC
//! header line turned into the same WARC fields ([`read_arc_head`]). One head type,
//! [`WarcHead`], for both formats.

use std::io::{self, BufRead, Read};

use crate::warc::arc;

/// A WARC or HTTP header line longer than this is damage, not data.
pub(crate) const MAX_LINE: u64 = 64 * 1024;

/// More header lines than this in one WARC head is damage too. A WARC head holds a few dozen
/// fields; the bound is also the cost of every false start after damage: the walk looks for
/// the next `WARC/` line and reads a head from each one it finds, so in a run of lines that
/// all start `WARC/` and never reach a blank line (the shape behind the `warc` fuzz target's
/// timeout: 29,000 of them, 261 KB, took 11.6 s in a release build at 4096, and 12.8 s in the
/// fuzz build at 256) each line costs up to this many line reads.
pub(crate) const MAX_HEAD_LINES: usize = 128;

/// The `version` of heads read from ARC records.
pub(crate) const ARC_VERSION: &str = "ARC/1.0";

/// The WARC versions warcio accepts on a record's first line (compared upper-cased).
pub(crate) const WARC_VERSIONS: [&str; 4] = ["WARC/1.1", "WARC/1.0", "WARC/0.17", "WARC/0.18"];

/// The WARC header block of one record, as warcio reads it: names and values decoded per line
/// (UTF-8, else Latin-1), values without surrounding whitespace, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarcHead {
    /// The first line, e.g. `WARC/1.1`.
    pub version: String,
    pub fields: Vec<(String, String)>,
}

impl WarcHead {
    /// Whether the record came from an ARC file (its fields are warcio's WARC rendering).
    pub fn is_arc(&self) -> bool {
        self.version == ARC_VERSION
    }

    /// What follows the block of this record: a newline in ARC, two CRLFs in WARC.
    pub(crate) fn trailer_len(&self) -> u64 {
        if self.is_arc() {
            1
        } else {
            4
        }
    }

    /// The first field called `name` (case-insensitive), as warcio's `get_header`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// WARC-Type, e.g. `response`.
    pub fn record_type(&self) -> Option<&str> {
        self.get("WARC-Type")
    }

    /// WARC-Record-ID, e.g. `<urn:uuid:…>`.
    pub fn record_id(&self) -> Option<&str> {
        self.get("WARC-Record-ID")
    }

    /// WARC-Target-URI as warcio hands it on: `<…>` unwrapped (a wget 1.19 bug) and spaces
    /// written `%20`.
    pub fn target_uri(&self) -> Option<String> {
        let raw = self.get("WARC-Target-URI")?;
        let unwrapped = match raw.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
            Some(inner) => inner,
            None => raw,
        };
        Some(unwrapped.replace(' ', "%20"))
    }

    /// The head of a record about to be written: the version line (`WARC/1.1`), no fields yet.
    pub(crate) fn to_write(version: &str) -> WarcHead {
        WarcHead {
            version: format!("WARC/{version}"),
            fields: Vec::with_capacity(12),
        }
    }

    /// Adds a field after the others: the writer's order is the order in the file.
    pub(crate) fn push(&mut self, name: &str, value: &str) {
        self.fields.push((name.to_string(), value.to_string()));
    }

    /// The header block as written: the version line, the fields in order, Content-Length
    /// (always last, from the block's length) and the blank line that ends the block.
    pub(crate) fn to_block(&self, content_length: u64) -> Vec<u8> {
        let length = content_length.to_string();
        let fields = self.fields.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let mut out = String::with_capacity(512);
        out.push_str(&self.version);
        out.push_str("\r\n");
        for (name, value) in fields.chain([("Content-Length", length.as_str())]) {
            push_field(&mut out, name, value);
        }
        out.push_str("\r\n");
        out.into_bytes()
    }

    /// Content-Length: `None` when missing, `Err` when not a number.
    pub fn content_length(&self) -> Option<Result<u64, String>> {
        let raw = self.get("Content-Length")?;
        let digits = raw.trim().trim_start_matches('+');
        Some(
            digits
                .parse::<u64>()
                .map_err(|_| format!("Content-Length {raw:?} is not a number")),
        )
    }
}

/// Appends `Name: value` and CRLF: a WARC header line, or a line of an `application/warc-fields`
/// block (the warcinfo record's).
pub(crate) fn push_field(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push_str(": ");
    out.push_str(value);
    out.push_str("\r\n");
}

/// Whitespace as Python's `bytes.isspace()` / `str.rstrip()` sees it in an ASCII line (the
/// four information separators count for `str`, so they are included).
pub(crate) fn is_py_space_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1f)
}

/// Python's `str.isspace()` for one character.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Appends one line (up to and including `\n`) to `buf`; 0 at the end of input. A line longer
/// than [`MAX_LINE`] is an error: headers that long are damage.
pub(crate) fn read_line(r: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let n = Read::take(&mut *r, MAX_LINE).read_until(b'\n', buf)?;
    if n as u64 == MAX_LINE && buf.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "header line longer than 64 KiB",
        ));
    }
    Ok(n)
}

/// A header line as warcio decodes it: UTF-8, else Latin-1; trailing whitespace removed.
/// Borrowed when the line is UTF-8 (every header line of every record goes through here).
pub(crate) fn decode_line(line: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(s) => std::borrow::Cow::Borrowed(s.trim_end_matches(is_py_space)),
        Err(_) => {
            let text: String = line.iter().map(|&b| char::from(b)).collect();
            std::borrow::Cow::Owned(text.trim_end_matches(is_py_space).to_string())
        }
    }
}

/// How reading a WARC head ended.
pub(crate) enum HeadRead {
    Head(WarcHead),
    /// No more input (blank lines only).
    Eof,
    /// The first line is not a WARC version line.
    NotWarc(String),
}

/// Reads a WARC head the way warcio does (continuation lines appended, lines without `:`
/// dropped), after skipping blank lines.
pub(crate) fn read_head(r: &mut dyn BufRead) -> io::Result<HeadRead> {
    let mut buf = Vec::new();
    let first = loop {
        buf.clear();
        if read_line(r, &mut buf)? == 0 {
            return Ok(HeadRead::Eof);
        }
        let line = decode_line(&buf);
        if !line.is_empty() {
            break line.into_owned();
        }
    };
    let is_warc = WARC_VERSIONS.iter().any(|v| {
        first
            .as_bytes()
            .get(..v.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(v.as_bytes()))
    });
    if !is_warc {
        return read_arc_head(&first, r);
    }
    let mut fields: Vec<(String, String)> = Vec::with_capacity(16);
    let mut current: Option<(String, String)> = None;
    let mut lines = 0;
    loop {
        buf.clear();
        let n = read_line(r, &mut buf)?;
        let line = decode_line(&buf);
        if n == 0 || line.is_empty() {
            break;
        }
        lines += 1;
        if lines > MAX_HEAD_LINES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("more than {MAX_HEAD_LINES} WARC header lines"),
            ));
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = current.as_mut() {
                value.push_str(&line);
            }
            continue;
        }
        if let Some(done) = current.take() {
            fields.push(done);
        }
        current = line.split_once(':').map(|(name, value)| {
            (
                name.trim_end_matches([' ', '\t']).to_string(),
                value.trim_start_matches(is_py_space).to_string(),
            )
        });
    }
    if let Some(done) = current {
        fields.push(done);
    }
    Ok(HeadRead::Head(WarcHead {
        version: first,
        fields,
    }))
}

/// An ARC record's head, as warcio turns it into WARC headers (see [`crate::warc::arc`]); the
/// version block's two extra lines are read here too. `NotWarc` when `first` is no ARC line.
pub(crate) fn read_arc_head(first: &str, r: &mut dyn BufRead) -> io::Result<HeadRead> {
    let Some(arc) = arc::parse_header_line(first) else {
        return Ok(HeadRead::NotWarc(first.chars().take(40).collect()));
    };
    let mut extra = 0;
    if arc.is_filedesc() {
        let mut buf = Vec::new();
        for _ in 0..2 {
            extra += read_line(r, &mut buf)? as u64;
        }
    }
    Ok(HeadRead::Head(WarcHead {
        version: ARC_VERSION.to_string(),
        fields: arc.warc_fields(extra),
    }))
}
