//! The profile parser: any text must give a profile or an error naming file, line and key.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    archiver::config::disable_name_lookups();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A folder that does not exist: file names in the profile (opt-out lists, CA roots,
    // earlier crawls) resolve to nothing rather than to files of this machine.
    let path = std::path::Path::new("/nonexistent-archiver-fuzz/profile.toml");
    match archiver::config::Profile::parse(path, text) {
        Ok(profile) => {
            let _ = profile.describe();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
