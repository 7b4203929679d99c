//! CSS as the crawler meets it inside HTML: `<style>` blocks and `style` attributes.
//! (A CSS extractor of its own is on its way in another change; this target then calls it.)
#![no_main]

use archiver::extract;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(page) = url::Url::parse("http://example.com/css/page.html") else {
        return;
    };
    let mut html = b"<html><head><style>".to_vec();
    html.extend_from_slice(data);
    html.extend_from_slice(b"</style></head><body><div style=\"");
    html.extend_from_slice(data);
    html.extend_from_slice(b"\">x</div></body></html>");
    let _ = extract::extract_html(&html, None, &page, "archiver");
});
