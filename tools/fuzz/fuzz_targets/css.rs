//! CSS extraction: stylesheets as served (`css::decode` + `css::css_links`), and CSS inside
//! HTML (`<style>` blocks and `style` attributes, through `extract_html`).
#![no_main]

use archiver::extract::{self, css};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(base) = url::Url::parse("http://example.com/css/site.css") else {
        return;
    };
    let text = css::decode(data);
    let _ = css::css_refs(&text, 100);
    for link in css::css_links(&text, &base) {
        assert!(matches!(link.url.scheme(), "http" | "https"));
    }
    let mut html = b"<html><head><style>".to_vec();
    html.extend_from_slice(data);
    html.extend_from_slice(b"</style></head><body><div style=\"");
    html.extend_from_slice(data);
    html.extend_from_slice(b"\">x</div></body></html>");
    let limited = extract::extract_html_limited(&html[..], None, &base, "archiver", 5);
    assert!(limited.links.len() <= 5);
});
