//! A small Chrome DevTools Protocol client: one WebSocket to the browser, commands matched to
//! their answers by id, events routed by session (flat mode: every tab, worker and frame
//! attached speaks through the browser's one socket).
//!
//! We need about a dozen commands (targets, `Fetch`, `Page.navigate`, `Runtime.evaluate`), so
//! this is written here rather than taken with a generated binding of the whole protocol.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// Longest wait for the answer to one command: a browser that does not answer is broken.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// What can go wrong talking to the browser.
#[derive(Debug, thiserror::Error)]
pub enum CdpError {
    #[error("cannot connect to the browser's DevTools socket: {0}")]
    Connect(String),
    #[error("the browser closed its DevTools socket")]
    Closed,
    #[error("the browser did not answer {0} within {1:?}")]
    Timeout(String, Duration),
    #[error("{method}: {message}")]
    Command { method: String, message: String },
}

/// An event the browser sent, with the session it belongs to (none: the browser itself).
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub method: String,
    pub params: Value,
    pub session: Option<String>,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;
type Routes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>>;

/// A connection to one browser.
pub(crate) struct Cdp {
    out: mpsc::UnboundedSender<Message>,
    pending: Pending,
    routes: Routes,
    next_id: AtomicU64,
}

impl Cdp {
    /// Connects to `ws_url` (the browser's own endpoint, on loopback) and returns the client
    /// with the receiver of browser-level events.
    pub(crate) async fn connect(
        ws_url: &str,
    ) -> Result<(Cdp, mpsc::UnboundedReceiver<Event>), CdpError> {
        let (socket, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .map_err(|e| CdpError::Connect(e.to_string()))?;
        let (mut sink, mut stream) = socket.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let pending: Pending = Arc::default();
        let routes: Routes = Arc::default();
        let (browser_tx, browser_rx) = mpsc::unbounded_channel();
        let (p, r) = (pending.clone(), routes.clone());
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.next().await {
                if let Message::Text(text) = m {
                    dispatch(text.as_str(), &p, &r, &browser_tx);
                }
            }
            // The socket is gone: every waiting command learns it now, not at its timeout.
            lock(&p).clear();
            lock(&r).clear();
        });
        let cdp = Cdp {
            out,
            pending,
            routes,
            next_id: AtomicU64::new(1),
        };
        Ok((cdp, browser_rx))
    }

    /// Sends `method` (to `session`, or to the browser) and waits for its answer.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s.to_string());
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        if self.out.send(Message::text(msg.to_string())).is_err() {
            lock(&self.pending).remove(&id);
            return Err(CdpError::Closed);
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, rx).await {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(message))) => Err(CdpError::Command {
                method: method.to_string(),
                message,
            }),
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(CdpError::Timeout(method.to_string(), COMMAND_TIMEOUT))
            }
        }
    }

    /// Sends `method` without waiting for its answer (answers to paused requests: the tab has
    /// nothing to do with them, and a request the page already gave up is no error).
    pub(crate) fn send(&self, session: Option<&str>, method: &str, params: Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s.to_string());
        }
        let _ = self.out.send(Message::text(msg.to_string()));
    }

    /// Routes the events of `session` to `to` from now on.
    pub(crate) fn route(&self, session: &str, to: mpsc::UnboundedSender<Event>) {
        lock(&self.routes).insert(session.to_string(), to);
    }

    /// Stops routing the events of `session`.
    pub(crate) fn unroute(&self, session: &str) {
        lock(&self.routes).remove(session);
    }
}

/// Hands one message from the browser to its waiting command or its session's receiver.
fn dispatch(
    text: &str,
    pending: &Pending,
    routes: &Routes,
    browser: &mpsc::UnboundedSender<Event>,
) {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        tracing::debug!("browser sent a message that is not JSON");
        return;
    };
    if let Some(id) = v.get("id").and_then(Value::as_u64) {
        if let Some(tx) = lock(pending).remove(&id) {
            let answer = match v.get("error") {
                Some(e) => Err(e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_string()),
                None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(answer);
        }
        return;
    }
    let Some(method) = v.get("method").and_then(Value::as_str) else {
        return;
    };
    let session = v
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let event = Event {
        method: method.to_string(),
        params: v.get("params").cloned().unwrap_or(Value::Null),
        session: session.clone(),
    };
    match session {
        Some(s) => {
            if let Some(tx) = lock(routes).get(&s) {
                let _ = tx.send(event);
            }
        }
        None => {
            let _ = browser.send(event);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
