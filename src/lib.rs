//! archiver: an archival web crawler.
//!
//! **The code map** — the road of one URL through the crawler, the layers of the modules, what
//! each file of each folder does, the engine's locks — is in `docs/design.md` ("The code map"),
//! the one copy of it. In short: [`crawl`] is the engine and [`commands`] the offline tools
//! (layer 4), [`config`] the one translator of the profile (3), [`frontier`], [`browser`],
//! [`politeness`], [`scope`], [`net`], [`extract`], [`dedup`], [`recrawl`] and [`logs`] the domain logic
//! (2), [`warc`], [`cdx`] and [`spool`] the formats (1). Modules import only downwards, and no
//! files import each other round a circle (`tools/check_layers.py`); no file under `src/` is
//! meant to pass ~900 lines outside its tests (`tools/check_sizes.py`).

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

// The integration tests' throwaway PostgreSQL server, shared as is with the unit tests that
// need one (the frontier's, the scheduler's): its `pub` items are for the integration tests.
#[cfg(test)]
#[path = "../tests/common/pg_cluster.rs"]
#[allow(unreachable_pub)]
pub(crate) mod pg_cluster;
