//! `[control]`: where the crawl's control endpoint listens (see `crate::crawl`'s `control`).
//!
//! Loopback by default on a free port; `"off"` turns it off. A listen address off loopback lets
//! anyone who can reach it and holds the token steer the crawl, so it needs `allow_remote = true`
//! and, since the endpoint speaks plain HTTP (no TLS of its own), a written `reason` — as
//! `[robots] obey = false` needs one.

use std::net::SocketAddr;

use serde::Deserialize;

use super::locate::Checker;
use super::ProfileError;

/// The `[control]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawControl {
    pub(super) listen: String,
    pub(super) allow_remote: bool,
    pub(super) reason: String,
}

impl Default for RawControl {
    fn default() -> Self {
        RawControl {
            listen: "127.0.0.1:0".into(),
            allow_remote: false,
            reason: String::new(),
        }
    }
}

/// Where the control endpoint listens; None: it is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSettings {
    pub listen: Option<SocketAddr>,
    /// Why a listen address off loopback is acceptable (empty on loopback).
    pub remote_reason: String,
}

impl Default for ControlSettings {
    fn default() -> Self {
        ControlSettings {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            remote_reason: String::new(),
        }
    }
}

impl Checker<'_> {
    /// `[control]`: an address (`"off"`: none), loopback unless `allow_remote` and a reason.
    pub(super) fn control(&self, raw: &RawControl) -> Result<ControlSettings, ProfileError> {
        let text = raw.listen.trim();
        if text.eq_ignore_ascii_case("off") {
            return Ok(ControlSettings {
                listen: None,
                remote_reason: String::new(),
            });
        }
        let addr: SocketAddr = text.parse().map_err(|_| {
            self.error(
                "control.listen",
                format!(
                    "must be an address and port such as \"127.0.0.1:0\", or \"off\"; not {text:?}"
                ),
            )
        })?;
        let reason = raw.reason.trim().to_string();
        if reason.contains(['\r', '\n']) {
            return Err(self.error("control.reason", "must be a single line"));
        }
        if addr.ip().is_loopback() {
            return Ok(ControlSettings {
                listen: Some(addr),
                remote_reason: String::new(),
            });
        }
        if !raw.allow_remote {
            return Err(self.error(
                "control.listen",
                format!(
                    "{addr} is not a loopback address: anyone who reaches it with the token \
                     steers the crawl; set [control] allow_remote = true and a reason, or \
                     listen on 127.0.0.1"
                ),
            ));
        }
        if reason.is_empty() {
            return Err(self.error(
                "control.allow_remote",
                "the control endpoint has no TLS of its own: a listen address off loopback \
                 needs a written reason (set [control] reason = \"…\": e.g. the TLS proxy or \
                 private network in front of it)",
            ));
        }
        Ok(ControlSettings {
            listen: Some(addr),
            remote_reason: reason,
        })
    }
}
