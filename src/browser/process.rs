//! The one Chromium process of a crawl: found on PATH, started headless with a fresh profile
//! folder and every background service off, stopped with the crawl.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use super::cdp::{Cdp, CdpError, Event};

/// Names looked for on PATH when the profile names no executable, in this order.
pub(crate) const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "chromium-headless-shell",
    "google-chrome",
];

/// How long Chromium may take to open its DevTools socket.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the browser could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot make a profile folder for the browser: {0}")]
    Profile(std::io::Error),
    #[error("cannot start {0}: {1}")]
    Spawn(PathBuf, std::io::Error),
    #[error("{0} did not open its DevTools socket within {1:?}")]
    NoSocket(PathBuf, Duration),
    #[error(transparent)]
    Cdp(#[from] CdpError),
}

/// The executable to run: `configured` when it names one (a path, or a name looked up on PATH),
/// else the first of `CANDIDATES` on PATH.
pub fn find_executable(configured: Option<&Path>) -> Option<PathBuf> {
    match configured {
        Some(p) if p.components().count() > 1 => p.is_file().then(|| p.to_path_buf()),
        Some(name) => on_path(name),
        None => CANDIDATES.iter().find_map(|n| on_path(Path::new(n))),
    }
}

fn on_path(name: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether this process runs as root (Chromium's sandbox then refuses to start).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The command line: headless, a fresh profile, none of Chromium's own traffic (updates, sync,
/// safe browsing, metrics, DNS prefetch), and a dead proxy plus a resolver that knows no name, so
/// a request the interception missed fails instead of leaving the machine.
fn flags(profile: &Path) -> Vec<String> {
    let mut f: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-breakpad",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-dev-shm-usage",
        // A tab opened by CDP is a background tab: its timers would be slowed to one a second,
        // and a page would not run as it does for a person (nor look idle when it is not).
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        "--metrics-recording-only",
        "--mute-audio",
        "--deny-permission-prompts",
        "--disable-features=Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions,AutofillServerCommunication,CertificateTransparencyComponentUpdater",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--remote-debugging-port=0",
        "--remote-allow-origins=*",
        "--window-size=1280,1024",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    f.push(format!("--user-data-dir={}", profile.display()));
    if running_as_root() {
        f.push("--no-sandbox".into());
    }
    f.push("about:blank".into());
    f
}

/// A running Chromium and the connection to it.
pub struct Browser {
    pub(super) cdp: Arc<Cdp>,
    pub(super) tabs: Semaphore,
    child: tokio::sync::Mutex<Child>,
    executable: PathBuf,
    // Dropped (deleted) after the child: the folder is the browser's profile.
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `executable` with room for `tabs` pages at once.
    pub async fn launch(executable: &Path, tabs: usize) -> Result<Browser, LaunchError> {
        let profile = tempfile::Builder::new()
            .prefix("archiver-chromium-")
            .tempdir()
            .map_err(LaunchError::Profile)?;
        let mut child = Command::new(executable)
            .args(flags(profile.path()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| LaunchError::Spawn(executable.to_path_buf(), e))?;
        let ws = match child.stderr.take() {
            Some(stderr) => devtools_socket(stderr).await,
            None => None,
        };
        let Some(ws) = ws else {
            let _ = child.kill().await;
            return Err(LaunchError::NoSocket(
                executable.to_path_buf(),
                START_TIMEOUT,
            ));
        };
        let (cdp, events) = Cdp::connect(&ws).await?;
        let cdp = Arc::new(cdp);
        // Downloads are refused, and every new page target is seen (to close pop-ups).
        cdp.call(
            None,
            "Browser.setDownloadBehavior",
            json!({"behavior": "deny"}),
        )
        .await?;
        cdp.call(None, "Target.setDiscoverTargets", json!({"discover": true}))
            .await?;
        tokio::spawn(close_popups(cdp.clone(), events));
        Ok(Browser {
            cdp,
            tabs: Semaphore::new(tabs.max(1)),
            child: tokio::sync::Mutex::new(child),
            executable: executable.to_path_buf(),
            _profile: profile,
        })
    }

    /// The browser's process id (its main process).
    pub async fn pid(&self) -> Option<u32> {
        self.child.lock().await.id()
    }

    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// Asks the browser to quit, and kills it if it does not within a few seconds.
    pub async fn close(&self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(3),
            self.cdp.call(None, "Browser.close", json!({})),
        )
        .await;
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// Reads Chromium's stderr until it names its DevTools socket, then keeps draining it (a full
/// pipe would stop the browser).
async fn devtools_socket(stderr: tokio::process::ChildStderr) -> Option<String> {
    let mut lines = BufReader::new(stderr).lines();
    let found = tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("DevTools listening on ").nth(1) {
                return Some(rest.trim().to_string());
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::trace!(target: "chromium", "{line}");
        }
    });
    found
}

/// Closes every page a page opened (`window.open`, `target=_blank`): pop-ups are refused.
async fn close_popups(cdp: Arc<Cdp>, mut events: tokio::sync::mpsc::UnboundedReceiver<Event>) {
    while let Some(e) = events.recv().await {
        if e.method != "Target.targetCreated" {
            continue;
        }
        let info = &e.params["targetInfo"];
        let opened = info["openerId"].as_str().is_some_and(|o| !o.is_empty());
        if info["type"] == "page" && opened {
            if let Some(id) = info["targetId"].as_str() {
                let _ = cdp
                    .call(None, "Target.closeTarget", json!({"targetId": id}))
                    .await;
            }
        }
    }
}
