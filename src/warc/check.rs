//! Settings and header values checked before a byte is written, so a bad value is a clear
//! error and never a broken record.

use chrono::DateTime;

use super::http::http_head;
use super::{Revisit, WarcError};

/// The prefix becomes the start of file names: no separators, no dots tricks, not empty.
pub(super) fn check_prefix(prefix: &str) -> Result<(), WarcError> {
    let ok = !prefix.is_empty()
        && !prefix.starts_with('.')
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(WarcError::BadSetting(format!(
            "prefix {prefix:?} must be letters, digits, '-', '_' or '.'"
        )))
    }
}

/// warcinfo field names must be tokens; values lose line breaks (a multi-line description
/// from the profile must not break the record).
pub(super) fn clean_info(info: &[(String, String)]) -> Result<Vec<(String, String)>, WarcError> {
    info.iter()
        .map(|(name, value)| {
            let name_ok =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_graphic() && c != ':');
            if !name_ok {
                return Err(WarcError::BadSetting(format!(
                    "warcinfo field name {name:?} must be printable ASCII without ':' or spaces"
                )));
            }
            let value: String = value
                .split(|c: char| c.is_control())
                .filter(|part| !part.trim().is_empty())
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            Ok((name.clone(), value))
        })
        .collect()
}

/// WARC-Target-URI: one line, no spaces or control characters.
pub(super) fn check_uri(uri: &str) -> Result<(), WarcError> {
    if uri.is_empty() || uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(WarcError::BadHeaderValue {
            field: "WARC-Target-URI",
            value: uri.to_string(),
        });
    }
    Ok(())
}

/// A bare token such as `length` or `time`.
pub(super) fn check_token(field: &'static str, value: &str) -> Result<(), WarcError> {
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(WarcError::BadHeaderValue {
            field,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// `algorithm:value`, printable ASCII.
pub(super) fn check_digest(field: &'static str, value: &str) -> Result<(), WarcError> {
    let ok = value
        .split_once(':')
        .is_some_and(|(a, v)| !a.is_empty() && !v.is_empty())
        && value.chars().all(|c| c.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(WarcError::BadHeaderValue {
            field,
            value: value.to_string(),
        })
    }
}

/// Everything a revisit puts into headers, checked before a byte is written. The HTTP head
/// must end in its blank line: anything else means the caller passed the wrong slice (a whole
/// response would defeat the point of a revisit; a cut head would not parse on replay).
pub(super) fn check_revisit(rv: &Revisit<'_>) -> Result<(), WarcError> {
    check_revisit_fields(rv)?;
    if http_head(rv.http_head) != Some(rv.http_head) {
        return Err(WarcError::BadHeaderValue {
            field: "revisit HTTP head",
            value: String::from_utf8_lossy(&rv.http_head[..rv.http_head.len().min(200)])
                .into_owned(),
        });
    }
    Ok(())
}

/// The header fields of a revisit (not its block: a server-not-modified revisit has none).
pub(super) fn check_revisit_fields(rv: &Revisit<'_>) -> Result<(), WarcError> {
    check_uri(rv.target_uri)?;
    check_digest("WARC-Payload-Digest", &rv.payload_digest)?;
    check_uri(rv.refers_to_uri).map_err(|_| WarcError::BadHeaderValue {
        field: "WARC-Refers-To-Target-URI",
        value: rv.refers_to_uri.to_string(),
    })?;
    if DateTime::parse_from_rfc3339(rv.refers_to_date).is_err() || !rv.refers_to_date.ends_with('Z')
    {
        return Err(WarcError::BadHeaderValue {
            field: "WARC-Refers-To-Date",
            value: rv.refers_to_date.to_string(),
        });
    }
    if let Some(id) = rv.refers_to_record_id {
        let ok = id.len() > 2
            && id.starts_with('<')
            && id.ends_with('>')
            && id.chars().all(|c| c.is_ascii_graphic());
        if !ok {
            return Err(WarcError::BadHeaderValue {
                field: "WARC-Refers-To",
                value: id.to_string(),
            });
        }
    }
    Ok(())
}
