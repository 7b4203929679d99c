//! CDXJ parsing: the digest index of earlier crawls (`[dedup] previous`) and `archiver diff`.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("archiver-fuzz-cdxj-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join("a.cdxj");
    let written = std::fs::File::create(&path).and_then(|mut f| f.write_all(data));
    if written.is_err() {
        return;
    }
    let mut index = archiver::dedup::DigestIndex::new();
    let _ = index.load_cdxj(&[&path]);
    if let Ok(crawl) = archiver::commands::diff::Crawl::locate(&path) {
        let mut out = Vec::new();
        for format in [archiver::commands::diff::Format::Json, archiver::commands::diff::Format::Text] {
            let _ = archiver::commands::diff::diff(&crawl, &crawl, format, None, true, &mut out);
        }
    }
});
