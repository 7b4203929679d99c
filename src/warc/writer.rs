//! [`WarcWriter`]: appends exchanges to the current `.open` file (opening one, never over
//! another's name, with its warcinfo first), cuts a failed exchange back out, rotates at the
//! profile's size, and closes a file by syncing it, writing its sorted CDXJ, then renaming it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::Utc;

use super::check::{check_digest, check_prefix, check_revisit, check_token, check_uri, clean_info};
use super::gzip::MemberWriter;
use super::io::sync_dir;
use super::naming::{file_safe_host, next_free_serial, probe_writable};
use super::open::OpenWarc;
use super::record::{
    record_id, write_pair, write_revisit_pair, write_warcinfo, Capture, CONTENT_TYPE_RESPONSE,
};
use super::{
    io_err, Exchange, Revisit, WarcError, WarcSettings, WarcVersion, Written, COPY_BUF_BYTES,
    INDEX_HEAD_BYTES,
};

/// How many already-taken file names to step over before giving up.
const NAME_ATTEMPTS: u32 = 1000;

/// Memory for one open WARC's CDXJ lines before they spill to temporary files.
pub(super) const CDX_MEMORY: usize = 8 << 20;

/// Writes exchanges into rotating, per-record-gzipped WARC files with a CDXJ index each.
pub struct WarcWriter {
    settings: WarcSettings,
    host: String,
    pid: u32,
    next_serial: u64,
    pub(super) current: Option<OpenWarc>,
    closed: Vec<PathBuf>,
    bytes_written: u64,
}

impl std::fmt::Debug for WarcWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcWriter")
            .field("warc_dir", &self.settings.warc_dir)
            .field("current", &self.current.as_ref().map(|c| &c.open_path))
            .field("closed", &self.closed.len())
            .field("bytes_written", &self.bytes_written)
            .finish()
    }
}

impl WarcWriter {
    /// Creates both folders and checks they are writable; opens no WARC until the first record,
    /// so a crawl that archives nothing leaves no empty file behind.
    pub fn new(settings: WarcSettings) -> Result<WarcWriter, WarcError> {
        let mut settings = settings;
        check_prefix(&settings.prefix)?;
        settings.info = clean_info(&settings.info)?;
        for dir in [&settings.warc_dir, &settings.index_dir] {
            fs::create_dir_all(dir).map_err(|source| WarcError::CreateDir {
                path: dir.clone(),
                source,
            })?;
            probe_writable(dir)?;
        }
        let next_serial = next_free_serial(&settings.warc_dir, &settings.prefix)?;
        Ok(WarcWriter {
            settings,
            host: file_safe_host(&gethostname::gethostname().to_string_lossy()),
            pid: std::process::id(),
            next_serial,
            current: None,
            closed: Vec::new(),
            bytes_written: 0,
        })
    }

    /// Writes the response record, then the request record pointing at it
    /// (WARC-Concurrent-To), and returns where the response record went. On error nothing of
    /// this exchange stays in the file (it is cut back to where the exchange began).
    /// If the file reaches `max_bytes` it is closed afterwards; an error while closing is
    /// returned even though the exchange itself was written.
    pub fn write_exchange(&mut self, mut ex: Exchange<'_>) -> Result<Written, WarcError> {
        check_uri(ex.target_uri)?;
        if let Some(t) = ex.truncated {
            check_token("WARC-Truncated", t)?;
        }
        if let Some(d) = ex.payload_digest.as_deref() {
            check_digest("WARC-Payload-Digest", d)?;
        }
        let http_head = ex
            .response
            .head(INDEX_HEAD_BYTES)
            .map_err(|source| WarcError::Spool {
                uri: ex.target_uri.to_string(),
                source,
            })?;
        let date = self.settings.version.format_date(ex.date);
        let id = record_id();
        let digest = ex.payload_digest.clone();
        let capture = Capture {
            url: ex.target_uri,
            warc_date: &date,
            record_type: "response",
            content_type: Some(CONTENT_TYPE_RESPONSE),
            http_head: &http_head,
            payload_digest: digest.as_deref(),
        };
        self.append(&capture, &id, |cur, version| {
            write_pair(cur, version, &date, &id, &mut ex)
        })
    }

    /// Writes a `revisit` record (identical-payload-digest profile: the HTTP head only, the
    /// payload stays with the original), then the request record pointing at it, and returns
    /// where the revisit record went. It is indexed like cdxj-indexer indexes a revisit, so
    /// pywb finds it and resolves it through the original. Errors, rollback and rotation as
    /// [`WarcWriter::write_exchange`].
    pub fn write_revisit(&mut self, rv: Revisit<'_>) -> Result<Written, WarcError> {
        check_revisit(&rv)?;
        let date = self.settings.version.format_date(rv.date);
        let id = record_id();
        let capture = Capture {
            url: rv.target_uri,
            warc_date: &date,
            record_type: "revisit",
            content_type: Some(CONTENT_TYPE_RESPONSE),
            http_head: rv.http_head,
            payload_digest: Some(&rv.payload_digest),
        };
        self.append(&capture, &id, |cur, version| {
            write_revisit_pair(cur, version, &date, &id, &rv)
        })
    }

    /// Runs `write` (which appends one capture record and its request) at the end of the
    /// current file, opening one if needed; then indexes the capture and rotates, or on error
    /// cuts the file back to where it was. The one place records enter a file, so rollback,
    /// byte counts and index lines cannot differ between record kinds.
    /// The WARC version records are written in.
    pub(super) fn version(&self) -> WarcVersion {
        self.settings.version
    }

    pub(super) fn append<F>(
        &mut self,
        capture: &Capture<'_>,
        id: &str,
        write: F,
    ) -> Result<Written, WarcError>
    where
        F: FnOnce(&mut OpenWarc, WarcVersion) -> Result<(u64, u64), WarcError>,
    {
        let version = self.settings.version;
        let cur = match self.current {
            Some(ref mut cur) => cur,
            None => {
                let fresh = self.open_file()?;
                self.current.insert(fresh)
            }
        };
        let start = cur.size;
        match write(cur, version) {
            Ok((offset, length)) => {
                let line = capture.line(&cur.name, offset, length);
                cur.cdx_lines.push(line).map_err(io_err(&cur.open_path))?;
                self.bytes_written += cur.size - start;
                let written = Written {
                    filename: cur.name.clone(),
                    offset,
                    length,
                    record_id: id.to_string(),
                    warc_date: capture.warc_date.to_string(),
                };
                if cur.size >= self.settings.max_bytes {
                    self.close()?;
                }
                Ok(written)
            }
            Err(e) => {
                self.roll_back(start);
                Err(e)
            }
        }
    }

    /// Closes the current file if any: fsync, sorted CDXJ into the index folder, then rename
    /// from `.open`. The next write opens a new file.
    pub fn close(&mut self) -> Result<(), WarcError> {
        match self.current.take() {
            Some(cur) => self.finish(cur),
            None => Ok(()),
        }
    }

    /// WARC files closed (renamed) so far, in order.
    pub fn closed_files(&self) -> &[PathBuf] {
        &self.closed
    }

    /// Compressed bytes written into WARC files by this writer (all files, warcinfo included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// The `.open` file being written, if any.
    pub fn current_path(&self) -> Option<&Path> {
        self.current.as_ref().map(|c| c.open_path.as_path())
    }

    /// Opens the next `.open` file (never overwriting anything) and writes its warcinfo record.
    fn open_file(&mut self) -> Result<OpenWarc, WarcError> {
        let dir = self.settings.warc_dir.clone();
        // Look again: another writer (or a previous run) may have added files since `new`.
        let mut serial = self
            .next_serial
            .max(next_free_serial(&dir, &self.settings.prefix)?);
        let stamp = Utc::now().format("%Y%m%d%H%M%S%3f").to_string();
        let mut attempts = 0;
        let (file, name, open_path) = loop {
            let name = format!(
                "{}-{}-{:05}-{}~{}.warc.gz",
                self.settings.prefix, stamp, serial, self.pid, self.host
            );
            let open_path = dir.join(format!("{name}.open"));
            let taken = dir.join(&name).exists();
            let opened = if taken {
                Err(io::Error::from(io::ErrorKind::AlreadyExists))
            } else {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&open_path)
            };
            match opened {
                Ok(file) => break (file, name, open_path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < NAME_ATTEMPTS => {
                    attempts += 1;
                    serial += 1;
                }
                Err(source) => {
                    return Err(WarcError::Io {
                        path: open_path,
                        source,
                    })
                }
            }
        };
        self.next_serial = serial + 1;
        let mut cur = OpenWarc {
            file,
            open_path,
            name,
            size: 0,
            warcinfo_id: record_id(),
            cdx_lines: crate::cdx::LineSorter::new(CDX_MEMORY),
            gz: MemberWriter::new(),
            copy: vec![0; COPY_BUF_BYTES],
        };
        if let Err(e) = write_warcinfo(&mut cur, &self.settings) {
            // A file without its warcinfo is useless; remove it rather than leave it `.open`.
            let _ = fs::remove_file(&cur.open_path);
            return Err(e);
        }
        self.bytes_written += cur.size;
        Ok(cur)
    }

    /// Cuts the current file back to `start` after a failed exchange so that no partial
    /// member sits between good records. If even that fails the file is closed as it is
    /// (its index only lists complete records) and the next write starts a new file.
    pub(super) fn roll_back(&mut self, start: u64) {
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        let cut = cur
            .file
            .set_len(start)
            .and_then(|_| cur.file.seek(SeekFrom::Start(start)).map(|_| ()));
        match cut {
            Ok(()) => cur.size = start,
            Err(e) => {
                tracing::warn!(path = %cur.open_path.display(), error = %e,
                    "cannot cut a failed record out of the WARC; closing it");
                if let Err(e) = self.close() {
                    tracing::warn!(error = %e, "closing a damaged WARC failed");
                }
            }
        }
    }

    /// fsync, then index and rename (see [`seal`]).
    fn finish(&mut self, cur: OpenWarc) -> Result<(), WarcError> {
        cur.file.sync_all().map_err(io_err(&cur.open_path))?;
        drop(cur.file);
        let final_path = seal(&self.settings, &cur.open_path, &cur.name, cur.cdx_lines)?;
        self.closed.push(final_path);
        Ok(())
    }
}

impl Drop for WarcWriter {
    /// A writer dropped without `close` still finishes its file; errors can only be logged.
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(error = %e, "closing the WARC file on drop failed");
        }
    }
}

/// Writes the sorted index, then renames the WARC from `.open` to `name` (index first, so every
/// `.warc.gz` that exists has its CDXJ). The file must already be synced. Shared by `close` and
/// crash recovery so a recovered file ends exactly like a closed one.
pub(super) fn seal(
    settings: &WarcSettings,
    open_path: &Path,
    name: &str,
    lines: crate::cdx::LineSorter,
) -> Result<PathBuf, WarcError> {
    let stem = name.strip_suffix(".warc.gz").unwrap_or(name);
    write_index(&settings.index_dir, stem, lines)?;
    let final_path = settings.warc_dir.join(name);
    fs::rename(open_path, &final_path).map_err(io_err(open_path))?;
    sync_dir(&settings.warc_dir);
    Ok(final_path)
}

/// Writes `index_dir/<stem>.cdxj` through a temporary name that does not end in `.cdxj`, so
/// pywb (which reads every `*.cdxj` in the folder) never sees a half-written index.
fn write_index(
    index_dir: &Path,
    stem: &str,
    lines: crate::cdx::LineSorter,
) -> Result<(), WarcError> {
    let tmp = index_dir.join(format!("{stem}.cdxj.part"));
    let done = index_dir.join(format!("{stem}.cdxj"));
    let file = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut out = BufWriter::new(file);
    lines.finish(&mut out).map_err(io_err(&tmp))?;
    let file = out.into_inner().map_err(|e| WarcError::Io {
        path: tmp.clone(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(io_err(&tmp))?;
    drop(file);
    fs::rename(&tmp, &done).map_err(io_err(&tmp))?;
    sync_dir(index_dir);
    Ok(())
}
