//! Where a crawl's CDXJ indexes are, given the way a user names a crawl: its output folder
//! (`OUT`, whose `indexes/` holds them), that `indexes/` folder itself (or any folder of `.cdxj`
//! files), or a `.cdxj` file. The one resolver for everything that reads an earlier crawl's
//! index: `[dedup] previous` (checked when the profile is read, used when the crawl starts) and
//! `archiver diff`.
//!
//! A place that holds no index is an error naming it: a crawl folder given where its
//! `indexes/` was meant once found nothing and deduplicated nothing, silently.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Why a place names no index.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    #[error(
        "{} holds no CDXJ index (give a crawl's output folder, its indexes/ folder, or .cdxj files)",
        .0.display()
    )]
    NoIndex(PathBuf),
    #[error("cannot read {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// The CDXJ files `path` names, in name order: the file itself; the `*.cdxj` of `path/indexes/`
/// when that folder exists (a crawl's output folder); else the `*.cdxj` of `path`. Only that
/// one folder is read, not its sub-folders (an output folder's `warcs/` may be huge).
pub fn crawl_indexes(path: &Path) -> Result<Vec<PathBuf>, LocateError> {
    let meta = fs::metadata(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => LocateError::Missing(path.to_path_buf()),
        _ => LocateError::Io {
            path: path.to_path_buf(),
            source,
        },
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let own = path.join("indexes");
    let dir = if own.is_dir() {
        own
    } else {
        path.to_path_buf()
    };
    let files = cdxj_in(&dir)?;
    if files.is_empty() {
        return Err(LocateError::NoIndex(path.to_path_buf()));
    }
    Ok(files)
}

/// The `*.cdxj` files directly in `dir`, sorted.
fn cdxj_in(dir: &Path) -> Result<Vec<PathBuf>, LocateError> {
    let io_err = |source| LocateError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let p = entry.map_err(io_err)?.path();
        if p.extension().is_some_and(|e| e == "cdxj") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crawl_folder_its_indexes_and_files_name_the_same_index() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("crawl-2026-11");
        let indexes = out.join("indexes");
        fs::create_dir_all(&indexes).unwrap();
        fs::create_dir_all(out.join("warcs")).unwrap();
        for name in ["b.cdxj", "a.cdxj", "notes.txt"] {
            fs::write(indexes.join(name), "").unwrap();
        }
        let want = vec![indexes.join("a.cdxj"), indexes.join("b.cdxj")];
        assert_eq!(crawl_indexes(&out).unwrap(), want);
        assert_eq!(crawl_indexes(&indexes).unwrap(), want);
        let one = indexes.join("b.cdxj");
        assert_eq!(crawl_indexes(&one).unwrap(), vec![one.clone()]);
    }

    #[test]
    fn a_place_without_an_index_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let empty_crawl = dir.path().join("crawl");
        fs::create_dir_all(empty_crawl.join("indexes")).unwrap();
        fs::write(empty_crawl.join("x.cdxj"), "").unwrap();
        let err = crawl_indexes(&empty_crawl).unwrap_err();
        assert!(matches!(err, LocateError::NoIndex(_)), "{err}");
        assert!(
            err.to_string().contains("crawl holds no CDXJ index"),
            "{err}"
        );
        let missing = dir.path().join("nowhere");
        let err = crawl_indexes(&missing).unwrap_err();
        assert!(err.to_string().contains("nowhere does not exist"), "{err}");
    }
}
