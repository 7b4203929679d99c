//! A byte sink that stays in memory while small and moves to a temporary file when it grows,
//! hashing everything written on the way.
//!
//! Response bodies can be hundreds of megabytes and fifty sites fetch at once: holding them whole
//! in memory is what the issue forbids. The WARC writer needs the block's length and digest before
//! it writes the block, so both are computed here as the bytes arrive and the block is then
//! streamed back once.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};

use sha1::{Digest, Sha1};

/// Bytes kept in memory before a spool moves to disk.
pub const DEFAULT_MEM_LIMIT: usize = 1 << 20;

/// An append-only buffer with a running SHA-1.
pub struct Spool {
    mem: Vec<u8>,
    file: Option<File>,
    len: u64,
    hasher: Sha1,
    mem_limit: usize,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("len", &self.len)
            .field("on_disk", &self.file.is_some())
            .finish()
    }
}

impl Default for Spool {
    fn default() -> Self {
        Spool::new(DEFAULT_MEM_LIMIT)
    }
}

impl Spool {
    /// A spool that keeps up to `mem_limit` bytes in memory.
    pub fn new(mem_limit: usize) -> Spool {
        Spool {
            mem: Vec::new(),
            file: None,
            len: 0,
            hasher: Sha1::new(),
            mem_limit,
        }
    }

    /// Appends bytes, moving everything to a temporary file once the memory limit is passed.
    pub fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.hasher.update(buf);
        self.len += buf.len() as u64;
        if let Some(file) = self.file.as_mut() {
            // A reader may have moved the position: appends always go to the end.
            file.seek(SeekFrom::End(0))?;
            return file.write_all(buf);
        }
        if self.mem.len() + buf.len() <= self.mem_limit {
            self.mem.extend_from_slice(buf);
            return Ok(());
        }
        // Unnamed temporary file: the OS removes it even if we crash.
        let mut file = tempfile::tempfile()?;
        file.write_all(&self.mem)?;
        file.write_all(buf)?;
        self.mem = Vec::new();
        self.file = Some(file);
        Ok(())
    }

    /// Keeps only the first `len` bytes. The digest is recomputed from what is kept, since it
    /// must describe exactly the bytes that go into the WARC record.
    pub fn truncate(&mut self, len: u64) -> io::Result<()> {
        if len >= self.len {
            return Ok(());
        }
        match self.file.as_mut() {
            Some(file) => file.set_len(len)?,
            None => self.mem.truncate(len as usize),
        }
        self.len = len;
        let mut hasher = Sha1::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut reader = self.reader()?;
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        drop(reader);
        self.hasher = hasher;
        Ok(())
    }

    /// Drops the first `n` bytes (an interim `1xx` answer before the real one). The digest is
    /// recomputed over what is left.
    pub fn drop_front(&mut self, n: u64) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let mut rest = Spool::new(self.mem_limit);
        let mut reader = self.reader()?;
        io::copy(&mut (&mut reader).take(n), &mut io::sink())?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let got = reader.read(&mut buf)?;
            if got == 0 {
                break;
            }
            rest.append(&buf[..got])?;
        }
        drop(reader);
        *self = rest;
        Ok(())
    }

    /// Total bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True once the content lives in a temporary file.
    pub fn on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// `sha1:` + base32 of everything written so far (the WARC digest form).
    pub fn digest(&self) -> String {
        crate::spool::sha1_label(self.hasher.clone().finalize().as_slice())
    }

    /// The first `n` bytes (or fewer), read back from disk if needed.
    pub fn head(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(n.min(self.len as usize));
        self.reader()?.take(n as u64).read_to_end(&mut out)?;
        Ok(out)
    }

    /// A reader over everything written, from the first byte.
    pub fn reader(&mut self) -> io::Result<Box<dyn Read + '_>> {
        match self.file.as_mut() {
            Some(file) => {
                file.flush()?;
                file.seek(SeekFrom::Start(0))?;
                Ok(Box::new(&*file))
            }
            None => Ok(Box::new(Cursor::new(&self.mem[..]))),
        }
    }
}

/// Formats a SHA-1 digest as WARC and CDXJ write it: `sha1:` + RFC 4648 base32.
pub fn sha1_label(digest: &[u8]) -> String {
    format!("sha1:{}", data_encoding::BASE32.encode(digest))
}

/// SHA-1 of a byte slice in the WARC digest form.
pub fn sha1_of(bytes: &[u8]) -> String {
    sha1_label(Sha1::digest(bytes).as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_to_disk_past_the_limit_and_reads_back_whole() {
        let mut spool = Spool::new(8);
        spool.append(b"0123").unwrap();
        assert!(!spool.on_disk());
        spool.append(b"456789abc").unwrap();
        assert!(spool.on_disk());
        let mut all = Vec::new();
        spool.reader().unwrap().read_to_end(&mut all).unwrap();
        assert_eq!(all, b"0123456789abc");
        assert_eq!(spool.len(), 13);
        assert_eq!(spool.head(3).unwrap(), b"012");
        assert_eq!(spool.digest(), sha1_of(b"0123456789abc"));
    }

    #[test]
    fn truncate_keeps_a_prefix_and_its_digest() {
        for limit in [4, 1 << 20] {
            let mut spool = Spool::new(limit);
            spool.append(b"0123456789").unwrap();
            spool.truncate(6).unwrap();
            let mut all = Vec::new();
            spool.reader().unwrap().read_to_end(&mut all).unwrap();
            assert_eq!(all, b"012345");
            assert_eq!(spool.digest(), sha1_of(b"012345"));
            spool.append(b"ab").unwrap();
            assert_eq!(spool.digest(), sha1_of(b"012345ab"));
        }
    }

    #[test]
    fn drop_front_keeps_the_rest_and_its_digest() {
        for limit in [4, 1 << 20] {
            let mut spool = Spool::new(limit);
            spool.append(b"0123456789").unwrap();
            spool.drop_front(3).unwrap();
            let mut all = Vec::new();
            spool.reader().unwrap().read_to_end(&mut all).unwrap();
            assert_eq!(all, b"3456789");
            assert_eq!(spool.len(), 7);
            assert_eq!(spool.digest(), sha1_of(b"3456789"));
        }
    }

    #[test]
    fn digest_matches_known_warcio_value() {
        // warcio writes sha1 of the empty string as this label.
        assert_eq!(sha1_of(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    }
}
