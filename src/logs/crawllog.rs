//! crawl.log in Heritrix's 13-field format, one line per URL outcome.
//!
//! Tools written for Heritrix logs (and people used to them) read these lines, so the field
//! order, the padding and the negative status codes follow Heritrix's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// Heritrix's status codes for URLs that got no HTTP answer.
pub(crate) mod status {
    pub(crate) const DNS_FAILED: i32 = -1;
    /// Not a URL the crawler can fetch (an empty or unparsable redirect `Location`).
    pub(crate) const UNFETCHABLE_URI: i32 = -7;
    pub(crate) const ROBOTS_PREREQUISITE_FAILED: i32 = -61;
    pub(crate) const OUT_OF_SCOPE: i32 = -5000;
    pub(crate) const BLOCKED_BY_USER: i32 = -5001;
    pub(crate) const BLOCKED_BY_QUOTA: i32 = -5003;
    pub(crate) const ROBOTS_PRECLUDED: i32 = -9998;
}

/// One crawl.log line.
#[derive(Debug, Default)]
pub(crate) struct Entry<'a> {
    pub status: i32,
    /// Response body bytes (after transfer decoding), if fetched.
    pub size: Option<u64>,
    pub uri: &'a str,
    /// The parsed URL whose text `uri` is, when it is one (saves parsing `uri` again).
    pub url: Option<&'a url::Url>,
    /// Hop letters from the seed; "" for a seed (written "-").
    pub path: &'a str,
    pub via: Option<&'a str>,
    pub mime: Option<&'a str>,
    pub thread: usize,
    /// Request start and duration, if fetched.
    pub fetch: Option<(DateTime<Utc>, Duration)>,
    pub digest: Option<&'a str>,
    pub annotations: Vec<String>,
    /// Extra JSON object (Heritrix's last field), e.g. an error message.
    pub extra: Option<serde_json::Value>,
}

/// An open crawl.log.
pub(crate) struct CrawlLog {
    out: BufWriter<File>,
    /// The line being written, kept between lines (no allocation per line).
    line: String,
}

impl CrawlLog {
    /// Opens (appending to) `path`. A last line torn by a crash is ended first, so the next
    /// line starts on a line of its own.
    pub(crate) fn open(path: &Path) -> io::Result<CrawlLog> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        if ends_unfinished(&mut file)? {
            file.write_all(b"\n")?;
        }
        Ok(CrawlLog {
            out: BufWriter::new(file),
            line: String::new(),
        })
    }

    /// Writes one line and hands it to the OS, so a crash loses at most the line being written.
    pub(crate) fn write(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        self.line.clear();
        write_line(&mut self.line, Utc::now(), entry);
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())?;
        self.out.flush()
    }
}

/// True when the file is not empty and its last byte is not a newline.
fn ends_unfinished(file: &mut File) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// The fields of a crawl.log line read back: those the reports count, and where the record is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub status: i32,
    pub size: Option<u64>,
    pub uri: String,
    pub mime: Option<String>,
    /// The payload digest (`sha1:…`), if the line has one.
    pub digest: Option<String>,
    pub annotations: Vec<String>,
    /// The extra JSON, as written (e.g. the WARC file and offset of the URL's record).
    pub extra: String,
}

/// Hands `each` every line of the crawl.log at `path`, read as UTF-8 (lossy) with blank
/// lines skipped: what a resume reads back. A crawl.log that does not exist yet has no lines.
pub(crate) fn read_lines(path: &Path, mut each: impl FnMut(&str)) -> io::Result<()> {
    use std::io::BufRead;
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for line in io::BufReader::new(file).split(b'\n') {
        let line = line?;
        let text = String::from_utf8_lossy(&line);
        if !text.trim().is_empty() {
            each(&text);
        }
    }
    Ok(())
}

/// Reads back a line written by [`format_line`]; None when it is not one (a torn line).
pub(crate) fn parse_line(line: &str) -> Option<Parsed> {
    // The first twelve fields hold no spaces; the thirteenth (JSON) may.
    let mut rest = line;
    let _time = field(&mut rest)?;
    let status = field(&mut rest)?.parse().ok()?;
    let size = match field(&mut rest)? {
        "-" => None,
        n => Some(n.parse().ok()?),
    };
    let uri = field(&mut rest)?.to_string();
    let _path = field(&mut rest)?;
    let _via = field(&mut rest)?;
    let mime = Some(field(&mut rest)?)
        .filter(|m| *m != "-")
        .map(str::to_string);
    let _thread = field(&mut rest)?;
    let _fetch = field(&mut rest)?;
    let digest = Some(field(&mut rest)?)
        .filter(|d| *d != "-")
        .map(str::to_string);
    let _source = field(&mut rest)?;
    let annotations = match field(&mut rest)? {
        "-" => Vec::new(),
        a => a.split(',').map(str::to_string).collect(),
    };
    // The extra JSON: a line without it was cut short.
    let extra = rest.trim();
    if extra.is_empty() {
        return None;
    }
    Some(Parsed {
        status,
        size,
        uri,
        mime,
        digest,
        annotations,
        extra: extra.to_string(),
    })
}

/// The next space-separated field of `rest`, which moves past it.
fn field<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let s = rest.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let (f, tail) = s.split_at(end);
    *rest = tail;
    (!f.is_empty()).then_some(f)
}

/// An annotation as crawl.log writes it (no spaces), so counts made while writing and counts
/// read back agree.
pub(crate) fn clean_annotation(a: &str) -> String {
    a.replace(' ', "_")
}

fn dash(s: Option<&str>) -> &str {
    match s {
        Some(v) if !v.is_empty() => v,
        _ => "-",
    }
}

/// Formats a line at log time `now` (without the newline). Spaces inside a field would break
/// the format, so they are percent-escaped in URIs and replaced elsewhere.
#[cfg(test)]
pub(crate) fn format_line(now: DateTime<Utc>, e: &Entry<'_>) -> String {
    let mut line = String::new();
    write_line(&mut line, now, e);
    line
}

/// [`format_line`] appended to `out`: the fields are written in place, with no string made per
/// field and no time format parsed per line (crawl.log writing was 4% of the crawler's CPU).
pub(crate) fn write_line(out: &mut String, now: DateTime<Utc>, e: &Entry<'_>) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    push_log_time(out, now);
    let _ = write!(out, " {:>5} ", e.status);
    match e.size {
        Some(size) => {
            let _ = write!(out, "{size:>10}");
        }
        None => out.push_str("         -"),
    }
    out.push(' ');
    push_replacing(out, e.uri, ' ', "%20");
    out.push(' ');
    out.push_str(dash(Some(e.path)));
    out.push(' ');
    push_replacing(out, dash(e.via), ' ', "%20");
    out.push(' ');
    push_replacing(out, dash(e.mime), ' ', "");
    let _ = write!(out, " #{:03} ", e.thread);
    match e.fetch {
        Some((start, d)) => {
            push_compact_time(out, start);
            let _ = write!(out, "+{}", d.as_millis());
        }
        None => out.push('-'),
    }
    out.push(' ');
    out.push_str(dash(e.digest));
    out.push_str(" - ");
    if e.annotations.is_empty() {
        out.push('-');
    }
    for (i, a) in e.annotations.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_replacing(out, a, ' ', "_");
    }
    out.push(' ');
    match &e.extra {
        Some(v) => {
            let _ = write!(out, "{v}");
        }
        None => out.push_str("{}"),
    }
}

/// `s` with every `from` written as `to`.
fn push_replacing(out: &mut String, s: &str, from: char, to: &str) {
    let mut pieces = s.split(from);
    if let Some(first) = pieces.next() {
        out.push_str(first);
    }
    for piece in pieces {
        out.push_str(to);
        out.push_str(piece);
    }
}

/// How a time is written: what follows each field (year, month, day, hour, minute, second,
/// milliseconds), and the chrono format that says the same, used for years of other than four
/// digits.
struct TimeLayout {
    after: [&'static str; 7],
    chrono: &'static str,
}

/// `2026-11-30T23:38:13.042Z`: the log time.
const LOG_TIME: TimeLayout = TimeLayout {
    after: ["-", "-", "T", ":", ":", ".", "Z"],
    chrono: "%Y-%m-%dT%H:%M:%S%.3fZ",
};

/// `20261130233813042`: the fetch's start.
const COMPACT_TIME: TimeLayout = TimeLayout {
    after: [""; 7],
    chrono: "%Y%m%d%H%M%S%3f",
};

fn push_log_time(out: &mut String, t: DateTime<Utc>) {
    push_time(out, t, &LOG_TIME);
}

fn push_compact_time(out: &mut String, t: DateTime<Utc>) {
    push_time(out, t, &COMPACT_TIME);
}

/// `t` as `layout` says, written by hand: no format string parsed per line.
fn push_time(out: &mut String, t: DateTime<Utc>, layout: &TimeLayout) {
    let Some(date) = four_digit_year(t) else {
        out.push_str(&t.format(layout.chrono).to_string());
        return;
    };
    let fields = [
        (date.year, 4),
        (date.month, 2),
        (date.day, 2),
        (date.hour, 2),
        (date.minute, 2),
        (date.second, 2),
        (date.millis, 3),
    ];
    for ((value, width), after) in fields.into_iter().zip(layout.after) {
        push_digits(out, value, width);
        out.push_str(after);
    }
}

/// A time's fields as chrono prints them: a leap second is second 60, milliseconds are cut
/// (not rounded).
struct Fields {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
}

/// The fields of `t`, when its year has four digits (other years go through chrono, which
/// pads and signs them its own way).
fn four_digit_year(t: DateTime<Utc>) -> Option<Fields> {
    use chrono::{Datelike as _, Timelike as _};
    let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999)?;
    let nanos = t.nanosecond();
    Some(Fields {
        year,
        month: t.month(),
        day: t.day(),
        hour: t.hour(),
        minute: t.minute(),
        second: t.second() + nanos / 1_000_000_000,
        millis: nanos / 1_000_000 % 1000,
    })
}

/// `value` in decimal, zero-padded to `width` digits.
fn push_digits(out: &mut String, value: u32, width: u32) {
    let mut digits = [b'0'; 10];
    let mut v = value;
    let mut len = 0;
    while v > 0 || len == 0 {
        digits[len] = b'0' + (v % 10) as u8;
        v /= 10;
        len += 1;
    }
    for _ in len..width as usize {
        out.push('0');
    }
    for &d in digits[..len].iter().rev() {
        out.push(char::from(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn thirteen_fields_in_heritrix_layout() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 23, 38, 13).unwrap();
        let e = Entry {
            status: 200,
            size: Some(1234),
            uri: "http://h/p",
            path: "L",
            via: Some("http://h/"),
            mime: Some("text/html"),
            thread: 3,
            fetch: Some((now, Duration::from_millis(23))),
            digest: Some("sha1:ABC"),
            ..Entry::default()
        };
        let line = format_line(now, &e);
        assert_eq!(
            line,
            "2026-11-30T23:38:13.000Z   200       1234 http://h/p L http://h/ text/html #003 \
             20261130233813000+23 sha1:ABC - - {}"
        );
        assert_eq!(line.split(' ').filter(|f| !f.is_empty()).count(), 13);
    }

    #[test]
    fn lines_read_back_as_written() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 23, 38, 13).unwrap();
        let e = Entry {
            status: -5000,
            uri: "http://h/a b",
            path: "LL",
            annotations: vec!["trap:calendar".into(), "x y".into()],
            extra: Some(serde_json::json!({"trap": "year 3000 is far"})),
            ..Entry::default()
        };
        let p = parse_line(&format_line(now, &e)).unwrap();
        assert_eq!(p.status, -5000);
        assert_eq!(p.size, None);
        assert_eq!(p.uri, "http://h/a%20b");
        assert_eq!(p.annotations, ["trap:calendar", "x_y"]);
        assert_eq!(p.extra, r#"{"trap":"year 3000 is far"}"#);
        assert_eq!(p.digest, None);
        let full = format_line(
            now,
            &Entry {
                status: 200,
                size: Some(7),
                mime: Some("text/html"),
                uri: "http://h/",
                ..Entry::default()
            },
        );
        let p = parse_line(&full).unwrap();
        assert_eq!((p.size, p.mime.as_deref()), (Some(7), Some("text/html")));
        assert_eq!(parse_line(&full[..40]), None, "a torn line is not a line");
    }

    /// The line as the first version wrote it, with `format!` and chrono's format strings.
    fn reference_line(now: DateTime<Utc>, e: &Entry<'_>) -> String {
        let size = e.size.map_or_else(|| "-".to_string(), |s| s.to_string());
        let fetch = e.fetch.map_or_else(
            || "-".to_string(),
            |(start, d)| format!("{}+{}", start.format("%Y%m%d%H%M%S%3f"), d.as_millis()),
        );
        let annotations = if e.annotations.is_empty() {
            "-".to_string()
        } else {
            e.annotations.join(",").replace(' ', "_")
        };
        let extra = e
            .extra
            .as_ref()
            .map_or_else(|| "{}".to_string(), |v| v.to_string());
        format!(
            "{} {:>5} {:>10} {} {} {} {} #{:03} {} {} - {} {}",
            now.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            e.status,
            size,
            e.uri.replace(' ', "%20"),
            dash(Some(e.path)),
            dash(e.via).replace(' ', "%20"),
            dash(e.mime).replace(' ', ""),
            e.thread,
            fetch,
            dash(e.digest),
            annotations,
            extra,
        )
    }

    #[test]
    fn lines_are_written_as_format_strings_would() {
        use chrono::{NaiveDate, NaiveDateTime};
        let at = |y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nano: u32| {
            let date = NaiveDate::from_ymd_opt(y, mo, d).unwrap();
            let time = chrono::NaiveTime::from_hms_nano_opt(h, mi, s, nano).unwrap();
            NaiveDateTime::new(date, time).and_utc()
        };
        let times = [
            at(2026, 12, 2, 17, 5, 9, 42_999_999),
            at(2026, 1, 1, 0, 0, 0, 0),
            at(1999, 12, 31, 23, 59, 59, 999_999_999),
            at(2016, 12, 31, 23, 59, 59, 1_500_000_000), // a leap second
            at(999, 3, 4, 5, 6, 7, 8_000_000),
            at(12345, 6, 7, 8, 9, 10, 11),
            at(-44, 3, 15, 12, 0, 0, 0),
        ];
        let annotations = [
            vec![],
            vec!["a b".to_string(), "c".into()],
            vec![String::new()],
        ];
        for (i, now) in times.iter().enumerate() {
            let e = Entry {
                status: [200, -5000, 404, 1][i % 4],
                size: [None, Some(0), Some(12_345_678_901)][i % 3],
                uri: ["http://h/a b", "http://h/", ""][i % 3],
                url: None,
                path: ["", "LLE", "R"][i % 3],
                via: [None, Some("http://h/x y"), Some("")][i % 3],
                mime: [None, Some("text/html; charset=utf-8"), Some("")][i % 3],
                thread: [0, 7, 1234][i % 3],
                fetch: (i % 2 == 0).then_some((*now, Duration::from_millis(1234 * i as u64))),
                digest: [None, Some("sha1:ABC")][i % 2],
                annotations: annotations[i % 3].clone(),
                extra: (i % 2 == 1).then(|| serde_json::json!({"error": "a \"b\"", "n": i})),
            };
            assert_eq!(format_line(*now, &e), reference_line(*now, &e), "time {i}");
        }
    }

    #[test]
    fn a_torn_last_line_is_ended_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crawl.log");
        std::fs::write(&path, "2026-11-30T23:38:13.000Z   200  12 http://h/").unwrap();
        let mut log = CrawlLog::open(&path).unwrap();
        log.write(&Entry {
            status: 404,
            uri: "http://h/x",
            ..Entry::default()
        })
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(parse_line(text.lines().nth(1).unwrap()).is_some());
    }

    #[test]
    fn unfetched_url_has_dashes_and_negative_status() {
        let now = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let e = Entry {
            status: status::ROBOTS_PRECLUDED,
            uri: "http://h/private/x y",
            path: "LL",
            via: Some("http://h/"),
            annotations: vec!["robots disallowed".into()],
            extra: Some(serde_json::json!({"error": "a b"})),
            ..Entry::default()
        };
        let line = format_line(now, &e);
        assert!(line.contains(
            "-9998          - http://h/private/x%20y LL http://h/ - #000 - - - robots_disallowed"
        ));
        assert!(line.ends_with(r#"{"error":"a b"}"#));
    }
}
