//! The address guard: which server addresses the crawler may connect to.
//!
//! A public web page can link to, redirect to, or have its name resolve to an address inside the
//! network the crawler runs in: a router's admin page, another machine's database, or the cloud
//! metadata service at 169.254.169.254 that hands out credentials. A crawler that follows such a
//! link fetches it from *inside*, and the WARC then publishes what it found. So every address is
//! checked right before a connection (after every DNS answer, for every redirect target), and
//! anything that is not a public unicast address is refused — unless the profile says otherwise:
//! loopback is allowed when every seed is on loopback (tests, local mirrors), and
//! `[limits] allow_addresses` opens CIDR ranges for intranet crawls.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// A CIDR range such as `10.0.0.0/8` or `fd00::/8`; a bare address is a range of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    bits: u8,
}

impl Cidr {
    /// True when `ip` lies in the range. IPv4-mapped IPv6 addresses count as their IPv4 form.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.bits),
            (IpAddr::V6(net), IpAddr::V6(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.bits),
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.net, self.bits)
    }
}

impl FromStr for Cidr {
    type Err = String;

    /// Parses `ADDRESS/BITS` or `ADDRESS`. Host bits set below the prefix are an error, since
    /// `10.1.2.3/8` most likely means a typo rather than `10.0.0.0/8`.
    fn from_str(text: &str) -> Result<Cidr, String> {
        let text = text.trim();
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let net: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or CIDR range"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(b) => b
                .parse::<u8>()
                .ok()
                .filter(|&b| b <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {max}"))?,
        };
        let cidr = Cidr { net, bits };
        let masked = match net {
            IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(mask(&v4.octets(), bits))),
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(mask(&v6.octets(), bits))),
        };
        if masked != net {
            return Err(format!(
                "{text:?} has bits set past its /{bits} prefix (did you mean {masked}/{bits}?)"
            ));
        }
        Ok(cidr)
    }
}

fn prefix_eq<const N: usize>(a: &[u8; N], b: &[u8; N], bits: u8) -> bool {
    mask(a, bits) == mask(b, bits)
}

fn mask<const N: usize>(bytes: &[u8; N], bits: u8) -> [u8; N] {
    let mut out = *bytes;
    for (i, byte) in out.iter_mut().enumerate() {
        let start = (i * 8) as u32;
        let keep = u32::from(bits).saturating_sub(start).min(8);
        *byte &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
    }
    out
}

/// What kind of address a connection would go to, when it is not an ordinary public one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Loopback,
    /// RFC 1918 ranges and the carrier-grade NAT range 100.64.0.0/10.
    Private,
    /// 169.254.0.0/16 (the cloud metadata address lives here) and fe80::/10.
    LinkLocal,
    /// fc00::/7.
    UniqueLocal,
    Unspecified,
    Multicast,
    Broadcast,
    /// Documentation, benchmarking, "this network", the old 240/4 block and similar ranges
    /// that no public server uses.
    Reserved,
}

impl Class {
    /// The word the crawl.log extra JSON uses.
    pub fn name(self) -> &'static str {
        match self {
            Class::Loopback => "loopback",
            Class::Private => "private",
            Class::LinkLocal => "link-local",
            Class::UniqueLocal => "unique-local",
            Class::Unspecified => "unspecified",
            Class::Multicast => "multicast",
            Class::Broadcast => "broadcast",
            Class::Reserved => "reserved",
        }
    }
}

/// The class of an address that is not public unicast; `None` for a public address.
pub fn classify(ip: IpAddr) -> Option<Class> {
    match canonical(ip) {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// IPv4-mapped (`::ffff:a.b.c.d`) and NAT64 (`64:ff9b::a.b.c.d`) addresses reach an IPv4
/// host: they are judged as that host's address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return IpAddr::V4(Ipv4Addr::new(a, b, c, d));
            }
            ip
        }
        v4 => v4,
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Class> {
    let o = ip.octets();
    let class = if ip.is_loopback() {
        Class::Loopback
    } else if ip.is_unspecified() {
        Class::Unspecified
    } else if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        Class::Private
    } else if ip.is_link_local() {
        Class::LinkLocal
    } else if ip.is_broadcast() {
        Class::Broadcast
    } else if ip.is_multicast() {
        Class::Multicast
    } else if o[0] == 0
        || o[0] >= 240
        || (o[0] == 192 && o[1] == 0 && (o[2] == 0 || o[2] == 2))
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || (o[0] == 198 && o[1] == 51 && o[2] == 100)
        || (o[0] == 203 && o[1] == 0 && o[2] == 113)
    {
        Class::Reserved
    } else {
        return None;
    };
    Some(class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Class> {
    let s = ip.segments();
    let class = if ip.is_loopback() {
        Class::Loopback
    } else if ip.is_unspecified() {
        Class::Unspecified
    } else if ip.is_multicast() {
        Class::Multicast
    } else if (s[0] & 0xffc0) == 0xfe80 {
        Class::LinkLocal
    } else if (s[0] & 0xfe00) == 0xfc00 {
        Class::UniqueLocal
    } else if (s[0] & 0xffc0) == 0xfec0 // deprecated site-local
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only
        || (s[0] & 0xe000) != 0x2000
    // outside 2000::/3, the only block of global unicast in use
    {
        Class::Reserved
    } else {
        return None;
    };
    Some(class)
}

/// Why the guard refused an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub ip: IpAddr,
    pub class: Class,
}

impl Refused {
    /// The crawl.log annotation of a refused URL.
    pub const ANNOTATION: &'static str = "scope:address";

    /// The crawl.log extra JSON: the address and its kind.
    pub fn extra(&self) -> serde_json::Value {
        serde_json::json!({ "address": self.ip.to_string(), "class": self.class.name() })
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is a {} address: not connected (see [limits] allow_addresses)",
            self.ip,
            self.class.name()
        )
    }
}

/// The addresses one crawl may connect to.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Every seed is on loopback: loopback addresses are allowed.
    loopback: bool,
    /// `[limits] allow_addresses`.
    allowed: Vec<Cidr>,
}

impl Guard {
    pub fn new(every_seed_on_loopback: bool, allowed: Vec<Cidr>) -> Guard {
        Guard {
            loopback: every_seed_on_loopback,
            allowed,
        }
    }

    /// The ranges `[limits] allow_addresses` opened.
    pub fn allowed(&self) -> &[Cidr] {
        &self.allowed
    }

    /// Ok when a connection to `ip` is allowed.
    pub fn check(&self, ip: IpAddr) -> Result<(), Refused> {
        let Some(class) = classify(ip) else {
            return Ok(());
        };
        if class == Class::Loopback && self.loopback {
            return Ok(());
        }
        if self.allowed.iter().any(|c| c.contains(ip)) {
            return Ok(());
        }
        Err(Refused { ip, class })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classes_of_the_ranges_the_issue_names() {
        let cases = [
            ("127.0.0.1", Some(Class::Loopback)),
            ("::1", Some(Class::Loopback)),
            ("10.9.9.9", Some(Class::Private)),
            ("172.16.0.1", Some(Class::Private)),
            ("172.31.255.255", Some(Class::Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Class::Private)),
            ("100.64.0.1", Some(Class::Private)),
            ("100.128.0.1", None),
            ("169.254.169.254", Some(Class::LinkLocal)),
            ("fe80::1", Some(Class::LinkLocal)),
            ("fd00::1", Some(Class::UniqueLocal)),
            ("fc00::1", Some(Class::UniqueLocal)),
            ("0.0.0.0", Some(Class::Unspecified)),
            ("::", Some(Class::Unspecified)),
            ("224.0.0.1", Some(Class::Multicast)),
            ("ff02::1", Some(Class::Multicast)),
            ("255.255.255.255", Some(Class::Broadcast)),
            ("240.0.0.1", Some(Class::Reserved)),
            ("0.1.2.3", Some(Class::Reserved)),
            ("192.0.2.1", Some(Class::Reserved)),
            ("198.18.0.1", Some(Class::Reserved)),
            ("2001:db8::1", Some(Class::Reserved)),
            ("93.184.216.34", None),
            ("8.8.8.8", None),
            ("2606:4700::1111", None),
            // An IPv4 address dressed as IPv6 is judged as itself.
            ("::ffff:10.0.0.1", Some(Class::Private)),
            ("::ffff:169.254.169.254", Some(Class::LinkLocal)),
            ("64:ff9b::a9fe:a9fe", Some(Class::LinkLocal)),
            ("::ffff:8.8.8.8", None),
        ];
        for (text, want) in cases {
            assert_eq!(classify(ip(text)), want, "{text}");
        }
    }

    #[test]
    fn loopback_only_when_the_seeds_are_and_ranges_when_allowed() {
        let strict = Guard::new(false, Vec::new());
        assert!(strict.check(ip("127.0.0.1")).is_err());
        assert!(strict.check(ip("8.8.8.8")).is_ok());
        let local = Guard::new(true, Vec::new());
        assert!(local.check(ip("127.0.0.5")).is_ok());
        // Loopback seeds open loopback only, not the private network.
        let refused = local.check(ip("10.9.9.9")).unwrap_err();
        assert_eq!(refused.class, Class::Private);
        assert_eq!(refused.extra()["address"], "10.9.9.9");
        assert!(local.check(ip("169.254.169.254")).is_err());
        let intranet = Guard::new(false, vec!["10.0.0.0/8".parse().unwrap()]);
        assert!(intranet.check(ip("10.9.9.9")).is_ok());
        assert!(intranet.check(ip("::ffff:10.1.1.1")).is_ok());
        assert!(intranet.check(ip("192.168.0.1")).is_err());
    }

    #[test]
    fn cidr_parsing() {
        let c: Cidr = "192.168.0.0/16".parse().unwrap();
        assert!(c.contains(ip("192.168.44.1")));
        assert!(!c.contains(ip("192.169.0.1")));
        assert_eq!(c.to_string(), "192.168.0.0/16");
        let one: Cidr = "10.1.2.3".parse().unwrap();
        assert!(one.contains(ip("10.1.2.3")) && !one.contains(ip("10.1.2.4")));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("10.0.0.1")) && !all.contains(ip("::1")));
        for bad in [
            "10.0.0.0/33",
            "10.1.0.0/8",
            "nonsense",
            "10.0.0.0/x",
            "",
            "::/129",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
