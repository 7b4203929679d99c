//! archiver: an archival web crawler.
//!
//! # A newcomer's map
//!
//! A URL travels one way through the crawler, like a URI through Heritrix's processor chains;
//! each stop is a file of [`crawl`] that hands the next a small typed value:
//!
//! ```text
//!  config ─► frontier ─► sched ──► prereq ──► fetch ──► decide ────► disposition ─► journal
//!  (profile) (queues,    (which    (robots,   (exact    (what the    (dedup, WARC    (crawl.log,
//!            seen-set,   budget    DNS, the   wire      answer means: record, CDXJ)  report,
//!            leases)     may go)   guard)     bytes)    Disposition)                 run.log)
//!      ▲                                         │
//!      └── candidates::judge (scope, opt-out, traps, quota) ◄── outlinks (extract: HTML, CSS)
//! ```
//!
//! `crawl::sched` is synchronous with the clock injected, `crawl::driver` is the async loop
//! around it; the engine has three locks whose order is in the types (`crawl::locks`).
//! [`commands`] holds the offline tools (`index`, `diff`, `optout`, `verify`, `wacz`, `about`,
//! `status`) that read what a crawl wrote, through the one WARC/ARC reader in [`warc`].
//!
//! Modules sit in layers and import only downwards, never round a circle
//! (`tools/check_layers.py` checks it on every test run); each domain module owns its settings
//! type and [`config`] alone fills them in from the profile:
//!
//! | layer | modules | job |
//! | --- | --- | --- |
//! | 4 | [`crawl`], [`commands`] | the engine; the offline tools |
//! | 3 | [`config`] | the TOML profile → each module's own settings type (the one translator) |
//! | 2 | [`frontier`], [`browser`], [`politeness`], [`scope`], [`net`], [`extract`], [`dedup`], [`recrawl`], [`logs`] | domain logic, each owning its settings |
//! | 1 | [`warc`] (with its ARC reader), [`cdx`], [`spool`] | formats: records, SURT, CDXJ, bodies |
//!
//! Pure parts take the clock as a parameter (politeness, robots, traps, the scheduler), so they
//! are tested without waiting; the async loop only sleeps until the instant they name. No file
//! under `src/` is meant to pass ~900 lines outside its tests (`tools/check_sizes.py` lists
//! those that do).

// Only what `main.rs`, the tests and the benches use is `pub`; the rest is `pub(crate)` or
// private, and a `pub` nobody outside can reach is a warning (an error under clippy -D warnings).
#![warn(unreachable_pub)]

// Layer 4: the crawl engine and the offline tools.
pub mod commands;
pub mod crawl;

// Layer 3: the profile, translated into each module's settings.
pub mod config;

// Layer 2: domain logic.
pub mod browser;
pub mod dedup;
pub mod extract;
pub mod frontier;
pub mod logs;
pub mod net;
pub mod politeness;
pub mod recrawl;
pub mod scope;

// Layer 1: formats.
pub mod cdx;
pub mod spool;
pub mod warc;
