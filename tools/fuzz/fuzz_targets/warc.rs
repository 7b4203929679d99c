//! The WARC reader: any file, gzip members or plain, through the indexer's walk.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut file) = tempfile_in_shm() else {
        return;
    };
    if file.1.write_all(data).and_then(|_| file.1.flush()).is_err() {
        return;
    }
    let path = file.0.clone();
    let _ = archiver::index::cdxj_for_file(&path, "fuzz.warc.gz");
    let mut sink = Vec::new();
    let _ = archiver::index::index_to(&[path.clone()], &mut sink);
    let _ = std::fs::remove_file(&path);
});

/// A file in /dev/shm (memory, not disk), unique per process.
fn tempfile_in_shm() -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("archiver-fuzz-{}.warc.gz", std::process::id()));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}
