//! Name resolution with a cache, and the profile's own name → address table.
//!
//! The crawler resolves names itself, before it schedules a site, because politeness budgets
//! are per server address: two host names on one address share one budget. The system resolver
//! gives no TTLs, so answers are kept for a fixed time (`dns_cache_seconds`) and then asked for
//! again; a host whose address changed then moves to its new address's budget.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How names are resolved: the profile's `[resolve]` table and `dns_cache_seconds`.
#[derive(Debug, Clone)]
pub struct DnsSettings {
    /// Host names mapped to addresses, like curl's `--resolve`; never looked up.
    pub overrides: HashMap<String, IpAddr>,
    /// How long an answer is reused (the system resolver gives no TTL).
    pub cache: Duration,
}

impl Default for DnsSettings {
    fn default() -> Self {
        DnsSettings {
            overrides: HashMap::new(),
            cache: Duration::from_secs(600),
        }
    }
}

/// Resolves host names, honouring the profile's `[resolve]` table first.
pub struct Resolver {
    overrides: HashMap<String, IpAddr>,
    cache: Mutex<HashMap<String, (IpAddr, Instant)>>,
    ttl: Duration,
}

impl Resolver {
    pub fn new(settings: DnsSettings) -> Resolver {
        Resolver {
            overrides: settings.overrides,
            cache: Mutex::new(HashMap::new()),
            ttl: settings.cache,
        }
    }

    /// How long an answer is used.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The address to use for `host`. IP literals need no lookup; a name with several
    /// addresses uses the first IPv4 one (else the first), so all its requests go to one server.
    pub async fn resolve(&self, host: &str) -> Result<IpAddr, String> {
        let name = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if let Ok(ip) = name.parse::<IpAddr>() {
            return Ok(ip);
        }
        if let Some(ip) = self.overrides.get(&name) {
            return Ok(*ip);
        }
        if let Some(ip) = self.cached(&name) {
            return Ok(ip);
        }
        let addrs: Vec<IpAddr> = tokio::net::lookup_host((name.as_str(), 0))
            .await
            .map_err(|e| format!("{name}: {e}"))?
            .map(|a| a.ip())
            .collect();
        let ip = addrs
            .iter()
            .find(|ip| ip.is_ipv4())
            .or(addrs.first())
            .copied()
            .ok_or_else(|| format!("{name}: no address"))?;
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, (ip, Instant::now()));
        Ok(ip)
    }

    fn cached(&self, name: &str) -> Option<IpAddr> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let (ip, at) = cache.get(name)?;
        (at.elapsed() < self.ttl).then_some(*ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn literals_overrides_and_names() {
        let mut o = HashMap::new();
        o.insert("site-a.test".to_string(), "127.0.0.5".parse().unwrap());
        let r = Resolver::new(DnsSettings {
            overrides: o,
            cache: Duration::from_secs(60),
        });
        assert_eq!(
            r.resolve("127.0.0.9").await.unwrap().to_string(),
            "127.0.0.9"
        );
        assert_eq!(r.resolve("[::1]").await.unwrap().to_string(), "::1");
        assert_eq!(
            r.resolve("Site-A.test.").await.unwrap().to_string(),
            "127.0.0.5"
        );
        assert!(r.resolve("localhost").await.unwrap().is_loopback());
        assert!(r.resolve("no-such-host.invalid").await.is_err());
    }
}
