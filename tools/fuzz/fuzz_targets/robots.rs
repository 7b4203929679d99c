//! robots.txt handling: any body, then rule checks on a few URLs.
#![no_main]

use std::time::Instant;

use archiver::politeness::robots::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let now = Instant::now();
    let (policy, _) = Policy::from_answer(200, data, "archiver", now);
    let _ = policy.crawl_delay;
    for u in [
        "http://example.com/",
        "http://example.com/private/x?y=1",
        "http://example.com/%E2%82%AC/a*b$",
        "http://example.com/robots.txt",
    ] {
        if let Ok(url) = url::Url::parse(u) {
            let _ = policy.allows(&url);
        }
    }
});
