//! The comparison itself: the merge of the two crawls' sorted streams into counts per host and
//! the lists of added, removed, changed and unchanged pages (spooled to temporary files, since
//! the report's summary comes first but is known only at the end).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};

use super::cdxj::{Capture, Crawl, SideStream};
use super::DiffError;

/// What happened to one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    Added,
    Removed,
    Changed,
    Unchanged,
}

/// Counts for one host (or for everything).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: u64,
    pub removed: u64,
    pub changed: u64,
    pub unchanged: u64,
    pub status_changes: u64,
}

impl Counts {
    fn add(&mut self, change: Change, status_changed: bool) {
        match change {
            Change::Added => self.added += 1,
            Change::Removed => self.removed += 1,
            Change::Changed => self.changed += 1,
            Change::Unchanged => self.unchanged += 1,
        }
        if status_changed {
            self.status_changes += 1;
        }
    }
}

/// A list written to a temporary file, one tab-separated row per entry.
pub(super) struct Spool {
    pub(super) file: BufWriter<File>,
    pub(super) rows: u64,
}

impl Spool {
    fn new() -> io::Result<Spool> {
        Ok(Spool {
            file: BufWriter::new(tempfile::tempfile()?),
            rows: 0,
        })
    }

    fn push(&mut self, fields: &[&str]) -> io::Result<()> {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                self.file.write_all(b"\t")?;
            }
            self.file.write_all(clean_field(f).as_bytes())?;
        }
        self.file.write_all(b"\n")?;
        self.rows += 1;
        Ok(())
    }

    /// Calls `each` with the fields of every row, in order.
    pub(super) fn replay(self, mut each: impl FnMut(&[&str]) -> io::Result<()>) -> io::Result<()> {
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        for line in BufReader::new(file).lines() {
            let line = line?;
            let fields: Vec<&str> = line.split('\t').collect();
            each(&fields)?;
        }
        Ok(())
    }
}

/// Tabs and line breaks would break a spool row; URLs never hold them legitimately.
fn clean_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\t', '\n', '\r']) {
        s.replace('\t', "%09")
            .replace('\n', "%0A")
            .replace('\r', "%0D")
            .into()
    } else {
        s.into()
    }
}

/// The comparison, before it is rendered.
pub(super) struct Outcome {
    pub(super) total: Counts,
    pub(super) hosts: BTreeMap<String, Counts>,
    /// url, timestamp, status
    pub(super) added: Spool,
    /// url, timestamp, status
    pub(super) removed: Spool,
    /// url, old timestamp, new timestamp, then for old and new: WARC file, offset, "r" for a
    /// revisit (else "-")
    pub(super) changed: Spool,
    /// url, old timestamp, new timestamp
    pub(super) unchanged: Spool,
    /// url, old status, new status, old timestamp, new timestamp
    pub(super) status: Spool,
}

pub(super) enum CompareError {
    Diff(DiffError),
    Io(io::Error),
}

impl From<DiffError> for CompareError {
    fn from(e: DiffError) -> Self {
        CompareError::Diff(e)
    }
}

impl From<io::Error> for CompareError {
    fn from(e: io::Error) -> Self {
        CompareError::Io(e)
    }
}

/// The merge of the two sorted streams.
pub(super) fn compare(old: &Crawl, new: &Crawl) -> Result<Outcome, CompareError> {
    let mut a = SideStream::open(old)?;
    let mut b = SideStream::open(new)?;
    let mut o = Outcome {
        total: Counts::default(),
        hosts: BTreeMap::new(),
        added: Spool::new()?,
        removed: Spool::new()?,
        changed: Spool::new()?,
        unchanged: Spool::new()?,
        status: Spool::new()?,
    };
    let mut x = a.next_page()?;
    let mut y = b.next_page()?;
    loop {
        match (x.take(), y.take()) {
            (None, None) => break,
            (Some(p), None) => {
                record_one(&mut o, Change::Removed, &p)?;
                x = a.next_page()?;
            }
            (None, Some(q)) => {
                record_one(&mut o, Change::Added, &q)?;
                y = b.next_page()?;
            }
            (Some(p), Some(q)) => match p.key.cmp(&q.key) {
                std::cmp::Ordering::Less => {
                    record_one(&mut o, Change::Removed, &p)?;
                    x = a.next_page()?;
                    y = Some(q);
                }
                std::cmp::Ordering::Greater => {
                    record_one(&mut o, Change::Added, &q)?;
                    x = Some(p);
                    y = b.next_page()?;
                }
                std::cmp::Ordering::Equal => {
                    record_pair(&mut o, &p, &q)?;
                    x = a.next_page()?;
                    y = b.next_page()?;
                }
            },
        }
    }
    Ok(o)
}

/// A page in only one crawl.
fn record_one(o: &mut Outcome, change: Change, c: &Capture) -> io::Result<()> {
    let status = c.status.as_deref().unwrap_or("-");
    match change {
        Change::Added => o.added.push(&[&c.url, &c.timestamp, status])?,
        _ => o.removed.push(&[&c.url, &c.timestamp, status])?,
    }
    count(o, &c.url, change, false);
    Ok(())
}

/// A page in both crawls.
fn record_pair(o: &mut Outcome, old: &Capture, new: &Capture) -> io::Result<()> {
    let change = classify(old, new);
    let row = [new.url.as_str(), &old.timestamp, &new.timestamp];
    match change {
        Change::Changed => {
            // Where both captures are, for the HTML report's text comparison.
            let place = |c: &Capture| {
                let revisit = if c.revisit { "r" } else { "-" };
                (
                    c.filename.clone().unwrap_or_else(|| "-".into()),
                    c.offset.map_or_else(|| "-".into(), |n| n.to_string()),
                    revisit,
                )
            };
            let (fa, oa, ra) = place(old);
            let (fb, ob, rb) = place(new);
            o.changed.push(&[
                &new.url,
                &old.timestamp,
                &new.timestamp,
                &fa,
                &oa,
                ra,
                &fb,
                &ob,
                rb,
            ])?
        }
        _ => o.unchanged.push(&row)?,
    }
    let status_changed = match (&old.status, &new.status) {
        (Some(a), Some(b)) => a != b,
        _ => false,
    };
    if status_changed {
        let (a, b) = (old.status.as_deref(), new.status.as_deref());
        o.status.push(&[
            &new.url,
            a.unwrap_or("-"),
            b.unwrap_or("-"),
            &old.timestamp,
            &new.timestamp,
        ])?;
    }
    count(o, &new.url, change, status_changed);
    Ok(())
}

/// Changed or unchanged: a different payload digest, unless a revisit vouches for sameness.
fn classify(old: &Capture, new: &Capture) -> Change {
    match (&old.digest, &new.digest) {
        (Some(a), Some(b)) if a != b && !new.revisit => Change::Changed,
        (None, Some(_)) | (Some(_), None) if !old.revisit && !new.revisit => Change::Changed,
        _ => Change::Unchanged,
    }
}

fn count(o: &mut Outcome, url: &str, change: Change, status_changed: bool) {
    o.total.add(change, status_changed);
    let host = host_of(url);
    match o.hosts.get_mut(host.as_str()) {
        Some(c) => c.add(change, status_changed),
        None => {
            let mut c = Counts::default();
            c.add(change, status_changed);
            o.hosts.insert(host, c);
        }
    }
}

/// `http://User@Example.com:8080/x` → `example.com:8080`.
pub(super) fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    host.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_takes_the_authority() {
        assert_eq!(
            host_of("http://u:p@Example.COM:8080/x?y"),
            "example.com:8080"
        );
        assert_eq!(host_of("https://a.b/"), "a.b");
    }
}
