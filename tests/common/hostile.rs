//! A raw TCP server for the hostile-server suite: each route writes to the socket itself, so a
//! test can send what no well-behaved server would (bytes one at a time, endless bodies,
//! broken chunking, lies in Content-Length, resets, interim answers), and a network namespace
//! of the test's own so that nothing can leave the machine even if the address guard failed.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A route: the request path (with query) and the connection to answer on.
pub type Route = Arc<dyn Fn(&str, &mut TcpStream) + Send + Sync>;

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    pub arrived: Instant,
    /// When the route returned (the answer was written, or given up).
    pub finished: Instant,
}

/// A running raw server; dropping it stops accepting.
pub struct RawSite {
    pub addr: SocketAddr,
    hits: Arc<Mutex<Vec<Hit>>>,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl RawSite {
    /// Serves `route` on `ip:port` (0: any free port).
    pub fn start(ip: IpAddr, port: u16, route: Route) -> RawSite {
        RawSite::start_with(ip, port, route, true)
    }

    /// Calls `route` (with path "") as soon as a connection is accepted, before the request
    /// is read: closing then, with the request unread, makes the kernel send a reset.
    pub fn start_unread(ip: IpAddr, route: Route) -> RawSite {
        RawSite::start_with(ip, 0, route, false)
    }

    fn start_with(ip: IpAddr, port: u16, route: Route, read_head: bool) -> RawSite {
        let listener = TcpListener::bind(SocketAddr::new(ip, port))
            .unwrap_or_else(|e| panic!("bind {ip}:{port}: {e}"));
        let addr = listener.local_addr().expect("local addr");
        let hits = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, c, s) = (hits.clone(), connections.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                let (route, hits) = (route.clone(), h.clone());
                std::thread::spawn(move || serve(stream, &route, &hits, read_head));
            }
        });
        RawSite {
            addr,
            hits,
            connections,
            stop,
        }
    }

    /// `http://IP:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests so far, in order of arrival.
    pub fn hits(&self) -> Vec<Hit> {
        let mut v = self.hits.lock().expect("hits").clone();
        v.sort_by_key(|h| h.arrived);
        v
    }

    /// Connections accepted so far (also those that never sent a request).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for RawSite {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn serve(mut stream: TcpStream, route: &Route, hits: &Mutex<Vec<Hit>>, read_head: bool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    if !read_head {
        return route("", &mut stream);
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    let arrived = loop {
        match stream.read(&mut byte) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&byte[..n]),
        }
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            break Instant::now();
        }
        if head.len() > 64 * 1024 {
            return;
        }
    };
    let path = String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    route(&path, &mut stream);
    let finished = Instant::now();
    hits.lock().expect("hits").push(Hit {
        path,
        arrived,
        finished,
    });
}

/// Writes a whole response and closes the connection (errors ignored: the client may be gone).
pub fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut wire = format!("HTTP/1.1 {status}\r\n").into_bytes();
    for (k, v) in headers {
        wire.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        wire.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    wire.extend_from_slice(b"Connection: close\r\n\r\n");
    wire.extend_from_slice(body);
    let _ = stream.write_all(&wire);
    let _ = stream.flush();
}

/// An HTML answer.
pub fn respond_html(stream: &mut TcpStream, body: &str) {
    respond(
        stream,
        "200 OK",
        &[("Content-Type", "text/html; charset=utf-8")],
        body.as_bytes(),
    );
}

/// The peak resident memory of a process so far (VmHWM), in bytes.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A network namespace of the test's own: only `lo` is up in it, so nothing sent inside it can
/// reach any other machine. Deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates `archiver-test-PID` with `lo` up and `addresses` (CIDR) added to `lo`.
    pub fn create(addresses: &[&str]) -> Result<Netns, String> {
        let name = format!("archiver-test-{}", std::process::id());
        // A namespace of that name can only be left over from a killed run with our pid.
        let _ = ip(&["netns", "del", &name]);
        ip(&["netns", "add", &name])?;
        let ns = Netns { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        for a in addresses {
            ip(&["-n", &ns.name, "addr", "add", a, "dev", "lo"])?;
        }
        Ok(ns)
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &std::path::Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).arg(program);
        cmd
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip {}`: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
