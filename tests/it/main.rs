//! The integration tests, one test binary (ripgrep's layout): each module is what used to be a
//! test binary of its own, `tests/NAME.rs`, so `tests/common/` and the crate are compiled and
//! linked once instead of once per file. Run one module with `cargo test --test it NAME::`
//! (e.g. `cargo test --test it crash_resume::`), one test with its full name.
//!
//! `tests/common/` is a plain module folder (no `main.rs`), so Cargo does not take it for a
//! test of its own; a test file added beside this folder as `tests/NAME.rs` still builds as a
//! binary of its own with `#[allow(dead_code)] mod common;` until it is moved in here.

#[path = "../common/mod.rs"]
mod common;

mod arc_spaces;
mod browser_archive;
mod browser_render;
mod browser_tab;
mod control_api;
mod control_console;
mod crash_resume;
mod crawl_runs;
mod crawl_site;
mod dedup_previous;
mod descriptors;
mod diff_cmd;
mod distributed;
mod hostile_crawl;
mod https_site;
mod index_cmd;
mod optout_cmd;
mod optout_crawl;
mod politeness_site;
mod qa_cmd;
mod quick_start;
mod render_variants;
mod replay_diff;
mod report_signal;
mod requisites;
mod scope_filters;
mod sitemap_recrawl;
mod state_errors;
mod terminal;
mod verify_cmd;
mod wacz_cmd;
