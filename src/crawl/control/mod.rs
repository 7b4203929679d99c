//! Steering a running crawl: the operator's orders (pause, seeds, exclusions, per-site delay,
//! hold, release, retire, a report now), served over HTTP with a bearer token, with a status
//! document, Prometheus metrics and a web console (docs/control.md).
//!
//! | file | job |
//! | --- | --- |
//! | `rules` | the orders as kept in `state/operator.json`, and their compiled [`Steering`] |
//! | `actions` | each order carried out: saved, logged in run.log, handed to the scheduler |
//! | `status` | the status document, the rates, `/metrics` |
//! | `http` | the endpoint: hyper's server, the token, routes, limits |
//!
//! The orders live here, not in the scheduler: `state/operator.json` is written with no engine
//! lock held, and the scheduler is handed a new [`Steering`] snapshot through one method.

mod actions;
mod http;
pub(super) mod rules;
mod status;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::scope::Scope;

pub(super) use http::serve;
pub(crate) use rules::Steering;
use rules::{Orders, Steering as Compiled};
pub(super) use status::Sampler;

/// The operator's orders of one crawl, and where they are kept.
pub(super) struct Operator {
    /// `state/operator.json`.
    path: PathBuf,
    /// The orders as saved; changed by one action at a time (the lock is never held together
    /// with an engine lock).
    orders: Mutex<Orders>,
    /// The orders compiled, for readers that must not wait.
    steering: RwLock<Arc<Compiled>>,
    paused: AtomicBool,
    /// The profile's scope and seeds, and the scope widened by the added seeds (None: none).
    scope_settings: crate::scope::ScopeSettings,
    profile_seeds: Vec<url::Url>,
    widened: RwLock<Option<Arc<Scope>>>,
}

impl Operator {
    /// The orders an earlier run left (none the first time); run.log hears of those in force.
    pub(super) fn load(
        state_dir: &Path,
        runlog: &crate::logs::runlog::RunLog,
        profile: &crate::config::Profile,
    ) -> Operator {
        let path = state_dir.join("operator.json");
        let orders = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Orders>(&bytes).unwrap_or_else(|e| {
                runlog.line(&format!(
                    "cannot read {} ({e}): the operator's orders start empty",
                    path.display()
                ));
                Orders::default()
            }),
            Err(_) => Orders::default(),
        };
        let (steering, problems) = Compiled::new(&orders);
        for p in problems {
            runlog.line(&format!(
                "operator: a rule of {} is left out: {p}",
                path.display()
            ));
        }
        if orders != Orders::default() {
            runlog.line(&format!(
                "operator: orders in force from an earlier run: {}",
                summary(&orders)
            ));
        }
        let operator = Operator {
            path,
            paused: AtomicBool::new(orders.paused),
            steering: RwLock::new(Arc::new(steering)),
            scope_settings: profile.scope.clone(),
            profile_seeds: profile.seeds.clone(),
            widened: RwLock::new(None),
            orders: Mutex::new(orders),
        };
        operator.widen();
        operator
    }

    /// The scope widened by the seeds the operator added (None: none added).
    pub(super) fn scope(&self) -> Option<Arc<Scope>> {
        self.widened
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Builds the widened scope again from the orders' seeds.
    fn widen(&self) {
        let added: Vec<url::Url> = (self.orders().seeds.iter())
            .filter_map(|s| url::Url::parse(s).ok())
            .collect();
        let scope = (!added.is_empty()).then(|| {
            let mut all = self.profile_seeds.clone();
            all.extend(added);
            Arc::new(Scope::new(self.scope_settings.clone(), &all))
        });
        *self.widened.write().unwrap_or_else(|p| p.into_inner()) = scope;
    }

    /// The crawl is paused: no new request starts.
    pub(super) fn paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// The compiled orders now.
    pub(super) fn steering(&self) -> Arc<Compiled> {
        self.steering
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A copy of the orders now.
    pub(super) fn orders(&self) -> Orders {
        self.orders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes the orders with `f`, saves them (atomically) and compiles them again. Nothing
    /// changes when `f` refuses or the file cannot be written.
    fn change<T>(
        &self,
        f: impl FnOnce(&mut Orders) -> Result<T, actions::Refused>,
    ) -> Result<(T, Arc<Compiled>), actions::Refused> {
        let mut orders = self.orders.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = orders.clone();
        let value = f(&mut next)?;
        let saved = crate::warc::save_atomically(&self.path, |out| {
            serde_json::to_writer_pretty(&mut *out, &next)?;
            out.write_all(b"\n")
        });
        if let Err(e) = saved {
            return Err(actions::Refused::server(format!(
                "cannot save {}: {e}",
                self.path.display()
            )));
        }
        let (compiled, _) = Compiled::new(&next);
        let compiled = Arc::new(compiled);
        self.paused.store(next.paused, Ordering::SeqCst);
        *orders = next;
        *self.steering.write().unwrap_or_else(|p| p.into_inner()) = compiled.clone();
        Ok((value, compiled))
    }
}

/// The orders in a line, for run.log.
fn summary(o: &Orders) -> String {
    let delays = o.sites.values().filter(|s| s.min_delay.is_some()).count();
    let held = o.sites.values().filter(|s| s.held).count();
    format!(
        "{}{} exclusions, {} retired sites, {delays} site delays, {held} held sites, {} added seeds",
        if o.paused { "PAUSED; " } else { "" },
        o.exclusions.len(),
        o.retired.len(),
        o.seeds.len()
    )
}
