use super::*;
use std::io::Write;

const AGENT: &str = "archiver";

fn page() -> Url {
    Url::parse("http://example.com/dir/page.html").unwrap()
}

fn extract(html: &str) -> Extracted {
    extract_html(html.as_bytes(), None, &page(), AGENT)
}

fn urls(html: &str) -> Vec<String> {
    extract(html)
        .links
        .into_iter()
        .map(|l| l.url.to_string())
        .collect()
}

fn triples(html: &str) -> Vec<(String, char, &'static str)> {
    extract(html)
        .links
        .into_iter()
        .map(|l| (l.url.to_string(), l.hop.letter(), l.context))
        .collect()
}

fn t(url: &str, hop: char, context: &'static str) -> (String, char, &'static str) {
    (url.to_string(), hop, context)
}

#[test]
fn hop_letters() {
    assert_eq!(Hop::Link.letter(), 'L');
    assert_eq!(Hop::Embed.letter(), 'E');
    assert_eq!(Hop::Redirect.letter(), 'R');
}

#[test]
fn every_element_and_attribute() {
    let html = r#"<html><body background="bg.png">
        <a href="a.html">a</a>
        <map><area href="area.html"></map>
        <img src="img.png" srcset="img2.png 2x">
        <picture><source src="s.webm" srcset="s1.jpg 1x, s2.jpg 2x"></picture>
        <script src="app.js"></script>
        <iframe src="frame1.html"></iframe>
        <frameset><frame src="frame2.html"></frameset>
        <embed src="movie.swf">
        <object data="obj.svg"></object>
        <video src="v.mp4" poster="poster.jpg"></video>
        <audio src="a.mp3" poster="apost.jpg"></audio>
        <input type="IMAGE" src="button.png">
        <input type="text" src="not-an-image.png">
        <table background="table.png"><tr><td background="td.png">x</td></tr></table>
        </body></html>"#;
    let b = "http://example.com/dir/";
    assert_eq!(
        triples(html),
        vec![
            t(&format!("{b}bg.png"), 'E', "body/@background"),
            t(&format!("{b}a.html"), 'L', "a/@href"),
            t(&format!("{b}area.html"), 'L', "area/@href"),
            t(&format!("{b}img.png"), 'E', "img/@src"),
            t(&format!("{b}img2.png"), 'E', "img/@srcset"),
            t(&format!("{b}s.webm"), 'E', "source/@src"),
            t(&format!("{b}s1.jpg"), 'E', "source/@srcset"),
            t(&format!("{b}s2.jpg"), 'E', "source/@srcset"),
            t(&format!("{b}app.js"), 'E', "script/@src"),
            t(&format!("{b}frame1.html"), 'E', "iframe/@src"),
            t(&format!("{b}frame2.html"), 'E', "frame/@src"),
            t(&format!("{b}movie.swf"), 'E', "embed/@src"),
            t(&format!("{b}obj.svg"), 'E', "object/@data"),
            t(&format!("{b}v.mp4"), 'E', "video/@src"),
            t(&format!("{b}poster.jpg"), 'E', "video/@poster"),
            t(&format!("{b}a.mp3"), 'E', "audio/@src"),
            t(&format!("{b}apost.jpg"), 'E', "audio/@poster"),
            t(&format!("{b}button.png"), 'E', "input/@src"),
            t(&format!("{b}table.png"), 'E', "table/@background"),
            t(&format!("{b}td.png"), 'E', "td/@background"),
        ]
    );
}

#[test]
fn requisites_in_tracks_svg_and_styles() {
    let html = r#"<html><head>
        <style>@import "imp.css"; /* url(no.png) */ body { background: url('../up.png') }</style>
        <base href="/base/">
        </head><body>
        <video><track src="subs.vtt"></video>
        <svg><image href="svg2.png"/><image xlink:href="svg1.png"/></svg>
        <div style="background: url(&quot;attr.png&quot;) no-repeat">x</div>
        <p style="color: red">no url</p>
        <span style="background-image: image-set('x1.png' 1x, 'x2.png' 2x)">y</span>
        <img src="up.png">
        </body></html>"#;
    let b = "http://example.com/";
    assert_eq!(
        triples(html),
        vec![
            t(&format!("{b}base/imp.css"), 'E', "css/@import"),
            t(&format!("{b}up.png"), 'E', "css/url()"),
            t(&format!("{b}base/subs.vtt"), 'E', "track/@src"),
            t(&format!("{b}base/svg2.png"), 'E', "image/@href"),
            t(&format!("{b}base/svg1.png"), 'E', "image/@href"),
            t(&format!("{b}base/attr.png"), 'E', "css/url()"),
            t(&format!("{b}base/x1.png"), 'E', "css/image-set()"),
            t(&format!("{b}base/x2.png"), 'E', "css/image-set()"),
            t(&format!("{b}base/up.png"), 'E', "img/@src"),
        ]
    );
}

#[test]
fn tag_and_attribute_names_any_case() {
    let html = r#"<A HREF="up.html">x</A><IMG SrC="i.png"><META HTTP-EQUIV="REFRESH" CONTENT="0;URL=r">
        <Meta Name="ROBOTS" Content="NOARCHIVE">"#;
    let got = extract(html);
    let got_triples: Vec<_> = got
        .links
        .iter()
        .map(|l| (l.url.path().to_string(), l.hop.letter(), l.context))
        .collect();
    assert_eq!(
        got_triples,
        vec![
            ("/dir/up.html".to_string(), 'L', "a/@href"),
            ("/dir/i.png".to_string(), 'E', "img/@src"),
            ("/dir/r".to_string(), 'R', "meta/@refresh"),
        ]
    );
    assert_eq!(got.directives.discard_reason(), Some("noarchive"));
}

#[test]
fn link_rel_decides_embed_or_link() {
    let html = r#"
        <link rel="stylesheet" href="/s.css">
        <link rel="shortcut icon" href="/favicon.ico">
        <link rel="PRELOAD" href="/font.woff2" as="font">
        <link rel="modulepreload" href="/m.js">
        <link rel="manifest" href="/app.webmanifest">
        <link rel="apple-touch-icon" href="/touch.png">
        <link rel="alternate" href="/feed.xml">
        <link rel="canonical" href="/canonical">
        <link href="/norel">"#;
    assert_eq!(
        triples(html),
        vec![
            t("http://example.com/s.css", 'E', "link/@href"),
            t("http://example.com/favicon.ico", 'E', "link/@href"),
            t("http://example.com/font.woff2", 'E', "link/@href"),
            t("http://example.com/m.js", 'E', "link/@href"),
            t("http://example.com/app.webmanifest", 'E', "link/@href"),
            t("http://example.com/touch.png", 'E', "link/@href"),
            t("http://example.com/feed.xml", 'L', "link/@href"),
            t("http://example.com/canonical", 'L', "link/@href"),
            t("http://example.com/norel", 'L', "link/@href"),
        ]
    );
}

#[test]
fn srcset_commas_and_descriptors() {
    assert_eq!(
        srcset_urls("a.jpg 1x, b.jpg 2x"),
        vec!["a.jpg", "b.jpg"],
        "plain list"
    );
    assert_eq!(
        srcset_urls(" a,b.jpg 100w,c,d.jpg 200w "),
        vec!["a,b.jpg", "c,d.jpg"],
        "commas inside URLs"
    );
    assert_eq!(srcset_urls("a.jpg,b.jpg"), vec!["a.jpg,b.jpg"]);
    assert_eq!(srcset_urls("a.jpg, b.jpg"), vec!["a.jpg", "b.jpg"]);
    assert_eq!(srcset_urls("a.jpg,, ,b.jpg 2x,"), vec!["a.jpg", "b.jpg"]);
    assert_eq!(
        srcset_urls("a.jpg (foo, bar) 1x, b.jpg"),
        vec!["a.jpg", "b.jpg"],
        "comma inside parentheses does not end the descriptors"
    );
    assert_eq!(
        srcset_urls("/img?w=100,h=50 1x,\n/img?w=200,h=100\t2x"),
        vec!["/img?w=100,h=50", "/img?w=200,h=100"]
    );
    assert!(srcset_urls("  , ,").is_empty());
    assert_eq!(
        urls(r#"<img srcset="/x,1.jpg 1x, /y.jpg 2x">"#),
        vec!["http://example.com/x,1.jpg", "http://example.com/y.jpg"]
    );
}

#[test]
fn base_href_relative_and_first_wins() {
    // A relative base is resolved against the page; it applies to links before it too.
    let html = r#"<a href="before.html"></a><base href="/other/"><a href="x.html"></a>
                  <base href="http://elsewhere.org/"><a href="y.html"></a>"#;
    assert_eq!(
        urls(html),
        vec![
            "http://example.com/other/before.html",
            "http://example.com/other/x.html",
            "http://example.com/other/y.html",
        ]
    );
    // A base without href does not count.
    let html = r#"<base target="_top"><base href="http://cdn.example.net/a/"><img src="i.png">"#;
    assert_eq!(urls(html), vec!["http://cdn.example.net/a/i.png"]);
}

#[test]
fn invalid_or_non_http_base_is_ignored() {
    assert_eq!(
        urls(r#"<base href="http://[::1"><a href="x"></a>"#),
        vec!["http://example.com/dir/x"]
    );
    assert_eq!(
        urls(r#"<base href="javascript:void(0)"><a href="x"></a>"#),
        vec!["http://example.com/dir/x"]
    );
}

#[test]
fn meta_refresh_forms() {
    assert_eq!(refresh_url("0;URL='x.html'"), Some("x.html"));
    assert_eq!(refresh_url("5; url=x.html"), Some("x.html"));
    assert_eq!(
        refresh_url("5 ; URL = \"x y.html\" trailing"),
        Some("x y.html")
    );
    assert_eq!(
        refresh_url("3, http://a.example/"),
        Some("http://a.example/")
    );
    assert_eq!(refresh_url("0;'quoted.html"), Some("quoted.html"));
    assert_eq!(refresh_url("1.5; url=x"), Some("x"));
    assert_eq!(refresh_url(".5;url=x"), Some("x"));
    assert_eq!(refresh_url("0; urlx"), Some("urlx"));
    assert_eq!(refresh_url("5"), None);
    assert_eq!(refresh_url("5;"), None);
    assert_eq!(refresh_url("0; url="), None);
    assert_eq!(refresh_url("url=x"), None);
    assert_eq!(refresh_url("5x; url=x"), None);
    assert_eq!(refresh_url(""), None);

    let html = r#"<meta http-equiv="Refresh" content="0;URL='/next?a=1&amp;b=2#top'">
                  <meta http-equiv="refresh" content="30">"#;
    assert_eq!(
        triples(html),
        vec![t("http://example.com/next?a=1&b=2", 'R', "meta/@refresh")]
    );
}

#[test]
fn non_http_schemes_dropped() {
    let html = r#"<a href="mailto:a@b.c"></a><a href="javascript:go()"></a>
        <a href=" JavaScript:go()"></a><img src="data:image/png;base64,AAAA">
        <a href="tel:+123"></a><a href="ftp://f.example/x"></a><a href="about:blank"></a>
        <a href="https://secure.example/ok"></a>"#;
    assert_eq!(urls(html), vec!["https://secure.example/ok"]);
}

#[test]
fn fragments_dropped_and_duplicates_removed() {
    let html = r##"<a href="#top"></a><a href="x.html#a"></a><img src="x.html#b">
        <a href="x.html"></a><a href="y.html"></a><a href="X.html"></a>"##;
    assert_eq!(
        triples(html),
        vec![
            t("http://example.com/dir/page.html", 'L', "a/@href"),
            t("http://example.com/dir/x.html", 'L', "a/@href"),
            t("http://example.com/dir/y.html", 'L', "a/@href"),
            t("http://example.com/dir/X.html", 'L', "a/@href"),
        ]
    );
}

#[test]
fn relative_forms_and_whitespace() {
    let html = r#"<a href="../up.html"></a><a href="//cdn.example.org/x"></a>
        <a href="  spaced.html
        "></a><a href="sp&#x20;ace.html"></a><a href="new
line.html"></a><a href="?q=1"></a><a href="/abs"></a><a href=""></a><a href="   "></a>
        <a href="http://[broken"></a><a href="HTTP://Other.Example:80/A"></a>"#;
    assert_eq!(
        urls(html),
        vec![
            "http://example.com/up.html",
            "http://cdn.example.org/x",
            "http://example.com/dir/spaced.html",
            "http://example.com/dir/sp%20ace.html",
            "http://example.com/dir/newline.html",
            "http://example.com/dir/page.html?q=1",
            "http://example.com/abs",
            "http://other.example/A",
        ]
    );
}

#[test]
fn character_references_in_attributes() {
    assert_eq!(decode_entities("a&amp;b"), "a&b");
    assert_eq!(
        decode_entities("a&ampb"),
        "a&ampb",
        "alnum follows a bare legacy name"
    );
    assert_eq!(decode_entities("a&amp b"), "a& b");
    assert_eq!(decode_entities("?x=1&copy=2"), "?x=1&copy=2", "= follows");
    assert_eq!(decode_entities("&copy;&eacute;"), "\u{a9}\u{e9}");
    assert_eq!(decode_entities("&#47;&#x2F;&#X2f"), "///");
    assert_eq!(
        decode_entities("&#0;&#x110000;&#xD800;"),
        "\u{FFFD}\u{FFFD}\u{FFFD}"
    );
    assert_eq!(decode_entities("&#128;"), "\u{20AC}");
    assert_eq!(decode_entities("&#;&#x;&;&unknown;"), "&#;&#x;&;&unknown;");
    assert_eq!(decode_entities("&#99999999999999999999;"), "\u{FFFD}");
    assert_eq!(
        decode_entities("&colon;&sol;&apos&notin;&notit;"),
        ":/&apos\u{2209}&notit;",
        "the whole table, with ';'; a bare legacy prefix before an alphanumeric stays"
    );
    assert_eq!(
        urls(r#"<a href="/s?a=1&amp;b=2&lang=en&not=3"></a>"#),
        vec!["http://example.com/s?a=1&b=2&lang=en&not=3"]
    );
}

#[test]
fn charset_from_header_and_meta() {
    // "café" in windows-1252; paths are always UTF-8 percent-encoded.
    let latin = b"<a href=\"caf\xe9.html\"></a>";
    let url = |html: &[u8], cs: Option<&str>| {
        extract_html(html, cs, &page(), AGENT).links[0]
            .url
            .to_string()
    };
    assert_eq!(
        url(latin, Some("windows-1252")),
        "http://example.com/dir/caf%C3%A9.html"
    );
    assert_eq!(
        url(latin, Some("ISO-8859-1")),
        "http://example.com/dir/caf%C3%A9.html"
    );
    assert_eq!(
        url(latin, None),
        "http://example.com/dir/caf%EF%BF%BD.html",
        "UTF-8 by default"
    );
    assert_eq!(
        url(latin, Some("no-such-charset")),
        "http://example.com/dir/caf%EF%BF%BD.html"
    );
    let with_meta = b"<meta charset=\"windows-1252\"><a href=\"caf\xe9.html\"></a>";
    assert_eq!(
        url(with_meta, None),
        "http://example.com/dir/caf%C3%A9.html",
        "document meta when the header says nothing"
    );
    assert_eq!(
        url(with_meta, Some("no-such-charset")),
        "http://example.com/dir/caf%C3%A9.html",
        "document meta when the header's charset is unknown"
    );
    assert_eq!(
        url(with_meta, Some("utf-16be-not")),
        "http://example.com/dir/caf%C3%A9.html"
    );
    let utf8_meta_latin_header = "<meta charset=\"windows-1252\"><a href=\"café.html\"></a>";
    assert_eq!(
        url(utf8_meta_latin_header.as_bytes(), Some("utf-8")),
        "http://example.com/dir/caf%C3%A9.html",
        "header beats meta"
    );
    // Hostile label: never injected as markup.
    assert_eq!(
        url(b"<a href=\"x\"></a>", Some("\"><a href=evil>")),
        "http://example.com/dir/x"
    );
}

#[test]
fn utf16_and_bom() {
    let text = "<a href=\"caf\u{e9}.html\"></a>";
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let want = "http://example.com/dir/caf%C3%A9.html";
    let first = |html: &[u8], cs: Option<&str>| {
        extract_html(html, cs, &page(), AGENT).links[0]
            .url
            .to_string()
    };
    assert_eq!(first(&[&[0xFF, 0xFE][..], &le].concat(), None), want);
    assert_eq!(first(&[&[0xFE, 0xFF][..], &be].concat(), None), want);
    assert_eq!(first(&le, Some("utf-16")), want);
    assert_eq!(first(&be, Some("UTF-16BE")), want);
    let bom8 = [&b"\xEF\xBB\xBF"[..], text.as_bytes()].concat();
    assert_eq!(first(&bom8, Some("windows-1252")), want, "BOM beats header");
}

#[test]
fn noscript_links_in_place() {
    let html = r#"<img src="lazy.gif" data-src="real.jpg">
        <noscript><img src="real.jpg"><link rel=stylesheet href="ns.css"></noscript>
        <noscript><meta name="robots" content="noindex"></noscript>
        <a href="after.html"></a>"#;
    let got = extract(html);
    let got: Vec<_> = got
        .links
        .iter()
        .map(|l| (l.url.path().to_string(), l.hop))
        .collect();
    assert_eq!(
        got,
        vec![
            ("/dir/lazy.gif".to_string(), Hop::Embed),
            ("/dir/real.jpg".to_string(), Hop::Embed),
            ("/dir/ns.css".to_string(), Hop::Embed),
            ("/dir/after.html".to_string(), Hop::Link),
        ]
    );
    assert_eq!(extract(html).directives, Directives::default());
}

#[test]
fn many_noscripts_all_parsed() {
    let mut html = String::new();
    for i in 0..SEPARATE_NOSCRIPTS + 50 {
        html.push_str(&format!("<noscript><img src=\"/n{i}\"></noscript>"));
    }
    html.push_str("<noscript><img src=\"/unclosed");
    let links = extract(&html).links;
    assert_eq!(links.len(), SEPARATE_NOSCRIPTS + 50);
    for (i, link) in links.iter().enumerate() {
        assert_eq!(link.url.path(), format!("/n{i}"));
    }
}

#[test]
fn meta_robots_combinations() {
    let d = |html: &str| extract(html).directives;
    assert_eq!(d("<p>nothing</p>"), Directives::default());
    assert_eq!(
        d(r#"<meta name="robots" content="noindex, nofollow">"#),
        Directives {
            noindex: true,
            nofollow: true,
            ..Default::default()
        }
    );
    assert_eq!(
        d(r#"<meta name="ROBOTS" content=" NONE ">"#),
        Directives {
            noindex: true,
            nofollow: true,
            none: true,
            noarchive: false
        }
    );
    let archive = d(r#"<meta name="Robots" content="index,follow,noarchive,max-snippet:20">"#);
    assert_eq!(
        archive,
        Directives {
            noarchive: true,
            ..Default::default()
        }
    );
    assert_eq!(archive.discard_reason(), Some("noarchive"));
    assert!(archive.follow_links());
    assert_eq!(
        d(r#"<meta name="robots" content="all"><meta name="robots" content="bogus">"#),
        Directives::default()
    );
    // Two tags add up; our own agent's name counts; whitespace-separated is accepted.
    assert_eq!(
        d(
            r#"<meta name="robots" content="nofollow"><meta name=" Archiver " content="noindex noarchive">"#
        ),
        Directives {
            noindex: true,
            nofollow: true,
            noarchive: true,
            none: false
        }
    );
    assert_eq!(
        d(r#"<meta name="robots" content="noindex&#44;nofollow">"#).discard_reason(),
        Some("noindex")
    );
}

#[test]
fn other_agents_meta_ignored() {
    let d = extract(
        r#"<meta name="googlebot" content="noindex"><meta name="archiver-x" content="none">
           <meta name="description" content="noindex"><meta property="robots" content="noindex">"#,
    )
    .directives;
    assert_eq!(d, Directives::default());
    // An empty agent token matches nothing, not every empty name.
    let d = extract_html(br#"<meta name="" content="noindex">"#, None, &page(), "").directives;
    assert_eq!(d, Directives::default());
}

#[test]
fn directives_logic() {
    let mut d = Directives::default();
    assert_eq!(d.discard_reason(), None);
    assert!(d.follow_links());
    d.merge(Directives {
        noarchive: true,
        ..Default::default()
    });
    assert_eq!(d.discard_reason(), Some("noarchive"));
    d.merge(Directives {
        noindex: true,
        ..Default::default()
    });
    assert_eq!(d.discard_reason(), Some("noindex"));
    assert!(d.follow_links());
    d.merge(Directives {
        none: true,
        ..Default::default()
    });
    assert_eq!(d.discard_reason(), Some("none"));
    assert!(!d.follow_links(), "none alone stops following");
    assert!(!Directives {
        nofollow: true,
        ..Default::default()
    }
    .follow_links());
    assert!(d.noarchive && d.noindex, "merge keeps earlier flags");
}

#[test]
fn x_robots_tag_forms() {
    let x = |v: &[&str]| x_robots_tag(v, AGENT);
    let flags = |d: Directives| (d.noindex, d.nofollow, d.noarchive, d.none);
    assert_eq!(flags(x(&[])), (false, false, false, false));
    assert_eq!(flags(x(&["noindex, nofollow"])), (true, true, false, false));
    assert_eq!(flags(x(&["NoArchive"])), (false, false, true, false));
    assert_eq!(flags(x(&["none"])), (true, true, false, true));
    assert_eq!(
        flags(x(&["archiver: noindex"])),
        (true, false, false, false)
    );
    assert_eq!(
        flags(x(&["ARCHIVER:noarchive"])),
        (false, false, true, false)
    );
    assert_eq!(
        flags(x(&["otherbot: noarchive"])),
        (false, false, false, false)
    );
    assert_eq!(
        flags(x(&["otherbot: noindex, nofollow"])),
        (false, false, false, false),
        "an agent prefix covers the following items"
    );
    assert_eq!(
        flags(x(&["noarchive, googlebot: noindex, archiver: nofollow"])),
        (false, true, true, false)
    );
    assert_eq!(
        flags(x(&["otherbot: noindex", "nofollow"])),
        (false, true, false, false),
        "the scope ends with the header value"
    );
    assert_eq!(
        flags(x(&["unavailable_after: 25 Jun 2030 15:00:00 PST, noindex"])),
        (true, false, false, false),
        "unavailable_after is a directive, not an agent"
    );
    assert_eq!(
        flags(x(&[
            "unavailable_after: Friday, 25-Jun-2030 15:00:00 GMT, noarchive"
        ])),
        (false, false, true, false)
    );
    assert_eq!(
        flags(x(&["max-snippet: 20, max-image-preview: large, nofollow"])),
        (false, true, false, false)
    );
    assert_eq!(
        flags(x(&["archiver: max-snippet: 20, noindex"])),
        (true, false, false, false)
    );
    assert_eq!(
        flags(x(&["all", "index, follow", ""])),
        (false, false, false, false)
    );
}

#[test]
fn broken_html_never_fails() {
    let cases: &[&[u8]] = &[
        b"",
        b"<",
        b"<a href=\"unterminated",
        b"<a href=x.html",
        b"<<<>>><a href='a.html'>",
        b"\xff\xfe\x00<\x00a",
        b"<select><xmp><script>\"use strict\";</script></select><a href=\"z\">",
        b"<svg><a href=\"in-svg.html\"></a></svg><math><mi><a href=\"m\">",
        b"<!-- <a href=\"commented.html\"> --><a href=\"real.html\">",
        b"<script>document.write('<a href=\"in-script.html\">')</script>",
        b"\0\0\0<a\0 href=\"nul\">",
    ];
    for html in cases {
        let _ = extract_html(html, Some("utf-8"), &page(), AGENT);
    }
    let got = urls("<!-- <a href=\"commented.html\"> --><a href=\"real.html\">");
    assert_eq!(got, vec!["http://example.com/dir/real.html"]);
    let got = urls("<script>document.write('<a href=\"in.html\">')</script>");
    assert!(got.is_empty(), "script text is not markup: {got:?}");
}

#[test]
fn large_page_all_links() {
    let mut html = String::from("<html><body>");
    for i in 0..20_000 {
        html.push_str(&format!(
            "<a href=\"/p/{}\">x</a><img src=\"/i/{}.png\">",
            i,
            i % 100
        ));
    }
    let links = extract(&html).links;
    assert_eq!(links.len(), 20_000 + 100);
    assert_eq!(links[0].url.as_str(), "http://example.com/p/0");
    assert_eq!(links[1].url.as_str(), "http://example.com/i/0.png");
    assert_eq!(
        links.last().unwrap().url.as_str(),
        "http://example.com/p/19999"
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

const BODY: &[u8] = b"<html><a href=\"/x\">hello hello hello</a></html>";

fn ok(bytes: &[u8]) -> Decoded {
    Decoded {
        bytes: bytes.to_vec(),
        capped: false,
        error: None,
    }
}

#[test]
fn decode_identity_and_gzip() {
    assert_eq!(decode_body(None, BODY, 1 << 20), ok(BODY));
    assert_eq!(decode_body(Some("identity"), BODY, 1 << 20), ok(BODY));
    let gz = gzip(BODY);
    assert_eq!(decode_body(Some("gzip"), &gz[..], 1 << 20), ok(BODY));
    assert_eq!(decode_body(Some(" X-GZIP "), &gz[..], 1 << 20), ok(BODY));
    // Two gzip members, as some servers concatenate.
    let two = [gzip(b"ab"), gzip(b"cd")].concat();
    assert_eq!(decode_body(Some("gzip"), &two[..], 100), ok(b"abcd"));
    // Stacked codings are undone last first.
    let stacked = gzip(&zlib(BODY));
    assert_eq!(
        decode_body(Some("deflate, gzip"), &stacked[..], 1 << 20),
        ok(BODY)
    );
}

#[test]
fn decode_deflate_zlib_and_raw() {
    assert_eq!(
        decode_body(Some("deflate"), &zlib(BODY)[..], 1 << 20),
        ok(BODY)
    );
    assert_eq!(
        decode_body(Some("Deflate"), &raw_deflate(BODY)[..], 1 << 20),
        ok(BODY)
    );
}

#[test]
fn decode_empty_body_is_fine() {
    for coding in [None, Some("gzip"), Some("deflate")] {
        assert_eq!(decode_body(coding, &b""[..], 10), Decoded::default());
    }
}

#[test]
fn decode_corrupt_keeps_prefix() {
    let d = decode_body(Some("gzip"), &b"this is not gzip at all"[..], 1 << 20);
    assert!(d.error.is_some());
    assert!(d.bytes.is_empty());

    let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let gz = gzip(&big);
    // Truncated stream: what came before the cut, and an error.
    let d = decode_body(Some("gzip"), &gz[..gz.len() / 2], usize::MAX);
    assert!(d.error.is_some(), "truncation must be reported");
    assert!(!d.bytes.is_empty());
    assert_eq!(&big[..d.bytes.len()], &d.bytes[..]);
    // Garbage in the middle.
    let mut bad = gz.clone();
    let mid = bad.len() / 2;
    bad[mid..mid + 64].fill(0xFF);
    let d = decode_body(Some("gzip"), &bad[..], usize::MAX);
    assert!(d.error.is_some());
    assert_eq!(&big[..d.bytes.len()], &d.bytes[..]);

    let d = decode_body(Some("br"), BODY, 100);
    assert_eq!(d.bytes, b"");
    assert!(d.error.unwrap().contains("br"));
}

#[test]
fn a_body_in_memory_decodes_as_a_stream_would() {
    let page = b"<p>0123456789</p>".to_vec();
    for encoding in [None, Some("identity"), Some("gzip"), Some("br")] {
        let body = if encoding == Some("gzip") {
            gzip(&page)
        } else {
            page.clone()
        };
        for body in [&body[..], &[][..]] {
            for cap in [0, 1, 5, page.len() - 1, page.len(), page.len() + 1, 1 << 20] {
                assert_eq!(
                    decode_slice(encoding, body, cap),
                    decode_body(encoding, body, cap),
                    "{encoding:?} {} {cap}",
                    body.len()
                );
            }
        }
    }
}

#[test]
fn decode_cap_stops_bombs() {
    let zeros = vec![0u8; 10 << 20];
    let bomb = gzip(&zeros);
    assert!(bomb.len() < 100_000);
    let d = decode_body(Some("gzip"), &bomb[..], 4096);
    assert_eq!(d.bytes.len(), 4096);
    assert!(d.capped);
    assert_eq!(d.error, None);
    // Exactly at the cap is not capped; one byte more is.
    assert_eq!(
        decode_body(Some("gzip"), &gzip(b"12345")[..], 5),
        ok(b"12345")
    );
    let d = decode_body(Some("deflate"), &zlib(b"123456")[..], 5);
    assert_eq!((d.bytes.as_slice(), d.capped), (&b"12345"[..], true));
    let d = decode_body(None, &b"123456"[..], 0);
    assert_eq!((d.bytes.len(), d.capped), (0, true));
}

#[test]
fn the_parse_needs_three_selectors_parsed_once() {
    assert!(
        SELECTORS.iter().all(Option::is_some),
        "a selector did not parse"
    );
    let state = RefCell::new(Collector::with_limit(10));
    let list = handlers(&state, Scope::Document { agent_token: AGENT }, None);
    assert_eq!(list.len(), SELECTOR_TEXTS.len());
    assert!(list.iter().all(|(s, _)| matches!(s, Cow::Borrowed(_))));
    assert_eq!(
        handlers(&state, Scope::Noscript, None).len(),
        2,
        "no <noscript> inside one"
    );
    // Every attribute rule names an element and an attribute, as on_element reads them.
    for rule in ATTR_RULES {
        assert_eq!(rule.selector, format!("{}[{}]", rule_tag(rule), rule.attr));
        assert!(rule_is_for(rule, rule_tag(rule)));
        assert!(
            !rule_is_for(rule, &rule_tag(rule)[1..]),
            "{}",
            rule.selector
        );
    }
}

#[test]
fn one_element_with_several_url_attributes_keeps_them_in_rule_order() {
    let html = r#"<img srcset="b.png 2x" src="a.png" style="background:url(c.png)">
        <video poster="p.jpg" src="v.mp4"><link rel=stylesheet href="s.css" style="x:url(d.png)">"#;
    assert_eq!(
        urls(html),
        [
            "http://example.com/dir/a.png",
            "http://example.com/dir/b.png",
            "http://example.com/dir/c.png",
            "http://example.com/dir/v.mp4",
            "http://example.com/dir/p.jpg",
            "http://example.com/dir/s.css",
            "http://example.com/dir/d.png",
        ]
    );
}
