//! archiver: an archival web crawler.
//!
//! # A newcomer's map
//!
//! A URL travels one way through the crawler, like a URI through Heritrix's processor chains:
//!
//! ```text
//!  config ─► frontier ─► politeness ─► robots, DNS ─► net::fetch ─► extract ─► warc + cdx ─► logs
//!  (profile)  (queues,    (which budget  (prerequisites (exact wire   (outlinks,  (records,    (crawl.log,
//!             seen-set)    may go)        of a site)     bytes)        CSS)        CDXJ)        report)
//!      ▲                                                                 │
//!      └────────────── scope (rules, traps, opt-out) ◄──── outlinks ─────┘
//! ```
//!
//! `crawl` drives the road; `commands` holds the offline tools (`index`, `diff`, `optout`, …)
//! that read what a crawl wrote. Modules sit in layers and import only downwards, never round a circle
//! (`tools/check_layers.py` checks it on every test run):
//!
//! | layer | modules | job |
//! | --- | --- | --- |
//! | 4 | [`crawl`], [`commands`] (`index`, `diff`, `optout`, `verify`, `wacz`, `about`, `status`) | the engine; the offline tools |
//! | 3 | [`config`] | the TOML profile → each module's own settings type (the one translator) |
//! | 2 | [`frontier`], [`browser`], [`politeness`], [`scope`], [`net`], [`extract`], [`dedup`], [`logs`] | domain logic, each owning its settings |
//! | 1 | [`warc`] (with its ARC reader), [`cdx`], [`spool`] | formats: records, SURT, CDXJ, bodies |
//!
//! Pure parts take the clock as a parameter (politeness, robots, traps), so they are tested
//! without waiting; the async loop in `crawl` only sleeps until the instant they name.

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
pub mod scope;

// Layer 1: formats.
pub mod cdx;
pub mod spool;
pub mod warc;
