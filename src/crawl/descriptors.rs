//! Open files: how many jobs and name lookups may run at once without the process running out
//! of descriptors (EMFILE), however many sites are due.
//!
//! At start the soft RLIMIT_NOFILE is raised to the hard one (a default soft limit of 1,024
//! would otherwise cap a crawl the system allows to go further). What is left after a reserve
//! for the files a crawl keeps open is shared out: each job holds a connection and may spill
//! its response to a temporary file; each system lookup may open a socket and /etc/hosts. A
//! URL over the cap just waits for a slot, like one over `sites_at_once`: no error, no log line.

/// Descriptors kept for what is open all the crawl long: standard streams, WARC and CDXJ
/// files, crawl.log, run.log, refusals.log, SQLite's database, journal and WAL, the async
/// runtime's own (epoll, eventfd), the browser's pipes.
const RESERVE: u64 = 32;
/// A job's descriptors at most: its connection and its response spool on disk.
const PER_JOB: u64 = 2;
/// A system name lookup's descriptors at most: its socket and /etc/hosts.
const PER_LOOKUP: u64 = 2;
/// Lookups in flight at most, whatever the limit: more only crowd the system resolver.
const MAX_LOOKUPS: u64 = 64;

/// How many jobs and lookups may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slots {
    /// Jobs at once: `sites_at_once` or fewer when the open-file limit asks for it.
    pub jobs: usize,
    /// System name lookups at once.
    pub lookups: usize,
    /// The soft open-file limit the crawl runs under (after raising it).
    pub limit: u64,
}

/// Raises the soft open-file limit to the hard one and shares it out. When the limit cannot
/// be read (no such limit on this system), `sites_at_once` is taken as it is.
pub(super) fn slots(sites_at_once: usize) -> Slots {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => share(limit, sites_at_once),
        Err(_) => Slots {
            jobs: sites_at_once,
            lookups: MAX_LOOKUPS as usize,
            limit: u64::MAX,
        },
    }
}

/// Shares `limit` descriptors out: the reserve first, then an eighth of the rest for lookups,
/// the remainder for jobs; always at least one of each, so a crawl under a tiny limit is slow,
/// not stuck.
fn share(limit: u64, sites_at_once: usize) -> Slots {
    let usable = limit.saturating_sub(RESERVE);
    let lookups = (usable / 8 / PER_LOOKUP).clamp(1, MAX_LOOKUPS);
    let for_jobs = usable.saturating_sub(lookups * PER_LOOKUP);
    let jobs = usize::try_from((for_jobs / PER_JOB).max(1)).unwrap_or(usize::MAX);
    Slots {
        jobs: jobs.min(sites_at_once),
        lookups: lookups as usize,
        limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_high_limit_leaves_sites_at_once_as_it_is() {
        let s = share(20_000, 50);
        assert_eq!(s.jobs, 50);
        assert_eq!(s.lookups, MAX_LOOKUPS as usize);
    }

    #[test]
    fn a_low_limit_caps_the_jobs_below_it_with_the_reserve_kept() {
        let s = share(64, 10_000);
        assert_eq!(s.lookups, 2);
        assert_eq!(s.jobs, 14);
        let used = RESERVE + s.jobs as u64 * PER_JOB + s.lookups as u64 * PER_LOOKUP;
        assert!(used <= 64, "{used} descriptors planned under a limit of 64");
    }

    #[test]
    fn a_limit_below_the_reserve_still_lets_one_job_and_one_lookup_run() {
        let s = share(10, 10_000);
        assert_eq!((s.jobs, s.lookups), (1, 1));
    }

    #[test]
    fn the_limit_is_raised_to_the_hard_one() {
        let (before, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
        let s = slots(50);
        let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
        assert_eq!(s.limit, soft);
        assert!(soft >= before);
        if hard != rlimit::INFINITY {
            assert_eq!(soft, hard);
        }
    }
}
