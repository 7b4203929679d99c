//! A tiny HTTP/1.1 server on raw TCP for the end-to-end tests.
//!
//! Responses are written by hand, byte for byte, so a test controls what goes over the wire
//! (header case and order, duplicate headers, chunked framing, gzip, a connection dropped
//! mid-body) and can later compare the WARC with exactly what was sent. Every exchange is logged
//! with its timings, the raw request bytes and the exact response bytes written.
//!
//! Every read and write has a timeout, so a misbehaving client never hangs the test.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long the server waits for the next bytes of a request (or an idle keep-alive connection).
const READ_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one write may block (a client that stopped reading).
const WRITE_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Responses are written in pieces of this size, so a partial write is logged precisely.
const WRITE_PIECE: usize = 16 * 1024;

/// A parsed request as the route handlers see it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The request-target as sent (path and query).
    pub target: String,
    /// Header fields in the order received, names as sent.
    pub headers: Vec<(String, String)>,
    /// How many times this exact target was requested before this one (0 the first time).
    pub earlier: usize,
}

impl Request {
    /// First header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a route handler answers.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The exact bytes to write (status line, headers, framed body).
    pub wire: Vec<u8>,
    /// The entity body with transfer and content coding removed (what a replay must return).
    pub body: Vec<u8>,
    /// Close the connection after writing `wire`.
    pub close: bool,
}

/// One request/response exchange as the server saw it.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// Order of arrival on this server.
    pub seq: usize,
    /// When the first byte of the request was read.
    pub arrived: Instant,
    /// When the last byte of the response was written (or the write failed).
    pub finished: Instant,
    /// Whether every byte of `reply.wire` was written.
    pub complete: bool,
    /// The raw request bytes (head; GET has no body).
    pub raw_request: Vec<u8>,
    pub request: Request,
    /// Exactly the bytes written to the socket.
    pub written: Vec<u8>,
    /// The reply that was meant to be written.
    pub reply: Reply,
    /// Status code of the reply.
    pub status: u16,
}

impl Exchange {
    /// Path of the request-target, without the query.
    pub fn path(&self) -> &str {
        let t = self.request.target.as_str();
        t.split('?').next().unwrap_or(t)
    }
}

/// A route table: request → reply.
pub type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// A running test server. Dropping it stops it.
pub struct TestSite {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Exchange>>>,
    in_flight: Arc<AtomicUsize>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl TestSite {
    /// Serves `handler` on `ip:0` (an ephemeral port).
    pub fn start(ip: IpAddr, handler: Handler) -> TestSite {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("test server runtime");
        let listener = runtime
            .block_on(TcpListener::bind(SocketAddr::new(ip, 0)))
            .unwrap_or_else(|e| panic!("bind {ip}:0: {e}"));
        let addr = listener.local_addr().expect("local addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let state = Arc::new(ServerState {
            handler,
            log: log.clone(),
            counts: Mutex::new(HashMap::new()),
            seq: Mutex::new(0),
            in_flight: in_flight.clone(),
        });
        runtime.spawn(accept_loop(listener, state));
        TestSite {
            addr,
            log,
            in_flight,
            runtime: Some(runtime),
        }
    }

    /// `http://IP:PORT` of this site.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A copy of the exchanges so far, in order of arrival. Waits (a few seconds at most) for
    /// replies still being written, so a client that already exited is fully logged.
    pub fn exchanges(&self) -> Vec<Exchange> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut v = self.log.lock().expect("log lock").clone();
        v.sort_by_key(|e| (e.arrived, e.seq));
        v
    }
}

impl Drop for TestSite {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

struct ServerState {
    handler: Handler,
    log: Arc<Mutex<Vec<Exchange>>>,
    counts: Mutex<HashMap<String, usize>>,
    seq: Mutex<usize>,
    /// Requests whose exchange is not logged yet.
    in_flight: Arc<AtomicUsize>,
}

async fn accept_loop(listener: TcpListener, state: Arc<ServerState>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(serve_connection(stream, state.clone()));
    }
}

/// Serves requests on one connection until the client closes it, a timeout, or a reply that
/// closes.
async fn serve_connection(mut stream: TcpStream, state: Arc<ServerState>) {
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::new();
    let mut first_byte_at: Option<Instant> = None;
    loop {
        // Read one request head.
        let head_end = loop {
            if let Some(end) = find_head_end(&buf) {
                break end;
            }
            if buf.len() > MAX_HEAD {
                return;
            }
            let mut chunk = [0u8; 8192];
            let n = match tokio::time::timeout(READ_TIMEOUT, stream.read(&mut chunk)).await {
                Ok(Ok(n)) => n,
                _ => return,
            };
            if n == 0 {
                return;
            }
            if buf.is_empty() {
                first_byte_at = Some(Instant::now());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let arrived = first_byte_at.unwrap_or_else(Instant::now);
        let raw_request: Vec<u8> = buf.drain(..head_end).collect();
        // Bytes of a pipelined next request arrived with this one.
        first_byte_at = if buf.is_empty() { None } else { Some(arrived) };
        let Some(mut request) = parse_head(&raw_request) else {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            return;
        };
        state.in_flight.fetch_add(1, Ordering::SeqCst);
        request.earlier = {
            let mut counts = state.counts.lock().expect("counts lock");
            let c = counts.entry(request.target.clone()).or_insert(0);
            let earlier = *c;
            *c += 1;
            earlier
        };
        let seq = {
            let mut s = state.seq.lock().expect("seq lock");
            *s += 1;
            *s
        };
        let reply = (state.handler)(&request);
        let (written, complete, finished) = write_reply(&mut stream, &reply.wire).await;
        let client_close = request
            .header("connection")
            .is_some_and(|v| v.to_ascii_lowercase().contains("close"));
        let close = reply.close || client_close || !complete;
        let status = status_of(&reply.wire);
        state.log.lock().expect("log lock").push(Exchange {
            seq,
            arrived,
            finished,
            complete,
            raw_request,
            request,
            written,
            reply,
            status,
        });
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        if close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Writes `wire` in pieces; returns the bytes actually written and whether all were.
/// Writes a reply. Also returns the instant taken just before its last piece was written: the
/// client cannot have the whole answer before then, so a gap measured from it is never shorter
/// than the client's own (a stamp taken after the write could come late when this thread is
/// descheduled on a loaded machine, and make a polite client look early).
async fn write_reply(stream: &mut TcpStream, wire: &[u8]) -> (Vec<u8>, bool, Instant) {
    let mut written = Vec::with_capacity(wire.len());
    let mut last_started = Instant::now();
    for piece in wire.chunks(WRITE_PIECE) {
        last_started = Instant::now();
        match tokio::time::timeout(WRITE_TIMEOUT, stream.write_all(piece)).await {
            Ok(Ok(())) => written.extend_from_slice(piece),
            _ => return (written, false, Instant::now()),
        }
    }
    match tokio::time::timeout(WRITE_TIMEOUT, stream.flush()).await {
        Ok(Ok(())) => (written, true, last_started),
        _ => (written, false, Instant::now()),
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn parse_head(raw: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    Some(Request {
        method,
        target,
        headers,
        earlier: 0,
    })
}

/// The status code on the first line of a response.
pub fn status_of(wire: &[u8]) -> u16 {
    wire.split(|b| *b == b' ')
        .nth(1)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

// ---- helpers to build replies -------------------------------------------------------------

/// A response with a `Content-Length` body. `headers` are written in order, as given.
pub fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut wire = format!("HTTP/1.1 {status}\r\n").into_bytes();
    for (n, v) in headers {
        wire.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    wire.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    wire.extend_from_slice(body);
    Reply {
        wire,
        body: body.to_vec(),
        close: false,
    }
}

/// A 200 answer of type `content_type`, with no other header.
pub fn ok(content_type: &str, body: impl AsRef<[u8]>) -> Reply {
    response("200 OK", &[("Content-Type", content_type)], body.as_ref())
}

/// A plain-text 404.
pub fn not_found() -> Reply {
    response("404 Not Found", &[("Content-Type", "text/plain")], b"no")
}

/// A 200 text/html page.
pub fn html(body: &[u8]) -> Reply {
    response(
        "200 OK",
        &[
            ("Server", "archiver-testsite"),
            ("Content-Type", "text/html; charset=utf-8"),
        ],
        body,
    )
}

/// Gzip-compresses `data` (one member).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).expect("gzip");
    enc.finish().expect("gzip")
}

/// Frames `data` as chunked transfer coding, in pieces of the given sizes (the rest in a last
/// piece); chunk sizes in upper-case hex, a zero chunk and an empty trailer at the end.
pub fn chunked(data: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = data;
    for &size in sizes {
        if rest.is_empty() {
            break;
        }
        let n = size.min(rest.len());
        out.extend_from_slice(format!("{n:X}\r\n").as_bytes());
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    if !rest.is_empty() {
        out.extend_from_slice(format!("{:X}\r\n", rest.len()).as_bytes());
        out.extend_from_slice(rest);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Undoes chunked transfer coding; `None` when the framing is broken or cut short (the
/// library's one dechunker).
pub use archiver::warc::chunked::dechunk_strict as dechunk;

/// Undoes gzip content coding (all members).
pub fn gunzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out)?;
    Ok(out)
}

/// An endless site for tests that steer a running crawl: robots.txt allows everything, and
/// every other path ending in a number N answers `page(N)` as HTML (0 when there is none),
/// after 10 ms, so a crawl of it runs until it is stopped.
pub fn endless_site(page: fn(u64) -> String) -> Handler {
    Arc::new(move |req: &Request| {
        std::thread::sleep(Duration::from_millis(10));
        let t = req.target.as_str();
        if t == "/robots.txt" {
            return response(
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\nAllow: /\n",
            );
        }
        let n: u64 = t
            .rsplit('/')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        html(page(n).as_bytes())
    })
}
