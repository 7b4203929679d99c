//! Reading a crawl's output folder: WARC records (with the `warc` crate through flate2),
//! CDXJ lines and crawl.log lines.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::{Map, Value};

/// Files of `dir` whose name ends with `suffix`, sorted by name.
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix))
        })
        .collect();
    v.sort();
    v
}

/// Every file name in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}

/// One WARC record.
#[derive(Clone, Debug)]
pub struct WarcRecord {
    /// File name of the WARC holding it.
    pub file: String,
    /// Index of the record in its file.
    pub index: usize,
    /// Offset of its gzip member in the file.
    pub offset: u64,
    pub version: String,
    /// Header names lower-cased.
    pub headers: HashMap<String, String>,
    pub block: Vec<u8>,
}

impl WarcRecord {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(|s| s.as_str())
    }
    pub fn kind(&self) -> &str {
        self.get("warc-type").unwrap_or("")
    }
    pub fn target(&self) -> &str {
        self.get("warc-target-uri").unwrap_or("")
    }
}

/// All records of one `.warc.gz`. The file is walked gzip member by gzip member, and each
/// member must hold exactly one record (so a CDXJ offset lands on a record): the records
/// themselves are parsed with the `warc` crate.
pub fn read_warc(path: &Path) -> Vec<WarcRecord> {
    use std::io::{BufRead, Read, Seek};
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let name = path
        .file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned();
    let mut reader = BufReader::new(file);
    let mut out = Vec::new();
    loop {
        let offset = reader.stream_position().expect("position");
        if reader.fill_buf().expect("read WARC").is_empty() {
            break;
        }
        let mut member = Vec::new();
        flate2::bufread::GzDecoder::new(&mut reader)
            .read_to_end(&mut member)
            .unwrap_or_else(|e| panic!("{name}: bad gzip member at offset {offset}: {e}"));
        let mut in_member = Vec::new();
        for item in warc::WarcReader::new(&member[..]).iter_raw_records() {
            let (header, block) = item
                .unwrap_or_else(|e| panic!("{name}: record at offset {offset} unreadable: {e:?}"));
            in_member.push((header, block));
        }
        assert_eq!(
            in_member.len(),
            1,
            "{name}: the gzip member at offset {offset} holds {} records, not one",
            in_member.len()
        );
        let (header, block) = in_member.pop().expect("one record");
        let headers = lower_case_fields(&header);
        out.push(WarcRecord {
            file: name.clone(),
            index: out.len(),
            offset,
            version: header.version.clone(),
            headers,
            block,
        });
    }
    out
}

/// The same records, read the way the brief describes: the whole file through
/// `flate2::read::MultiGzDecoder` into the `warc` crate's reader. Used to cross-check
/// [`read_warc`] (a reader that ignores member boundaries must see the same records).
pub fn read_warc_stream(path: &Path) -> Vec<(HashMap<String, String>, Vec<u8>)> {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let gz = flate2::read::MultiGzDecoder::new(BufReader::new(file));
    warc::WarcReader::new(BufReader::new(gz))
        .iter_raw_records()
        .map(|item| {
            let (header, block) =
                item.unwrap_or_else(|e| panic!("{}: unreadable record: {e:?}", path.display()));
            (lower_case_fields(&header), block)
        })
        .collect()
}

/// A record's header fields by lower-case name, values trimmed.
fn lower_case_fields(header: &warc::RawRecordHeader) -> HashMap<String, String> {
    header
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_string().to_ascii_lowercase(),
                String::from_utf8_lossy(v).trim().to_string(),
            )
        })
        .collect()
}

/// One CDXJ line: SURT key, 14-digit timestamp, JSON fields.
#[derive(Clone, Debug, PartialEq)]
pub struct CdxjLine {
    pub raw: String,
    pub key: String,
    pub timestamp: String,
    pub fields: Map<String, Value>,
}

impl CdxjLine {
    pub fn parse(raw: &str) -> Result<CdxjLine, String> {
        let mut parts = raw.splitn(3, ' ');
        let key = parts.next().unwrap_or_default().to_string();
        let timestamp = parts.next().ok_or("no timestamp")?.to_string();
        let json = parts.next().ok_or("no JSON block")?;
        let fields = match serde_json::from_str::<Value>(json) {
            Ok(Value::Object(m)) => m,
            other => return Err(format!("JSON block is not an object: {other:?}")),
        };
        Ok(CdxjLine {
            raw: raw.to_string(),
            key,
            timestamp,
            fields,
        })
    }
    pub fn str_field(&self, name: &str) -> String {
        match self.fields.get(name) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    }
}

/// Lines of a text blob, without blank ones.
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.to_string())
        .collect()
}

/// The lines of `out/crawl.log`, each one checked by [`LogLine::parse`].
pub fn crawl_log(out: &Path) -> Vec<LogLine> {
    let text = std::fs::read_to_string(out.join("crawl.log")).expect("crawl.log");
    lines(&text)
        .iter()
        .map(|l| LogLine::parse(l).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// One crawl.log line (Heritrix's 13 fields).
#[derive(Clone, Debug)]
pub struct LogLine {
    pub raw: String,
    pub status: i64,
    pub size: Option<u64>,
    pub uri: String,
    pub hops: String,
    pub via: String,
    pub mime: String,
    pub digest: String,
    pub annotations: Vec<String>,
    pub extra: Value,
}

impl LogLine {
    /// Parses and checks the format of one line: fixed widths of status (5) and size (10), the
    /// shape of every field, and a JSON object as the 13th field (which may hold spaces).
    pub fn parse(raw: &str) -> Result<LogLine, String> {
        let re = Regex::new(
            r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) ( *-?\d+) ( *(?:\d+|-)) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\{.*\})$",
        )
        .expect("regex");
        let c = re
            .captures(raw)
            .ok_or_else(|| format!("not 13 well-formed fields: {raw:?}"))?;
        let status_col = &c[2];
        let size_col = &c[3];
        if status_col.len() < 5 || (status_col.len() > 5 && status_col.starts_with(' ')) {
            return Err(format!("status not right-aligned in width 5: {raw:?}"));
        }
        if size_col.len() < 10 || (size_col.len() > 10 && size_col.starts_with(' ')) {
            return Err(format!("size not right-aligned in width 10: {raw:?}"));
        }
        let hops = c[5].to_string();
        if hops != "-" && !hops.chars().all(|ch| ch.is_ascii_uppercase()) {
            return Err(format!(
                "discovery path {hops:?} is not hop letters: {raw:?}"
            ));
        }
        let thread = c[8].to_string();
        if !Regex::new(r"^#\d{3,}$").expect("regex").is_match(&thread) {
            return Err(format!("thread {thread:?} is not #NNN: {raw:?}"));
        }
        let fetch = c[9].to_string();
        if fetch != "-"
            && !Regex::new(r"^\d{17}\+\d+$")
                .expect("regex")
                .is_match(&fetch)
        {
            return Err(format!(
                "fetch time {fetch:?} is not yyyyMMddHHmmssSSS+ms: {raw:?}"
            ));
        }
        let digest = c[10].to_string();
        if digest != "-"
            && !Regex::new(r"^sha1:[A-Z2-7]{32}$")
                .expect("regex")
                .is_match(&digest)
        {
            return Err(format!("digest {digest:?} is not sha1:BASE32: {raw:?}"));
        }
        let extra: Value = serde_json::from_str(&c[13])
            .map_err(|e| format!("13th field is not JSON ({e}): {raw:?}"))?;
        if !extra.is_object() {
            return Err(format!("13th field is not a JSON object: {raw:?}"));
        }
        let annotations = if &c[12] == "-" {
            Vec::new()
        } else {
            c[12].split(',').map(|s| s.to_string()).collect()
        };
        Ok(LogLine {
            raw: raw.to_string(),
            status: c[2]
                .trim()
                .parse()
                .map_err(|_| format!("status: {raw:?}"))?,
            size: c[3].trim().parse().ok(),
            uri: c[4].to_string(),
            hops,
            via: c[6].to_string(),
            mime: c[7].to_string(),
            digest,
            annotations,
            extra,
        })
    }

    pub fn has_annotation(&self, a: &str) -> bool {
        self.annotations.iter().any(|x| x == a)
    }
}
