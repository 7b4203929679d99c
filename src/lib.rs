//! archiver: an archival web crawler.
//!
//! Modules in the order a URL travels: profile → frontier → politeness → robots → fetch →
//! extract → scope → warc/cdx → crawllog/report; `crawl` drives them.

pub mod about;
pub mod arc;
pub mod canon;
pub mod cdx;
pub mod crawl;
pub mod crawllog;
pub mod css;
pub mod dedup;
pub mod diff;
pub mod dns;
pub mod extract;
pub mod fetch;
pub mod frontier;
pub mod guard;
pub mod index;
pub mod optout;
pub mod politeness;
pub mod profile;
pub mod report;
pub mod robots;
pub mod rules;
pub mod runlog;
pub mod scope;
pub mod spool;
pub mod store;
pub mod traps;
pub mod verify;
pub mod wacz;
pub mod warc;
