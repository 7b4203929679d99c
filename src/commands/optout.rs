//! `archiver optout`: applies opt-out lists ([`crate::scope::optout`]) to WARCs already written
//! (`apply`: the purge of every record a list covers, with its exchange partners and revisits)
//! and turns them into a pywb access-control file (`aclj`, built by the list itself).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::commands::index::{self, IndexError, InputError, Problem, Span, Visitor, WarcHead};
use crate::commands::{io_at, IoAt};
use crate::scope::optout::{OptOutEntry, OptOutList};
use crate::warc::sync_dir;

/// Where `apply` works.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// WARC files, or folders searched for them (a crawl's output folder, its `warcs/`).
    pub inputs: Vec<PathBuf>,
    /// The folder of per-WARC CDXJ; `None`: found beside each WARC (see [`index_dir_for`]).
    pub index_dir: Option<PathBuf>,
    /// Go ahead even when the list removes every capture.
    pub force: bool,
}

/// Why a record goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Its target URI (or, for a revisit, the URI it refers to) is covered by this entry.
    Matched(OptOutEntry),
    /// It belongs to the same exchange (WARC-Concurrent-To) as a removed record.
    ConcurrentTo(String),
    /// It is a revisit (or other record) whose WARC-Refers-To is a removed record.
    RefersTo(String),
    /// It is a revisit whose original (WARC-Refers-To-Target-URI) is covered by this entry.
    RevisitOf(String, OptOutEntry),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Matched(e) => write!(f, "matches {e}"),
            Reason::ConcurrentTo(id) => write!(f, "same exchange as removed {id}"),
            Reason::RefersTo(id) => write!(f, "refers to removed {id}"),
            Reason::RevisitOf(uri, e) => write!(f, "revisit of {uri}, which matches {e}"),
        }
    }
}

/// One removed record.
#[derive(Debug, Clone)]
pub struct Removed {
    pub file: String,
    pub offset: u64,
    pub record_type: String,
    pub uri: String,
    pub reason: Reason,
}

/// What `apply` did.
#[derive(Debug, Default)]
pub struct ApplyReport {
    /// WARC files read.
    pub files: usize,
    /// Files rewritten (bare names).
    pub rewritten: Vec<String>,
    /// CDXJ files rewritten with them.
    pub reindexed: Vec<PathBuf>,
    pub removed: Vec<Removed>,
    /// Records kept in the rewritten files.
    pub kept: u64,
    /// Files being written (`.open`), left alone.
    pub skipped_open: Vec<PathBuf>,
    /// Other CDXJ files that name a rewritten WARC: their offsets are now wrong.
    pub stale_indexes: Vec<PathBuf>,
}

impl ApplyReport {
    /// A human-readable account, one removed record per line.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for r in &self.removed {
            s.push_str(&format!(
                "removed {} offset {} {} {} ({})\n",
                r.file, r.offset, r.record_type, r.uri, r.reason
            ));
        }
        for p in &self.skipped_open {
            s.push_str(&format!(
                "skipped {} (still being written; run again once it is closed)\n",
                p.display()
            ));
        }
        for p in &self.stale_indexes {
            s.push_str(&format!(
                "warning: {} names a rewritten WARC; rebuild it with `archiver index`\n",
                p.display()
            ));
        }
        s.push_str(&format!(
            "{} records removed from {} of {} WARC files ({} records kept in them)\n",
            self.removed.len(),
            self.rewritten.len(),
            self.files,
            self.kept
        ));
        s
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Io(#[from] IoAt),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{} is damaged, so it was not rewritten (nothing was changed): {}", .path.display(), .problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Damaged {
        path: PathBuf,
        problems: Vec<Problem>,
    },
    #[error("the opt-out list matches all {0} captures in these WARCs; if that is really meant, run again with --force")]
    MatchesEverything(u64),
    #[error("the rewritten {} did not read back as expected ({message}); the original is untouched", .path.display())]
    Verify { path: PathBuf, message: String },
}

/// What the scan keeps of each record.
#[derive(Debug, Clone)]
struct RecInfo {
    span: Span,
    record_type: String,
    id: Option<String>,
    uri: Option<String>,
    concurrent_to: Vec<String>,
    refers_to: Option<String>,
    refers_to_uri: Option<String>,
}

/// Collects [`RecInfo`] for every record of a file.
#[derive(Default)]
struct Scan {
    records: Vec<RecInfo>,
    problems: Vec<Problem>,
}

impl Visitor for Scan {
    type Item = ();
    fn record(&mut self, _: u64, _: &WarcHead, _: &mut dyn BufRead) -> io::Result<()> {
        Ok(())
    }
    fn done(&mut self, span: Span, head: WarcHead, _: ()) {
        let concurrent_to = head
            .fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("WARC-Concurrent-To"))
            .map(|(_, v)| v.clone())
            .collect();
        self.records.push(RecInfo {
            span,
            record_type: head.record_type().unwrap_or("").to_string(),
            id: head.record_id().map(str::to_string),
            uri: head.target_uri(),
            concurrent_to,
            refers_to: head.get("WARC-Refers-To").map(str::to_string),
            refers_to_uri: head.get("WARC-Refers-To-Target-URI").map(str::to_string),
        });
    }
    fn problem(&mut self, p: Problem) {
        self.problems.push(p);
    }
}

/// One WARC file of the folder and its records.
struct WarcFile {
    path: PathBuf,
    name: String,
    records: Vec<RecInfo>,
    /// Offsets of its records cut short by the end of the file (or of their gzip member).
    cut_short: Vec<u64>,
}

/// Removes from the WARCs `opts.inputs` name every record the list covers, with the records
/// of the same exchanges and the revisits that point at them (in any file of the folder), and
/// rewrites their CDXJ. Each file is replaced atomically: the new file is written beside it,
/// read back and checked, and only then renamed over the old one. Nothing is changed when a
/// file that needs rewriting is damaged, or when the list covers every capture (without
/// `force`).
pub fn apply(list: &OptOutList, opts: &ApplyOptions) -> Result<ApplyReport, ApplyError> {
    let mut report = ApplyReport::default();
    let found = index::find_archives(&opts.inputs)?;
    report.skipped_open = found.open;
    let paths = found.files;
    let mut files = Vec::new();
    for path in paths {
        // Skimming finds every record boundary without inflating bodies; a body damaged in a
        // file that gets rewritten is still caught, by the full check of the new file.
        let mut scan = Scan::default();
        index::walk_skimming(&path, &mut scan)?;
        let name = file_name(&path);
        // A record cut short by the end of the file keeps an exact span: it can be copied or
        // left out like any other. Any other damage leaves record boundaries in doubt.
        let (cut_short, damage): (Vec<Problem>, Vec<Problem>) =
            scan.problems.into_iter().partition(|p| p.cut_short);
        if !damage.is_empty() {
            return Err(ApplyError::Damaged {
                path,
                problems: damage,
            });
        }
        files.push(WarcFile {
            path,
            name,
            records: scan.records,
            cut_short: cut_short.iter().map(|p| p.offset).collect(),
        });
    }
    report.files = files.len();
    let removal = decide(list, &files);
    let captures = files
        .iter()
        .flat_map(|f| &f.records)
        .filter(|r| is_capture(r))
        .count() as u64;
    let removed_captures = removal
        .iter()
        .filter(|((f, r), _)| is_capture(&files[*f].records[*r]))
        .count() as u64;
    if captures > 0 && removed_captures == captures && !opts.force {
        return Err(ApplyError::MatchesEverything(captures));
    }
    let mut index_dirs: Vec<PathBuf> = Vec::new();
    for (fi, file) in files.iter().enumerate() {
        let gone: HashMap<usize, &Reason> = removal
            .iter()
            .filter(|((f, _), _)| *f == fi)
            .map(|((_, r), reason)| (*r, reason))
            .collect();
        if gone.is_empty() {
            continue;
        }
        let index_dir = index_dir_for(&file.path, opts.index_dir.as_deref());
        if let Some(d) = &index_dir {
            if !index_dirs.contains(d) {
                index_dirs.push(d.clone());
            }
        }
        let kept = rewrite(file, &gone, index_dir.as_deref(), &mut report)?;
        report.kept += kept;
        let mut removed: Vec<Removed> = gone
            .iter()
            .map(|(&r, reason)| {
                let rec = &file.records[r];
                Removed {
                    file: file.name.clone(),
                    offset: rec.span.offset,
                    record_type: rec.record_type.clone(),
                    uri: rec.uri.clone().unwrap_or_default(),
                    reason: (*reason).clone(),
                }
            })
            .collect();
        removed.sort_by_key(|r| r.offset);
        report.removed.extend(removed);
    }
    for dir in &index_dirs {
        report
            .stale_indexes
            .extend(stale_indexes(dir, &report.rewritten)?);
    }
    Ok(report)
}

/// Records that replay as a web page: what "everything" means for the refusal (a tool's own
/// log or manifest records do not count).
fn is_capture(r: &RecInfo) -> bool {
    let web = r.uri.as_deref().is_some_and(|u| {
        let lower = u.get(..8).unwrap_or(u).to_ascii_lowercase();
        lower.starts_with("http://") || lower.starts_with("https://")
    });
    web && matches!(r.record_type.as_str(), "response" | "revisit" | "resource")
}

/// Where the CDXJ of the WARC at `warc` lives: `explicit` when given; else the nearest folder
/// up from the WARC's own that holds `NAME.cdxj` itself or in `indexes/` (a crawl's layout is
/// `OUT/warcs/NAME.warc.gz` beside `OUT/indexes/NAME.cdxj`, also with WARCs moved into
/// sub-folders of `warcs/`); else a crawl's `indexes/` beside the WARC's folder. `None`: no
/// index to rewrite.
pub fn index_dir_for(warc: &Path, explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(d) = explicit {
        return Some(d.to_path_buf());
    }
    let dir = warc.parent().unwrap_or(Path::new("."));
    let cdxj = format!("{}.cdxj", warc_stem(&file_name(warc)));
    for up in dir.ancestors().take(4) {
        if up.join(&cdxj).is_file() {
            return Some(up.to_path_buf());
        }
        if up.join("indexes").join(&cdxj).is_file() {
            return Some(up.join("indexes"));
        }
    }
    let crawl = dir.join("..").join("indexes");
    crawl.is_dir().then_some(crawl)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Which records go, keyed by (file index, record index): those the list covers, then, until
/// nothing changes, those sharing an exchange with a removed record and those referring to
/// one. warcinfo records always stay (they describe the file, not a capture).
fn decide(list: &OptOutList, files: &[WarcFile]) -> HashMap<(usize, usize), Reason> {
    let mut removal: HashMap<(usize, usize), Reason> = HashMap::new();
    let mut by_id: HashMap<&str, (usize, usize)> = HashMap::new();
    for (fi, f) in files.iter().enumerate() {
        for (ri, r) in f.records.iter().enumerate() {
            if let Some(id) = &r.id {
                by_id.insert(id.as_str(), (fi, ri));
            }
            if r.record_type == "warcinfo" {
                continue;
            }
            let own = r.uri.as_deref().and_then(|u| list.matches_str(u));
            let original = r
                .refers_to_uri
                .as_deref()
                .and_then(|u| list.matches_str(u).map(|e| (u, e)));
            if let Some(entry) = own {
                removal.insert((fi, ri), Reason::Matched(entry.clone()));
            } else if let Some((uri, entry)) = original {
                removal.insert((fi, ri), Reason::RevisitOf(uri.to_string(), entry.clone()));
            }
        }
    }
    loop {
        let removed_ids: HashSet<&str> = removal
            .keys()
            .filter_map(|&(f, r)| files[f].records[r].id.as_deref())
            .collect();
        let mut added: Vec<((usize, usize), Reason)> = Vec::new();
        for (fi, f) in files.iter().enumerate() {
            for (ri, r) in f.records.iter().enumerate() {
                if r.record_type == "warcinfo" || removal.contains_key(&(fi, ri)) {
                    continue;
                }
                if let Some(id) = r
                    .concurrent_to
                    .iter()
                    .find(|c| removed_ids.contains(c.as_str()))
                {
                    added.push(((fi, ri), Reason::ConcurrentTo(id.clone())));
                } else if let Some(id) = r
                    .refers_to
                    .as_ref()
                    .filter(|id| removed_ids.contains(id.as_str()))
                {
                    added.push(((fi, ri), Reason::RefersTo(id.clone())));
                }
            }
        }
        // The other direction of Concurrent-To: a removed record names its partners.
        for &(f, r) in removal.keys() {
            let rec = &files[f].records[r];
            for partner in &rec.concurrent_to {
                if let Some(&(pf, pr)) = by_id.get(partner.as_str()) {
                    let is_info = files[pf].records[pr].record_type == "warcinfo";
                    if !is_info && !removal.contains_key(&(pf, pr)) {
                        let id = rec.id.clone().unwrap_or_default();
                        added.push(((pf, pr), Reason::ConcurrentTo(id)));
                    }
                }
            }
        }
        if added.is_empty() {
            return removal;
        }
        for (k, reason) in added {
            removal.entry(k).or_insert(reason);
        }
    }
}

/// Rewrites one file without the records in `gone`, checks it, then swaps it (and its CDXJ)
/// in. Returns how many records were kept.
fn rewrite(
    file: &WarcFile,
    gone: &HashMap<usize, &Reason>,
    index_dir: Option<&Path>,
    report: &mut ApplyReport,
) -> Result<u64, ApplyError> {
    let dir = file.path.parent().unwrap_or(Path::new("."));
    let kept: Vec<&RecInfo> = file
        .records
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains_key(i))
        .map(|(_, r)| r)
        .collect();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", file.name))
        .suffix(".optout-part")
        .tempfile_in(dir)
        .map_err(io_at(dir))?;
    copy_records(&file.path, &kept, tmp.as_file()).map_err(io_at(tmp.path()))?;
    // The new file replaces the old one: same permissions (the temporary file has 0600).
    let perms = fs::metadata(&file.path)
        .map_err(io_at(&file.path))?
        .permissions();
    fs::set_permissions(tmp.path(), perms).map_err(io_at(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io_at(tmp.path()))?;
    // The copy holds the kept records cut short, cut short the same way, and no other damage.
    let cut_short = kept
        .iter()
        .filter(|r| file.cut_short.contains(&r.span.offset))
        .count();
    verify(tmp.path(), &kept, cut_short)?;
    let stem = warc_stem(&file.name);
    let new_index = match index_dir {
        Some(d) => Some(write_index_part(
            tmp.path(),
            &file.name,
            d,
            stem,
            cut_short,
        )?),
        None => None,
    };
    // Swap: old index out of pywb's sight first, so no index ever points into the wrong file.
    let mut old_index = None;
    if let (Some(d), Some(_)) = (index_dir, &new_index) {
        let current = d.join(format!("{stem}.cdxj"));
        if current.exists() {
            let aside = d.join(format!("{stem}.cdxj.pre-optout"));
            fs::rename(&current, &aside).map_err(io_at(&current))?;
            old_index = Some(aside);
        }
    }
    tmp.persist(&file.path)
        .map_err(|e| io_at(&file.path)(e.error))?;
    sync_dir(dir);
    if let (Some(d), Some(part)) = (index_dir, new_index) {
        let done = d.join(format!("{stem}.cdxj"));
        fs::rename(&part, &done).map_err(io_at(&part))?;
        sync_dir(d);
        report.reindexed.push(done);
    }
    if let Some(aside) = old_index {
        fs::remove_file(&aside).map_err(io_at(&aside))?;
    }
    report.rewritten.push(file.name.clone());
    Ok(kept.len() as u64)
}

/// `NAME.warc.gz` / `NAME.warc` → `NAME`, as the WARC writer names indexes.
fn warc_stem(name: &str) -> &str {
    [".warc.gz", ".warc", ".arc.gz", ".arc"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name)
}

/// Copies the kept records byte for byte (their gzip members untouched, so every digest
/// still holds), in file order, joining neighbours into one copy.
fn copy_records(src: &Path, kept: &[&RecInfo], out: &File) -> io::Result<()> {
    let mut input = File::open(src)?;
    let mut out = BufWriter::new(out);
    let mut i = 0;
    while i < kept.len() {
        let start = kept[i].span.offset;
        let mut end = kept[i].span.end;
        while i + 1 < kept.len() && kept[i + 1].span.offset == end {
            i += 1;
            end = kept[i].span.end;
        }
        input.seek(SeekFrom::Start(start))?;
        let copied = io::copy(&mut (&mut input).take(end - start), &mut out)?;
        if copied != end - start {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the WARC changed while it was being rewritten",
            ));
        }
        i += 1;
    }
    out.flush()
}

/// Reads the new file back, inflating every member and checking its CRC: it must hold
/// exactly the kept records, in order, undamaged but for the `cut_short` records the old file
/// held already.
fn verify(path: &Path, kept: &[&RecInfo], cut_short: usize) -> Result<(), ApplyError> {
    let fail = |message: String| ApplyError::Verify {
        path: path.to_path_buf(),
        message,
    };
    let mut scan = Scan::default();
    index::walk(path, &mut scan).map_err(|e| fail(e.to_string()))?;
    if let Some(p) = unexpected(&scan.problems, cut_short) {
        return Err(fail(p.to_string()));
    }
    if scan.records.len() != kept.len() {
        return Err(fail(format!(
            "{} records instead of {}",
            scan.records.len(),
            kept.len()
        )));
    }
    for (got, want) in scan.records.iter().zip(kept) {
        if got.id != want.id || got.record_type != want.record_type {
            return Err(fail(format!("record {:?} out of place", want.id)));
        }
    }
    Ok(())
}

/// The first problem of a rewritten file beyond the `cut_short` records it was to keep.
fn unexpected(problems: &[Problem], cut_short: usize) -> Option<&Problem> {
    let short = problems.iter().filter(|p| p.cut_short).count();
    problems.iter().find(|p| !p.cut_short || short != cut_short)
}

/// Indexes the new file (under its final name) into `DIR/STEM.cdxj.optout-part`.
fn write_index_part(
    new_warc: &Path,
    name: &str,
    dir: &Path,
    stem: &str,
    cut_short: usize,
) -> Result<PathBuf, ApplyError> {
    let (lines, problems) = index::cdxj_for_file(new_warc, name)?;
    if let Some(p) = unexpected(&problems, cut_short) {
        return Err(ApplyError::Verify {
            path: new_warc.to_path_buf(),
            message: p.to_string(),
        });
    }
    let part = dir.join(format!("{stem}.cdxj.optout-part"));
    let write = || -> io::Result<()> {
        let mut out = BufWriter::new(File::create(&part)?);
        for line in &lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    };
    write().map_err(io_at(&part))?;
    Ok(part)
}

/// CDXJ files in `dir` other than the per-WARC ones just rewritten that still name one of
/// the rewritten WARCs (a merged index, say): their offsets no longer hold.
fn stale_indexes(dir: &Path, rewritten: &[String]) -> Result<Vec<PathBuf>, ApplyError> {
    if rewritten.is_empty() {
        return Ok(Vec::new());
    }
    let own: HashSet<String> = rewritten
        .iter()
        .map(|n| format!("{}.cdxj", warc_stem(n)))
        .collect();
    let needles: Vec<String> = rewritten
        .iter()
        .map(|n| format!("\"filename\": {}", crate::cdx::python_json_string(n)))
        .collect();
    let mut stale = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_at(dir))? {
        let path = entry.map_err(io_at(dir))?.path();
        let name = file_name(&path);
        if !name.ends_with(".cdxj") || own.contains(&name) {
            continue;
        }
        let reader = BufReader::new(File::open(&path).map_err(io_at(&path))?);
        for line in reader.split(b'\n') {
            let line = line.map_err(io_at(&path))?;
            let line = String::from_utf8_lossy(&line);
            if needles.iter().any(|n| line.contains(n.as_str())) {
                stale.push(path.clone());
                break;
            }
        }
    }
    stale.sort();
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> Result<OptOutList, crate::scope::optout::OptOutError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("optout.txt");
        fs::write(&p, text).unwrap();
        OptOutList::load(&[p])
    }

    fn rec(kind: &str, id: &str, uri: &str) -> RecInfo {
        RecInfo {
            span: Span {
                offset: 0,
                length: 0,
                end: 0,
            },
            record_type: kind.into(),
            id: Some(id.into()),
            uri: Some(uri.into()),
            concurrent_to: Vec::new(),
            refers_to: None,
            refers_to_uri: None,
        }
    }

    #[test]
    fn removal_follows_exchanges_and_revisits_across_files() {
        let l = list("http://a.test/x\n").unwrap();
        let mut meta = rec("metadata", "<m>", "http://other.test/about-x");
        meta.concurrent_to = vec!["<r>".into()];
        let mut by_id = rec("revisit", "<v1>", "http://b.test/copy");
        by_id.refers_to = Some("<r>".into());
        let mut chained = rec("revisit", "<v2>", "http://c.test/copy");
        chained.refers_to = Some("<v1>".into());
        let mut partner = rec("request", "<q>", "http://elsewhere.test/");
        let mut response = rec("response", "<r>", "http://a.test/x");
        response.concurrent_to = vec!["<q>".into()];
        partner.concurrent_to = Vec::new();
        let files = vec![
            WarcFile {
                path: PathBuf::from("a"),
                name: "a".into(),
                records: vec![
                    rec("warcinfo", "<i>", ""),
                    response,
                    meta,
                    partner,
                    rec("response", "<k>", "http://a.test/y"),
                ],
                cut_short: Vec::new(),
            },
            WarcFile {
                path: PathBuf::from("b"),
                name: "b".into(),
                records: vec![by_id, chained],
                cut_short: Vec::new(),
            },
        ];
        let removal = decide(&l, &files);
        let mut gone: Vec<(usize, usize)> = removal.keys().copied().collect();
        gone.sort();
        assert_eq!(gone, vec![(0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]);
        assert!(matches!(removal[&(0, 1)], Reason::Matched(_)));
        assert_eq!(removal[&(0, 2)], Reason::ConcurrentTo("<r>".into()));
        assert_eq!(removal[&(1, 1)], Reason::RefersTo("<v1>".into()));
    }
}
