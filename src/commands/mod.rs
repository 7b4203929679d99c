//! Layer 4: what the commands besides `crawl` run. The offline tools (`index`, `diff`, `optout`)
//! move here once issue 10's work on them has landed.

pub mod about;
pub mod status;
