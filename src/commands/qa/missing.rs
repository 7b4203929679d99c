//! The patch list: what qa found missing that a patch crawl may fetch, one URL a line with
//! the page that wanted it. `qa --missing FILE` writes it, `crawl --patch FILE` reads it.
//!
//! ```text
//! # archiver qa: missing URLs a patch crawl may fetch (URL, the page that wanted it, its hop path)
//! http://example.org/api/items.json http://example.org/shop/ L
//! ```

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::Path;

use url::Url;

use super::browse::Replayed;

/// One line of the list: a URL to fetch as an embed of `page`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchLine {
    pub url: Url,
    /// The page that asked for it: the embed's via.
    pub page: Url,
    /// The page's hop path from its seed ("" for a seed); the embed's is this and `E`.
    pub page_path: String,
}

/// The patchable missing URLs of `pages`, each once (with the first page that wanted it).
pub(super) fn patch_lines(pages: &[Replayed]) -> Vec<PatchLine> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for p in pages {
        let Ok(page) = Url::parse(&p.url) else {
            continue;
        };
        for a in &p.asked {
            let patchable = a.missing.is_some_and(|r| r.patchable());
            let Ok(url) = Url::parse(&a.url) else {
                continue;
            };
            if patchable && seen.insert(a.url.clone()) {
                out.push(PatchLine {
                    url,
                    page: page.clone(),
                    page_path: if p.path == "-" {
                        String::new()
                    } else {
                        p.path.clone()
                    },
                });
            }
        }
    }
    out
}

/// Writes the list.
pub(super) fn write(out: &mut dyn Write, lines: &[PatchLine]) -> io::Result<()> {
    writeln!(
        out,
        "# archiver qa: missing URLs a patch crawl may fetch (URL, the page that wanted it, \
         its hop path)"
    )?;
    for l in lines {
        let path = if l.page_path.is_empty() {
            "-"
        } else {
            &l.page_path
        };
        writeln!(out, "{} {} {path}", l.url, l.page)?;
    }
    Ok(())
}

/// Why a patch list cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error(transparent)]
    Io(#[from] crate::commands::IoAt),
    #[error("{file}:{line}: {why}")]
    Line {
        file: String,
        line: usize,
        why: String,
    },
}

/// Reads a patch list: blank lines and `#` comments skipped; each line `URL [PAGE [PATH]]` (a
/// URL alone is taken as an embed of its site's home page).
pub fn read(path: &Path) -> Result<Vec<PatchLine>, PatchError> {
    let text = std::fs::read_to_string(path).map_err(crate::commands::io_at(path))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: String| PatchError::Line {
            file: path.display().to_string(),
            line: n + 1,
            why,
        };
        let mut fields = line.split_whitespace();
        let parse = |u: &str| {
            Url::parse(u)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| bad(format!("{u:?} is not an http(s) URL")))
        };
        let url = parse(fields.next().unwrap_or_default())?;
        // A URL alone (a list written by hand) is an embed of its site's home page.
        let page = match fields.next() {
            Some(p) => parse(p)?,
            None => url.join("/").map_err(|e| bad(format!("{url}: {e}")))?,
        };
        let page_path = match fields.next() {
            None | Some("-") => String::new(),
            Some(p) if p.chars().all(|c| c.is_ascii_uppercase()) => p.to_string(),
            Some(p) => return Err(bad(format!("{p:?} is not a hop path (letters like LLE)"))),
        };
        out.push(PatchLine {
            url,
            page,
            page_path,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_list_reads_back_and_a_bad_line_is_named() {
        let lines = vec![
            PatchLine {
                url: Url::parse("http://h/a.json").unwrap(),
                page: Url::parse("http://h/").unwrap(),
                page_path: String::new(),
            },
            PatchLine {
                url: Url::parse("http://h/b.png").unwrap(),
                page: Url::parse("http://h/p").unwrap(),
                page_path: "L".into(),
            },
        ];
        let mut text = Vec::new();
        write(&mut text, &lines).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.txt");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read(&path).unwrap(), lines);
        std::fs::write(&path, "# x\n\nhttp://h/a/b.png\nhttp://h/c http://h/ l\n").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(
            e.ends_with("missing.txt:4: \"l\" is not a hop path (letters like LLE)"),
            "{e}"
        );
        std::fs::write(&path, "http://h/a/b.png\n").unwrap();
        let alone = read(&path).unwrap();
        assert_eq!(alone[0].page.as_str(), "http://h/");
        assert_eq!(alone[0].page_path, "");
        std::fs::write(&path, "ftp://h/a http://h/\n").unwrap();
        assert!(read(&path).is_err());
    }
}
