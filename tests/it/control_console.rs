//! The web console in Debian's headless Chromium, driven over the DevTools protocol by a small
//! client of the test's own: the page loads with the token, shows the live figures, keeps the
//! token once it is out of the address bar, and a click on "Exclude" stops the excluded URLs
//! from being fetched (the test server's log proves it). It also takes the screenshot of
//! docs/control.md (written to the test target's folder; `docs/img/console.png` is a copy).

use crate::common;

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{json, Value};

use common::site::{endless_site, Handler, TestSite};
use common::tools::{send_signal, start_crawl, wait_until};

const UA: &str = "archiver/0.1 (+https://example.org/archiver-tests)";
const PATIENCE: Duration = Duration::from_secs(90);

/// An endless site: `/p/N` links to `/p/N+1` and `/q/N`.
fn endless() -> Handler {
    endless_site(|n| {
        format!(
            "<h1>Page {n}</h1><a href=/p/{}>next</a> <a href=/q/{n}>aside</a>",
            n + 1
        )
    })
}

fn profile(dir: &Path, seeds: &[String]) -> PathBuf {
    let seeds: Vec<String> = seeds.iter().map(|s| format!("{s:?}")).collect();
    let text = format!(
        "[crawl]\nname = \"console-test\"\nseeds = [{}]\nsites_at_once = 8\n\n[identity]\n\
         user_agent = \"{UA}\"\n\n[scope]\nmax_hops = 100000\n\n[politeness]\nmin_delay = 0.3\n\
         delay_factor = 0.0\nmax_delay = 5.0\n\n[browser]\nrender = \"never\"\n\n[traps]\n\
         enabled = false\n\n[output]\ndir = \"out\"\n",
        seeds.join(", ")
    );
    let path = dir.join("profile.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `(authority, token)` from `state/control.json`.
fn endpoint(out: &Path) -> (String, String) {
    let file = out.join("state").join("control.json");
    let mut found = None;
    assert!(wait_until(PATIENCE, || {
        let v: Option<Value> = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        found = v.and_then(|v| {
            Some((
                v["url"].as_str()?.trim_start_matches("http://").to_string(),
                v["token"].as_str()?.to_string(),
            ))
        });
        found.is_some()
    }));
    found.unwrap()
}

fn api_status(authority: &str, token: &str) -> Value {
    let mut s = TcpStream::connect(authority).unwrap();
    let req = format!("GET /api/status HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap()
}

/// Headless Chromium, killed on drop.
struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    port: u16,
}

impl Chromium {
    fn start() -> Chromium {
        let profile = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/usr/bin/chromium");
        cmd.args([
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            "--window-size=1280,1100",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()));
        // Root (as in CI containers) cannot use Chromium's sandbox.
        if running_as_root() {
            cmd.arg("--no-sandbox");
        }
        let child = cmd
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /usr/bin/chromium");
        let port_file = profile.path().join("DevToolsActivePort");
        let mut port = 0;
        assert!(
            wait_until(PATIENCE, || {
                port = std::fs::read_to_string(&port_file)
                    .ok()
                    .and_then(|t| t.lines().next()?.parse().ok())
                    .unwrap_or(0);
                port > 0
            }),
            "Chromium wrote no DevToolsActivePort"
        );
        Chromium {
            child,
            _profile: profile,
            port,
        }
    }

    /// The DevTools socket of the first page target.
    fn page_socket(&self) -> String {
        let mut found = None;
        assert!(wait_until(PATIENCE, || {
            let list = get_json(("127.0.0.1", self.port), "/json/list");
            found = list.and_then(|l| {
                let page = l.as_array()?.iter().find(|t| t["type"] == "page")?;
                page["webSocketDebuggerUrl"].as_str().map(str::to_string)
            });
            found.is_some()
        }));
        found.unwrap()
    }
}

/// A GET whose answer is JSON with a Content-Length (DevTools keeps the connection open).
fn get_json(addr: (&str, u16), path: &str) -> Option<Value> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {}:{}\r\n\r\n", addr.0, addr.1);
    s.write_all(req.as_bytes()).ok()?;
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_string())
                })
                .and_then(|v| v.parse::<usize>().ok());
            if len.is_some_and(|len| body.len() >= len) {
                return serde_json::from_str(body).ok();
            }
        }
    }
    None
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The crawler, killed if the test fails before it stops it.
struct Crawl(Child);

impl Drop for Crawl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A minimal DevTools client: one call at a time, events skipped.
struct Cdp {
    ws: Socket,
    next: u64,
}

impl Cdp {
    async fn connect(url: &str) -> Cdp {
        let (ws, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("DevTools socket");
        Cdp { ws, next: 0 }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({ "id": id, "method": method, "params": params }).to_string();
        self.ws
            .send(tokio_tungstenite::tungstenite::Message::Text(msg.into()))
            .await
            .unwrap();
        loop {
            let m = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("DevTools answer")
                .expect("socket open")
                .unwrap();
            let Ok(text) = m.to_text() else { continue };
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if v["id"] == json!(id) {
                assert!(v["error"].is_null(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// Evaluates an expression in the page, its value returned.
    async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is truthy in the page.
    async fn wait_for(&mut self, expr: &str, what: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.eval(&format!("!!({expr})")).await == json!(true) {
                return;
            }
            assert!(Instant::now() < deadline, "the console never showed {what}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A real click: the mouse pressed and released over the element's middle.
    async fn click(&mut self, selector: &str) {
        let at = self.eval(&format!("(() => {{ const r = document.querySelector({selector:?}).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")).await;
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .await;
        }
    }
}

#[test]
fn the_console_shows_live_figures_and_a_click_excludes_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let sites: Vec<TestSite> = (0..4)
        .map(|i| TestSite::start(IpAddr::from([127, 0, 0, 40 + i]), endless()))
        .collect();
    let seeds: Vec<String> = sites.iter().map(|s| format!("{}/", s.origin())).collect();
    let profile = profile(dir.path(), &seeds);
    let out = dir.path().join("out");
    let err = std::fs::File::create(dir.path().join("crawl.stderr")).unwrap();
    let mut crawl = Crawl(start_crawl(
        dir.path(),
        &profile.to_string_lossy(),
        Stdio::from(err),
    ));
    let (authority, token) = endpoint(&out);
    assert!(
        wait_until(PATIENCE, || sites.iter().all(|s| s.exchanges().len() >= 3)),
        "the crawl did not get going"
    );
    let browser = Chromium::start();
    let socket = browser.page_socket();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (t_answer, shot) = runtime.block_on(async {
        let mut page = Cdp::connect(&socket).await;
        page.call("Page.enable", json!({})).await;
        page.call("Emulation.setDeviceMetricsOverride", json!({ "width": 1280, "height": 1100, "deviceScaleFactor": 1, "mobile": false })).await;
        page.call("Page.navigate", json!({ "url": format!("http://{authority}/?token={token}") })).await;
        // Live figures: the totals fill in and grow, and every site has its row.
        page.wait_for("Number(document.getElementById('total-fetched').textContent.replace(/,/g, '')) > 0", "a fetched count").await;
        page.wait_for(&format!("document.querySelectorAll('#sites tbody tr').length === {}", sites.len()), "every site").await;
        let first = page.eval("Number(document.getElementById('total-fetched').textContent.replace(/,/g, ''))").await.as_f64().unwrap();
        page.wait_for(&format!("Number(document.getElementById('total-fetched').textContent.replace(/,/g, '')) > {first}"), "the count growing").await;
        let shown = page.eval("Number(document.getElementById('total-fetched').textContent.replace(/,/g, ''))").await.as_f64().unwrap();
        let api = api_status(&authority, &token)["totals"]["fetched"].as_f64().unwrap();
        assert!(shown <= api && shown > 0.0, "the page shows {shown}, the API says {api}");
        // The token left the address bar and stays with the tab: a reload without it works.
        assert_eq!(page.eval("location.search").await, json!(""));
        page.call("Page.reload", json!({})).await;
        page.wait_for("document.querySelectorAll('#sites tbody tr').length > 0", "the sites after a reload").await;
        // The filter narrows the table.
        let host0 = sites[0].addr.to_string();
        page.eval(&format!("(() => {{ const f = document.getElementById('site-filter'); f.value = {host0:?}; f.dispatchEvent(new Event('input')); }})()")).await;
        page.wait_for("document.querySelectorAll('#sites tbody tr').length === 1", "the filtered table").await;
        // Exclude site 0's /p/ folder with a click.
        let rule = format!("{}/p/", sites[0].origin());
        page.eval(&format!("document.getElementById('exclude-rule').value = {rule:?}")).await;
        page.click("#exclude-button").await;
        page.wait_for("document.getElementById('message').textContent.startsWith('excluded')", "the exclusion's answer").await;
        let t_answer = Instant::now();
        page.wait_for("document.getElementById('orders').textContent.includes('/p/')", "the exclusion among the orders").await;
        page.eval("(() => { const f = document.getElementById('site-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()").await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let shot = page.call("Page.captureScreenshot", json!({ "format": "png" })).await;
        (t_answer, shot["data"].as_str().unwrap().to_string())
    });
    // The others go on; site 0's folder is not asked for again.
    assert!(wait_until(PATIENCE, || sites[1]
        .exchanges()
        .iter()
        .filter(|e| e.arrived > t_answer)
        .count()
        >= 3));
    send_signal(&crawl.0, "INT");
    crawl.0.wait().unwrap();
    let late: Vec<String> = (sites[0].exchanges().into_iter())
        .filter(|e| e.arrived > t_answer && e.path().starts_with("/p/"))
        .map(|e| e.path().to_string())
        .collect();
    assert!(
        late.is_empty(),
        "excluded URLs fetched after the click: {late:?}"
    );
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("{}/p/", sites[0].origin()))
                && l.contains("scope:operator")),
        "no -5000 line"
    );
    let png = data_encoding::BASE64.decode(shot.as_bytes()).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console.png");
    std::fs::write(&file, &png).unwrap();
    eprintln!("console screenshot: {}", file.display());
}
