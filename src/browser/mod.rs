//! Rendering pages that are empty without JavaScript in headless Chromium, with every request the
//! browser makes handed to the crawler.
//!
//! The browser never touches the network: each request is paused at the Request stage
//! (`Fetch.requestPaused`), given to a [`Fetcher`] (the crawl engine, which judges, paces, fetches
//! and records it like any URL) and answered with `Fetch.fulfillRequest` or `Fetch.failRequest`.
//! Chromium is also pointed at a dead proxy and a resolver that knows no names, so anything the
//! interception might miss fails instead of reaching a server.
//!
//! - `rule`: the pure "empty without JavaScript" test over a page's HTML;
//! - `cdp`: a small Chrome DevTools Protocol client over one WebSocket;
//! - `process`: finding, starting and stopping the one Chromium process;
//! - `tab`: rendering one page in its own tab, interception included;
//! - `readback`: the browser's answers read back from a crawl's own WARC records (the
//!   renderer's and `archiver qa`'s).

pub(crate) mod cdp;
pub(crate) mod process;
pub(crate) mod readback;
pub(crate) mod rule;
pub(crate) mod tab;

use std::path::PathBuf;
use std::time::Duration;

pub use process::{find_executable, Browser, LaunchError};
pub use rule::{empty_without_js, links_show_ordinary, looks_empty, Emptiness};
pub use tab::{BrowserAnswer, BrowserRequest, Capture, Fetcher, Refusal, RenderError, Rendered};

/// When pages are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderMode {
    /// Pages that are empty without JavaScript ([`looks_empty`]), at most `max_share` of them.
    Empty,
    /// Never: pages are archived as served.
    Never,
    /// Every HTML page (still bounded by `max_share`).
    All,
}

/// The `[browser]` table of a profile.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    pub render: RenderMode,
    /// Most share of the crawl's HTML pages that may be rendered (0..=1).
    pub max_share: f64,
    /// The Chromium to run; `None`: the first of `process::CANDIDATES` found on PATH.
    pub executable: Option<PathBuf>,
    /// Longest time one page may take to render (then its DOM is taken as it is).
    pub render_timeout: Duration,
    /// Pages rendered at once, each in its own tab (plain fetching goes on meanwhile).
    pub tabs: usize,
    /// Render a page whose payload (same digest) was already rendered under another URL.
    pub rerender_duplicates: bool,
    /// Most URLs first found in one rendered DOM (not among the page's own links) that are
    /// followed; the rest are logged `trap:render-variants`.
    pub max_dom_links_per_page: usize,
    /// The same, for all the rendered pages of one site together.
    pub max_dom_links_per_site: usize,
}

impl Default for BrowserSettings {
    fn default() -> BrowserSettings {
        BrowserSettings {
            render: RenderMode::Empty,
            max_share: 0.1,
            executable: None,
            render_timeout: Duration::from_secs(120),
            // Each tab is a renderer process taking a core while its scripts run: on a small
            // machine more would slow plain fetching more than they gain.
            tabs: 3,
            rerender_duplicates: false,
            max_dom_links_per_page: 1000,
            max_dom_links_per_site: 10_000,
        }
    }
}

/// Whether one more page may be rendered when `rendered` of `pages` HTML pages were: the share
/// counts the page in question, and the first page may always be rendered (a crawl of one SPA
/// shell must be able to render it).
pub fn share_allows(max_share: f64, rendered: u64, pages: u64) -> bool {
    if max_share <= 0.0 {
        return false;
    }
    if rendered == 0 {
        return true;
    }
    (rendered + 1) as f64 <= max_share * pages.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_bounds_rendering_but_lets_the_first_page_through() {
        assert!(share_allows(0.1, 0, 1));
        assert!(!share_allows(0.1, 1, 5));
        assert!(share_allows(0.1, 1, 20));
        assert!(!share_allows(0.0, 0, 100));
        assert!(share_allows(1.0, 9, 10));
        assert!(!share_allows(1.0, 10, 10));
    }
}
