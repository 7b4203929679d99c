//! Link bombs: pages that open elements by the million and never close them. The parser's
//! state is capped ([`MAX_PARSER_MEMORY`]): the parse stops there, says so (`cut`), and what
//! it read before stands.

use super::*;

fn page() -> Url {
    Url::parse("http://example.com/").unwrap()
}

fn stream(body: Vec<u8>) -> Extracted {
    extract_html_limited(Cursor::new(body), None, &page(), "archiver", 6000)
}

#[test]
fn elements_never_closed_stop_the_parse_at_its_memory_cap() {
    let mut body = b"<html><body><a href=/first>first</a>".to_vec();
    for _ in 0..2_000_000 {
        body.extend_from_slice(b"<a href=x>");
    }
    body.extend_from_slice(b"<a href=/late>late</a>");
    let got = stream(body);
    assert!(got.cut);
    let urls: Vec<&str> = got.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(urls, ["http://example.com/first", "http://example.com/x"]);
}

#[test]
fn distinct_links_never_closed_are_kept_up_to_the_limit_before_the_cut() {
    let mut body = b"<html><head><base href=\"http://other.test/\"></head><body>".to_vec();
    for i in 0..1_000_000 {
        body.extend_from_slice(format!("<a href={i}>").as_bytes());
    }
    let got = stream(body);
    assert!(got.cut);
    assert_eq!(got.links.len(), 6000);
    assert_eq!(got.links[5999].url.as_str(), "http://other.test/5999");
    assert!(got.left_out > 0);
}

#[test]
fn deep_but_real_nesting_is_read_whole() {
    let mut body = String::from("<html><body>");
    for i in 0..2000 {
        body.push_str(&format!("<div><a href=/d{i}>d</a>"));
    }
    body.push_str("<a href=/end>end</a>");
    let got = stream(body.into_bytes());
    assert!(!got.cut);
    assert_eq!(got.links.len(), 2001);
    assert_eq!(got.links[2000].url.as_str(), "http://example.com/end");
}
