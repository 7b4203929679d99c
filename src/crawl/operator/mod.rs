//! The operator's orders of a running crawl (pause, seeds, exclusions, per-site delay, hold,
//! release, retire), as kept and as the crawl reads them; they are given and carried out by
//! `crawl/control/` (docs/control.md).
//!
//! | file | job |
//! | --- | --- |
//! | `mod` | [`Operator`]: the orders in force, saved in `state/operator.json` |
//! | `rules` | the orders as kept, and their compiled [`Steering`] |
//! | `sync` | a shared crawl's orders, in its database, polled by every worker |
//!
//! The orders live here, not in the scheduler: `state/operator.json` is written with no engine
//! lock held, and the scheduler is handed a new [`Steering`] snapshot through one method.

pub(super) mod rules;
mod sync;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::scope::Scope;

pub(crate) use rules::Steering;
use rules::{Orders, Steering as Compiled};

/// An order refused: the HTTP status and why. Nothing changed.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(in crate::crawl) status: u16,
    pub(in crate::crawl) message: String,
}

impl Refused {
    pub(in crate::crawl) fn bad(message: impl Into<String>) -> Refused {
        Refused {
            status: 400,
            message: message.into(),
        }
    }

    pub(in crate::crawl) fn not_found(message: impl Into<String>) -> Refused {
        Refused {
            status: 404,
            message: message.into(),
        }
    }

    pub(in crate::crawl) fn server(message: impl Into<String>) -> Refused {
        Refused {
            status: 500,
            message: message.into(),
        }
    }
}

/// The operator's orders of one crawl, and where they are kept.
pub(in crate::crawl) struct Operator {
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
    /// A shared crawl's orders in its database (None: a crawl of its own), and the version
    /// of them these orders are.
    db: Option<sync::OrdersDb>,
    version: AtomicI64,
}

impl Operator {
    /// The orders an earlier run left (none the first time); run.log hears of those in force.
    pub(in crate::crawl) fn load(
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
        let (db, version, orders) = shared_orders(profile, runlog, orders);
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
            db,
            version: AtomicI64::new(version),
        };
        operator.widen();
        if operator.db.is_some() {
            operator.save(&operator.orders());
        }
        operator
    }

    /// A shared crawl's workers as its database lists them (None: a crawl of its own).
    pub(in crate::crawl) fn workers(&self) -> Option<Vec<serde_json::Value>> {
        self.db.as_ref().map(sync::OrdersDb::workers)
    }

    /// True for a shared crawl, whose orders other workers may change.
    pub(in crate::crawl) fn shared(&self) -> bool {
        self.db.is_some()
    }

    /// Takes up the orders another worker wrote, if newer than ours: None when there were
    /// none, else whether they exclude more (queued URLs may have to be dropped).
    pub(in crate::crawl) fn adopt_newer(&self) -> Option<bool> {
        let db = self.db.as_ref()?;
        let mut orders = self.orders.lock().unwrap_or_else(|p| p.into_inner());
        let (version, newer) = db.newer(self.version.load(Ordering::SeqCst))?;
        let narrower = newer.exclusions != orders.exclusions || newer.retired != orders.retired;
        // The database is the orders' home; the file is this worker's copy.
        self.save(&newer);
        self.install(&mut orders, newer, version);
        Some(narrower)
    }

    /// Makes `next` the orders in force (compiled, the pause set), as of `version`.
    fn install(&self, orders: &mut Orders, next: Orders, version: i64) {
        let (compiled, _) = Compiled::new(&next);
        self.paused.store(next.paused, Ordering::SeqCst);
        *orders = next;
        *self.steering.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(compiled);
        self.version.store(version, Ordering::SeqCst);
        let added: Vec<url::Url> = (orders.seeds.iter())
            .filter_map(|s| url::Url::parse(s).ok())
            .collect();
        self.widen_with(added);
    }

    /// Writes `state/operator.json` (atomically); false when it could not be.
    fn save(&self, orders: &Orders) -> bool {
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        crate::warc::save_atomically(&self.path, |out| {
            serde_json::to_writer_pretty(&mut *out, orders)?;
            out.write_all(b"\n")
        })
        .is_ok()
    }

    /// The scope widened by the seeds the operator added (None: none added).
    pub(in crate::crawl) fn scope(&self) -> Option<Arc<Scope>> {
        self.widened
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Builds the widened scope again from the orders' seeds.
    pub(in crate::crawl) fn widen(&self) {
        let added: Vec<url::Url> = (self.orders().seeds.iter())
            .filter_map(|s| url::Url::parse(s).ok())
            .collect();
        self.widen_with(added);
    }

    fn widen_with(&self, added: Vec<url::Url>) {
        let scope = (!added.is_empty()).then(|| {
            let mut all = self.profile_seeds.clone();
            all.extend(added);
            Arc::new(Scope::new(self.scope_settings.clone(), &all))
        });
        *self.widened.write().unwrap_or_else(|p| p.into_inner()) = scope;
    }

    /// The crawl is paused: no new request starts.
    pub(in crate::crawl) fn paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// The compiled orders now.
    pub(in crate::crawl) fn steering(&self) -> Arc<Compiled> {
        self.steering
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A copy of the orders now.
    pub(in crate::crawl) fn orders(&self) -> Orders {
        self.orders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes the orders with `f`, saves them (atomically) and compiles them again; in a
    /// shared crawl, over the database's latest orders, written back there first. Nothing
    /// changes when `f` refuses or the orders cannot be saved.
    pub(in crate::crawl) fn change<T>(
        &self,
        mut f: impl FnMut(&mut Orders) -> Result<T, Refused>,
    ) -> Result<(T, Arc<Compiled>), Refused> {
        let mut orders = self.orders.lock().unwrap_or_else(|p| p.into_inner());
        let server = |e: String| Refused::server(e);
        // A shared crawl: a few tries, in case other workers write at the same moment.
        for _ in 0..5 {
            let (version, base) = match &self.db {
                Some(db) => db.fetch().map_err(server)?,
                None => (0, orders.clone()),
            };
            let mut next = base;
            let value = f(&mut next)?;
            if let Some(db) = &self.db {
                if !db.publish(version, &next).map_err(server)? {
                    continue;
                }
                // Published: in force on every worker. This worker's copy follows.
                self.save(&next);
            } else if !self.save(&next) {
                return Err(server(format!("cannot save {}", self.path.display())));
            }
            let version = if self.db.is_some() { version + 1 } else { 0 };
            self.install(&mut orders, next, version);
            return Ok((value, self.steering()));
        }
        Err(server(
            "the shared orders kept changing under this one: try again".into(),
        ))
    }
}

/// A shared crawl's orders, which win over this worker's own file; run.log says so.
fn shared_orders(
    profile: &crate::config::Profile,
    runlog: &crate::logs::runlog::RunLog,
    own: Orders,
) -> (Option<sync::OrdersDb>, i64, Orders) {
    let Some(url) = profile.frontier.database_with_env() else {
        return (None, 0, own);
    };
    let opened = sync::OrdersDb::open(&url).and_then(|db| {
        let (version, orders) = db.fetch()?;
        Ok((db, version, orders))
    });
    match opened {
        Ok((db, version, orders)) => (Some(db), version, orders),
        Err(e) => {
            runlog.line(&format!(
                "operator: cannot share the orders through the database ({e}): this worker's \
                 orders are its own"
            ));
            (None, 0, own)
        }
    }
}

/// The orders in a line, for run.log.
pub(in crate::crawl) fn summary(o: &Orders) -> String {
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
