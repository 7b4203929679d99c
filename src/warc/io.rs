//! Stream wrappers and file-system helpers of the format layer, written once: a writer that
//! counts (and optionally hashes) what passes through it, and the directory sync that makes a
//! rename durable.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

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

/// Makes renames in `dir` durable. Best effort: not every platform can fsync a directory.
/// (The opt-out rewrite renames WARCs into place too and uses this one.)
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
