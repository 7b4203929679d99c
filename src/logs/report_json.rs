//! `report.json`, written as it is serialized: one host (one seed, one MIME type) at a time.
//!
//! The document used to be built whole as a `serde_json::Value` and then printed: at 10,000
//! sites that tree and its text took about 30 MB at once, every minute and at the end of the
//! run, the crawl's highest memory use. Written as it goes it needs a host's worth. The bytes
//! are those the `Value` printed: keys in alphabetical order at every level (serde_json's map
//! is sorted), each small part still going through a `Value` for that.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use super::report::{HostStats, Stats};
use super::runlog::Run;

impl Stats {
    /// Writes the machine-readable report (`report.json`) to `out`, pretty-printed.
    /// `remaining` maps hosts to queued URLs; `runs` are the crawl's runs so far.
    pub fn write_report_json(
        &self,
        out: impl Write,
        name: &str,
        finished: bool,
        remaining: &BTreeMap<String, u64>,
        runs: &[Run],
    ) -> io::Result<()> {
        let report = Report::new(self, name, finished, remaining, runs);
        serde_json::to_writer_pretty(out, &report).map_err(io::Error::other)
    }

    /// The same document as a `Value` (for tests and small crawls).
    pub fn report_json(
        &self,
        name: &str,
        finished: bool,
        remaining: &BTreeMap<String, u64>,
    ) -> Value {
        let report = Report::new(self, name, finished, remaining, &self.runs);
        serde_json::to_value(report).unwrap_or(Value::Null)
    }
}

/// What the document is made of, borrowed from the statistics.
struct Report<'a> {
    stats: &'a Stats,
    name: &'a str,
    finished: bool,
    remaining: &'a BTreeMap<String, u64>,
    runs: &'a [Run],
    generated: String,
}

impl<'a> Report<'a> {
    fn new(
        stats: &'a Stats,
        name: &'a str,
        finished: bool,
        remaining: &'a BTreeMap<String, u64>,
        runs: &'a [Run],
    ) -> Report<'a> {
        Report {
            stats,
            name,
            finished,
            remaining,
            runs,
            generated: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }
    }

    fn totals(&self) -> Value {
        let s = self.stats;
        let n = &s.not_fetched;
        json!({
            "urls": s.lines(),
            "fetched": s.fetched(),
            "archived": s.archived,
            "novel": s.archived - s.duplicates,
            "duplicate": s.duplicates,
            "not_modified": s.not_modified,
            "not_modified_bytes_saved": s.not_modified_saved,
            "discarded": s.discarded,
            "bytes_archived": s.bytes,
            "out_of_scope": n.out_of_scope,
            "robots_precluded": n.robots_precluded,
            "traps": n.traps,
            "quota": n.quota,
            "opted_out": n.opted_out,
            "failed": n.failed,
            "retries": s.retries,
            "errors": s.errors,
            "queued": self.remaining.values().sum::<u64>(),
            "dropped_by_traps": s.drops.trapped(),
            "dropped_by_quotas": s.drops.over_quota(),
            "pages_cut_at_max_outlinks": s.cut_pages.pages,
            "crawl_seconds": self.runs.iter().map(|r| r.seconds()).sum::<f64>().round(),
        })
    }
}

impl Serialize for Report<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.stats;
        let statuses: BTreeMap<String, u64> = s
            .by_status
            .iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect();
        let suspended: Vec<Value> = s
            .suspended
            .iter()
            .map(|(o, u)| json!({"site": o, "until": super::runlog::format_epoch(*u)}))
            .collect();
        // In alphabetical order, as a sorted map prints them.
        let mut m = serializer.serialize_map(Some(12))?;
        m.serialize_entry("crawl", self.name)?;
        m.serialize_entry("cut_at_max_outlinks", &sorted(&s.cut_pages))?;
        m.serialize_entry("dropped", &sorted(&s.drops))?;
        m.serialize_entry("finished", &self.finished)?;
        m.serialize_entry("generated", &self.generated)?;
        m.serialize_entry("hosts", &Hosts(s, self.remaining))?;
        m.serialize_entry("mime_types", &EachSorted(&s.mime_types))?;
        m.serialize_entry("runs", &sorted(&self.runs))?;
        m.serialize_entry("seeds", &EachSorted(&s.seeds))?;
        m.serialize_entry("statuses", &statuses)?;
        m.serialize_entry("suspended", &suspended)?;
        m.serialize_entry("totals", &self.totals())?;
        m.end()
    }
}

/// A small part as a `Value`, so its keys come out sorted.
fn sorted(part: &impl Serialize) -> Value {
    serde_json::to_value(part).unwrap_or(Value::Null)
}

/// A map of small parts, one part at a time.
struct EachSorted<'a, T>(&'a BTreeMap<String, T>);

impl<T: Serialize> Serialize for EachSorted<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(self.0.len()))?;
        for (key, part) in self.0 {
            m.serialize_entry(key, &sorted(part))?;
        }
        m.end()
    }
}

/// Every host with statistics or queued URLs, with its queued count, in host order.
struct Hosts<'a>(&'a Stats, &'a BTreeMap<String, u64>);

impl Serialize for Hosts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (hosts, remaining) = (&self.0.hosts, self.1);
        let mut m = serializer.serialize_map(None)?;
        let mut counted = hosts.iter().peekable();
        let mut queued = remaining.iter().peekable();
        loop {
            // The next host of either map (both are sorted).
            let host = match (counted.peek(), queued.peek()) {
                (Some((a, _)), Some((b, _))) => a.min(b).as_str(),
                (Some((a, _)), None) => a.as_str(),
                (None, Some((b, _))) => b.as_str(),
                (None, None) => break,
            };
            let mut one = match counted.next_if(|(h, _)| h.as_str() == host) {
                Some((_, stats)) => stats.clone(),
                None => HostStats::default(),
            };
            if let Some((_, n)) = queued.next_if(|(h, _)| h.as_str() == host) {
                one.remaining = *n;
            }
            m.serialize_entry(host, &sorted(&one))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::report::{MimeStats, SeedOutcome};

    fn stats() -> Stats {
        let mut s = Stats::default();
        for (host, urls) in [("a.test", 3), ("c.test:81", 1)] {
            let h = s.hosts.entry(host.to_string()).or_default();
            h.urls = urls;
            h.novel = urls;
        }
        s.mime_types
            .insert("text/html".into(), MimeStats { urls: 4, bytes: 99 });
        s.seeds.insert(
            "http://a.test/".into(),
            SeedOutcome {
                answered: true,
                ..Default::default()
            },
        );
        s.by_status.insert(200, 4);
        s.suspended.push(("http://c.test:81".into(), 0));
        s
    }

    #[test]
    fn the_written_report_is_the_sorted_document_with_the_queued_counts() {
        let s = stats();
        // b.test has only queued URLs; a.test has both.
        let remaining = BTreeMap::from([("a.test".to_string(), 2), ("b.test".to_string(), 5)]);
        let mut out = Vec::new();
        s.write_report_json(&mut out, "c", false, &remaining, &[])
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        // Printed as a sorted Value prints: the same bytes.
        assert_eq!(text, serde_json::to_string_pretty(&value).unwrap());
        let hosts: Vec<&String> = value["hosts"].as_object().unwrap().keys().collect();
        assert_eq!(hosts, ["a.test", "b.test", "c.test:81"]);
        assert_eq!(value["hosts"]["a.test"]["remaining"], 2);
        assert_eq!(value["hosts"]["a.test"]["urls"], 3);
        assert_eq!(value["hosts"]["b.test"]["remaining"], 5);
        assert_eq!(value["hosts"]["b.test"]["urls"], 0);
        assert_eq!(value["hosts"]["c.test:81"]["remaining"], 0);
        assert_eq!(value["totals"]["queued"], 7);
        assert_eq!(value["mime_types"]["text/html"]["bytes"], 99);
        assert_eq!(value["seeds"]["http://a.test/"]["answered"], true);
        assert_eq!(value["statuses"]["200"], 4);
        assert_eq!(value["suspended"][0]["site"], "http://c.test:81");
        // The Value of the same document, for callers that want one.
        let mut whole = s.report_json("c", false, &remaining);
        whole["generated"] = value["generated"].clone();
        assert_eq!(whole, value);
    }
}
