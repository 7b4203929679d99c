//! The content of the test sites: every feature the crawler must handle, one route each.

use std::sync::Arc;

use super::site::{chunked, gzip, html, response, Handler, Reply, Request};

/// The profile's product token and full User-Agent.
pub const USER_AGENT: &str = "archiver/0.1 (+https://example.org/archiver-e2e-contact)";

/// Size of `/large.bin` (over the profile's max_body_bytes of 1,000,000).
pub const LARGE_LEN: usize = 3_000_000;

/// robots.txt of the main site: our product token's group must win over `*`.
pub const MAIN_ROBOTS: &str = "# test robots.txt\n\
User-agent: otherbot\n\
Disallow: /\n\
\n\
User-agent: archiver\n\
Disallow: /private/\n\
Disallow: /*.pdf$\n\
Allow: /private/ok.html\n\
Crawl-delay: 0.2\n\
\n\
User-agent: *\n\
Disallow: /\n";

/// Pages that must be discarded (not archived), with the annotation crawl.log must carry.
pub const DISCARDED: &[(&str, &str)] = &[
    ("/noindex.html", "noindex"),
    ("/noarchive.html", "noarchive"),
    ("/none.html", "none"),
    ("/meta-archiver.html", "noindex"),
    ("/noindex-header.html", "noindex"),
];

/// Targets that must never be requested.
pub const NEVER: &[&str] = &[
    "/never-1.html",
    "/never-2.html",
    "/never-3.html",
    "/private/secret.html",
    "/doc.pdf",
];

/// Targets whose 200 response must be in the WARC (besides the seed and robots.txt).
pub const ARCHIVED_200: &[&str] = &[
    "/",
    "/robots.txt",
    "/level1.html",
    "/level2.html",
    "/level3.html",
    "/from-noindex.html",
    "/nofollow.html",
    "/nofollow-header.html",
    "/meta-otherbot.html",
    "/otherbot-header.html",
    "/target.html",
    "/retry.html",
    "/gzip.html",
    "/from-gzip.html",
    "/chunked.html",
    "/from-chunked.html",
    "/gzip-chunked.html",
    "/from-gzip-chunked.html",
    "/large.bin",
    "/dup-headers.html",
    "/private/ok.html",
    "/doc.pdf?x=1",
    "/broken.html",
    "/from-broken.html",
    "/logo.png",
];

/// A small HTML page with links (`<a href>`) and images (`<img src>`).
pub fn page(title: &str, head_extra: &str, links: &[&str], imgs: &[&str]) -> Vec<u8> {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>{head_extra}</head>\n<body>\n<h1>{title}</h1>\n"
    );
    for l in links {
        s.push_str(&format!("<p><a href=\"{l}\">{l}</a></p>\n"));
    }
    for i in imgs {
        s.push_str(&format!("<img src=\"{i}\" alt=\"\">\n"));
    }
    s.push_str("</body></html>\n");
    s.into_bytes()
}

fn meta(name: &str, content: &str) -> String {
    format!("<meta name=\"{name}\" content=\"{content}\">")
}

/// `len` pseudo-random bytes (xorshift): incompressible, so the gzip WARC really grows by
/// about that much and rotation happens.
pub fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// An 8-byte PNG signature plus a little: enough to be "an image".
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// The main site. `offsite` is the origin of the off-site server (`http://127.0.0.2:PORT`).
pub fn main_site(offsite: String) -> Handler {
    Arc::new(move |req: &Request| main_route(req, &offsite))
}

fn main_route(req: &Request, offsite: &str) -> Reply {
    let host = req.header("host").unwrap_or("127.0.0.1").to_string();
    match req.target.as_str() {
        "/robots.txt" => response(
            "200 OK",
            &[("Content-Type", "text/plain")],
            MAIN_ROBOTS.as_bytes(),
        ),
        "/" => {
            let off_link = format!("{offsite}/offsite.html");
            let off_img = format!("{offsite}/offsite.png");
            let links = [
                "/level1.html",
                "/noindex.html",
                "/noarchive.html",
                "/nofollow.html",
                "/none.html",
                "/meta-archiver.html",
                "/meta-otherbot.html",
                "/noindex-header.html",
                "/nofollow-header.html",
                "/otherbot-header.html",
                "/redirect",
                "/loop-a",
                "/missing.html",
                "/retry.html",
                "/gzip.html",
                "/chunked.html",
                "/gzip-chunked.html",
                "/large.bin",
                "/drop.html",
                "/dup-headers.html",
                "/private/secret.html",
                "/private/ok.html",
                "/doc.pdf",
                "/doc.pdf?x=1",
                "/broken.html",
                "#top",
                off_link.as_str(),
            ];
            let imgs = ["/logo.png", off_img.as_str()];
            html(&page("Test site", "", &links, &imgs))
        }
        // Seed of the embeds test: one off-site link, one off-site image, one local image.
        "/embeds.html" => {
            let off_link = format!("{offsite}/offsite.html");
            let off_img = format!("{offsite}/offsite.png");
            html(&page(
                "embeds",
                "",
                &[off_link.as_str()],
                &[off_img.as_str(), "/logo.png"],
            ))
        }
        "/level1.html" => html(&page("Level 1", "", &["/level2.html"], &[])),
        "/level2.html" => html(&page("Level 2", "", &["level3.html"], &[])),
        "/level3.html" => html(&page("Level 3", "", &["/", "/level1.html"], &[])),
        "/noindex.html" => html(&page(
            "noindex",
            &meta("robots", "noindex"),
            &["/from-noindex.html"],
            &[],
        )),
        "/noarchive.html" => html(&page(
            "noarchive",
            &meta("ROBOTS", "index, NoArchive"),
            &[],
            &[],
        )),
        "/nofollow.html" => html(&page(
            "nofollow",
            &meta("robots", "NoFollow"),
            &["/never-1.html"],
            &[],
        )),
        "/none.html" => html(&page(
            "none",
            &meta("robots", "none"),
            &["/never-2.html"],
            &[],
        )),
        "/meta-archiver.html" => html(&page(
            "meta archiver",
            &meta("archiver", "noindex"),
            &[],
            &[],
        )),
        "/meta-otherbot.html" => html(&page(
            "meta otherbot",
            &meta("otherbot", "noindex"),
            &[],
            &[],
        )),
        "/noindex-header.html" => response(
            "200 OK",
            &[("Content-Type", "text/html"), ("X-Robots-Tag", "noindex")],
            &page("noindex header", "", &[], &[]),
        ),
        "/nofollow-header.html" => response(
            "200 OK",
            &[
                ("Content-Type", "text/html"),
                ("X-Robots-Tag", "archiver: nofollow"),
            ],
            &page("nofollow header", "", &["/never-3.html"], &[]),
        ),
        "/otherbot-header.html" => response(
            "200 OK",
            &[
                ("Content-Type", "text/html"),
                ("X-Robots-Tag", "otherbot: noindex"),
            ],
            &page("otherbot header", "", &[], &[]),
        ),
        "/redirect" => response(
            "301 Moved Permanently",
            &[("Location", "/target.html"), ("Content-Type", "text/html")],
            b"<a href=\"/target.html\">moved</a>",
        ),
        "/loop-a" => {
            let loc = format!("http://{host}/loop-b");
            response(
                "302 Found",
                &[("Location", loc.as_str()), ("Content-Type", "text/plain")],
                b"to b",
            )
        }
        "/loop-b" => response(
            "302 Found",
            &[("Location", "/loop-a"), ("Content-Type", "text/plain")],
            b"to a",
        ),
        "/missing.html" => response(
            "404 Not Found",
            &[("Content-Type", "text/html")],
            b"<html><body>not here</body></html>",
        ),
        "/retry.html" => {
            if req.earlier == 0 {
                response(
                    "503 Service Unavailable",
                    &[("Retry-After", "1"), ("Content-Type", "text/plain")],
                    b"busy, come back later",
                )
            } else {
                html(&page("retry ok", "", &[], &[]))
            }
        }
        "/gzip.html" => {
            let body = page("gzip", "", &["/from-gzip.html"], &[]);
            let mut r = response(
                "200 OK",
                &[
                    ("Content-Type", "text/html"),
                    ("Content-Encoding", "gzip"),
                    ("Vary", "Accept-Encoding"),
                ],
                &gzip(&body),
            );
            r.body = body;
            r
        }
        "/chunked.html" => {
            let body = page("chunked", "", &["/from-chunked.html"], &[]);
            let mut wire =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .to_vec();
            wire.extend_from_slice(&chunked(&body, &[10, 1, 64, 100]));
            Reply {
                wire,
                body,
                close: false,
            }
        }
        "/gzip-chunked.html" => {
            let body = page("gzip chunked", "", &["/from-gzip-chunked.html"], &[]);
            let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            wire.extend_from_slice(&chunked(&gzip(&body), &[7, 20, 3]));
            Reply {
                wire,
                body,
                close: false,
            }
        }
        "/large.bin" => {
            let body = noise(LARGE_LEN);
            response(
                "200 OK",
                &[("Content-Type", "application/octet-stream")],
                &body,
            )
        }
        "/drop.html" => {
            let mut wire =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n"
                    .to_vec();
            let partial = vec![b'x'; 100];
            wire.extend_from_slice(&partial);
            Reply {
                wire,
                body: partial,
                close: true,
            }
        }
        "/dup-headers.html" => {
            let body = page("duplicate headers", "", &[], &[]);
            let mut wire = b"HTTP/1.1 200 OK\r\nx-lower: a\r\nX-Dup: 1\r\nContent-TYPE: text/html\r\nx-dup: 2\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2; Path=/\r\nX-MiXeD-CaSe:   spaced  value\r\n".to_vec();
            wire.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
            wire.extend_from_slice(&body);
            Reply {
                wire,
                body,
                close: false,
            }
        }
        "/private/secret.html" => html(&page("secret", "", &[], &[])),
        "/private/ok.html" => html(&page("private ok", "", &[], &[])),
        "/doc.pdf" => response(
            "200 OK",
            &[("Content-Type", "application/pdf")],
            b"%PDF-1.4 no",
        ),
        "/doc.pdf?x=1" => response(
            "200 OK",
            &[("Content-Type", "application/pdf")],
            b"%PDF-1.4 yes",
        ),
        "/broken.html" => {
            let mut body = b"<html><head><title>broken</title><body><div><p>unclosed <b>bold <i>it <<<>>> &bogus; &#xZZ; <table><tr><td>cell".to_vec();
            body.extend_from_slice(b"\xff\xfe\x00 invalid utf-8 \xc3\x28 ");
            body.extend_from_slice(
                b"<a href=\"http://[bad\">bad ipv6</a> <a href=\"javascript:alert(1)\">js</a> ",
            );
            body.extend_from_slice(b"<a href=\"mailto:someone@example.org\">mail</a> <a href=\"data:text/html,hi\">data</a> ");
            body.extend_from_slice(b"<a href=\"http://exa mple.com/\">space</a> <a href=\"\">empty</a> <a href>no value</a> <img src=\"http://:0/\"> ");
            body.extend_from_slice(b"<a href=\"/from-broken.html\">ok link</a> <a href='/from-broken.html#frag'>frag</a> <script>document.write('<a href=\"');</script><!-- unclosed comment");
            response("200 OK", &[("Content-Type", "text/html")], &body)
        }
        "/from-noindex.html"
        | "/from-gzip.html"
        | "/from-chunked.html"
        | "/from-gzip-chunked.html"
        | "/from-broken.html"
        | "/target.html" => html(&page(&req.target, "", &[], &[])),
        "/logo.png" => response("200 OK", &[("Content-Type", "image/png")], PNG),
        // never-*.html and anything else: they exist, so a crawler that wrongly follows
        // them leaves a trace in the server log.
        t if t.starts_with("/never-") => html(&page("never", "", &[], &[])),
        _ => response(
            "404 Not Found",
            &[("Content-Type", "text/plain")],
            b"no such page",
        ),
    }
}

/// The off-site server (127.0.0.2): allows everything.
pub fn offsite_site() -> Handler {
    Arc::new(|req: &Request| match req.target.as_str() {
        "/robots.txt" => response(
            "200 OK",
            &[("Content-Type", "text/plain")],
            b"User-agent: *\nAllow: /\n",
        ),
        "/offsite.html" => html(&page("off-site page", "", &[], &[])),
        "/offsite.png" => response("200 OK", &[("Content-Type", "image/png")], PNG),
        _ => response(
            "404 Not Found",
            &[("Content-Type", "text/plain")],
            b"no such page",
        ),
    })
}

/// A site whose robots.txt is garbage (binary bytes, an endless line, rules without a group,
/// a broken wildcard): the crawl must go on without a panic.
pub fn garbage_robots_site() -> Handler {
    Arc::new(|req: &Request| match req.target.as_str() {
        "/robots.txt" => {
            let mut body =
                b"\xff\xfe\x00\x01garbage\r\nDisallow /no-colon\nAllow: /*$$**[\n".to_vec();
            body.extend_from_slice(&[b'x'; 70_000]);
            body.extend_from_slice(b"\nUser-agent:\nCrawl-delay: soon\nUser-agent: archiver\nDisallow: /blocked\n\x00\n");
            response("200 OK", &[("Content-Type", "text/plain")], &body)
        }
        "/" => html(&page("garbage robots", "", &["/page.html"], &[])),
        "/page.html" => html(&page("page", "", &[], &[])),
        _ => response(
            "404 Not Found",
            &[("Content-Type", "text/plain")],
            b"no such page",
        ),
    })
}
