//! Opt-out list parsing, then matching and the pywb access file.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("archiver-fuzz-optout-{}.txt", std::process::id()));
    let written = std::fs::File::create(&path).and_then(|mut f| f.write_all(data));
    if written.is_err() {
        return;
    }
    match archiver::scope::optout::OptOutList::load(&[path]) {
        Ok(list) => {
            for u in ["http://example.com/", "https://www.example.org:8080/a/b?c", "http://[::1]/"] {
                let _ = list.matches_str(u);
            }
            let _ = list.aclj_lines();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
