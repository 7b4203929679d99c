//! Layer 2: the crawl's own records — crawl.log, run.log and refusals.log, report.json and the
//! progress line.

pub mod crawllog;
pub mod report;
pub mod runlog;
