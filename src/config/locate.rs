//! Pointing at the spot of a problem: the line, the key and an excerpt with a caret.

use std::path::Path;

use super::ProfileError;

/// Validation with access to the source text, so errors can point at lines.
pub(super) struct Checker<'a> {
    pub(super) path: &'a Path,
    pub(super) source: &'a str,
}

impl Checker<'_> {
    pub(super) fn error(&self, key: &str, message: impl Into<String>) -> ProfileError {
        self.error_at(key, true, message.into())
    }

    /// An error about a key, pointing at its value (`in_value`) or at the key itself.
    pub(super) fn error_at(&self, key: &str, in_value: bool, message: String) -> ProfileError {
        let span = self.span_of(key, in_value);
        ProfileError {
            file: self.path.display().to_string(),
            line: span.as_ref().map_or(0, |s| self.line_at(s.start)),
            key: key.to_string(),
            message,
            excerpt: span.map(|s| self.excerpt(s).into()),
            more: Vec::new(),
        }
    }

    /// A TOML syntax error: the line and column toml_edit found, shown with a caret.
    pub(super) fn syntax_error(&self, e: &toml_edit::TomlError) -> ProfileError {
        let span = e.span();
        ProfileError {
            file: self.path.display().to_string(),
            line: span.as_ref().map_or(0, |s| self.line_at(s.start)),
            key: "-".to_string(),
            message: format!("TOML syntax error: {}", e.message().trim()),
            excerpt: span.map(|s| self.excerpt(s).into()),
            more: Vec::new(),
        }
    }

    /// The line holding `span`, numbered, with carets under the span (one line's worth).
    fn excerpt(&self, span: std::ops::Range<usize>) -> String {
        let start = span.start.min(self.source.len());
        let line_start = self.source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.source[line_start..]
            .find('\n')
            .map_or(self.source.len(), |i| line_start + i);
        // A line may hold a password (`database = "postgresql://u:secret@…"`): never shown;
        // the caret is placed on the masked line.
        let masked = |s: &str| crate::frontier::mask_secrets(s);
        let text = masked(self.source[line_start..line_end].trim_end_matches('\r'));
        let column = masked(&self.source[line_start..start]).chars().count();
        let end = span.end.clamp(start, line_end.max(start));
        let width = masked(&self.source[line_start..end])
            .chars()
            .count()
            .saturating_sub(column)
            .max(1);
        let number = self.line_at(start).to_string();
        let pad = " ".repeat(number.len());
        format!(
            "{pad} |\n{number} | {text}\n{pad} | {}{}",
            " ".repeat(column),
            "^".repeat(width)
        )
    }

    /// The span of a dotted key (or of its value), found with toml_edit's spans.
    fn span_of(&self, key: &str, in_value: bool) -> Option<std::ops::Range<usize>> {
        let doc = self.source.parse::<toml_edit::ImDocument<String>>().ok()?;
        let mut table: &dyn toml_edit::TableLike = doc.as_table();
        let mut span = None;
        // Only the first dot separates table and key: `resolve.site-a.test` names a host.
        for part in key.splitn(2, '.') {
            let Some((k, it)) = table.get_key_value(part) else {
                break;
            };
            let value_span = it.span().or_else(|| it.as_value().and_then(|v| v.span()));
            span = if in_value {
                value_span.or_else(|| k.span())
            } else {
                k.span().or(value_span)
            };
            match it.as_table_like() {
                Some(t) => table = t,
                None => break,
            }
        }
        span
    }

    fn line_at(&self, offset: usize) -> usize {
        let end = offset.min(self.source.len());
        self.source.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// Turns a TOML/serde error into one that names the line and the key.
    pub(super) fn toml_error(&self, e: &toml::de::Error) -> ProfileError {
        let line = e.span().map(|s| self.line_at(s.start)).unwrap_or(0);
        let key = e
            .span()
            .map(|s| self.key_at(s.start))
            .unwrap_or_else(|| "-".to_string());
        let message = e.message().trim().to_string();
        let message = match message.strip_prefix("missing field ") {
            Some(field) => format!("missing required key {field}"),
            None => message.replace("unknown field", "unknown key"),
        };
        let excerpt = e.span().map(|s| self.excerpt(s).into());
        ProfileError {
            file: self.path.display().to_string(),
            line,
            key,
            message,
            excerpt,
            more: Vec::new(),
        }
    }

    /// The dotted key of the line at `offset`: `[table]` header above it + the key on the line.
    fn key_at(&self, offset: usize) -> String {
        let end = offset.min(self.source.len());
        let before = &self.source[..end];
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = self.source[line_start..].lines().next().unwrap_or("");
        let table = before[..line_start]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('[') && !l.starts_with("[["))
            .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            return trimmed
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
        }
        let key = trimmed
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        match (table, key.is_empty()) {
            (Some(t), false) => format!("{t}.{key}"),
            (Some(t), true) => t,
            (None, false) => key.to_string(),
            (None, true) => "-".to_string(),
        }
    }
}
