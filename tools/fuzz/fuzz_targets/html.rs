//! HTML extraction: links, meta robots, charsets, content decoding, X-Robots-Tag.
#![no_main]

use archiver::extract;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(page) = url::Url::parse("http://example.com/dir/page.html") else {
        return;
    };
    // The first byte picks a charset header, so transcoding paths are reached too.
    let (choice, html) = data.split_first().unwrap_or((&0, data));
    let charset = match choice % 5 {
        0 => None,
        1 => Some("utf-8"),
        2 => Some("utf-16le"),
        3 => Some("windows-1252"),
        _ => Some("\"Shift_JIS\""),
    };
    let all = extract::extract_html(html, charset, &page, "archiver");
    let limited = extract::extract_html_limited(html, charset, &page, "archiver", 3);
    assert!(limited.links.len() <= 3);
    assert!(limited.links.len() <= all.links.len());
    for link in &all.links {
        assert!(matches!(link.url.scheme(), "http" | "https"));
        assert!(link.url.fragment().is_none());
    }
    let _ = extract::decode_body(Some("gzip"), html, 1 << 20);
    let _ = extract::decode_body(Some("deflate"), html, 1 << 20);
    if let Ok(text) = std::str::from_utf8(html) {
        let _ = extract::x_robots_tag(&[text], "archiver");
    }
});
