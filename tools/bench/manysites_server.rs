//! The loopback server of the many-sites benchmark (`tools/bench/many_sites.sh`).
//!
//! It answers for N distinct web sites, `site-00000.test` … , each on its OWN loopback address
//! (127.1.x.y, one listening socket per address, all on one port), so that a crawler with
//! per-IP politeness budgets treats them as N servers. Every site serves a robots.txt that
//! allows everything and an endless chain of small HTML pages (`/` is page 0, `/p/K` links to
//! `/p/K+1`), with text that differs from page to page so no trap detector stops the chain.
//!
//! Every exchange is logged in memory (site, arrival time, end-of-response time, status) and
//! written to a file when the server stops (SIGINT, SIGTERM, or `--max-seconds`), so the bench
//! script can compute, per site, the gap between the end of one answer and the next request.
//! Times are nanoseconds since the Unix epoch (the system clock, like the crawler's logs):
//! arrival is taken as soon as the connection is accepted, end right after the last byte of the
//! response is handed to the kernel (before the socket is shut down). Both are seen by this
//! process; a late-scheduled server can make a gap look shorter than it was (a late `end`) or
//! longer (a late `arrival`), so the script also cross-checks with the crawler's crawl.log.
//!
//! Built as a bench target without the test harness (see `tools/bench/README.md`), it uses only
//! tokio. It never binds 0.0.0.0 or any address outside 127.0.0.0/8.
//!
//! One process holds a descriptor per listening socket and per connection, so a run of more
//! sites than the open-file limit allows is served by several processes, each given its own
//! range of sites with `--first` (the bench script starts them; all share one port).
//!
//! Usage: manysites_server --sites N --log FILE --ready FILE [--first F] [--port P] [--max-seconds S]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Sites per 127.1.X.0/24 block: host bytes 1..=250, never .0 or .255.
const PER_BLOCK: u32 = 250;
/// 250 blocks of 250: 127.1.0.1 … 127.1.249.250.
const MAX_SITES: u32 = PER_BLOCK * 250;
/// Request heads longer than this are refused (a crawler's GET is a few hundred bytes).
const MAX_HEAD: usize = 8 * 1024;
/// A connection that sends no complete request head within this is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The loopback address of site `i`.
fn site_addr(i: u32) -> Ipv4Addr {
    Ipv4Addr::new(127, 1, (i / PER_BLOCK) as u8, (i % PER_BLOCK + 1) as u8)
}

/// One exchange, as logged.
#[derive(Clone, Copy)]
struct Rec {
    site: u32,
    arrival_ns: u64,
    end_ns: u64,
    status: u16,
    /// 'r' robots.txt, 'p' a page, 'x' anything else, 'e' no complete request.
    kind: u8,
    /// The request's Host header named another site.
    wrong_host: bool,
}

#[derive(Default)]
struct Shared {
    log: Mutex<Vec<Rec>>,
    accept_errors: AtomicU64,
    /// Connections accepted.
    accepted: AtomicU64,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

struct Args {
    /// The first site this process serves (its range is first..first + sites).
    first: u32,
    sites: u32,
    log: String,
    ready: String,
    port: u16,
    max_seconds: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        first: 0,
        sites: 0,
        log: String::new(),
        ready: String::new(),
        port: 0,
        max_seconds: 3600,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--bench" {
            continue; // `cargo bench` appends it to harness-less benches
        }
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--sites" => a.sites = value()?.parse().map_err(|e| format!("--sites: {e}"))?,
            "--first" => a.first = value()?.parse().map_err(|e| format!("--first: {e}"))?,
            "--log" => a.log = value()?,
            "--ready" => a.ready = value()?,
            "--port" => a.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--max-seconds" => {
                a.max_seconds = value()?
                    .parse()
                    .map_err(|e| format!("--max-seconds: {e}"))?
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.sites == 0 || a.first.checked_add(a.sites).is_none_or(|end| end > MAX_SITES) {
        return Err(format!("--first + --sites must be 1..={MAX_SITES}"));
    }
    if a.log.is_empty() || a.ready.is_empty() {
        return Err("--log and --ready are required".into());
    }
    Ok(a)
}

/// Binds the address of each site in first..first + sites on one port: `port`, or else a few
/// random ones below the ephemeral range (so the crawler's own outgoing ports never collide
/// with it).
fn bind_all(first: u32, sites: u32, port: u16) -> Result<(u16, Vec<TcpListener>), String> {
    let candidates: Vec<u16> = if port != 0 {
        vec![port]
    } else {
        let mut x = now_ns() ^ u64::from(std::process::id());
        (0..20)
            .map(|_| {
                x = lcg(x);
                20000 + ((x >> 33) % 12000) as u16
            })
            .collect()
    };
    let mut last = String::new();
    'ports: for p in candidates {
        let mut listeners = Vec::with_capacity(sites as usize);
        for i in first..first + sites {
            let addr = SocketAddr::from((site_addr(i), p));
            match bind_one(addr) {
                Ok(l) => listeners.push(l),
                Err(e) => {
                    last = format!("{addr}: {e}");
                    continue 'ports;
                }
            }
        }
        return Ok((p, listeners));
    }
    Err(format!("could not bind every address: {last}"))
}

fn bind_one(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let s = tokio::net::TcpSocket::new_v4()?;
    s.set_reuseaddr(true)?;
    s.bind(addr)?;
    s.listen(1024)
}

/// The site a Host header names, if it is one of ours.
fn host_site(head: &str) -> Option<u32> {
    let line = head
        .lines()
        .find(|l| l.len() > 5 && l[..5].eq_ignore_ascii_case("host:"))?;
    let name = line[5..].trim();
    let digits = name.strip_prefix("site-")?.split('.').next()?;
    digits.parse().ok()
}

/// One step of a 64-bit linear congruential generator (Knuth's MMIX constants).
fn lcg(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

/// Small per-page text from a fixed vocabulary, different on every page.
fn filler(site: u32, page: u64) -> String {
    const WORDS: &str = "harbour lighthouse river mill slate roof archive record index letter \
        editor council winter lamp volunteer north pier owl nest town paper story draft member \
        plan walk morning tide boat net market bridge";
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut x = (u64::from(site) << 32) ^ page ^ 0x9e37_79b9_7f4a_7c15;
    let mut out = String::new();
    for _ in 0..40 {
        x = lcg(x);
        out.push_str(words[(x >> 40) as usize % words.len()]);
        out.push(' ');
    }
    out
}

/// The answer to `path` on site `site`: status, content type, body, kind.
fn route(site: u32, path: &str) -> (u16, &'static str, String, u8) {
    if path == "/robots.txt" {
        return (
            200,
            "text/plain",
            "User-agent: *\nAllow: /\n".to_string(),
            b'r',
        );
    }
    let page = if path == "/" {
        Some(0)
    } else {
        path.strip_prefix("/p/").and_then(|k| k.parse::<u64>().ok())
    };
    match page {
        Some(k) => {
            let body = format!(
                "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>site {site} page {k}</title></head>\n\
                 <body><h1>Site {site}, page {k}</h1>\n<p>{}</p>\n<p><a href=\"/p/{}\">next page</a></p>\n</body></html>\n",
                filler(site, k),
                k + 1
            );
            (200, "text/html; charset=utf-8", body, b'p')
        }
        None => (404, "text/plain", "not found\n".to_string(), b'x'),
    }
}

async fn serve(mut sock: TcpStream, site: u32, arrival_ns: u64, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let mut buf = vec![0u8; MAX_HEAD];
    let mut n = 0;
    let complete = tokio::time::timeout(READ_TIMEOUT, async {
        loop {
            match sock.read(&mut buf[n..]).await {
                Ok(0) | Err(_) => return false,
                Ok(k) => n += k,
            }
            if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                return true;
            }
            if n == buf.len() {
                return false;
            }
        }
    })
    .await
    .unwrap_or(false);
    let mut rec = Rec {
        site,
        arrival_ns,
        end_ns: 0,
        status: 0,
        kind: b'e',
        wrong_host: false,
    };
    if complete {
        let head = String::from_utf8_lossy(&buf[..n]);
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        rec.wrong_host = host_site(&head) != Some(site);
        let (status, ctype, body, kind) = route(site, &path);
        let reason = if status == 200 { "OK" } else { "Not Found" };
        let mut out = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body.as_bytes());
        if sock.write_all(&out).await.is_ok() {
            rec.status = status;
            rec.kind = kind;
        }
    }
    rec.end_ns = now_ns();
    let _ = sock.shutdown().await;
    shared
        .log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(rec);
}

async fn accept_loop(listener: TcpListener, site: u32, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let arrival = now_ns();
                shared.accepted.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(serve(sock, site, arrival, shared.clone()));
            }
            Err(_) => {
                // EMFILE and friends: count, breathe, go on.
                shared.accept_errors.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Writes the log: one line per exchange, `site arrival_ns end_ns status kind wrong_host`,
/// sorted by site then arrival.
fn write_log(path: &str, shared: &Shared) -> std::io::Result<usize> {
    use std::io::Write;
    let mut recs = shared.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
    recs.sort_by_key(|r| (r.site, r.arrival_ns));
    let tmp = format!("{path}.tmp");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    for r in &recs {
        writeln!(
            w,
            "{} {} {} {} {} {}",
            r.site,
            r.arrival_ns,
            r.end_ns,
            r.status,
            r.kind as char,
            u8::from(r.wrong_host)
        )?;
    }
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, path)?;
    Ok(recs.len())
}

async fn run(args: Args) -> Result<(), String> {
    let (port, listeners) = bind_all(args.first, args.sites, args.port)?;
    let shared = Arc::new(Shared::default());
    for (i, l) in (args.first..).zip(listeners) {
        tokio::spawn(accept_loop(l, i, shared.clone()));
    }
    let ready_tmp = format!("{}.tmp", args.ready);
    std::fs::write(&ready_tmp, format!("{port}\n"))
        .and_then(|_| std::fs::rename(&ready_tmp, &args.ready))
        .map_err(|e| format!("{}: {e}", args.ready))?;
    eprintln!(
        "manysites_server: {} sites on {}..={} port {port}",
        args.sites,
        site_addr(args.first),
        site_addr(args.first + args.sites - 1)
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = tokio::time::sleep(Duration::from_secs(args.max_seconds)) => {
            eprintln!("manysites_server: --max-seconds reached");
        }
    }
    let n = write_log(&args.log, &shared).map_err(|e| format!("{}: {e}", args.log))?;
    eprintln!(
        "manysites_server: {} connections, {n} exchanges logged to {}; {} accept errors",
        shared.accepted.load(Ordering::Relaxed),
        args.log,
        shared.accept_errors.load(Ordering::Relaxed)
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("manysites_server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // One thread: the server shares 2 cores with the crawler it measures.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("manysites_server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("manysites_server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
