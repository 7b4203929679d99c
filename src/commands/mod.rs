//! Layer 4: what the commands besides `crawl` run: the offline tools that read what a crawl
//! wrote (`index`, `diff`, `optout`, `verify`, `wacz`) and the reports on a crawl (`about`,
//! `status`).

pub mod about;
pub mod diff;
pub(crate) mod http;
pub mod index;
pub mod optout;
pub mod status;
pub mod verify;
pub mod wacz;
