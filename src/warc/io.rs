//! Stream wrappers and file-system helpers, written once for every layer above: a writer that
//! counts what passes through it, one that hashes it too, and the directory sync that makes a
//! rename durable. (The reader's own counting source is `member.rs`'s `Source`.)

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use sha2::Digest;

/// A writer that counts what passes through, e.g. to learn a gzip member's compressed length.
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

/// Makes renames in `dir` durable. Best effort: not every platform can fsync a directory.
/// (The opt-out rewrite renames WARCs into place too and uses this one.)
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
