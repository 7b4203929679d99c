//! https: a loopback TLS server with a certificate from a private authority made by the test
//! (trusted through the profile's `[tls] extra_roots`). The WARC must hold the HTTP exchange as
//! it was inside TLS, byte for byte, and pywb must replay it.

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::output::{files_ending, read_warc};
use common::tools::run_archiver;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A private CA, and a certificate for `localhost` it signed.
struct Pki {
    ca_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().expect("ca key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "archiver test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("leaf params");
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).expect("leaf cert");
    Pki {
        ca_pem: ca_cert.pem(),
        cert_der: leaf_cert.der().to_vec(),
        key_der: leaf_key.serialize_der(),
    }
}

/// Answers of the TLS site: the exact bytes written for each request target.
fn answer(target: &str) -> Vec<u8> {
    let body: &[u8] = match target {
        "/robots.txt" => b"User-agent: *\nDisallow: /secret\n",
        "/" => b"<html><a href=\"/page.html\">page</a> <a href=\"/secret.html\">no</a></html>",
        _ => b"<html><p>a page over TLS</p></html>",
    };
    let ctype = if target == "/robots.txt" {
        "text/plain"
    } else {
        "text/html"
    };
    let mut wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nX-Served-Over: TLS\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    wire.extend_from_slice(body);
    wire
}

/// Serves TLS on 127.0.0.1:0 from a thread of its own; returns the port and the targets asked.
fn serve(pki: &Pki) -> (u16, Arc<Mutex<Vec<String>>>) {
    let cert = rustls::pki_types::CertificateDer::from(pki.cert_der.clone());
    let key = rustls::pki_types::PrivateKeyDer::try_from(pki.key_der.clone()).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let line = String::from_utf8_lossy(&buf).to_string();
                    let target = line.split(' ').nth(1).unwrap_or("/").to_string();
                    log.lock().expect("log").push(target.clone());
                    let _ = tls.write_all(&answer(&target)).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
    });
    (port, asked)
}

#[test]
fn an_https_site_is_archived_as_the_http_inside_tls() {
    let pki = pki();
    let (port, asked) = serve(&pki);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::File::create(dir.path().join("ca.pem"))
        .and_then(|mut f| f.write_all(pki.ca_pem.as_bytes()))
        .expect("ca.pem");
    let profile = format!(
        r#"[crawl]
name = "https"
seeds = ["https://localhost:{port}/"]

[identity]
user_agent = "archiver/0.1 (+https://example.org/archiver-tests)"

[politeness]
min_delay = 0.0
delay_factor = 0.0

[tls]
extra_roots = ["ca.pem"]

[discovery]
# This test counts its requests: no /sitemap.xml (tests/sitemap_recrawl.rs tests sitemaps).
sitemaps = false

[output]
dir = "out"

[resolve]
"localhost" = "127.0.0.1"
"#
    );
    let p = dir.path().join("profile.toml");
    std::fs::write(&p, profile).expect("profile");
    let done = run_archiver(
        &["crawl", "--profile", &p.to_string_lossy()],
        dir.path(),
        "https",
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(
        *asked.lock().expect("log"),
        ["/robots.txt", "/", "/page.html"],
        "robots.txt first, /secret.html never"
    );
    let warcs = files_ending(&dir.path().join("out/warcs"), ".warc.gz");
    let records: Vec<_> = warcs.iter().flat_map(|w| read_warc(w)).collect();
    let responses: Vec<_> = records.iter().filter(|r| r.kind() == "response").collect();
    assert_eq!(responses.len(), 3);
    for r in &responses {
        let target = r.target();
        assert!(
            target.starts_with(&format!("https://localhost:{port}/")),
            "{target}"
        );
        let path = &target[format!("https://localhost:{port}").len()..];
        assert_eq!(
            r.block,
            answer(path),
            "{target}: the block is the HTTP answer as sent"
        );
        assert_eq!(r.get("WARC-IP-Address"), Some("127.0.0.1"));
    }
    // The same crawl without the private CA: the certificate is refused, nothing archived.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(&p)
        .expect("profile")
        .replace("extra_roots = [\"ca.pem\"]", "extra_roots = []")
        // One try is enough to see the refusal (retries of robots.txt back off for seconds).
        .replace("delay_factor = 0.0", "delay_factor = 0.0\nmax_retries = 0");
    let p2 = dir2.path().join("profile.toml");
    std::fs::write(&p2, text).expect("profile");
    let done = run_archiver(
        &["crawl", "--profile", &p2.to_string_lossy()],
        dir2.path(),
        "untrusted",
    );
    // Its only seed could not be fetched: exit code 3.
    assert_eq!(done.code, Some(3), "{}", done.stderr);
    let log = std::fs::read_to_string(dir2.path().join("out/crawl.log")).expect("crawl.log");
    assert!(
        log.contains("   -2 "),
        "a certificate we do not trust is a failed connection: {log}"
    );
    assert!(log.contains("TLS"), "{log}");
}
