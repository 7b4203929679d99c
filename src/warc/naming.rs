//! WARC file names (`PREFIX-TIMESTAMP-SERIAL-PID~HOST.warc.gz`): the next free serial in a
//! folder, the host part made safe, and the check that a folder can be written at all.

use std::fs;
use std::path::Path;

use super::{io_err, WarcError};

/// Creating the folders can succeed on a read-only mount; find out now, not at the first page.
pub(super) fn probe_writable(dir: &Path) -> Result<(), WarcError> {
    tempfile::Builder::new()
        .prefix(".archiver-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|source| WarcError::NotWritable {
            path: dir.to_path_buf(),
            source,
        })
}

/// The serial after the highest one already used in `dir` for `prefix` (`.open` files count).
pub(super) fn next_free_serial(dir: &Path, prefix: &str) -> Result<u64, WarcError> {
    let entries = fs::read_dir(dir).map_err(io_err(dir))?;
    let mut next = 0;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        if let Some(serial) = entry
            .file_name()
            .to_str()
            .and_then(|n| parse_serial(n, prefix))
        {
            next = next.max(serial.saturating_add(1));
        }
    }
    Ok(next)
}

/// The serial of `PREFIX-yyyyMMddHHmmssSSS-SERIAL-…warc…`, if `name` is such a file.
pub(super) fn parse_serial(name: &str, prefix: &str) -> Option<u64> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    let (stamp, rest) = rest.split_once('-')?;
    if stamp.len() != 17 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (serial, rest) = rest.split_once('-')?;
    if serial.is_empty() || !serial.bytes().all(|b| b.is_ascii_digit()) || !rest.contains(".warc") {
        return None;
    }
    serial.parse().ok()
}

/// Host names may hold anything; keep what is safe in a file name and in a URL path (the CDXJ
/// `filename` is joined to pywb's archive path). `~` separates pid and host, so it goes too.
pub(super) fn file_safe_host(raw: &str) -> String {
    let host: String = raw
        .trim()
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if host.is_empty() {
        "localhost".to_string()
    } else {
        host
    }
}
