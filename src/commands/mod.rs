//! Layer 4: what the commands besides `crawl` run: the offline tools that read what a crawl
//! wrote (`index`, `diff`, `optout`, `verify`, `wacz`, `qa`), the reports on a crawl (`about`,
//! `status`), and `control`, the shell's way to steer a running crawl.

pub mod about;
pub mod control;
pub mod diff;
pub(crate) mod html;
pub(crate) mod http;
pub mod index;
pub mod optout;
pub mod qa;
pub mod status;
pub mod verify;
pub mod wacz;

use std::io;
use std::path::{Path, PathBuf};

/// An I/O error and the file or folder it happened on, shown as `PATH: error`: the one `Io`
/// case of the offline tools' errors.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", .path.display())]
pub struct IoAt {
    pub path: PathBuf,
    pub source: io::Error,
}

/// For `map_err`: tags an I/O error with the path it happened on.
pub(crate) fn io_at(path: &Path) -> impl FnOnce(io::Error) -> IoAt + '_ {
    move |source| IoAt {
        path: path.to_path_buf(),
        source,
    }
}
