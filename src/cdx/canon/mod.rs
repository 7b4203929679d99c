//! URL canonicalisation and SURT keys, byte-for-byte what Python `surt.surt(url)` (surt 0.3.1,
//! default options) returns.
//!
//! pywb looks captures up by this key: it canonicalises the URL a visitor asks for with Python
//! `surt` and searches the sorted CDXJ for that exact string. A key that differs in one character
//! is a capture nobody can replay, and nothing reports the miss. So this module does not aim for
//! a "correct" normalisation; it reproduces the Python rules, odd ones included (the quirks are
//! written down next to the code that reproduces them).
//!
//! The pipeline, in the order Python runs it, a file each:
//! 1. `split.rs`, `split_url`: trim, default scheme, split into scheme / host / port / path /
//!    query (userinfo and fragment are dropped here already).
//! 2. `google.rs`, `google_pass`: percent-decoding to a fixed point and re-encoding once, IDNA
//!    for non-ASCII hosts (`idna.rs`, its tables in `tables.rs`), numeric IPv4 forms,
//!    dot-segment removal.
//! 3. `archive.rs`, `archive_pass`: lower-casing, `www` stripping, default ports, session ids,
//!    query sorting.
//! 4. `render` (here): reversed, comma-separated host, `)` and the rest, without the scheme.

mod archive;
mod google;
mod idna;
mod split;
mod tables;

use archive::archive_pass;
use google::google_pass;
use split::split_url;

/// The SURT key pywb uses for `url`.
///
/// Never panics. Where Python `surt` raises (an unparsable port such as `:abc` or `:99999`, or
/// input that is only whitespace), this returns `url` unchanged, which is the key `cdxj-indexer`
/// falls back to in that case.
pub fn surt(url: &str) -> String {
    if url.is_empty() {
        return "-".to_string();
    }
    // Python returns these untouched, before any trimming (ARC file headers).
    if url.starts_with("filedesc") {
        return url.to_string();
    }
    match split_url(url.as_bytes()) {
        Some(mut parts) => {
            google_pass(&mut parts);
            archive_pass(&mut parts);
            render(&parts)
        }
        None => url.to_string(),
    }
}

/// The host part of a SURT key, closing parenthesis included: `www.Example.com` gives
/// `com,example)`, `example.com:8080` gives `com,example:8080)`.
///
/// Meant for prefix tests on keys (everything on one host); it is the key of `http://HOST/` cut
/// after its first `)`.
pub fn surt_host_prefix(host: &str) -> String {
    let key = surt(&format!("http://{host}/"));
    match key.find(')') {
        Some(end) => key[..=end].to_string(),
        None => key,
    }
}

/// A URL split the way Python `surt` splits it. An empty `host` or `path` stands for Python's
/// `None` as well as an empty value: every rule treats the two alike.
#[derive(Debug)]
pub(super) struct Parts {
    /// As written (case kept): it is printed as is when there is no host.
    pub(super) scheme: Vec<u8>,
    pub(super) host: Vec<u8>,
    /// Never 0: Python turns a zero port into "no port".
    pub(super) port: Option<u16>,
    pub(super) path: Vec<u8>,
    /// Never `Some` of an empty query.
    pub(super) query: Option<Vec<u8>>,
}

/// Writes the key: `com,example:8080)/path?query`, or `scheme:path` when there is no host.
fn render(p: &Parts) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(p.host.len() + p.path.len() + 16);
    if p.host.is_empty() {
        out.extend_from_slice(&p.scheme);
        out.push(b':');
    } else {
        for (i, label) in p.host.rsplit(|&b| b == b'.').enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(label);
        }
        if let Some(port) = p.port {
            out.extend_from_slice(format!(":{port}").as_bytes());
        }
        out.push(b')');
    }
    if !p.path.is_empty() {
        out.extend_from_slice(&p.path);
    } else if p.query.is_some() {
        out.push(b'/');
    }
    if let Some(q) = &p.query {
        out.push(b'?');
        out.extend_from_slice(q);
    }
    // Every part is ASCII by now (escaped or checked); the lossy path is never taken.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::idna::punycode_encode;
    use super::*;

    /// Undoes the escaping of `tools/gen_surt_cases.py`: `\\`, `\t`, `\n`, `\r`, `\xHH`.
    fn unescape_field(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('x') => {
                    let hex: String = chars.by_ref().take(2).collect();
                    let v = u32::from_str_radix(&hex, 16).expect("hex escape");
                    out.push(char::from_u32(v).expect("char"));
                }
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        }
        out
    }

    #[test]
    fn matches_python_surt_on_every_case() {
        let data = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/surt_cases.tsv"
        ));
        let mut failures = Vec::new();
        let mut count = 0;
        for line in data
            .lines()
            .filter(|l| !l.starts_with("# ") && !l.is_empty())
        {
            let (url, expected) = line.split_once('\t').expect("url TAB expected");
            let (url, expected) = (unescape_field(url), unescape_field(expected));
            count += 1;
            let got = surt(&url);
            if got != expected {
                failures.push(format!(
                    "{url:?}\n   python {expected:?}\n   rust   {got:?}"
                ));
            }
        }
        assert!(count > 300, "only {count} cases");
        assert!(
            failures.is_empty(),
            "{} of {count} cases differ:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn examples() {
        assert_eq!(
            surt("http://www.Example.com:80/A/?b=2&a=1#x"),
            "com,example)/a?a=1&b=2"
        );
        assert_eq!(surt("https://127.0.0.1:8443/"), "1,0,0,127:8443)/");
        assert_eq!(surt(""), "-");
        assert_eq!(surt("http://example.com:abc/"), "http://example.com:abc/");
        assert_eq!(surt_host_prefix("www.Example.com"), "com,example)");
        assert_eq!(surt_host_prefix("example.com:8080"), "com,example:8080)");
    }

    #[test]
    fn punycode_matches_rfc_sample() {
        // RFC 3492 section 7.1, sample (A) Arabic (Egyptian), lower-cased.
        let arabic = "\u{0644}\u{064A}\u{0647}\u{0645}\u{0627}\u{0628}\u{062A}\u{0643}\u{0644}\
                      \u{0645}\u{0648}\u{0634}\u{0639}\u{0631}\u{0628}\u{064A}\u{061F}";
        assert_eq!(
            punycode_encode(arabic).as_deref(),
            Some("egbpdaj6bu4bxfgehfvwxn")
        );
        assert_eq!(punycode_encode("bücher").as_deref(), Some("bcher-kva"));
    }

    /// A small deterministic generator (xorshift) for the property test.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn never_panics_on_odd_input() {
        const PIECES: &[&str] = &[
            "http://",
            "https://",
            "HTTP:",
            "//",
            "/",
            "?",
            "#",
            "&",
            "=",
            "%",
            "%2",
            "%25",
            "%zz",
            "%C3",
            "%A9",
            "%2e",
            "..",
            ".",
            ":",
            "::",
            "[",
            "]",
            "@",
            "www.",
            "www2.",
            "0",
            "1",
            "255",
            "4294967296",
            "0x10",
            "ü",
            "例",
            "ß",
            "ς",
            "\u{200D}",
            "\u{0301}",
            "\u{05D0}",
            "\u{0660}",
            "😀",
            "\u{FF0E}",
            "\u{3002}",
            " ",
            "\t",
            "\n",
            "\u{0B}",
            "\u{0}",
            "\u{7F}",
            "jsessionid=",
            "0123456789abcdef0123456789abcdef",
            "(",
            ")",
            ".aspx",
            "a",
            "Z",
            "-",
            "xn--",
            "filedesc",
            "dns:",
            "65536",
            "99999",
            "\\",
            "+",
            ";",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let n = next(&mut state) % 12;
            let mut s = String::new();
            for _ in 0..n {
                let r = next(&mut state);
                if r.is_multiple_of(5) {
                    // Any code point at all.
                    s.extend(char::from_u32((r >> 8) as u32 % 0x11_0000));
                } else {
                    s.push_str(PIECES[(r % PIECES.len() as u64) as usize]);
                }
            }
            let key = surt(&s);
            // Whatever the input, a key is produced, and it is ASCII unless it is the input
            // handed back unchanged (the cases where Python raises, or "filedesc").
            assert!(key.is_ascii() || key == s, "{s:?} -> {key:?}");
        }
        // Long inputs and deep escape nesting.
        let long = "a".repeat(100_000);
        assert!(surt(&format!("http://{long}.com/{long}?{long}")).starts_with("com,"));
        let nested = format!("http://x.com/%{}41", "25".repeat(2_000));
        assert_eq!(surt(&nested), "com,x)/a");
    }
}
