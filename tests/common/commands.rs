//! Helpers for the offline-command tests (`index`, `diff`, `optout`, `verify`, `wacz`): the
//! archiver binary, the Python tools of the venv (warcio, cdxj-indexer, pywb), a loopback HTTP
//! server for wget, and small crawls written with the library's own WARC writer.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use archiver::spool::{sha1_of, Spool};
use archiver::warc::{Exchange, Revisit, WarcSettings, WarcVersion, WarcWriter, Written};
use chrono::{DateTime, Utc};

use super::tools::http_get;
// The venv and a free port, as every other test finds them.
pub use super::tools::{free_port, venv};

/// Runs `cmd`, killing it after `secs` seconds (a hung tool fails the test, never hangs it).
pub fn run(mut cmd: Command, secs: u64) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {secs} s: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_thread.join().expect("stdout thread"),
        stderr: err_thread.join().expect("stderr thread"),
    }
}

/// The archiver binary with `args`.
pub fn archiver(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_archiver"));
    cmd.args(args);
    run(cmd, 120)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a venv tool (`warcio`, `cdxj-indexer`, …) and asserts it succeeded.
pub fn tool(name: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(venv().join("bin").join(name));
    cmd.args(args);
    let out = run(cmd, 120);
    assert!(
        out.status.success(),
        "{name} {args:?} failed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

/// Runs a Python script with the venv's interpreter, in `dir`.
pub fn python(script: &str, dir: &Path) -> Output {
    let path = dir.join("script.py");
    fs::write(&path, script).expect("write script");
    let mut cmd = Command::new(venv().join("bin").join("python"));
    cmd.arg(&path).current_dir(dir);
    let out = run(cmd, 120);
    assert!(
        out.status.success(),
        "python failed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

/// `cdxj-indexer --sort` over `files`.
pub fn cdxj_indexer(files: &[&Path]) -> String {
    let mut args = vec!["--sort".to_string()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    stdout(&tool("cdxj-indexer", &args))
}

/// `warcio check -v FILE`, asserted to pass.
pub fn warcio_check(file: &Path) -> String {
    stdout(&tool(
        "warcio",
        &["check", "-v", &file.display().to_string()],
    ))
}

/// One resource of the test site.
#[derive(Clone)]
pub struct Page {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Extra header lines (`Name: value`).
    pub headers: Vec<String>,
}

impl Page {
    pub fn html(body: &str) -> Page {
        Page {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: body.as_bytes().to_vec(),
            headers: Vec::new(),
        }
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1 serving fixed pages, one request per connection.
pub struct Server {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(pages: HashMap<String, Page>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => serve(stream, &pages),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, pages: &HashMap<String, Page>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_string();
    let missing = Page {
        status: 404,
        content_type: "text/html",
        body: b"<p>not found</p>".to_vec(),
        headers: Vec::new(),
    };
    let page = pages.get(&path).unwrap_or(&missing);
    let reason = match page.status {
        200 => "OK",
        301 => "Moved Permanently",
        404 => "Not Found",
        _ => "Other",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        page.status,
        page.content_type,
        page.body.len()
    );
    for h in &page.headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&page.body);
}

/// pywb (`wayback`) on 127.0.0.1 with one collection `c`; stopped (its process group, by
/// id) when dropped.
pub struct Pywb {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Pywb {
    /// `index_dir`: folder of CDXJ; `archive_dirs`: WARC folders; `acl`: an .aclj file.
    pub fn start(index_dir: &Path, archive_dirs: &[&Path], acl: Option<&Path>) -> Pywb {
        let dir = tempfile::tempdir().expect("tempdir");
        let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "''"));
        let archives: Vec<String> = archive_dirs
            .iter()
            .map(|d| quote(Path::new(&format!("{}/", d.display()))))
            .collect();
        let mut config = format!(
            "collections:\n  c:\n    index_paths: {}\n    archive_paths: [{}]\n",
            quote(index_dir),
            archives.join(", ")
        );
        if let Some(acl) = acl {
            config.push_str(&format!("    acl_paths: [{}]\n", quote(acl)));
        }
        fs::write(dir.path().join("config.yaml"), config).expect("config.yaml");
        Pywb::start_in(dir)
    }

    /// wayback in `dir`, a folder prepared with `wb-manager` (its collection must be `c`).
    pub fn start_in(dir: tempfile::TempDir) -> Pywb {
        let port = free_port();
        let log = File::create(dir.path().join("pywb.log")).expect("log");
        let child = Command::new(venv().join("bin").join("wayback"))
            .args(["-b", "127.0.0.1", "-p", &port.to_string(), "-d"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start wayback");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let pywb = Pywb {
            child,
            addr,
            _dir: dir,
        };
        let start = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "pywb did not start: {}",
                fs::read_to_string(pywb._dir.path().join("pywb.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        pywb
    }

    /// The archived payload of `url` captured at `ts` (`id_` mode: as archived).
    pub fn get(&self, ts: &str, url: &str) -> (u16, Vec<u8>) {
        let target = format!("/c/{ts}id_/{url}");
        let r = http_get(self.addr, &target).unwrap_or_else(|e| panic!("GET {target}: {e}"));
        (r.status, r.body)
    }
}

impl Drop for Pywb {
    fn drop(&mut self) {
        // The whole group: wayback may have started helpers.
        let pid = self.child.id() as i32;
        let _ = Command::new("kill")
            .arg("--")
            .arg(format!("-{pid}"))
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One capture for [`write_crawl`].
pub enum Cap<'a> {
    /// url, status, body.
    Page(&'a str, u16, &'a str),
    /// A revisit: its url, the original's url and record, the (same) body.
    Revisit(&'a str, &'a str, &'a Written, &'a str),
    /// url, body: a 200 answer sent with `Transfer-Encoding: chunked` (two chunks).
    Chunked(&'a str, &'a str),
}

/// A crawl output folder (`warcs/`, `indexes/`) written with the library's WARC writer.
pub struct Crawl {
    pub out: PathBuf,
    pub written: Vec<Written>,
}

/// The HTTP response bytes of a simple page.
pub fn response_bytes(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The HTTP response bytes of a page sent in two chunks.
pub fn chunked_response_bytes(body: &str) -> Vec<u8> {
    let (a, b) = body.split_at(body.len() / 2);
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    )
    .into_bytes()
}

/// Writes one crawl into `out` with prefix `prefix` at `date`: each page an exchange; returns
/// where each went.
pub fn write_crawl(out: &Path, prefix: &str, date: DateTime<Utc>, caps: &[Cap<'_>]) -> Crawl {
    let settings = WarcSettings {
        warc_dir: out.join("warcs"),
        index_dir: out.join("indexes"),
        prefix: prefix.to_string(),
        max_bytes: 1 << 30,
        version: WarcVersion::V1_1,
        info: vec![("operator".into(), "tests".into())],
    };
    let mut w = WarcWriter::new(settings).expect("writer");
    let mut written = Vec::new();
    for cap in caps {
        match cap {
            Cap::Page(_, _, _) | Cap::Chunked(_, _) => {
                let (url, bytes, body) = match cap {
                    Cap::Page(url, status, body) => (*url, response_bytes(*status, body), *body),
                    Cap::Chunked(url, body) => (*url, chunked_response_bytes(body), *body),
                    Cap::Revisit(..) => unreachable!(),
                };
                let mut spool = Spool::new(1 << 20);
                spool.append(&bytes).expect("spool");
                let request = "GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n";
                let wr = w
                    .write_exchange(Exchange {
                        target_uri: url,
                        date,
                        ip: None,
                        request: request.as_bytes(),
                        response: &mut spool,
                        payload_digest: Some(sha1_of(body.as_bytes())),
                        truncated: None,
                    })
                    .expect("write exchange");
                written.push(wr);
            }
            Cap::Revisit(url, original_url, original, body) => {
                let bytes = response_bytes(200, body);
                let head_end = bytes
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .expect("head")
                    + 4;
                let request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
                let wr = w
                    .write_revisit(Revisit {
                        target_uri: url,
                        date,
                        ip: None,
                        request: request.as_bytes(),
                        http_head: &bytes[..head_end],
                        payload_digest: sha1_of(body.as_bytes()),
                        refers_to_uri: original_url,
                        refers_to_date: &original.warc_date,
                        refers_to_record_id: Some(&original.record_id),
                    })
                    .expect("write revisit");
                written.push(wr);
            }
        }
    }
    w.close().expect("close");
    Crawl {
        out: out.to_path_buf(),
        written,
    }
}

/// Reads a file's lines.
pub fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The only file of `dir` whose name ends with `suffix`.
pub fn only_file(dir: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// Python (warcio) that writes `sample.warc.gz` and `sample.warc` with every record type
/// cdxj-indexer treats differently: request/response pairs, 404, 301, chunked, a URL with a
/// space and a non-ASCII character, revisits with and without an HTTP head, resources,
/// metadata (warc-fields and JSON), a `dns:` response; plus `raw.warc.gz` and `raw.warc`,
/// written by hand: no payload digest (cdxj-indexer computes one), a Latin-1 header, a
/// continuation line, a `<…>`-wrapped target URI (wget 1.19), a Heritrix-style metadata
/// record tied to its response by WARC-Concurrent-To.
pub const SAMPLE_WARCS_PY: &str = r#"
import gzip, hashlib, base64
from io import BytesIO
from warcio.warcwriter import WARCWriter
from warcio.statusandheaders import StatusAndHeaders

def build(path, use_gzip):
    with open(path, 'wb') as fh:
        w = WARCWriter(fh, gzip=use_gzip, warc_version='1.1')
        w.write_record(w.create_warcinfo_record(path, {'software': 'sample'}))
        def resp(url, status, ctype, body, extra=()):
            hs = [('Content-Type', ctype), ('Content-Length', str(len(body)))] + list(extra)
            h = StatusAndHeaders(status, hs, protocol='HTTP/1.1')
            r = w.create_warc_record(url, 'response', payload=BytesIO(body), http_headers=h)
            w.write_record(r)
            return r
        first = resp('http://example.com/', '200 OK', 'text/html; charset=utf-8',
                     b'<html><p>hello</p></html>')
        req = w.create_warc_record('http://example.com/', 'request', payload=BytesIO(b''),
            http_headers=StatusAndHeaders('GET / HTTP/1.1', [('Host', 'example.com')],
                                          is_http_request=True))
        req.rec_headers.add_header('WARC-Concurrent-To', first.rec_headers.get_header('WARC-Record-ID'))
        w.write_record(req)
        resp('http://example.com/missing', '404 Not Found', 'text/plain', b'nope')
        resp('https://www.Example.com/Path?b=2&a=1', '301 Moved Permanently', 'text/html', b'',
             [('Location', '/x')])
        resp('http://example.com/caf\u00e9 menu', '200 OK', 'TEXT/HTML;charset=x', b'menu')
        resp('http://example.com/chunked', '200 OK', 'text/plain', b'5\r\nhello\r\n0\r\n\r\n',
             [('Transfer-Encoding', 'chunked')])
        resp('http://example.com/data.json', '200 OK', 'application/json', b'{"a": 1}')
        digest = first.rec_headers.get_header('WARC-Payload-Digest')
        date = first.rec_headers.get_header('WARC-Date')
        w.write_record(w.create_revisit_record('http://example.com/again', digest,
            'http://example.com/', date,
            http_headers=StatusAndHeaders('200 OK', [('Content-Type', 'text/html')],
                                          protocol='HTTP/1.1')))
        w.write_record(w.create_revisit_record('http://example.com/again2', digest,
            'http://example.com/', date))
        w.write_record(w.create_warc_record('http://example.com/file.txt', 'resource',
            payload=BytesIO(b'plain text'), warc_content_type='text/plain; charset=utf-8'))
        w.write_record(w.create_warc_record('urn:x:fields', 'resource',
            payload=BytesIO(b'a: b\r\n'), warc_content_type='application/warc-fields'))
        w.write_record(w.create_warc_record('http://example.com/', 'metadata',
            payload=BytesIO(b'outlink: http://example.com/x\r\n'),
            warc_content_type='application/warc-fields'))
        w.write_record(w.create_warc_record('http://example.com/', 'metadata',
            payload=BytesIO(b'{"a": 1}'), warc_content_type='application/json'))
        w.write_record(w.create_warc_record('dns:example.com', 'response',
            payload=BytesIO(b'20261130 example.com. 300 IN A 127.0.0.1\n'),
            warc_content_type='text/dns'))

build('sample.warc.gz', True)
build('sample.warc', False)

def raw(rtype, uri, block, extra=b'', rid=None):
    rid = rid or ('<urn:uuid:00000000-0000-0000-0000-%012d>' % raw.n)
    raw.n += 1
    head = (b'WARC/1.0\r\nWARC-Type: ' + rtype + b'\r\nWARC-Record-ID: ' + rid.encode() +
            b'\r\nWARC-Date: 2026-11-30T23:38:13Z\r\nWARC-Target-URI: ' + uri + b'\r\n' + extra +
            b'Content-Length: ' + str(len(block)).encode() + b'\r\n\r\n')
    return head + block + b'\r\n\r\n'
raw.n = 1

page = (b'HTTP/1.1 200 OK\r\nContent-Type: text/html;\r\n charset=\xe9t\xe9\r\n'
        b'X-Folded: a\r\n\tb\r\n\r\n<p>no digest</p>')
resp_id = '<urn:uuid:11111111-0000-0000-0000-000000000001>'
records = [
    raw(b'response', b'http://example.org/nodigest', page,
        b'Content-Type: application/http;msgtype=response\r\n', rid=resp_id),
    raw(b'metadata', b'http://example.org/nodigest', b'via: http://example.org/\r\n',
        b'WARC-Concurrent-To: ' + resp_id.encode() +
        b'\r\nContent-Type: application/warc-fields\r\n'),
    raw(b'response', b'<http://example.org/wrapped>', b'HTTP/1.0 200 OK\r\n\r\nx',
        b'WARC-Payload-Digest: sha1:AAAA\r\n'),
    raw(b'resource', b'http://example.org/res', b'resource body without digest',
        b'Content-Type: text/plain\r\n'),
    raw(b'response', b'http://example.org/empty-head', b'\r\nbody',
        b'WARC-Payload-Digest: sha1:BBBB\r\n'),
]
with open('raw.warc.gz', 'wb') as fh:
    for r in records:
        fh.write(gzip.compress(r))
with open('raw.warc', 'wb') as fh:
    for r in records:
        fh.write(r)
"#;

/// Writes the sample WARCs into `dir` and returns their paths.
pub fn sample_warcs(dir: &Path) -> Vec<PathBuf> {
    python(SAMPLE_WARCS_PY, dir);
    ["sample.warc.gz", "sample.warc", "raw.warc.gz", "raw.warc"]
        .iter()
        .map(|n| dir.join(n))
        .collect()
}
