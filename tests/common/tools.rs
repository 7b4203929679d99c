//! Running things from the tests: the crawler binary (with a timeout), the Python tools of the
//! venv, and pywb through `tools/replay.sh` (killed by a guard on drop).

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::site::{dechunk, gunzip};

/// The repository root (where Cargo.toml is).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv holding warcio, cdxj-indexer and pywb: `$ARCHIVER_VENV`, else `<repo>/.venv`.
/// Fails (never skips) when it is missing: the tools are the point of these tests.
pub fn venv() -> PathBuf {
    let dir = std::env::var_os("ARCHIVER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv"));
    for tool in ["python", "warcio", "cdxj-indexer", "wayback"] {
        assert!(
            dir.join("bin").join(tool).exists(),
            "{} not found in the venv {}: run tools/test.sh (it creates the venv with the pinned \
             warcio, cdxj-indexer and pywb), or point ARCHIVER_VENV at such a venv",
            tool,
            dir.display()
        );
    }
    dir
}

/// What a finished command left.
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` with stdout and stderr going to files under `log_dir` (named after `label`), and
/// kills it (failing the test) when it runs longer than `timeout`.
pub fn run_with_timeout(
    mut cmd: Command,
    log_dir: &Path,
    label: &str,
    timeout: Duration,
) -> Finished {
    let out_path = log_dir.join(format!("{label}.stdout"));
    let err_path = log_dir.join(format!("{label}.stderr"));
    let out = File::create(&out_path).expect("create stdout file");
    let err = File::create(&err_path).expect("create stderr file");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {label} ({cmd:?}): {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
            panic!(
                "{label} still running after {timeout:?}: killed.\n--- stderr (tail) ---\n{}",
                tail(&stderr, 4000)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Finished {
        code: status.code(),
        stdout: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into(),
    }
}

/// The last `n` bytes of `s` (on a char boundary).
pub fn tail(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut i = s.len() - n;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// Runs the crawler binary with `args` in `dir`, killed after 120 s.
pub fn run_archiver(args: &[&str], dir: &Path, label: &str) -> Finished {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_archiver"));
    cmd.args(args).current_dir(dir).env("RUST_BACKTRACE", "1");
    run_with_timeout(cmd, dir, label, Duration::from_secs(120))
}

/// Runs `archiver crawl --profile PROFILE` in `dir` (killed after 120 s) and asserts that it
/// ended with 0, showing the tail of its stderr and the crawl's `out/crawl.log` and
/// `out/run.log` when it did not.
pub fn crawl_ok(dir: &Path, profile: &str, label: &str) -> Finished {
    let done = run_archiver(&["crawl", "--profile", profile], dir, label);
    if done.code != Some(0) {
        let out = dir.join("out");
        let crawl_log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
        let run_log = std::fs::read_to_string(out.join("run.log")).unwrap_or_default();
        panic!(
            "{label}: the crawl ended with {:?}\n--- stderr (tail) ---\n{}\n--- stdout ---\n{}\n\
             --- crawl.log ---\n{crawl_log}\n--- run.log ---\n{run_log}",
            done.code,
            tail(&done.stderr, 3000),
            tail(&done.stdout, 2000)
        );
    }
    done
}

/// Starts `archiver crawl --profile PROFILE` in `dir`, its stdout thrown away, its stderr
/// going to `stderr`: for the tests that stop a crawl part way.
pub fn start_crawl(dir: &Path, profile: &str, stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_archiver"))
        .args(["crawl", "--profile", profile])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start the crawler")
}

/// Asks `done` every 20 ms until it holds or `limit` has passed; whether it held.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` (`INT`, as Ctrl-C does, or `USR1`) to `child`, asserting it was delivered.
pub fn send_signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "SIG{signal} not delivered");
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

/// A parsed HTTP response from [`http_get`].
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Body with transfer coding and gzip content coding removed.
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A plain HTTP/1.1 GET (Connection: close) to `addr`; `target` is sent as is.
pub fn http_get(addr: SocketAddr, target: &str) -> std::io::Result<HttpResponse> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.set_write_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of head"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut resp = HttpResponse {
        status,
        headers,
        body: raw[head_end + 4..].to_vec(),
    };
    if resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        resp.body = dechunk(&resp.body).ok_or_else(|| bad("bad chunked body"))?;
    }
    if resp
        .header("content-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"))
    {
        resp.body = gunzip(&resp.body)?;
    }
    Ok(resp)
}

/// pywb started by `tools/replay.sh` in its own process group; dropping the guard stops the
/// whole group (the script and pywb), also when the test fails.
pub struct Replay {
    child: Child,
    pub addr: SocketAddr,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
}

impl Replay {
    /// Starts `tools/replay.sh OUT PORT` and waits (60 s at most) until pywb answers.
    pub fn start(out: &Path, log_dir: &Path) -> Replay {
        Replay::start_many(&[out], log_dir)
    }

    /// Starts `tools/replay.sh OUT… PORT`: several crawls in one collection.
    pub fn start_many(outs: &[&Path], log_dir: &Path) -> Replay {
        Replay::start_in_venv(outs, log_dir, &venv(), 60)
    }

    /// The same with pywb taken from (or installed into) `venv`, waiting `wait_secs` for it.
    pub fn start_in_venv(outs: &[&Path], log_dir: &Path, venv: &Path, wait_secs: u64) -> Replay {
        let port = free_port();
        let stdout_path = log_dir.join("replay.stdout");
        let stderr_path = log_dir.join("replay.stderr");
        let child = Command::new("bash")
            .arg(repo_root().join("tools/replay.sh"))
            .args(outs)
            .arg(port.to_string())
            .env("ARCHIVER_VENV", venv)
            .stdin(Stdio::null())
            .stdout(File::create(&stdout_path).expect("replay stdout"))
            .stderr(File::create(&stderr_path).expect("replay stderr"))
            .process_group(0)
            .spawn()
            .expect("start tools/replay.sh");
        let mut replay = Replay {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            stdout_path,
            stderr_path,
        };
        replay.wait_ready(Duration::from_secs(wait_secs));
        replay
    }

    fn logs(&self) -> String {
        format!(
            "--- replay.sh stdout ---\n{}\n--- replay.sh stderr ---\n{}",
            tail(
                &std::fs::read_to_string(&self.stdout_path).unwrap_or_default(),
                3000
            ),
            tail(
                &std::fs::read_to_string(&self.stderr_path).unwrap_or_default(),
                3000
            )
        )
    }

    fn wait_ready(&mut self, limit: Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!("tools/replay.sh exited early ({status}).\n{}", self.logs());
            }
            if let Ok(r) = http_get(self.addr, "/") {
                if r.status == 200 {
                    return;
                }
            }
            assert!(
                start.elapsed() < limit,
                "pywb did not answer on {} within {limit:?}.\n{}",
                self.addr,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What replay.sh printed so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout_path).unwrap_or_default()
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(Stdio::null())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                // The script is gone; make sure nothing of its group survives.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &group])
                    .stderr(Stdio::null())
                    .status();
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}
