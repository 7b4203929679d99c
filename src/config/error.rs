//! A profile's problems: where each one is (file, line, key) and how it is shown.

use std::path::Path;

/// A profile that could not be used, with where the problem is: the first problem found (in
/// file order), and in `more` every other one, so one run shows them all.
#[derive(Debug)]
pub struct ProfileError {
    pub file: String,
    /// 1-based line; 0 when the problem is not on one line (e.g. a missing table).
    pub line: usize,
    /// The key as a dotted path, e.g. `politeness.min_delay`; "-" when there is none.
    pub key: String,
    pub message: String,
    /// The offending line and a caret under the spot, when the problem is on one line.
    pub excerpt: Option<Box<str>>,
    /// The other problems of the same profile.
    pub more: Vec<ProfileError>,
}

impl ProfileError {
    /// A problem with the file itself (missing, unreadable, not text).
    pub(super) fn plain(file: &Path, message: String) -> ProfileError {
        ProfileError {
            file: file.display().to_string(),
            line: 0,
            key: "-".to_string(),
            message,
            excerpt: None,
            more: Vec::new(),
        }
    }

    /// How many problems in all.
    pub fn count(&self) -> usize {
        1 + self.more.len()
    }

    /// Every problem, the first one first.
    pub fn all(&self) -> impl Iterator<Item = &ProfileError> {
        std::iter::once(self).chain(self.more.iter())
    }

    /// One problem, without the others.
    fn write_one(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.key.as_str()) {
            (0, "-") => write!(f, "{}: {}", self.file, self.message)?,
            (0, key) => write!(f, "{}: {key}: {}", self.file, self.message)?,
            (line, "-") => write!(f, "{}:{line}: {}", self.file, self.message)?,
            (line, key) => write!(f, "{}:{line}: {key}: {}", self.file, self.message)?,
        }
        if let Some(excerpt) = &self.excerpt {
            write!(f, "\n{excerpt}")?;
        }
        Ok(())
    }

    /// Sorts problems by line and makes the first one the head of the list.
    pub(super) fn from_many(errors: Vec<ProfileError>) -> Option<ProfileError> {
        // A problem may carry others (a table checked as a whole): one flat list.
        let mut errors: Vec<ProfileError> = errors
            .into_iter()
            .flat_map(|mut e| {
                let more = std::mem::take(&mut e.more);
                std::iter::once(e).chain(more)
            })
            .collect();
        errors.sort_by_key(|e| (e.line == 0, e.line));
        let mut it = errors.into_iter();
        let mut first = it.next()?;
        first.more.extend(it);
        Some(first)
    }
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_one(f)?;
        for e in &self.more {
            writeln!(f)?;
            e.write_one(f)?;
        }
        Ok(())
    }
}

impl std::error::Error for ProfileError {}
