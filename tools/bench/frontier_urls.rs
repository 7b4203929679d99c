//! The URLs both frontier benchmarks queue (`frontier_bench.rs`, SQLite; `pg_frontier_bench.rs`,
//! PostgreSQL), and the CPU clock they report with: the same generated crawl for both, so their
//! figures compare.

use archiver::frontier::Candidate;
use url::Url;

pub const SITES: u64 = 1000;
/// URLs found together on one page go to one site.
pub const BURST: u64 = 20;
pub const COMMIT_EVERY: u64 = 100;

/// A fixed 64-bit mixer (splitmix64), so every run generates the same URLs.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub fn site_of(i: u64) -> u64 {
    mix(i / BURST) % SITES
}

pub fn origin(site: u64) -> String {
    format!("http://www.site{site:03}.example")
}

/// URL number `i` and its site: about 60 bytes, random within its site, like real paths; one
/// in five an embed; found on a page of its own site.
pub fn candidate(i: u64) -> Result<(String, Candidate), String> {
    let site = origin(site_of(i));
    let h = mix(i ^ 0x5555_5555);
    let u = format!("{site}/section{}/{:012x}.html", h % 50, h >> 16);
    let via = format!("{site}/section{}/index-{}.html", h % 7, i / BURST);
    let embed = i % 5 == 4;
    let parse = |s: &str| Url::parse(s).map_err(|e| format!("{s}: {e}"));
    let c = Candidate {
        url: parse(&u)?,
        path: if embed { "LLE".into() } else { "LLL".into() },
        via: Some(parse(&via)?),
        attempts: 0,
    };
    Ok((site, c))
}

/// CPU seconds (user + system) of this process so far, from /proc/self/stat: unlike wall time it
/// hardly moves when other programs share the machine.
pub fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces); utime and stime are the 12th and
    // 13th of them, in clock ticks (100 a second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<u64>() as f64 / 100.0
}
