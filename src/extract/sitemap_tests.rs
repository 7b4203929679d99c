//! Sitemaps shaped like the ones sites serve: namespaces and extensions, CDATA, entities,
//! gzip, text, feeds, and the hostile ones (a billion laughs, a gzip bomb, a broken file).

use super::*;
use std::io::Write;

fn locs(s: &Sitemap) -> Vec<&str> {
    s.entries.iter().map(|e| e.loc.as_str()).collect()
}

#[test]
fn a_urlset_with_extensions_and_entities() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/xsl" href="//example.com/sitemap.xsl"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>https://example.com/</loc>
    <lastmod>2026-11-02T10:00:00+00:00</lastmod>
    <changefreq>daily</changefreq>
    <priority>1.0</priority>
  </url>
  <url>
    <loc> https://example.com/a?x=1&amp;y=2 </loc>
    <image:image><image:loc>https://example.com/i.png</image:loc></image:image>
  </url>
  <url><loc><![CDATA[https://example.com/b]]></loc><lastmod>2026-10-01</lastmod></url>
  <url><loc>https://example.com/&#x63;</loc></url>
</urlset>"#;
    let s = parse(xml.as_bytes());
    assert_eq!(s.kind, Kind::UrlSet);
    assert_eq!(
        locs(&s),
        [
            "https://example.com/",
            "https://example.com/a?x=1&y=2",
            "https://example.com/b",
            "https://example.com/c"
        ]
    );
    assert_eq!(
        s.entries[0].lastmod.as_deref(),
        Some("2026-11-02T10:00:00+00:00")
    );
    assert_eq!(s.entries[1].lastmod, None);
    assert_eq!(s.entries[2].lastmod.as_deref(), Some("2026-10-01"));
    assert_eq!(s.problem, None);
}

#[test]
fn an_index_gzipped() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://example.com/sitemap-posts.xml.gz</loc><lastmod>2026-11-01</lastmod></sitemap>
  <sitemap><loc>https://example.com/sitemap-pages.xml</loc></sitemap>
</sitemapindex>"#;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(xml.as_bytes()).unwrap();
    let s = parse(&gz.finish().unwrap());
    assert_eq!(s.kind, Kind::Index);
    assert_eq!(
        locs(&s),
        [
            "https://example.com/sitemap-posts.xml.gz",
            "https://example.com/sitemap-pages.xml"
        ]
    );
    assert_eq!(s.entries[0].lastmod.as_deref(), Some("2026-11-01"));
}

#[test]
fn plain_text_takes_only_urls() {
    let s = parse(b"\xEF\xBB\xBFhttps://example.com/one\r\n\n  http://example.com/two  \nnot a url\nftp://x/\n");
    assert_eq!(s.kind, Kind::Text);
    assert_eq!(
        locs(&s),
        ["https://example.com/one", "http://example.com/two"]
    );
}

#[test]
fn rss_and_atom_feeds() {
    let rss = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>T</title>
<link>https://example.com/</link>
<item><title>One</title><link>https://example.com/p/1</link><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>
<item><title>Two</title><link>https://example.com/p/2</link></item>
</channel></rss>"#;
    let s = parse(rss.as_bytes());
    assert_eq!(s.kind, Kind::Feed);
    assert_eq!(
        locs(&s),
        ["https://example.com/p/1", "https://example.com/p/2"]
    );
    assert_eq!(
        s.entries[0].lastmod.as_deref(),
        Some("Mon, 02 Nov 2026 10:00:00 GMT")
    );
    let atom = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>
<link href="https://example.com/feed.atom" rel="self"/>
<entry><title>A</title><link rel="edit" href="https://example.com/edit/a"/>
<link href="https://example.com/a"/><updated>2026-11-02T10:00:00Z</updated></entry>
<entry><link rel="alternate" href="https://example.com/b?x=1&amp;y=2"/></entry>
</feed>"#;
    let s = parse(atom.as_bytes());
    assert_eq!(s.kind, Kind::Feed);
    assert_eq!(
        locs(&s),
        ["https://example.com/a", "https://example.com/b?x=1&y=2"]
    );
    assert_eq!(
        s.entries[0].lastmod.as_deref(),
        Some("2026-11-02T10:00:00Z")
    );
}

/// A billion laughs: the DTD is never read, its entities never expanded; the file is not a
/// sitemap and says so, at once.
#[test]
fn an_xml_bomb_costs_nothing() {
    let mut dtd =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_string()
        } else {
            format!("lol{}", i - 1)
        };
        let refs = format!("&{prev};").repeat(10);
        dtd.push_str(&format!("<!ENTITY lol{i} \"{refs}\">\n"));
    }
    dtd.push_str("]>\n");
    let bomb = format!("{dtd}<lolz>&lol9;</lolz>");
    let s = parse(bomb.as_bytes());
    assert_eq!(s.kind, Kind::Unknown);
    assert!(s.entries.is_empty());
    assert!(s.problem.is_some());
    // The same entities inside a urlset: dropped and counted, never expanded.
    let inside = format!(
        "{dtd}<urlset><url><loc>https://example.com/&lol9;</loc></url><url><loc>https://example.com/ok</loc></url></urlset>"
    );
    let s = parse(inside.as_bytes());
    assert_eq!(s.kind, Kind::UrlSet);
    assert_eq!(locs(&s), ["https://example.com/", "https://example.com/ok"]);
    assert!(s.problem.as_deref().unwrap().contains("not expanded"));
}

#[test]
fn a_gzip_bomb_stops_at_the_limit() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(b"<urlset><url><loc>https://example.com/</loc></url>")
        .unwrap();
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..60 {
        gz.write_all(&zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let s = parse(&bomb);
    assert_eq!(locs(&s), ["https://example.com/"]);
    assert!(s.problem.as_deref().unwrap().contains("cut"));
}

#[test]
fn broken_xml_keeps_what_came_before() {
    let s = parse(b"<urlset><url><loc>https://example.com/a</loc></url><url><loc>https://exa");
    assert_eq!(locs(&s), ["https://example.com/a"]);
    let s = parse(b"<urlset><url><loc>https://example.com/a</loc></url><<<>>");
    assert_eq!(locs(&s), ["https://example.com/a"]);
    assert!(s.problem.is_some());
    let s = parse(b"<html><body>not found</body></html>");
    assert_eq!(s.kind, Kind::Unknown);
    let s = parse(b"");
    assert_eq!(s.kind, Kind::Unknown);
}

#[test]
fn at_most_fifty_thousand_locations() {
    let mut xml = String::from("<urlset>");
    for i in 0..MAX_URLS + 5 {
        xml.push_str(&format!("<url><loc>https://example.com/{i}</loc></url>"));
    }
    xml.push_str("</urlset>");
    let s = parse(xml.as_bytes());
    assert_eq!(s.entries.len(), MAX_URLS);
    assert_eq!(s.left_out, 5);
}
