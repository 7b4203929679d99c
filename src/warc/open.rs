//! [`OpenWarc`], the file being written, on its own: the writer opens, rotates and closes it,
//! the record functions append to it, and neither imports the other for its shape.

use std::fs::File;
use std::path::PathBuf;

use super::gzip::MemberWriter;

/// The file being written.
pub(super) struct OpenWarc {
    pub(super) file: File,
    /// `….warc.gz.open`
    pub(super) open_path: PathBuf,
    /// `….warc.gz`: the name it gets when closed, used in WARC-Filename and the CDXJ.
    pub(super) name: String,
    /// Bytes in the file so far (= offset of the next record).
    pub(super) size: u64,
    pub(super) warcinfo_id: String,
    /// The CDXJ lines of this file so far. A 1 GB WARC of small pages holds hundreds of
    /// thousands of records: past a few MB the lines go to sorted runs on disk, so memory does
    /// not grow with the crawl.
    pub(super) cdx_lines: crate::cdx::LineSorter,
    /// The gzip encoder of every record of this file, reset per member.
    pub(super) gz: MemberWriter,
    /// Where a record's block is read into on its way to `gz`.
    pub(super) copy: Vec<u8>,
}
