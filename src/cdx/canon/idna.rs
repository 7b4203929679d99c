//! IDNA 2003, as Python's "idna" codec applies it to a host: nameprep (through UTS #46 and
//! the exceptions in `tables.rs`), bidi rules and punycode.

use super::tables::{
    ASSIGNED_IN_3_2, CASED_AFTER_UNICODE_14, LEFT_TO_RIGHT, MAPPED_TO_NOTHING, NAMEPREP_EXCEPTIONS,
    PROHIBITED, RAND_AL,
};

// IDNA 2003, as Python's "idna" codec applies it to a host.

/// Python's `host.encode("idna")`; `None` where the codec raises.
pub(super) fn idna_encode(host: &str) -> Option<Vec<u8>> {
    if host.is_empty() {
        return Some(Vec::new());
    }
    if host.is_ascii() {
        let labels: Vec<&str> = host.split('.').collect();
        let (last, leading) = labels.split_last()?;
        let ok = leading.iter().all(|l| (1..64).contains(&l.len())) && last.len() < 64;
        return ok.then(|| host.as_bytes().to_vec());
    }
    let mut labels: Vec<&str> = host
        .split(['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'])
        .collect();
    let trailing_dot = labels.last().is_some_and(|l| l.is_empty());
    if trailing_dot {
        labels.pop();
    }
    let mut out = Vec::with_capacity(host.len() + 8);
    for (i, label) in labels.iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        out.extend_from_slice(idna_label(label)?.as_bytes());
    }
    if trailing_dot {
        out.push(b'.');
    }
    Some(out)
}

/// RFC 3490 ToASCII of one label (AllowUnassigned, no STD3 rules), as Python's codec does it.
///
/// Nameprep needs Unicode 3.2 mapping and normalisation tables this crate does not carry.
/// [`nameprep_map`] borrows them from UTS #46 (through `url`), which was designed to agree with
/// IDNA 2003 on valid input; the prohibition and bidi checks are IDNA 2003's own.
fn idna_label(label: &str) -> Option<String> {
    let ok_len = |s: &str| (1..64).contains(&s.len());
    if label.is_ascii() {
        return ok_len(label).then(|| label.to_string());
    }
    let mapped = nameprep_map(label)?;
    if mapped.chars().any(|c| in_ranges(c, PROHIBITED)) || !bidi_ok(&mapped) {
        return None;
    }
    if mapped.is_ascii() {
        return ok_len(&mapped).then_some(mapped);
    }
    if mapped.starts_with("xn--") {
        return None;
    }
    let encoded = format!("xn--{}", punycode_encode(&mapped)?);
    ok_len(&encoded).then_some(encoded)
}

/// Nameprep's mapping and compatibility normalisation of a label; `None` for a label so long
/// that it cannot fit in 63 bytes whatever the mapping does.
///
/// Python maps each character to its lower case (current Unicode), with the RFC 3454 exceptions
/// (`ß` to `ss`, final sigma to sigma, ...), then normalises to NFKC (Unicode 3.2). The
/// normalisation is borrowed from UTS #46 (through `url`), which applies NFKC with case folding.
/// It is asked one run at a time; runs end at ASCII punctuation (the URL host parser refuses it,
/// IDNA 2003 lets it through), at characters Unicode 3.2 did not have (Python's NFKC leaves them
/// alone, UTS #46 maps many), at characters UTS #46 refuses or drops where Python keeps them,
/// and where right-to-left script meets the rest (UTS #46 applies a bidi rule per label that
/// IDNA 2003 does not have).
fn nameprep_map(label: &str) -> Option<String> {
    let mut pre = String::with_capacity(label.len());
    for c in label.chars() {
        if in_ranges(c, MAPPED_TO_NOTHING) {
            continue;
        }
        if let Ok(i) = NAMEPREP_EXCEPTIONS.binary_search_by_key(&u32::from(c), |&(cp, _)| cp) {
            pre.push_str(NAMEPREP_EXCEPTIONS[i].1);
            continue;
        }
        if in_ranges(c, CASED_AFTER_UNICODE_14) {
            pre.push(c);
            continue;
        }
        for lower in c.to_lowercase() {
            match lower {
                'ß' => pre.push_str("ss"),
                'ς' => pre.push('σ'),
                _ => pre.push(lower),
            }
        }
    }
    // Composition merges at most four characters into one: beyond this the label is too long.
    if pre.chars().count() > 4 * 64 {
        return None;
    }
    let mut out = String::with_capacity(pre.len());
    let mut run = String::new();
    let mut run_is_rtl = false;
    for c in pre.chars() {
        let joins_run = if c.is_ascii() {
            c.is_ascii_alphanumeric() || c == '-'
        } else {
            in_ranges(c, ASSIGNED_IN_3_2) && map_alone(c).is_some()
        };
        if !joins_run {
            out.push_str(&normalize_run(&run));
            run.clear();
            out.push(c);
            continue;
        }
        if !c.is_ascii() {
            let rtl = in_rtl_blocks(c);
            if rtl != run_is_rtl && !run.is_ascii() {
                // ASCII letters are left-to-right: those ending a right-to-left run go with
                // what follows (they may be the base of a combining mark there).
                let keep = if run_is_rtl {
                    run.trim_end_matches(|r: char| r.is_ascii()).len()
                } else {
                    run.len()
                };
                out.push_str(&normalize_run(&run[..keep]));
                run.drain(..keep);
            }
            run_is_rtl = rtl;
        }
        run.push(c);
    }
    out.push_str(&normalize_run(&run));
    Some(out)
}

/// The Hebrew, Arabic, Syriac, Thaana and N'Ko blocks and their presentation forms.
fn in_rtl_blocks(c: char) -> bool {
    matches!(u32::from(c), 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF)
}

/// What UTS #46 maps one character to, asked alone or, for a combining mark (refused at the
/// start of a label), after a base it cannot combine with. `None` where UTS #46 refuses it or
/// drops it: Python keeps such characters as they are.
fn map_alone(c: char) -> Option<String> {
    let mut buf = [0; 4];
    match uts46_map(c.encode_utf8(&mut buf)) {
        Some(mapped) => (!mapped.is_empty()).then_some(mapped),
        None => {
            // No precomposed character has Latin q or Hebrew alef as its base.
            let base = if in_rtl_blocks(c) { '\u{05D0}' } else { 'q' };
            let mapped = uts46_map(&format!("{base}{c}"))?;
            let mark = mapped.strip_prefix(base)?;
            (!mark.is_empty()).then(|| mark.to_string())
        }
    }
}

/// NFKC (with case folding) of a run: whole if UTS #46 takes it, else without its first
/// character (a combining mark, say), else character by character.
fn normalize_run(run: &str) -> String {
    if run.is_ascii() {
        return run.to_string();
    }
    if let Some(mapped) = uts46_map(run) {
        return mapped;
    }
    let alone = |c: char| {
        if c.is_ascii() {
            c.to_string()
        } else {
            map_alone(c).unwrap_or_else(|| c.to_string())
        }
    };
    let mut chars = run.chars();
    if let Some(first) = chars.next() {
        if let Some(mapped) = uts46_map(chars.as_str()) {
            return alone(first) + &mapped;
        }
    }
    run.chars().map(alone).collect()
}

/// UTS #46 mapping of `text` (no dots, no ASCII punctuation), or `None` where UTS #46 refuses
/// it. A dummy last label keeps the URL host parser from reading digits as an IPv4 address.
fn uts46_map(text: &str) -> Option<String> {
    let ascii = url::quirks::domain_to_ascii(&format!("{text}.a"));
    let body = ascii.strip_suffix(".a")?;
    let mut mapped = String::with_capacity(body.len());
    for (i, piece) in body.split('.').enumerate() {
        if i > 0 {
            mapped.push('.');
        }
        match piece.strip_prefix("xn--") {
            Some(encoded) => mapped.push_str(&punycode_decode(encoded)?),
            None => mapped.push_str(piece),
        }
    }
    Some(mapped)
}

/// IDNA 2003's bidi rule: a label holding a right-to-left character (R or AL) holds no
/// left-to-right one (L) and starts and ends with a right-to-left one.
fn bidi_ok(label: &str) -> bool {
    if !label.chars().any(|c| in_ranges(c, RAND_AL)) {
        return true;
    }
    let first = label.chars().next().is_some_and(|c| in_ranges(c, RAND_AL));
    let last = label.chars().last().is_some_and(|c| in_ranges(c, RAND_AL));
    first && last && !label.chars().any(|c| in_ranges(c, LEFT_TO_RIGHT))
}

/// Whether `c` lies in one of `ranges` (sorted, inclusive, not overlapping).
fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {
    let cp = u32::from(c);
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// RFC 3492 Punycode (the part after `xn--`); `None` on overflow.
pub(super) fn punycode_encode(input: &str) -> Option<String> {
    const BASE: u32 = 36;
    const T_MIN: u32 = 1;
    const T_MAX: u32 = 26;
    let digit = |d: u32| -> char {
        // 0..25 are a..z, 26..35 are 0..9.
        char::from_u32(if d < 26 { 97 + d } else { 22 + d }).unwrap_or('a')
    };
    let code_points: Vec<u32> = input.chars().map(u32::from).collect();
    let mut out: String = input.chars().filter(char::is_ascii).collect();
    let basic = out.len() as u32;
    if basic > 0 {
        out.push('-');
    }
    let total = code_points.len() as u32;
    let mut n: u32 = 128;
    let mut delta: u32 = 0;
    let mut bias: u32 = 72;
    let mut handled = basic;
    while handled < total {
        let m = code_points.iter().copied().filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &c in &code_points {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        T_MIN
                    } else if k >= bias + T_MAX {
                        T_MAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = punycode_adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

fn punycode_adapt(delta: u32, num_points: u32, first_time: bool) -> u32 {
    let mut delta = if first_time { delta / 700 } else { delta / 2 };
    delta += delta / num_points;
    let mut k = 0;
    while delta > ((36 - 1) * 26) / 2 {
        delta /= 36 - 1;
        k += 36;
    }
    k + (36 * delta) / (delta + 38)
}

/// RFC 3492 Punycode decoding (of the part after `xn--`); `None` on malformed input.
fn punycode_decode(input: &str) -> Option<String> {
    let (basic, extended) = match input.rfind('-') {
        Some(dash) => (&input[..dash], &input[dash + 1..]),
        None => ("", input),
    };
    if !basic.is_ascii() {
        return None;
    }
    let mut output: Vec<char> = basic.chars().collect();
    let mut n: u32 = 128;
    let mut i: u32 = 0;
    let mut bias: u32 = 72;
    let mut digits = extended.bytes().peekable();
    while digits.peek().is_some() {
        let old_i = i;
        let mut weight: u32 = 1;
        let mut k: u32 = 36;
        loop {
            let digit = match digits.next()? {
                b @ b'a'..=b'z' => u32::from(b - b'a'),
                b @ b'A'..=b'Z' => u32::from(b - b'A'),
                b @ b'0'..=b'9' => u32::from(b - b'0') + 26,
                _ => return None,
            };
            i = i.checked_add(digit.checked_mul(weight)?)?;
            let t = if k <= bias {
                1
            } else if k >= bias + 26 {
                26
            } else {
                k - bias
            };
            if digit < t {
                break;
            }
            weight = weight.checked_mul(36 - t)?;
            k += 36;
        }
        let len = u32::try_from(output.len()).ok()? + 1;
        bias = punycode_adapt(i - old_i, len, old_i == 0);
        n = n.checked_add(i / len)?;
        i %= len;
        output.insert(usize::try_from(i).ok()?, char::from_u32(n)?);
        i += 1;
    }
    Some(output.into_iter().collect())
}
