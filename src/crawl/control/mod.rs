//! Steering a running crawl: the operator's orders (pause, seeds, exclusions, per-site delay,
//! hold, release, retire, a report now), served over HTTP with a bearer token, with a status
//! document, Prometheus metrics and a web console (docs/control.md).
//!
//! | file | job |
//! | --- | --- |
//! | `actions` | each order carried out: saved, logged in run.log, handed to the scheduler |
//! | `status` | the status document, the rates, `/metrics` |
//! | `http` | the endpoint: hyper's server, the token, routes, limits |
//!
//! The orders themselves (kept in `state/operator.json`, compiled for the scheduler, shared
//! through a shared crawl's database) are `crawl/operator/`.

mod actions;
mod http;
mod status;

pub(super) use http::{serve, Endpoint};
pub(super) use status::Sampler;
