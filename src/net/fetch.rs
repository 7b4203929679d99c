//! One HTTP/1.1 exchange, with the exact bytes that went over the wire.
//!
//! reqwest normalises headers and hides the raw exchange, so a WARC could not hold what was really
//! sent and received. Instead hyper's low-level HTTP/1 connection runs over a stream wrapper that
//! copies every byte written (the request) and read (the response: status line, header case and
//! order, chunked framing, compressed body as sent). hyper does no redirects, retries, cookies or
//! decompression here: the crawler decides those itself.

use std::future::Future;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderMap, HeaderValue};
use sha1::{Digest, Sha1};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::timeout_at;
use url::Url;

use crate::spool::{sha1_label, Spool};

/// Bytes of an HTML body kept in memory for link extraction; the WARC still gets everything.
pub const KEEP_PAYLOAD_MAX: usize = 20 << 20;

/// What every request carries besides the URL.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub user_agent: String,
    pub timeout: Duration,
    pub max_body_bytes: u64,
    /// Root certificates (DER) trusted besides the Mozilla roots.
    pub extra_roots: Vec<Vec<u8>>,
}

/// What to do with a response's body, decided from its status and headers before it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPlan {
    /// Read it to the end; `keep` holds it in memory (capped) for link extraction too.
    Read { keep: bool },
    /// Do not read it: the connection is closed right after the headers, so a server sends
    /// (almost) nothing of a body the crawl would throw away.
    Skip,
}

/// Why an exchange produced no response. The numbers are Heritrix's crawl.log codes.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("DNS lookup failed: {0}")]
    Dns(String),
    #[error("connection failed: {0}")]
    Connect(String),
    #[error("connection broken: {0}")]
    Broken(String),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Other(String),
    /// The address guard refused the server's address: nothing was sent.
    #[error("{0}")]
    Refused(crate::net::guard::Refused),
}

impl FetchError {
    /// The crawl.log status for this failure.
    pub fn status(&self) -> i32 {
        match self {
            FetchError::Dns(_) => -1,
            FetchError::Connect(_) => -2,
            FetchError::Broken(_) => -3,
            FetchError::Timeout(_) => -4,
            FetchError::Other(_) => -5,
            FetchError::Refused(_) => crate::logs::crawllog::status::OUT_OF_SCOPE,
        }
    }
}

/// A completed (possibly truncated) exchange.
#[derive(Debug)]
pub struct Fetched {
    pub url: Url,
    pub ip: IpAddr,
    /// When the request started: the WARC-Date.
    pub started: DateTime<Utc>,
    pub started_at: Instant,
    /// When the last byte of the response arrived: politeness delays count from here.
    pub finished_at: Instant,
    /// The exact request bytes.
    pub request: Vec<u8>,
    /// The exact response bytes.
    pub response: Spool,
    pub status: u16,
    pub headers: HeaderMap,
    /// sha1 over the entity body after transfer decoding (WARC 1.1 §6.3.2), as `sha1:BASE32`.
    pub payload_digest: String,
    pub payload_len: u64,
    /// The body (still content-encoded) when the caller asked to keep it; capped.
    pub payload: Vec<u8>,
    /// `length`, `time` or `disconnect` when the body is incomplete.
    pub truncated: Option<&'static str>,
    /// The plan said [`BodyPlan::Skip`]: only the head was read (the record must not be written).
    pub body_skipped: bool,
    /// Statuses of interim `1xx` answers received before the final one (not archived).
    pub interim: Vec<u16>,
    /// Bytes received past the end of the message (beyond its Content-Length, after the last
    /// chunk): dropped from the record.
    pub excess_bytes: u64,
}

impl Fetched {
    /// Seconds from request start to the last response byte.
    pub fn duration(&self) -> Duration {
        self.finished_at.saturating_duration_since(self.started_at)
    }

    /// The first value of a response header, if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Every value of a response header that is text.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    }

    /// The media type of the response, lower-cased, without parameters.
    pub fn mime(&self) -> Option<String> {
        let ct = self.header("content-type")?;
        let mime = ct.split(';').next()?.trim().to_ascii_lowercase();
        (!mime.is_empty()).then_some(mime)
    }
}

/// Makes HTTP/1.1 exchanges. Holds the TLS configuration, built once.
pub struct Fetcher {
    settings: FetchSettings,
    tls: tokio_rustls::TlsConnector,
}

impl Fetcher {
    pub fn new(settings: FetchSettings) -> Fetcher {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for der in &settings.extra_roots {
            let cert = rustls::pki_types::CertificateDer::from(der.clone());
            if let Err(e) = roots.add(cert) {
                // Checked when the profile was read; a certificate rustls still refuses is
                // reported and left out rather than trusted half-way.
                tracing::error!("an extra root certificate was refused: {e}");
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| b.with_root_certificates(roots).with_no_client_auth())
            .unwrap_or_else(|_| {
                // The ring provider always supports the default versions; this branch only keeps
                // the constructor infallible.
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            });
        // We speak HTTP/1.1 only: the WARC must hold an HTTP/1.x message.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Fetcher {
            settings,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        }
    }

    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }

    /// GETs `url` from `addr` (already resolved), with `Referer: referer` when given. `plan`
    /// decides, from the response status and headers, whether the body is read and whether it
    /// is kept in memory for link extraction.
    pub async fn get(
        &self,
        url: &Url,
        addr: SocketAddr,
        referer: Option<&Url>,
        plan: impl Fn(u16, &HeaderMap) -> BodyPlan,
    ) -> Result<Fetched, FetchError> {
        self.get_if(url, addr, referer, &[], plan).await
    }

    /// [`Fetcher::get`] with the conditional headers of a re-crawl (`If-None-Match`,
    /// `If-Modified-Since`), sent after `Accept-Encoding`.
    pub async fn get_if(
        &self,
        url: &Url,
        addr: SocketAddr,
        referer: Option<&Url>,
        conditions: &[(&'static str, String)],
        plan: impl Fn(u16, &HeaderMap) -> BodyPlan,
    ) -> Result<Fetched, FetchError> {
        let started = Utc::now();
        let started_at = Instant::now();
        let deadline = tokio::time::Instant::from_std(started_at + self.settings.timeout);
        let timeout = || FetchError::Timeout(self.settings.timeout);

        let tcp = timeout_at(deadline, TcpStream::connect(addr))
            .await
            .map_err(|_| timeout())?
            .map_err(|e| FetchError::Connect(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Io> = if url.scheme() == "https" {
            let name = url
                .host_str()
                .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string())
                .ok_or_else(|| FetchError::Other("URL has no host".into()))?;
            let server = rustls::pki_types::ServerName::try_from(name)
                .map_err(|e| FetchError::Connect(format!("bad TLS server name: {e}")))?;
            let tls = timeout_at(deadline, self.tls.connect(server, tcp))
                .await
                .map_err(|_| timeout())?
                .map_err(|e| FetchError::Connect(format!("TLS: {e}")))?;
            Box::new(tls)
        } else {
            Box::new(tcp)
        };

        let capture = Arc::new(Mutex::new(Capture::default()));
        let io = hyper_util::rt::TokioIo::new(Recorder {
            inner: stream,
            capture: capture.clone(),
        });
        let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
            .title_case_headers(true)
            .handshake::<_, Empty<Bytes>>(io)
            .await
            .map_err(|e| FetchError::Other(e.to_string()))?;
        // The connection future drives the socket, polled beside the exchange in this task; it
        // is dropped (the socket closed) when the exchange is over.
        let outcome = beside(
            conn,
            self.exchange(&mut sender, (url, referer, conditions), deadline, plan),
        )
        .await;
        drop(sender);
        let (request, mut response) = {
            let mut c = capture.lock().unwrap_or_else(|p| p.into_inner());
            (
                std::mem::take(&mut c.request),
                std::mem::take(&mut c.response),
            )
        };
        let mut body = outcome?;
        // The connection is closed now: that, not the last body frame, is when the server
        // finished answering, and politeness delays count from it.
        body.finished_at = Instant::now();
        let fix = |e: io::Error| FetchError::Other(format!("cannot trim the response: {e}"));
        // hyper skips interim 1xx answers; the record must start at the final status line.
        let interim = strip_interim(&mut response).map_err(fix)?;
        let chunked = is_chunked(&body.headers);
        // hyper reads ahead: keep only the bytes of the message it parsed, so the record holds
        // exactly the head and the body up to max_body_bytes (a cut body), or up to the end of
        // the message (bytes a server sends past its Content-Length are dropped).
        // A skipped body was never read: nothing to trim (its record is not written).
        let excess_bytes = match body.truncated {
            _ if body.skipped => 0,
            Some("length") => cut_after_payload(&mut response, chunked, body.len, false)
                .map(|_| 0)
                .map_err(fix)?,
            None => cut_after_payload(&mut response, chunked, body.len, true).map_err(fix)?,
            // Cut by time or a disconnect: hyper's connection task may have read bytes off the
            // socket (so they are in the record) that it had not handed over as body frames
            // yet. The record keeps what was received; its digest and length are taken from
            // the record itself, so they describe exactly the bytes stored.
            Some(_) => {
                let max = self.settings.max_body_bytes;
                // Chunked framing overrides a Content-Length (RFC 9112 §6.3), as hyper reads it.
                let declared = (!chunked).then(|| content_length(&body.headers)).flatten();
                let limit = declared.map_or(max, |n| n.min(max));
                match recorded_payload(&mut response, chunked, limit).map_err(fix)? {
                    Some(p) => {
                        body.digest = p.digest;
                        body.len = p.len;
                        // Only bytes past the message's declared end are excess; bytes past
                        // max_body_bytes are the cap's, not the server's.
                        if declared.is_some_and(|n| n <= max) {
                            p.dropped
                        } else {
                            0
                        }
                    }
                    None => 0,
                }
            }
        };
        Ok(Fetched {
            url: url.clone(),
            ip: addr.ip(),
            started,
            started_at,
            finished_at: body.finished_at,
            request,
            response,
            status: body.status,
            headers: body.headers,
            payload_digest: body.digest,
            payload_len: body.len,
            payload: body.kept,
            truncated: body.truncated,
            body_skipped: body.skipped,
            interim,
            excess_bytes,
        })
    }

    /// Sends the request and reads the whole body, hashing it as it comes.
    async fn exchange(
        &self,
        sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
        (url, referer, conditions): (&Url, Option<&Url>, &[(&'static str, String)]),
        deadline: tokio::time::Instant,
        plan: impl Fn(u16, &HeaderMap) -> BodyPlan,
    ) -> Result<Body, FetchError> {
        let request = self.build_request(url, referer, conditions)?;
        let response = timeout_at(deadline, sender.send_request(request))
            .await
            .map_err(|_| FetchError::Timeout(self.settings.timeout))?
            .map_err(|e| classify(&e))?;
        let (parts, mut body) = response.into_parts();
        let plan = plan(parts.status.as_u16(), &parts.headers);
        let mut out = Body {
            status: parts.status.as_u16(),
            headers: parts.headers,
            digest: String::new(),
            len: 0,
            kept: Vec::new(),
            truncated: None,
            finished_at: Instant::now(),
            skipped: plan == BodyPlan::Skip,
        };
        let mut hasher = Sha1::new();
        let keep = match plan {
            BodyPlan::Read { keep } => keep,
            BodyPlan::Skip => {
                // The caller drops the connection: the body is never asked for.
                out.digest = sha1_label(hasher.finalize().as_slice());
                return Ok(out);
            }
        };
        if keep {
            // The declared length (within the caps) is taken at once: grown by doubling, an
            // 8.5 MB body went through buffers of 1, 2, 4, 8 and 16 MB, and the allocator
            // keeps freed pages a while, so a few large pages at once cost several times
            // their size.
            let declared = out
                .headers
                .get(hyper::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
            let cap = self.settings.max_body_bytes.min(KEEP_PAYLOAD_MAX as u64);
            out.kept.reserve_exact(declared.min(cap) as usize);
        }
        loop {
            let frame = match timeout_at(deadline, body.frame()).await {
                Err(_) => {
                    out.truncated = Some("time");
                    break;
                }
                Ok(None) => break,
                Ok(Some(Err(_))) => {
                    out.truncated = Some("disconnect");
                    break;
                }
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers: kept in the raw bytes, nothing to hash
            };
            let room = self.settings.max_body_bytes.saturating_sub(out.len);
            let take = (data.len() as u64).min(room) as usize;
            hasher.update(&data[..take]);
            out.len += take as u64;
            if keep && out.kept.len() < KEEP_PAYLOAD_MAX {
                let k = take.min(KEEP_PAYLOAD_MAX - out.kept.len());
                out.kept.extend_from_slice(&data[..k]);
            }
            if take < data.len() {
                out.truncated = Some("length");
                break;
            }
        }
        out.finished_at = Instant::now();
        out.digest = sha1_label(hasher.finalize().as_slice());
        Ok(out)
    }

    fn build_request(
        &self,
        url: &Url,
        referer: Option<&Url>,
        conditions: &[(&'static str, String)],
    ) -> Result<hyper::Request<Empty<Bytes>>, FetchError> {
        let mut target = url.path().to_string();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err(FetchError::Other("URL has no host".into())),
        };
        let header = |v: &str| {
            HeaderValue::from_str(v).map_err(|e| FetchError::Other(format!("bad header: {e}")))
        };
        // Header order here is the order on the wire; no cookies, ever.
        let mut builder = hyper::Request::builder()
            .method(hyper::Method::GET)
            .uri(target)
            .header("Host", header(&host)?)
            .header("User-Agent", header(&self.settings.user_agent)?)
            .header(
                "Accept",
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            )
            .header("Accept-Encoding", "gzip, deflate");
        for (name, value) in conditions {
            builder = builder.header(*name, header(value)?);
        }
        if let Some(value) = referer.and_then(|r| referer_value(r, url)) {
            builder = builder.header("Referer", header(&value)?);
        }
        builder
            .header("Connection", "close")
            .body(Empty::new())
            .map_err(|e| FetchError::Other(format!("cannot build the request: {e}")))
    }
}

/// The `Referer` for a request to `target` from the page `from`: the page's URL without
/// fragment and credentials, and none from https to http (what browsers send by default:
/// a secure page's address is not leaked over plain http).
fn referer_value(from: &Url, target: &Url) -> Option<String> {
    if from.scheme() == "https" && target.scheme() == "http" {
        return None;
    }
    let mut r = from.clone();
    r.set_fragment(None);
    let _ = r.set_username("");
    let _ = r.set_password(None);
    Some(r.into())
}

/// Runs `work` while polling `conn` (hyper's connection, which moves the bytes) in the same
/// task, until `work` is done; `conn` may end first (the server closed the connection). One
/// task per exchange instead of two: a spawned connection task cost a task's memory for each
/// request in flight and a hand-over between the two tasks for every read.
async fn beside<C: Future, W: Future>(conn: C, work: W) -> W::Output {
    let mut conn = std::pin::pin!(conn);
    let mut work = std::pin::pin!(work);
    let mut conn_over = false;
    std::future::poll_fn(|cx| {
        if !conn_over {
            // Its outcome (an error included) reaches `work` through the response and body.
            conn_over = conn.as_mut().poll(cx).is_ready();
        }
        work.as_mut().poll(cx)
    })
    .await
}

/// What `exchange` learnt about the response.
struct Body {
    status: u16,
    headers: HeaderMap,
    digest: String,
    len: u64,
    kept: Vec<u8>,
    truncated: Option<&'static str>,
    finished_at: Instant,
    skipped: bool,
}

fn is_chunked(headers: &HeaderMap) -> bool {
    headers
        .get_all("transfer-encoding")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("chunked"))
}

/// Where the head of a response ends: after its first empty line (CRLF or bare LF, as hyper
/// accepts both). None when no end is seen in the first `HEAD_SCAN` bytes.
fn head_len(head: &[u8]) -> Option<usize> {
    let mut at = 0;
    for line in head.split_inclusive(|&b| b == b'\n') {
        at += line.len();
        if !line.ends_with(b"\n") {
            return None;
        }
        if line == b"\r\n" || line == b"\n" {
            return Some(at);
        }
    }
    None
}

/// The status code of a head's status line (`HTTP/1.1 103 Early Hints`).
fn status_of(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split_ascii_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

/// Removes interim answers (`100 Continue`, `103 Early Hints`, …; not `101`, which is final)
/// from the start of a captured response. Returns their statuses, in order.
fn strip_interim(spool: &mut Spool) -> io::Result<Vec<u16>> {
    let mut statuses = Vec::new();
    loop {
        let head = spool.head(HEAD_SCAN)?;
        let Some(status) = status_of(&head).filter(|s| (100..200).contains(s) && *s != 101) else {
            return Ok(statuses);
        };
        let Some(len) = head_len(&head) else {
            return Ok(statuses);
        };
        statuses.push(status);
        spool.drop_front(len as u64)?;
    }
}

/// Cuts a captured response right after `payload_len` bytes of (transfer-decoded) body; with
/// `whole`, after the end of the message (the last chunk and trailers of a chunked body).
/// Returns how many bytes were dropped.
fn cut_after_payload(
    spool: &mut Spool,
    chunked: bool,
    payload_len: u64,
    whole: bool,
) -> io::Result<u64> {
    let head = spool.head(HEAD_SCAN)?;
    let Some(head_len) = head_len(&head) else {
        return Ok(0); // no recognisable head: leave the bytes as they are
    };
    let cut = if chunked {
        let mut reader = io::BufReader::new(spool.reader()?);
        io::copy(&mut (&mut reader).take(head_len as u64), &mut io::sink())?;
        let mut raw = chunked_raw_len(&mut reader, payload_len)?;
        if whole {
            raw += chunked_end_len(&mut reader)?;
        }
        head_len as u64 + raw
    } else {
        head_len as u64 + payload_len
    };
    let before = spool.len();
    spool.truncate(cut)?;
    Ok(before.saturating_sub(spool.len()))
}

/// How far the head of a response may reach before we give up looking for its end.
const HEAD_SCAN: usize = 1 << 20;

/// The body of a recorded response, as the record now holds it.
struct RecordedPayload {
    /// `sha1:` of the (transfer-decoded) body.
    digest: String,
    /// Its length, decoded.
    len: u64,
    /// Bytes dropped from the end of the record (past Content-Length or `max_body_bytes`).
    dropped: u64,
}

/// Digests the body a captured response holds, up to `limit` decoded bytes, tolerating a body
/// that ends early (inside a chunk, say), and cuts the record after those bytes. None when the
/// head has no recognisable end (the record is then left as it is).
fn recorded_payload(
    spool: &mut Spool,
    chunked: bool,
    limit: u64,
) -> io::Result<Option<RecordedPayload>> {
    let head = spool.head(HEAD_SCAN)?;
    let Some(head_len) = head_len(&head) else {
        return Ok(None);
    };
    let mut hasher = Sha1::new();
    let (raw, len) = {
        let mut reader = io::BufReader::new(spool.reader()?);
        io::copy(&mut (&mut reader).take(head_len as u64), &mut io::sink())?;
        if chunked {
            walk_chunks(&mut reader, limit, &mut hasher)?
        } else {
            let n = io::copy(&mut (&mut reader).take(limit), &mut hasher)?;
            (n, n)
        }
    };
    let before = spool.len();
    spool.truncate(head_len as u64 + raw)?;
    Ok(Some(RecordedPayload {
        digest: sha1_label(hasher.finalize().as_slice()),
        len,
        dropped: before.saturating_sub(spool.len()),
    }))
}

/// The `Content-Length` of a response, when it has one valid value.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("content-length")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Raw bytes of chunked framing that carry the first `payload_len` decoded bytes.
fn chunked_raw_len(r: &mut impl io::BufRead, payload_len: u64) -> io::Result<u64> {
    Ok(walk_chunks(r, payload_len, &mut io::sink())?.0)
}

/// Walks a chunked body, writing its first `limit` decoded bytes to `sink`. Returns the raw
/// bytes (sizes, data, CRLFs) that carried them and how many were decoded. Stops at the last
/// chunk, at a line that is not a chunk size, or where the bytes end (a cut body).
fn walk_chunks(
    r: &mut impl io::BufRead,
    limit: u64,
    sink: &mut impl io::Write,
) -> io::Result<(u64, u64)> {
    let mut raw = 0u64;
    let mut decoded = 0u64;
    while decoded < limit {
        let mut line = Vec::new();
        // A size line is short; a hostile one is not read whole into memory.
        let n = io::BufRead::read_until(&mut r.take(HEAD_SCAN as u64), b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        raw += n as u64;
        let text = String::from_utf8_lossy(&line);
        let size_text = text.trim().split(';').next().unwrap_or("").trim();
        let Ok(size) = u64::from_str_radix(size_text, 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        let want = size.min(limit - decoded);
        let got = io::copy(&mut r.take(want), sink)?;
        raw += got;
        decoded += got;
        if got < want {
            break; // the bytes end inside this chunk
        }
        if want == size {
            raw += chunk_crlf_len(r)?;
        }
    }
    Ok((raw, decoded))
}

/// The CRLF (or bare LF) after a chunk's data.
fn chunk_crlf_len(r: &mut impl io::BufRead) -> io::Result<u64> {
    let mut n = 0;
    let buf = r.fill_buf()?;
    if buf.first() == Some(&b'\r') {
        r.consume(1);
        n += 1;
    }
    let buf = r.fill_buf()?;
    if buf.first() == Some(&b'\n') {
        r.consume(1);
        n += 1;
    }
    Ok(n)
}

/// Raw bytes of the last chunk (`0\r\n`), the trailers and the final empty line.
fn chunked_end_len(r: &mut impl io::BufRead) -> io::Result<u64> {
    let mut raw = 0u64;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let n = io::BufRead::read_until(&mut r.take(HEAD_SCAN as u64), b'\n', &mut line)?;
        if n == 0 || !line.ends_with(b"\n") {
            return Ok(raw + n as u64);
        }
        raw += n as u64;
        let empty = line == b"\r\n" || line == b"\n";
        if empty && !first {
            return Ok(raw);
        }
        first = false;
    }
}

/// hyper's error kinds mapped onto crawl.log codes.
fn classify(e: &hyper::Error) -> FetchError {
    if e.is_parse() || e.is_parse_status() {
        FetchError::Other(format!("malformed response: {e}"))
    } else if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        FetchError::Broken(e.to_string())
    } else if e.is_timeout() {
        FetchError::Timeout(Duration::ZERO)
    } else {
        FetchError::Broken(e.to_string())
    }
}

/// A plain or TLS stream.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Everything written and read on one connection.
#[derive(Default)]
struct Capture {
    request: Vec<u8>,
    response: Spool,
}

/// Copies the bytes passing through a stream into a `Capture`.
struct Recorder {
    inner: Box<dyn Io>,
    capture: Arc<Mutex<Capture>>,
}

impl Recorder {
    fn with_capture(&self, f: impl FnOnce(&mut Capture) -> io::Result<()>) -> io::Result<()> {
        let mut c = self.capture.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut c)
    }
}

impl AsyncRead for Recorder {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            let new = &buf.filled()[before..];
            if !new.is_empty() {
                // A failing temp file must fail the exchange rather than silently lose bytes.
                this.with_capture(|c| c.response.append(new))?;
            }
        }
        poll
    }
}

impl AsyncWrite for Recorder {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &poll {
            let written = &buf[..*n];
            this.with_capture(|c| {
                c.request.extend_from_slice(written);
                Ok(())
            })?;
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Resolves a URL's host to one socket address. IP literals need no lookup.
pub async fn resolve(url: &Url) -> Result<SocketAddr, FetchError> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| FetchError::Other("no port for this scheme".into()))?;
    match url.host() {
        Some(url::Host::Ipv4(ip)) => Ok(SocketAddr::new(IpAddr::V4(ip), port)),
        Some(url::Host::Ipv6(ip)) => Ok(SocketAddr::new(IpAddr::V6(ip), port)),
        Some(url::Host::Domain(name)) => {
            let mut addrs = tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| FetchError::Dns(format!("{name}: {e}")))?;
            addrs
                .next()
                .ok_or_else(|| FetchError::Dns(format!("{name}: no address")))
        }
        None => Err(FetchError::Other("URL has no host".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::sha1_of;

    fn spool(bytes: &[u8]) -> Spool {
        let mut s = Spool::new(16);
        s.append(bytes).unwrap();
        s
    }

    fn text(s: &mut Spool) -> String {
        let mut out = Vec::new();
        s.reader().unwrap().read_to_end(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn interim_answers_are_stripped_up_to_the_final_status_line() {
        let mut s = spool(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n\
              HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
        );
        assert_eq!(strip_interim(&mut s).unwrap(), vec![100, 103]);
        assert_eq!(
            text(&mut s),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
        );
        let mut upgrade = spool(b"HTTP/1.1 101 Switching Protocols\r\n\r\n");
        assert!(strip_interim(&mut upgrade).unwrap().is_empty());
        assert_eq!(upgrade.len(), 36);
    }

    #[test]
    fn bytes_past_content_length_are_dropped() {
        let mut s = spool(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiEXTRA");
        assert_eq!(cut_after_payload(&mut s, false, 2, true).unwrap(), 5);
        assert_eq!(
            text(&mut s),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn a_chunked_message_ends_after_its_last_chunk_and_trailers() {
        let msg = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                   2\r\nhi\r\n3;x=y\r\nyou\r\n0\r\nX-T: 1\r\n\r\n";
        let mut s = spool(format!("{msg}JUNK").as_bytes());
        assert_eq!(cut_after_payload(&mut s, true, 5, true).unwrap(), 4);
        assert_eq!(text(&mut s), msg);
        // Cut inside the body (max_body_bytes): the framing up to the cut only.
        let mut s = spool(msg.as_bytes());
        cut_after_payload(&mut s, true, 3, false).unwrap();
        assert!(text(&mut s).ends_with("\r\n\r\n2\r\nhi\r\n3;x=y\r\ny"));
    }

    #[test]
    fn a_body_cut_by_time_is_digested_as_recorded() {
        // hyper handed over "abc" before the deadline, but "abcdef" reached the record.
        let mut s = spool(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcdef");
        let p = recorded_payload(&mut s, false, 10).unwrap().unwrap();
        assert_eq!(
            (p.digest.as_str(), p.len, p.dropped),
            (sha1_of(b"abcdef").as_str(), 6, 0)
        );
        // Never past Content-Length (or max_body_bytes): the rest is dropped and counted.
        let mut s = spool(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef");
        let p = recorded_payload(&mut s, false, 3).unwrap().unwrap();
        assert_eq!((p.digest, p.len, p.dropped), (sha1_of(b"abc"), 3, 3));
        assert!(text(&mut s).ends_with("\r\n\r\nabc"));
    }

    #[test]
    fn a_chunked_body_cut_inside_a_chunk_is_digested_decoded() {
        let msg = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nwor";
        let mut s = spool(msg.as_bytes());
        let p = recorded_payload(&mut s, true, u64::MAX).unwrap().unwrap();
        assert_eq!((p.digest, p.len, p.dropped), (sha1_of(b"hellowor"), 8, 0));
        assert_eq!(text(&mut s), msg, "every received byte stays in the record");
        let mut headless = spool(b"HTTP/1.1 200 OK\r\nA: b");
        assert!(recorded_payload(&mut headless, true, 9).unwrap().is_none());
    }

    #[test]
    fn heads_end_at_the_first_empty_line_crlf_or_lf() {
        assert_eq!(head_len(b"HTTP/1.1 200 OK\r\n\r\nbody"), Some(19));
        assert_eq!(head_len(b"HTTP/1.1 200 OK\nA: b\n\nbody"), Some(22));
        assert_eq!(head_len(b"HTTP/1.1 200 OK\r\nA: b"), None);
        assert_eq!(status_of(b"HTTP/1.1 103 Early Hints\r\n"), Some(103));
        assert_eq!(status_of(b"garbage"), None);
    }
}
