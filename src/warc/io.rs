//! Stream wrappers and file-system helpers, written once for every layer above: a writer that
//! counts what passes through it, one that hashes it too, the directory sync that makes a
//! rename durable, and the all-or-nothing save of a small file (reports, state, `-o` outputs).
//! (The reader's own counting source is `member.rs`'s `Source`.)

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use sha2::Digest;

/// A writer that counts what passes through (under [`HashingWriter`]).
pub(crate) struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> CountingWriter<W> {
    pub(crate) fn new(inner: W) -> CountingWriter<W> {
        CountingWriter { inner, count: 0 }
    }

    /// Bytes written through so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A writer that hashes and counts what passes through it (a WACZ entry's sha256 as it is
/// packed, without reading the file twice).
pub(crate) struct HashingWriter<W, D> {
    inner: CountingWriter<W>,
    hash: D,
}

impl<W: Write, D: Digest> HashingWriter<W, D> {
    pub(crate) fn new(inner: W) -> HashingWriter<W, D> {
        HashingWriter {
            inner: CountingWriter::new(inner),
            hash: D::new(),
        }
    }

    /// Bytes written through so far.
    pub(crate) fn count(&self) -> u64 {
        self.inner.count()
    }

    /// The digest of everything written through.
    pub(crate) fn finish(self) -> Vec<u8> {
        self.hash.finalize().to_vec()
    }
}

impl<W: Write, D: Digest> Write for HashingWriter<W, D> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Replaces the file at `path` with what `write` writes, all or nothing: the bytes go to a
/// temporary file beside it (`.NAME.XXXXXX.part`), which is flushed, synced and given mode
/// 0644 before it is renamed over `path` and the folder synced. A failed or killed write
/// leaves the old file as it was, never half a new one. A `path` that exists and is not a
/// regular file (`/dev/stdout`, a FIFO) is written straight into: renaming over it would
/// replace the device node itself. The parent folder must exist.
pub fn save_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> io::Result<T> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        let mut out = io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
        let value = write(&mut out)?;
        out.flush()?;
        return Ok(value);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".part")
        .tempfile_in(dir)?;
    let value = {
        let mut out = io::BufWriter::new(tmp.as_file_mut());
        let value = write(&mut out)?;
        out.flush()?;
        value
    };
    // tempfile creates 0600; a report or an index is an ordinary file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(value)
}

/// Makes renames in `dir` durable. Best effort: not every platform can fsync a directory.
/// (The opt-out rewrite renames WARCs into place too and uses this one.)
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_replaces_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(&path, "old").unwrap();
        let n = save_atomically(&path, |out| out.write_all(b"new").map(|_| 3)).unwrap();
        assert_eq!(
            (n, std::fs::read_to_string(&path).unwrap()),
            (3, "new".into())
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
        let failed = save_atomically(&path, |out| {
            out.write_all(b"half")?;
            Err::<(), _>(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left behind");
    }
}
