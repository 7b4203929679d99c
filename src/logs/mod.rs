//! Layer 2: the crawl's own records — crawl.log, run.log and refusals.log, report.json and the
//! progress line.

pub(crate) mod crawllog;
pub mod cut;
pub mod report;
mod report_json;
pub(crate) mod runlog;
