//! The WARC/ARC reader: any file, through the indexer's walk (`cdxj_for_file`, which skims
//! gzip members) and its parallel index (`index_to`). The reader tells ARC from WARC by the
//! first line, so the first input byte picks what the rest becomes: the bytes as they are,
//! one gzip member around them (so the parser behind the inflater sees the fuzzer's bytes,
//! not a broken deflate stream), or an ARC file (a `filedesc://` version block before them).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

/// The version block of an ARC v1 file (its declared length is that of the two lines after
/// the header line), so what follows is read as ARC records.
const ARC_START: &[u8] = b"filedesc://fuzz.arc 0.0.0.0 20260101000000 text/plain 74\n\
1 0 archiver-fuzz\nURL IP-address Archive-date Content-type Archive-length\n\n";

fuzz_target!(|data: &[u8]| {
    let (choice, rest) = data.split_first().unwrap_or((&0, data));
    let (file, name) = match choice % 4 {
        0 => (rest.to_vec(), "fuzz.warc.gz"),
        1 => (gzip(rest), "fuzz.warc.gz"),
        2 => ([ARC_START, rest].concat(), "fuzz.arc"),
        _ => (gzip(&[ARC_START, rest].concat()), "fuzz.arc.gz"),
    };
    let Ok((path, mut out)) = tempfile_in_shm(name) else {
        return;
    };
    if out.write_all(&file).and_then(|_| out.flush()).is_err() {
        return;
    }
    let _ = archiver::commands::index::cdxj_for_file(&path, name);
    let mut sink = Vec::new();
    let _ = archiver::commands::index::index_to(std::slice::from_ref(&path), &mut sink);
    let _ = std::fs::remove_file(&path);
});

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

/// A file in /dev/shm (memory, not disk), unique per process.
fn tempfile_in_shm(name: &str) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("archiver-fuzz-{}-{name}", std::process::id()));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}
