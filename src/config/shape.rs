//! The shape of a profile, checked key by key before anything else: unknown keys (with the
//! key that was probably meant) and values of the wrong type (said in words), every one of
//! them, not only the first.
//!
//! The keys and their types are not listed here a second time: each key is tried alone
//! against the profile's own serde types, so this check can never drift from what the
//! profile really accepts.

use serde::Deserialize;

use super::RawProfile;

/// One problem: the dotted key, whether it lies in the value (a type) rather than the key
/// (an unknown key), and what is wrong.
pub(super) type Problem = (String, bool, String);

/// Every unknown key and wrongly typed value of a parsed profile.
pub(super) fn shape_errors(doc: &toml::Table) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (top, item) in doc {
        match item {
            toml::Value::Table(table) if is_table(top) => {
                for (key, value) in table {
                    let mut one = toml::Table::new();
                    one.insert(key.clone(), value.clone());
                    if let Some(m) = probe(top, toml::Value::Table(one)) {
                        let dotted = format!("{top}.{key}");
                        problems.push(explain(&dotted, key, value, &m));
                    }
                }
            }
            value => {
                if let Some(m) = probe(top, value.clone()) {
                    problems.push(explain(top, top, value, &m));
                }
            }
        }
    }
    problems
}

/// True when `name` is a table of the profile (`[crawl]`, `[politeness]`, …).
fn is_table(name: &str) -> bool {
    probe(name, toml::Value::Table(toml::Table::new())).is_none()
}

/// Deserializes a profile holding only `top = value`; the error, unless it is only that the
/// rest of the profile is missing.
fn probe(top: &str, value: toml::Value) -> Option<String> {
    let mut t = toml::Table::new();
    t.insert(top.to_string(), value);
    match RawProfile::deserialize(toml::Value::Table(t)) {
        Ok(_) => None,
        Err(e) => {
            let m = e.message().trim().to_string();
            (!m.starts_with("missing field")).then_some(m)
        }
    }
}

/// The keys a table accepts, as serde lists them when it meets one it does not know.
fn keys_of(table: &str) -> Vec<String> {
    let mut one = toml::Table::new();
    one.insert("\u{1}".to_string(), toml::Value::Integer(0));
    let value = if table.is_empty() {
        toml::Value::Table(one)
    } else {
        let mut t = toml::Table::new();
        t.insert(table.to_string(), toml::Value::Table(one));
        toml::Value::Table(t)
    };
    let message = match RawProfile::deserialize(value) {
        Err(e) => e.message().to_string(),
        Ok(_) => return Vec::new(),
    };
    expected_list(&message)
}

/// The `expected one of `a`, `b`` (or `expected `a``) part of a serde message.
fn expected_list(message: &str) -> Vec<String> {
    let Some((_, list)) = message.split_once("expected") else {
        return Vec::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .filter(|k| !k.is_empty())
        .collect()
}

/// Turns serde's message into one a person reads: did-you-mean for unknown keys, types in
/// words.
fn explain(dotted: &str, key: &str, value: &toml::Value, message: &str) -> Problem {
    if message.starts_with("unknown field") {
        let (table, known) = match dotted.split_once('.') {
            Some((table, _)) => (table.to_string(), expected_list(message)),
            None => (String::new(), expected_list(message)),
        };
        return (dotted.to_string(), false, unknown_key(&table, key, &known));
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        if let Some((found, wanted)) = rest.split_once(", expected ") {
            let want = wanted_words(wanted, value);
            let found = found_words(found, value);
            return (
                dotted.to_string(),
                true,
                format!("must be {want}, not {found}"),
            );
        }
    }
    (dotted.to_string(), true, message.to_string())
}

/// "unknown key", and the key most likely meant: a close spelling in the same table, or the
/// table the key belongs to.
fn unknown_key(table: &str, key: &str, known: &[String]) -> String {
    let closest = known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(key, k), k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min();
    if let Some((_, k)) = closest {
        return if table.is_empty() {
            format!("unknown table or key; did you mean [{k}]?")
        } else {
            format!("unknown key; did you mean {k}?")
        };
    }
    // A key written in the wrong table (or above every table header).
    for other in keys_of("") {
        if other != table && keys_of(&other).iter().any(|k| k == key) {
            return format!("unknown key here; {key} belongs in the [{other}] table");
        }
    }
    if table.is_empty() {
        format!(
            "unknown table or key; the tables are {}",
            brackets(&known.join("], ["))
        )
    } else {
        format!(
            "unknown key; the keys of [{table}] are {}",
            known.join(", ")
        )
    }
}

fn brackets(s: &str) -> String {
    format!("[{s}]")
}

/// What serde expected, in words.
fn wanted_words(wanted: &str, value: &toml::Value) -> String {
    let wanted = wanted.trim();
    let base = match wanted {
        "f64" | "f32" => "a number (like 5 or 0.5)",
        "i64" | "u64" | "i32" | "u32" | "usize" | "isize" => "a whole number",
        "a boolean" => "true or false",
        "a string" | "a borrowed string" => "text in quotes",
        "a sequence" => "a list in brackets, like [\"a\", \"b\"]",
        w if w.starts_with("struct ") || w == "a map" => "a table",
        w => w,
    };
    // An item of a list had the wrong type.
    if matches!(value, toml::Value::Array(_)) && wanted != "a sequence" {
        return match wanted {
            "a string" | "a borrowed string" => "a list of strings (text in quotes)".to_string(),
            _ => format!("a list of {}", plural(base)),
        };
    }
    base.to_string()
}

fn plural(words: &str) -> String {
    match words {
        "a whole number" => "whole numbers".to_string(),
        w => w.trim_start_matches("a ").to_string() + "s",
    }
}

/// What was found instead, in words.
fn found_words(found: &str, value: &toml::Value) -> String {
    let shown = |v: &toml::Value| match v {
        toml::Value::String(s) => format!("the text {s:?}"),
        toml::Value::Integer(i) => format!("the whole number {i}"),
        toml::Value::Float(x) => format!("the number {x}"),
        toml::Value::Boolean(b) => format!("{b}"),
        toml::Value::Datetime(d) => format!("the date {d}"),
        toml::Value::Array(_) => "a list".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    };
    match value {
        toml::Value::Array(items) => {
            let odd = items.iter().find(|i| !matches!(i, toml::Value::String(_)));
            match odd {
                Some(item) if found != "sequence" => format!("a list holding {}", shown(item)),
                _ => "a list".to_string(),
            }
        }
        v => shown(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(src: &str) -> Vec<Problem> {
        shape_errors(&toml::from_str(src).unwrap())
    }

    #[test]
    fn unknown_keys_get_a_suggestion() {
        let p = problems("[politeness]\nmin_dealy = 3\n[crawl]\nseeds = []\nsedes = 1\n");
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p
            .iter()
            .any(|(k, _, m)| k == "politeness.min_dealy"
                && m == "unknown key; did you mean min_delay?"));
        assert!(p
            .iter()
            .any(|(k, _, m)| k == "crawl.sedes" && m.contains("seeds?")));
        let p = problems("[politness]\nmin_delay = 3\n");
        assert_eq!(p[0].2, "unknown table or key; did you mean [politeness]?");
    }

    #[test]
    fn a_key_in_the_wrong_table_is_told_where_it_belongs() {
        let p = problems("seeds = [\"http://a/\"]\n");
        assert_eq!(
            p[0].2,
            "unknown key here; seeds belongs in the [crawl] table"
        );
        let p = problems("[scope]\nmin_delay = 1.0\n");
        assert!(p[0].2.contains("[politeness]"), "{p:?}");
    }

    #[test]
    fn types_are_said_in_words() {
        let p = problems(
            "[politeness]\nmin_delay = \"fast\"\nmax_retries = 2.5\n[crawl]\nseeds = [1]\n\
             [scope]\nembeds_off_site = \"yes\"\nexclude = \"x\"\n",
        );
        let m = |key: &str| {
            p.iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, _, m)| m.clone())
                .unwrap_or_else(|| panic!("{key}: {p:?}"))
        };
        assert_eq!(
            m("politeness.min_delay"),
            "must be a number (like 5 or 0.5), not the text \"fast\""
        );
        assert_eq!(
            m("politeness.max_retries"),
            "must be a whole number, not the number 2.5"
        );
        assert_eq!(
            m("crawl.seeds"),
            "must be a list of strings (text in quotes), not a list holding the whole number 1"
        );
        assert_eq!(
            m("scope.embeds_off_site"),
            "must be true or false, not the text \"yes\""
        );
        assert!(m("scope.exclude").starts_with("must be a list"), "{p:?}");
        assert_eq!(p.len(), 5);
    }
}
