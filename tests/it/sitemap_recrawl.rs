//! Sitemaps and a conditional re-crawl, end to end (issue 27's check): a site whose pages are
//! half reachable only from its sitemap (named in robots.txt, nested in an index, gzipped),
//! with an XML bomb among its sitemaps; crawled, then a tenth of its pages changed, crawled
//! again with `[recrawl] previous`. The site is a Python http.server that honours
//! `If-None-Match` and `If-Modified-Since` (tests/data/conditional_site.py).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::commands::{run, stdout, Pywb};
use common::output::{crawl_log, files_ending, read_warc, CdxjLine};
use common::profile::Loopback;
use common::tools::free_port;

/// Pages of the site; the first half is linked from the home page, the rest only listed in
/// the gzipped sitemap.
const PAGES: usize = 20;
/// The pages changed between the two crawls: a tenth, one linked and one sitemap-only.
const CHANGED: [usize; 2] = [3, 15];

/// The Python site, stopped (by its id) when dropped.
struct Site {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Site {
    fn start(root: &Path, log: &Path) -> Site {
        let port = free_port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/conditional_site.py");
        let child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(root)
            .arg(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start python3");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let start = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the site did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Site {
            child,
            port,
            log: log.to_path_buf(),
        }
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// (path, status, bytes) of every answer so far, and forgets them.
    fn take_log(&self) -> Vec<(String, u16, u64)> {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        fs::write(&self.log, "").unwrap();
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                Some((
                    f.get(1)?.to_string(),
                    f.get(2)?.parse().ok()?,
                    f.get(3)?.parse().ok()?,
                ))
            })
            .collect()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn page_path(i: usize) -> String {
    format!("/p/{i:02}.html")
}

/// A page of about 10 KB, so that what a 304 saves is most of what a crawl receives.
fn page_body(i: usize, version: u32) -> Vec<u8> {
    let mut text = format!(
        "<!doctype html><html><head><title>Page {i} v{version}</title></head><body><h1>Page {i}</h1>\n"
    );
    for line in 0..150 {
        text.push_str(&format!(
            "<p>Page {i}, version {version}, line {line}: the quick brown fox jumps.</p>\n"
        ));
    }
    text.push_str("</body></html>\n");
    text.into_bytes()
}

/// The billion laughs, as a sitemap.
fn bomb() -> String {
    let mut s = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_string()
        } else {
            format!("lol{}", i - 1)
        };
        s.push_str(&format!(
            "<!ENTITY lol{i} \"{}\">\n",
            format!("&{prev};").repeat(10)
        ));
    }
    s.push_str("]>\n<lolz>&lol9;</lolz>\n");
    s
}

fn write_site(root: &Path, origin: &str) {
    fs::create_dir_all(root.join("p")).unwrap();
    fs::create_dir_all(root.join("sitemaps")).unwrap();
    let links: String = (0..PAGES / 2)
        .map(|i| format!("<a href=\"{}\">page {i}</a>\n", page_path(i)))
        .collect();
    fs::write(
        root.join("index.html"),
        format!("<!doctype html><html><body><h1>Home</h1>\n{links}</body></html>\n"),
    )
    .unwrap();
    for i in 0..PAGES {
        fs::write(root.join(&page_path(i)[1..]), page_body(i, 1)).unwrap();
    }
    fs::write(
        root.join("robots.txt"),
        format!("User-agent: *\nAllow: /\n\nSitemap: {origin}/sitemap-index.xml\n"),
    )
    .unwrap();
    fs::write(
        root.join("sitemap-index.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
             <sitemap><loc>{origin}/sitemaps/pages.xml.gz</loc></sitemap>\n\
             <sitemap><loc>{origin}/sitemaps/bomb.xml</loc></sitemap>\n\
             </sitemapindex>\n"
        ),
    )
    .unwrap();
    let mut urls = String::new();
    for i in PAGES / 2..PAGES {
        urls.push_str(&format!(
            "<url><loc>{origin}{}</loc><lastmod>2026-11-{:02}</lastmod></url>\n",
            page_path(i),
            i - 9
        ));
    }
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n"
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(xml.as_bytes()).unwrap();
    fs::write(root.join("sitemaps/pages.xml.gz"), gz.finish().unwrap()).unwrap();
    fs::write(root.join("sitemaps/bomb.xml"), bomb()).unwrap();
}

fn crawl(dir: &Path, profile: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_archiver"));
    cmd.args(["crawl", "--profile", profile]).current_dir(dir);
    let out = run(cmd, 600);
    assert!(
        out.status.success(),
        "crawl {profile} failed: {}\n{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every CDXJ line of a crawl's output.
fn cdxj(out: &Path) -> Vec<CdxjLine> {
    files_ending(&out.join("indexes"), ".cdxj")
        .iter()
        .flat_map(|f| {
            fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('!'))
                .map(|l| CdxjLine::parse(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// url → (timestamp, mime) of each capture line.
fn captures(lines: &[CdxjLine]) -> BTreeMap<String, (String, String)> {
    lines
        .iter()
        .map(|l| {
            (
                l.str_field("url"),
                (l.timestamp.clone(), l.str_field("mime")),
            )
        })
        .collect()
}

#[test]
fn sitemap_pages_are_archived_and_a_recrawl_revisits_what_did_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("site");
    let site = Site::start(&root, &dir.path().join("site.log"));
    let origin = site.origin();
    write_site(&root, &origin);
    let seeds = vec![format!("{origin}/")];

    // The first crawl.
    let first = Loopback {
        dir: "out1",
        sitemaps: true,
        ..Loopback::new("sitemaps-1", seeds.clone())
    };
    let p1 = first.write(dir.path(), "first.toml");
    crawl(dir.path(), &p1);
    let out1 = dir.path().join("out1");
    let received_1: u64 = site.take_log().iter().map(|(_, _, n)| n).sum();
    let caps1 = captures(&cdxj(&out1));
    for i in 0..PAGES {
        let url = format!("{origin}{}", page_path(i));
        let (_, mime) = caps1
            .get(&url)
            .unwrap_or_else(|| panic!("{url} not archived: {caps1:?}"));
        assert_eq!(mime, "text/html", "{url}");
    }
    let log1 = crawl_log(&out1);
    for i in PAGES / 2..PAGES {
        let url = format!("{origin}{}", page_path(i));
        let line = log1
            .iter()
            .find(|l| l.uri == url && l.status == 200)
            .unwrap();
        assert!(
            line.hops.ends_with('M'),
            "a sitemap's page has hop M: {}",
            line.raw
        );
        assert_eq!(
            line.hops, "PSSM",
            "robots.txt → index → gzip sitemap → page: {}",
            line.raw
        );
        assert_eq!(
            line.extra["lastmod"],
            format!("2026-11-{:02}", i - 9),
            "{}",
            line.raw
        );
    }
    let bomb = log1
        .iter()
        .find(|l| l.uri.ends_with("/sitemaps/bomb.xml"))
        .expect("the bomb fetched");
    assert!(bomb.has_annotation("sitemap:not-a-sitemap"), "{}", bomb.raw);
    let runlog = fs::read_to_string(out1.join("run.log")).unwrap();
    assert!(runlog.contains("bomb.xml: not a sitemap"), "{runlog}");
    // Sitemaps are archived like any response.
    for path in [
        "/sitemap-index.xml",
        "/sitemaps/pages.xml.gz",
        "/sitemaps/bomb.xml",
    ] {
        assert!(
            caps1.contains_key(&format!("{origin}{path}")),
            "{path} not archived"
        );
    }

    // A tenth of the pages change; the second crawl names the first.
    for i in CHANGED {
        fs::write(root.join(&page_path(i)[1..]), page_body(i, 2)).unwrap();
    }
    // The second crawl's captures must fall in another second than the first's (pywb's
    // 14-digit timestamps).
    std::thread::sleep(Duration::from_millis(1100));
    let recrawl = "\n[recrawl]\nprevious = [\"out1\"]\n";
    let second = Loopback {
        dir: "out2",
        sitemaps: true,
        output: recrawl,
        ..Loopback::new("sitemaps-2", seeds)
    };
    let p2 = second.write(dir.path(), "second.toml");
    crawl(dir.path(), &p2);
    let out2 = dir.path().join("out2");
    let answers_2 = site.take_log();
    let received_2: u64 = answers_2.iter().map(|(_, _, n)| n).sum();
    eprintln!("bytes received: first crawl {received_1}, second crawl {received_2}");
    assert!(
        received_2 * 5 <= received_1,
        "the second crawl received {received_2} bytes, the first {received_1}"
    );
    // Every unchanged page answered 304, every changed one 200.
    let status_of: BTreeMap<String, u16> =
        answers_2.iter().map(|(p, s, _)| (p.clone(), *s)).collect();
    for i in 0..PAGES {
        let want = if CHANGED.contains(&i) { 200 } else { 304 };
        assert_eq!(
            status_of.get(&page_path(i)),
            Some(&want),
            "{} {answers_2:?}",
            page_path(i)
        );
    }
    assert_eq!(status_of.get("/"), Some(&304));
    // Sitemaps are asked conditionally too; a 304's sitemap is read from the first crawl.
    for path in ["/sitemap-index.xml", "/sitemaps/pages.xml.gz"] {
        assert_eq!(status_of.get(path), Some(&304), "{path}: {answers_2:?}");
    }
    let log2 = crawl_log(&out2);
    let pages_xml = log2
        .iter()
        .find(|l| l.uri.ends_with("/sitemaps/pages.xml.gz"))
        .expect("the gzipped sitemap asked again");
    assert_eq!(
        pages_xml.hops, "PSS",
        "found again through the index: {}",
        pages_xml.raw
    );
    assert!(
        !pages_xml.has_annotation("sitemap:no-earlier-copy"),
        "{}",
        pages_xml.raw
    );

    // Each 304 is a server-not-modified revisit of the first crawl's capture.
    let records: Vec<_> = files_ending(&out2.join("warcs"), ".warc.gz")
        .iter()
        .flat_map(|f| read_warc(f))
        .collect();
    let first_records: Vec<_> = files_ending(&out1.join("warcs"), ".warc.gz")
        .iter()
        .flat_map(|f| read_warc(f))
        .collect();
    let caps2 = captures(&cdxj(&out2));
    for i in 0..PAGES {
        let url = format!("{origin}{}", page_path(i));
        let (_, mime) = &caps2[&url];
        if CHANGED.contains(&i) {
            assert_eq!(mime, "text/html", "{url}");
            continue;
        }
        assert_eq!(mime, "warc/revisit", "{url}");
        let rv = records
            .iter()
            .find(|r| r.kind() == "revisit" && r.target() == url)
            .unwrap_or_else(|| panic!("no revisit of {url}"));
        assert_eq!(
            rv.get("WARC-Profile"),
            Some("http://netpreserve.org/warc/1.1/revisit/server-not-modified")
        );
        let orig = first_records
            .iter()
            .find(|r| r.kind() == "response" && r.target() == url)
            .unwrap();
        assert_eq!(rv.get("WARC-Refers-To-Target-URI"), Some(url.as_str()));
        assert_eq!(rv.get("WARC-Refers-To-Date"), orig.get("WARC-Date"));
        assert_eq!(rv.get("WARC-Refers-To"), orig.get("WARC-Record-ID"));
        assert_eq!(
            rv.get("WARC-Payload-Digest"),
            orig.get("WARC-Payload-Digest")
        );
        let meta = records.iter().find(|r| {
            r.kind() == "metadata" && r.get("WARC-Concurrent-To") == rv.get("WARC-Record-ID")
        });
        assert!(meta.is_some(), "the 304's head of {url} is kept");
    }
    let req = records
        .iter()
        .find(|r| r.kind() == "request" && r.target() == format!("{origin}{}", page_path(0)))
        .unwrap();
    let text = String::from_utf8_lossy(&req.block);
    assert!(text.contains("If-None-Match: \""), "{text}");
    assert!(text.contains("If-Modified-Since: "), "{text}");

    // report.json counts the 304s and what they saved.
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out2.join("report.json")).unwrap()).unwrap();
    // The unchanged pages, the home page and the three sitemap files.
    let also = [
        "index.html",
        "sitemap-index.xml",
        "sitemaps/pages.xml.gz",
        "sitemaps/bomb.xml",
    ];
    let unchanged = PAGES - CHANGED.len() + also.len();
    let saved: u64 = (0..PAGES)
        .filter(|i| !CHANGED.contains(i))
        .map(|i| page_body(i, 1).len() as u64)
        .sum::<u64>()
        + also
            .iter()
            .map(|f| fs::metadata(root.join(f)).unwrap().len())
            .sum::<u64>();
    assert_eq!(
        report["totals"]["not_modified"], unchanged as u64,
        "{report}"
    );
    assert_eq!(
        report["totals"]["not_modified_bytes_saved"], saved,
        "{report}"
    );

    // pywb, both crawls in one collection, replays every page at both dates byte for byte.
    let index = dir.path().join("both-indexes");
    fs::create_dir_all(&index).unwrap();
    for (n, out) in [&out1, &out2].iter().enumerate() {
        for f in files_ending(&out.join("indexes"), ".cdxj") {
            let name = format!("{n}-{}", f.file_name().unwrap().to_string_lossy());
            fs::copy(&f, index.join(name)).unwrap();
        }
    }
    let pywb = Pywb::start(&index, &[&out1.join("warcs"), &out2.join("warcs")], None);
    for i in 0..PAGES {
        let url = format!("{origin}{}", page_path(i));
        let (ts1, _) = &caps1[&url];
        let (ts2, _) = &caps2[&url];
        assert_ne!(ts1, ts2);
        let (status, body) = pywb.get(ts1, &url);
        assert_eq!((status, body), (200, page_body(i, 1)), "{url} at {ts1}");
        let version = if CHANGED.contains(&i) { 2 } else { 1 };
        let (status, body) = pywb.get(ts2, &url);
        assert_eq!(
            (status, String::from_utf8_lossy(&body).into_owned()),
            (
                200,
                String::from_utf8_lossy(&page_body(i, version)).into_owned()
            ),
            "{url} at {ts2}"
        );
    }

    // archiver diff: exactly the changed pages.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_archiver"));
    cmd.args(["diff", "out1", "out2", "--format", "json"])
        .current_dir(dir.path());
    let out = run(cmd, 120);
    let diff: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("diff JSON: {e}\n{}", stdout(&out)));
    let changed: BTreeSet<String> = diff["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let want: BTreeSet<String> = CHANGED
        .iter()
        .map(|i| format!("{origin}{}", page_path(*i)))
        .collect();
    assert_eq!(changed, want, "{diff}");
    assert_eq!(diff["added"], serde_json::json!([]), "{diff}");
    assert_eq!(diff["removed"], serde_json::json!([]), "{diff}");
}
