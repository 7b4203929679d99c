//! Layer 2: the network — one HTTP exchange with its exact bytes, and name resolution.

pub mod dns;
pub mod fetch;
pub mod guard;
