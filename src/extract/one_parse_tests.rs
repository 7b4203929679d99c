//! `extract_html_and_text` against the two parses it replaces: the same links, directives and
//! counts as `extract_html_limited`, and the same text as `text::page_text` whenever it gives
//! one.

use super::*;

const AGENT: &str = "archiver";
const MAX: usize = 1 << 20;

fn page() -> Url {
    Url::parse("http://example.com/dir/page.html").unwrap()
}

/// Pages of every kind the two parses could read differently.
fn corpus() -> Vec<Vec<u8>> {
    let mut pages: Vec<Vec<u8>> = [
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>site 7 page 3</title></head>\n\
         <body><h1>Site 7, page 3</h1>\n<p>some words here</p>\n<p><a href=\"/p/4\">next page</a></p>\n</body></html>\n",
        "<html><head><title>T &amp; t</title><style>p{background:url(bg.png)}</style></head><body>\
         <script>var x=1;</script><h1>Head</h1><p>One  <b>two</b>\nthree</p>\
         <ul><li>a</li><li>b&#33;</li></ul><noscript><img src=ns.png>js off</noscript></body></html>",
        "<p>Hello&nbsp;<b>big</b>\n\n   world &lt;3 &#x263A; &bogus; &</p><!-- <a href=c.html> --><div>end</div>",
        "<p>unclosed <b>tags <a href='x.html'>x",
        "<base href=\"/other/\"><a href=rel.html>r</a><img srcset=\"a.png 1x, b.png 2x\">",
        "<meta name=robots content=\"noindex,nofollow\"><meta http-equiv=refresh content=\"0; url=next.html\">",
        "<svg><title>svg title</title><style>a{}</style><image href=i.png /></svg><DIV>A</DIV><Li>b",
        "<template><p>hidden <a href=t.html>t</a></p></template><xmp><p>raw</p></xmp><p>shown</p>",
        "<div style=\"background:url(s.png)\">styled</div><iframe src=f.html>fallback <b>text</b></iframe>",
        "<table><tr><td background=td.png>cell</td><th>head</th></tr></table><pre>  pre  text </pre>",
        "<head><meta charset=\"UTF-8\"><meta name=x content=y><link rel=stylesheet href=s.css></head><p>caf\u{e9}</p>",
        "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"><p>caf\u{e9} ok</p>",
        "",
        "plain text, no markup at all",
    ]
    .iter()
    .map(|p| p.as_bytes().to_vec())
    .collect();
    // Bytes that are not UTF-8, under metas naming other charsets.
    pages.push(b"<meta charset=windows-1252><p>caf\xe9</p><a href=\"caf\xe9.html\">c</a>".to_vec());
    pages.push(b"<p>before \xe9</p><meta charset=iso-8859-2><p>after \xe9</p>".to_vec());
    pages.push(
        b"<meta http-equiv=content-type content=\"text/html; charset=koi8-r\"><p>\xc1\xc2</p>"
            .to_vec(),
    );
    pages.push(b"<meta charset=bogus><meta charset=shift_jis><p>\x82\xa0</p>".to_vec());
    pages.push(b"\xff\xfe<p>bad bytes</p>".to_vec());
    // A byte order mark, and a reference cut by the 64 KiB read.
    pages.push(b"\xEF\xBB\xBF<p>bom</p><a href=b.html>b</a>".to_vec());
    let mut long = "x".repeat(64 * 1024 - 3).into_bytes();
    long.extend_from_slice(b"&amp;y<a href=long.html>l</a>");
    pages.push(long);
    pages
}

const CHARSETS: &[Option<&str>] = &[
    None,
    Some("utf-8"),
    Some("\"UTF8\""),
    Some("iso-8859-1"),
    Some("windows-1252"),
    Some("utf-16le"),
    Some("no-such-charset"),
];

#[test]
fn one_parse_gives_what_two_parses_give() {
    let mut with_text = 0;
    for html in corpus() {
        for &charset in CHARSETS {
            for max_links in [usize::MAX, 1] {
                let alone = extract_html_limited(&html[..], charset, &page(), AGENT, max_links);
                let (both, text) =
                    extract_html_and_text(&html[..], charset, &page(), AGENT, max_links, MAX);
                let what = format!("{charset:?} {max_links} {}", String::from_utf8_lossy(&html));
                assert_eq!(both.links, alone.links, "{what}");
                assert_eq!(both.directives, alone.directives, "{what}");
                assert_eq!(both.left_out, alone.left_out, "{what}");
                if let Some(text) = text {
                    assert_eq!(text, text::page_text(&html, MAX), "{what}");
                    with_text += 1;
                }
            }
        }
    }
    assert!(
        with_text > 40,
        "the text came from one parse {with_text} times"
    );
}

#[test]
fn the_text_comes_from_one_parse_when_both_read_the_page_alike() {
    let text = |html: &[u8], charset| {
        extract_html_and_text(html, charset, &page(), AGENT, usize::MAX, MAX).1
    };
    let bench = b"<html><head><meta charset=\"utf-8\"><title>t</title></head><p>x</p>";
    assert_eq!(text(bench, Some("utf-8")).as_deref(), Some("t\nx\n"));
    assert_eq!(text(bench, None).as_deref(), Some("t\nx\n"));
    // A header charset other than UTF-8, a meta naming another one under a UTF-8 header, a
    // byte order mark, UTF-16: the text parse reads these otherwise, so it runs on its own.
    assert_eq!(text(bench, Some("iso-8859-1")), None);
    assert_eq!(text(b"<meta charset=latin1><p>x", Some("utf-8")), None);
    let equiv = b"<meta http-equiv=Content-Type content=\"text/html; charset=x-sjis\"><p>x";
    assert_eq!(text(equiv, Some("utf-8")), None);
    assert_eq!(text(b"\xEF\xBB\xBF<p>x", None), None);
    assert_eq!(text(b"<p>x", Some("utf-16")), None);
    // Without a header charset both parses follow the document's meta alike.
    assert_eq!(
        text(b"<meta charset=latin1><p>caf\xe9", None).as_deref(),
        Some("caf\u{e9}\n")
    );
}

#[test]
fn utf8_labels_and_plain_content_types() {
    for label in ["utf-8", " UTF8 ", "Unicode-1-1-UTF-8", "x-unicode20utf8"] {
        assert!(charset::is_utf8_label(label), "{label}");
    }
    for label in ["utf-16", "latin1", "", "utf -8", "utf-8;"] {
        assert!(!charset::is_utf8_label(label), "{label}");
    }
    let names_other = |html: &str| {
        let (_, text) =
            extract_html_and_text(html.as_bytes(), Some("utf-8"), &page(), AGENT, 9, MAX);
        text.is_none()
    };
    assert!(!names_other(
        "<meta http-equiv=content-type content=text/html>"
    ));
    assert!(!names_other(
        "<meta http-equiv=CONTENT-TYPE content=\"TEXT/HTML ; Charset=UTF-8\">"
    ));
    assert!(!names_other(
        "<meta http-equiv=refresh content=\"5; charset=latin1\">"
    ));
    assert!(names_other(
        "<meta http-equiv=content-type content=\"text/html; charset=\\\"utf-8\\\"\">"
    ));
    assert!(names_other(
        "<meta http-equiv=content-type content=\"text/html; charset=utf -8\">"
    ));
    assert!(names_other("<meta charset=\"utf-16\">"));
    assert!(names_other(
        "<meta charset=utf-8 http-equiv=content-type content=text/plain>"
    ));
}
