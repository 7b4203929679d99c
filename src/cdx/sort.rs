//! The external sorter of CDXJ lines: any number of lines, sorted and de-duplicated in bounded
//! memory (sorted runs spill to temporary files and are merged). The WARC writer's index, `archiver
//! index` and the opt-out rewrite all sort through it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};

use crate::cdx;

/// Sorts lines of any total size: sorted runs spill to temporary files and are merged;
/// duplicate lines are written once (as cdxj-indexer's sorting writer does).
pub struct LineSorter {
    lines: Vec<String>,
    bytes: usize,
    limit: usize,
    runs: Vec<File>,
}

impl LineSorter {
    pub fn new(limit: usize) -> LineSorter {
        LineSorter {
            lines: Vec::new(),
            bytes: 0,
            limit,
            runs: Vec::new(),
        }
    }

    /// Adds one line (spilling a sorted run to a temporary file past the memory limit).
    pub fn push(&mut self, line: String) -> io::Result<()> {
        self.bytes += line.len() + std::mem::size_of::<String>();
        self.lines.push(line);
        if self.bytes >= self.limit {
            self.spill()?;
        }
        Ok(())
    }

    /// The lines added so far, when none has been spilled to disk yet.
    pub fn in_memory(&self) -> Option<&[String]> {
        self.runs.is_empty().then_some(&self.lines[..])
    }

    pub fn extend(&mut self, lines: Vec<String>) -> io::Result<()> {
        for line in lines {
            self.bytes += line.len() + std::mem::size_of::<String>();
            self.lines.push(line);
        }
        if self.bytes >= self.limit {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the sorted run held in memory to a temporary file.
    fn spill(&mut self) -> io::Result<()> {
        cdx::sort_lines(&mut self.lines);
        let mut file = BufWriter::new(tempfile::tempfile()?);
        for line in self.lines.drain(..) {
            file.write_all(line.as_bytes())?;
            file.write_all(b"\n")?;
        }
        let mut file = file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        self.runs.push(file);
        self.bytes = 0;
        Ok(())
    }

    /// Writes every line, sorted, once each; returns how many were written.
    pub fn finish(mut self, out: &mut dyn Write) -> io::Result<u64> {
        cdx::sort_lines(&mut self.lines);
        if self.runs.is_empty() {
            let mut written = 0;
            let mut last: Option<&String> = None;
            for line in &self.lines {
                if last != Some(line) {
                    out.write_all(line.as_bytes())?;
                    out.write_all(b"\n")?;
                    written += 1;
                }
                last = Some(line);
            }
            return Ok(written);
        }
        if !self.lines.is_empty() {
            self.spill()?;
        }
        merge_runs(self.runs, out)
    }
}

/// k-way merge of sorted run files.
fn merge_runs(runs: Vec<File>, out: &mut dyn Write) -> io::Result<u64> {
    let mut readers: Vec<BufReader<File>> = runs.into_iter().map(BufReader::new).collect();
    let mut heap = BinaryHeap::new();
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(line) = next_line(r)? {
            heap.push(Reverse((line, i)));
        }
    }
    let mut last: Option<String> = None;
    let mut written = 0;
    while let Some(Reverse((line, i))) = heap.pop() {
        if let Some(next) = next_line(&mut readers[i])? {
            heap.push(Reverse((next, i)));
        }
        if last.as_ref() != Some(&line) {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            written += 1;
            last = Some(line);
        }
    }
    Ok(written)
}

/// The next line without its newline.
fn next_line(r: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    if line.ends_with('\n') {
        line.pop();
    }
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorter_spills_merges_and_dedups() {
        let mut s = LineSorter::new(100);
        for chunk in [["b 1", "a 1", "c 1"], ["a 1", "d 1", "b 0"]] {
            s.extend(chunk.iter().map(|l| l.to_string()).collect())
                .unwrap();
        }
        assert!(!s.runs.is_empty());
        let mut out = Vec::new();
        assert_eq!(s.finish(&mut out).unwrap(), 5);
        assert_eq!(String::from_utf8(out).unwrap(), "a 1\nb 0\nb 1\nc 1\nd 1\n");
    }
}
