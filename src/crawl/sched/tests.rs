//! The scheduler on the memory frontier, with a clock the tests move by hand.

use super::*;
use crate::frontier::MemoryFrontier;
use crate::net::guard::Guard;
use crate::politeness::robots::Verdict;
use crate::scope::rules::RuleSettings;

/// A scheduler and the rules it is asked with; the site book lives in a temp folder.
struct Fixture {
    sched: Sched,
    optout: OptOutList,
    rules: ScopeRules,
    clock: Clock,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn new(max_pages_per_site: u64) -> Fixture {
        Fixture::on(Box::new(MemoryFrontier::default()), max_pages_per_site)
    }

    fn on(frontier: Box<dyn Frontier>, max_pages_per_site: u64) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let book = SiteBook::load(&dir.path().join("sites.json")).unwrap();
        let limits = Limits {
            max_pages_per_site,
            dns_ttl: Duration::from_secs(3600),
            obey_robots: true,
            max_retries: 1,
            max_crawl_delay: Duration::from_secs(30),
            budget: BudgetKind::Ip,
            guard: Guard::new(true, Vec::new()),
            busy_retry: Duration::from_secs(1),
            robots_token: "archiver".into(),
            politeness: crate::politeness::PolitenessSettings::default(),
        };
        Fixture {
            sched: Sched::new(frontier, book, None, limits, Instant::now()),
            optout: OptOutList::load(&[]).unwrap(),
            rules: ScopeRules::new(&RuleSettings::default(), &[]),
            clock: Clock::now(),
            _dir: dir,
        }
    }

    fn seed(&mut self, url: &str) -> bool {
        let seed = Candidate::seed(Url::parse(url).unwrap());
        let gate = Gate {
            optout: &self.optout,
            rules: &self.rules,
        };
        self.sched.seed(seed, &gate, self.clock)
    }

    fn turn(&mut self) -> Turn {
        let gate = Gate {
            optout: &self.optout,
            rules: &self.rules,
        };
        self.sched.turn(&gate, self.clock)
    }

    /// Answers the one lookup asked for with a loopback address.
    fn resolve(&mut self, origin: &str) {
        let out = self.sched.take_outbox();
        assert_eq!(out.resolve.len(), 1, "one lookup asked for");
        assert_eq!(out.resolve[0].origin, origin);
        let ip = "127.0.0.1".parse().unwrap();
        self.sched.resolved(origin, Ok(ip), self.clock);
    }

    /// robots.txt answered with `body` (200).
    fn robots(&mut self, origin: &str, body: &str) {
        let (policy, verdict) =
            Policy::from_answer(200, body.as_bytes(), "archiver", self.clock.now);
        assert_eq!(verdict, Verdict::Rules);
        let mut pace = self.pace(Duration::ZERO);
        self.sched.settle_robots(
            origin,
            origin,
            Some((policy, verdict)),
            &mut pace,
            self.clock,
        );
    }

    fn pace(&self, base: Duration) -> Pace {
        Pace {
            end: self.clock.now,
            base,
            answer: Answer::Fine,
            retry_after: None,
        }
    }
}

fn go(turn: Turn) -> (String, Job) {
    match turn {
        Turn::Go(budget, job) => (budget, job),
        other => panic!("expected a job, got {other:?}"),
    }
}

const SITE: &str = "http://a.example";

#[test]
fn a_new_site_resolves_then_fetches_robots_txt_then_its_pages() {
    let mut f = Fixture::new(100);
    assert!(f.seed("http://a.example/"));
    assert!(!f.seed("http://a.example/"), "a seed is queued once");
    // No budget before the name is known; the lookup keeps the crawl alive.
    assert!(matches!(f.turn(), Turn::Wait(None)));
    f.resolve(SITE);
    let (budget, job) = go(f.turn());
    assert_eq!(budget, "ip:127.0.0.1");
    assert!(matches!(&job, Job::Robots { origin } if origin == SITE));
    f.robots(SITE, "User-agent: *\nDisallow:\n");
    let pace = f.pace(Duration::ZERO);
    f.sched.release(&budget, pace, 0, f.clock.now);
    let (_, job) = go(f.turn());
    let Job::Fetch { candidate, .. } = job else {
        panic!("expected the seed");
    };
    assert_eq!(candidate.url.as_str(), "http://a.example/");
}

#[test]
fn a_released_budget_waits_out_its_pause() {
    let mut f = Fixture::new(100);
    f.seed("http://a.example/");
    f.seed("http://a.example/b");
    f.resolve(SITE);
    let (budget, _robots) = go(f.turn());
    f.robots(SITE, "");
    let pause = Duration::from_secs(5);
    let pace = f.pace(pause);
    f.sched.release(&budget, pace, 0, f.clock.now);
    assert!(f.sched.take_outbox().wake, "a release wakes the dispatcher");
    let Turn::Wait(Some(at)) = f.turn() else {
        panic!("expected a wait");
    };
    assert!(
        at >= f.clock.now + pause,
        "no request before the pause is over"
    );
    f.clock.now = at;
    let (_, job) = go(f.turn());
    assert!(matches!(job, Job::Fetch { .. }));
}

#[test]
fn the_dispatcher_is_woken_only_when_its_wait_may_change() {
    let mut f = Fixture::new(100);
    for (site, ip) in [
        ("http://a.example", "127.0.0.1"),
        ("http://b.example", "127.0.0.2"),
    ] {
        f.seed(&format!("{site}/"));
        f.seed(&format!("{site}/2"));
        let out = f.sched.take_outbox();
        assert_eq!(out.resolve.len(), 1, "one lookup asked for");
        f.sched.resolved(site, Ok(ip.parse().unwrap()), f.clock);
    }
    let (a, _) = go(f.turn());
    let (b, _) = go(f.turn());
    assert_ne!(a, b, "two addresses, two budgets");
    f.robots("http://a.example", "");
    f.robots("http://b.example", "");
    // `a` goes back with a pause: the dispatcher, last seen starting jobs, is woken.
    f.sched.take_outbox();
    f.sched
        .release(&a, f.pace(Duration::from_secs(5)), 1, f.clock.now);
    assert!(f.sched.take_outbox().wake);
    let Turn::Wait(Some(until)) = f.turn() else {
        panic!("expected a wait for a");
    };
    // A link found while `b` is busy changes nothing the dispatcher waits for.
    let link = Candidate::seed(Url::parse("http://b.example/3").unwrap());
    f.sched.enqueue(link, f.clock);
    assert!(
        !f.sched.take_outbox().wake,
        "a busy budget's new work wakes nobody"
    );
    // `b` comes back due after the dispatcher wakes anyway: no wake-up.
    f.sched
        .release(&b, f.pace(Duration::from_secs(10)), 0, f.clock.now);
    assert!(
        !f.sched.take_outbox().wake,
        "asleep until a's turn, before b's"
    );
    // `a` runs; then it comes back due before `b`, the instant the dispatcher now waits for.
    f.clock.now = until;
    let (again, _) = go(f.turn());
    assert_eq!(again, a);
    assert!(matches!(f.turn(), Turn::Wait(Some(_))));
    f.sched.release(&a, f.pace(Duration::ZERO), 0, f.clock.now);
    assert!(
        f.sched.take_outbox().wake,
        "due before the dispatcher would look"
    );
}

#[test]
fn urls_robots_txt_forbids_are_dropped_without_a_request() {
    let mut f = Fixture::new(100);
    f.seed("http://a.example/private/x");
    f.seed("http://a.example/public");
    f.resolve(SITE);
    let (budget, _) = go(f.turn());
    f.robots(SITE, "User-agent: *\nDisallow: /private/\n");
    let pace = f.pace(Duration::ZERO);
    f.sched.release(&budget, pace, 0, f.clock.now);
    let (_, job) = go(f.turn());
    let Job::Fetch { candidate, .. } = job else {
        panic!("expected a fetch");
    };
    assert_eq!(candidate.url.as_str(), "http://a.example/public");
    let drops = f.sched.take_outbox().drops;
    assert_eq!(drops.len(), 1);
    assert_eq!(
        drops[0].candidate.url.as_str(),
        "http://a.example/private/x"
    );
    assert_eq!(
        (drops[0].status, drops[0].why),
        (status::ROBOTS_PRECLUDED, "robots")
    );
}

#[test]
fn the_page_quota_drops_further_urls_of_a_site() {
    let mut f = Fixture::new(1);
    f.seed("http://a.example/");
    f.resolve(SITE);
    let clock = f.clock;
    let extra = Candidate::seed(Url::parse("http://a.example/more").unwrap());
    f.sched.enqueue(extra, clock);
    let out = f.sched.take_outbox();
    assert_eq!(out.drops.len(), 1);
    let d = &out.drops[0];
    assert_eq!(
        (d.status, d.why),
        (status::BLOCKED_BY_QUOTA, "max-pages-per-site")
    );
}

#[test]
fn an_address_the_guard_refuses_drops_the_sites_urls() {
    let mut f = Fixture::new(100);
    f.sched.limits.guard = Guard::new(false, Vec::new());
    f.seed("http://a.example/");
    let _ = f.sched.take_outbox();
    f.sched
        .resolved(SITE, Ok("127.0.0.1".parse().unwrap()), f.clock);
    let out = f.sched.take_outbox();
    assert_eq!(out.drops.len(), 1);
    assert_eq!(out.drops[0].why, crate::net::guard::Refused::ANNOTATION);
    assert_eq!(out.notes.len(), 1, "run.log says why: {:?}", out.notes);
    assert!(matches!(f.turn(), Turn::Over));
}

#[test]
fn a_failed_lookup_is_asked_again_then_given_up() {
    let mut f = Fixture::new(100);
    f.seed("http://a.example/");
    let _ = f.sched.take_outbox();
    f.sched.resolved(SITE, Err("no such host".into()), f.clock);
    let out = f.sched.take_outbox();
    assert_eq!(out.resolve.len(), 1, "asked again");
    assert!(out.resolve[0].after > Duration::ZERO, "after a pause");
    assert!(out.drops.is_empty());
    f.sched.resolved(SITE, Err("no such host".into()), f.clock);
    let out = f.sched.take_outbox();
    assert!(out.resolve.is_empty());
    assert_eq!(out.drops.len(), 1);
    assert_eq!(
        (out.drops[0].status, out.drops[0].why),
        (status::DNS_FAILED, "dns-failed")
    );
    assert!(matches!(f.turn(), Turn::Over));
}

#[test]
fn robots_txt_unavailable_too_often_gives_the_site_up() {
    let mut f = Fixture::new(100);
    f.seed("http://a.example/");
    f.resolve(SITE);
    for _ in 0..2 {
        let (budget, job) = go(f.turn());
        assert!(matches!(job, Job::Robots { .. }));
        let mut pace = f.pace(Duration::ZERO);
        f.sched.settle_robots(SITE, SITE, None, &mut pace, f.clock);
        f.sched.release(&budget, pace, 0, f.clock.now);
        f.clock.now += Duration::from_secs(120);
    }
    // Given up: the queued seed is dropped as a failed prerequisite, and nothing is left.
    assert!(matches!(f.turn(), Turn::Over));
    let drops = f.sched.take_outbox().drops;
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0].status, status::ROBOTS_PREREQUISITE_FAILED);
}

#[test]
fn an_opted_out_seed_is_dropped_not_queued() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("optout.txt");
    std::fs::write(&list, "a.example\n").unwrap();
    let mut f = Fixture::new(100);
    f.optout = OptOutList::load(&[list]).unwrap();
    assert!(!f.seed("http://a.example/"));
    let drops = f.sched.take_outbox().drops;
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0].why, "optout");
    assert_eq!(f.sched.frontier.total_queued(), 0);
}

#[test]
fn a_robots_txt_redirected_elsewhere_waits_for_the_other_servers_budget() {
    let mut f = Fixture::new(100);
    f.sched.limits.budget = BudgetKind::Host;
    f.seed("http://a.example/");
    f.resolve(SITE);
    let (budget, _robots) = go(f.turn());
    let target = Url::parse("http://b.example/robots.txt").unwrap();
    let chase = RobotsChase {
        owner: SITE.to_string(),
        candidate: Candidate {
            url: target,
            path: "PR".to_string(),
            via: None,
            attempts: 0,
        },
        hop: 1,
    };
    f.sched.hand_off_robots(chase, f.clock);
    let pace = f.pace(Duration::ZERO);
    f.sched.release(&budget, pace, 0, f.clock.now);
    // The owner fetches nothing while it waits; the other site resolves, then runs the chase.
    f.resolve("http://b.example");
    let (other, job) = go(f.turn());
    assert_eq!(other, "host:b.example");
    assert!(matches!(&job, Job::Chase { chase, .. } if chase.owner == SITE));
    let (policy, verdict) = Policy::from_answer(200, b"", "archiver", f.clock.now);
    let mut pace = f.pace(Duration::ZERO);
    let clock = f.clock;
    f.sched.settle_robots(
        SITE,
        "http://b.example",
        Some((policy, verdict)),
        &mut pace,
        clock,
    );
    f.sched.release(&other, pace, 0, f.clock.now);
    let (_, job) = go(f.turn());
    assert!(matches!(job, Job::Fetch { origin, .. } if origin == SITE));
}

#[test]
fn on_resume_urls_in_flight_but_archived_in_a_closed_warc_are_done_not_fetched_again() {
    let mut f = Fixture::new(100);
    let origin = "http://127.0.0.1:8000";
    for path in ["/a", "/b", "/c"] {
        let c = Candidate::seed(Url::parse(&format!("{origin}{path}")).unwrap());
        f.sched.frontier.push(origin, c).unwrap();
    }
    // All three in flight when the last run was killed: /a's record went into a WARC the writer
    // closed (its index written) before the frontier heard of it, /b's into an `.open` WARC that
    // recovery closed, /c was never written.
    for _ in 0..3 {
        f.sched.frontier.pop(origin).unwrap().unwrap();
    }
    let index = tempfile::tempdir().unwrap();
    std::fs::write(
        index.path().join("A-00001.cdxj"),
        format!("127,0,0,1:8000)/a 20261202000000 {{\"url\": \"{origin}/a\"}}\n"),
    )
    .unwrap();
    let recovered = HashSet::from([format!("{origin}/b")]);
    let started = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let archived = ArchivedBefore::new(recovered, index.path(), Some(&started));
    let in_flight = f.sched.resume(&archived, f.clock).unwrap();
    assert_eq!(in_flight, 3);
    assert!(f.sched.frontier.in_flight().unwrap().is_empty());
    // Only /c is queued again.
    assert_eq!(f.sched.frontier.total_queued(), 1);
    let next = f.sched.frontier.pop(origin).unwrap().unwrap();
    assert_eq!(next.url.path(), "/c");
}

/// What a site's answer at the fixture's instant tells the scheduler.
fn heard(f: &Fixture, status: u16, retry_after: Option<Duration>) -> Heard {
    Heard {
        end: f.clock.now,
        took: Duration::from_millis(10),
        status,
        from_loopback: true,
        retry_after,
    }
}

#[test]
fn a_retry_after_becomes_the_floor_saved_outside_the_lock_and_never_lowered() {
    let mut f = Fixture::new(10);
    assert!(f.seed(SITE));
    f.resolve(SITE);
    let normal = f.sched.record_answer(SITE, &heard(&f, 200, None));
    assert!(f.sched.take_outbox().book.is_none(), "nothing to save yet");
    let pace = f
        .sched
        .record_answer(SITE, &heard(&f, 503, Some(Duration::from_secs(40))));
    assert_eq!(pace.base, Duration::from_secs(40));
    assert!(matches!(pace.answer, Answer::Overloaded));
    let out = f.sched.take_outbox();
    assert!(
        out.book.is_some(),
        "the floor is saved at once, by the outbox's carrier"
    );
    assert!(
        out.notes.iter().any(|n| n.contains("Retry-After 40.000 s")),
        "{:?}",
        out.notes
    );
    // A smaller Retry-After does not lower it; an ordinary answer keeps it.
    f.sched
        .record_answer(SITE, &heard(&f, 503, Some(Duration::from_secs(2))));
    let later = f.sched.record_answer(SITE, &heard(&f, 200, None));
    assert_eq!(later.base, Duration::from_secs(40).max(normal.base));
    assert!(
        f.sched.take_outbox().book.is_none(),
        "an unchanged floor is not saved again"
    );
    let failed = f.sched.record_failure(SITE, f.clock.now);
    assert_eq!(
        failed.base,
        Duration::from_secs(40),
        "no answer waits the floor out too"
    );
}

#[test]
fn a_site_that_keeps_refusing_is_suspended_and_says_so() {
    let mut f = Fixture::new(10);
    assert!(f.seed(SITE));
    f.resolve(SITE);
    let threshold = f.sched.limits.politeness.refusals.threshold;
    for n in 1..threshold {
        let host = f.sched.record_refusal(SITE, Some("status:403"), f.clock);
        assert_eq!(
            host.as_deref(),
            Some("a.example"),
            "refusal {n} names the host"
        );
        assert!(
            f.sched.take_outbox().notes.is_empty(),
            "not suspended after {n}"
        );
    }
    // A good answer in between starts the count again.
    assert_eq!(f.sched.record_refusal(SITE, None, f.clock), None);
    for _ in 1..threshold {
        f.sched.record_refusal(SITE, Some("status:403"), f.clock);
    }
    assert!(f.sched.take_outbox().notes.is_empty());
    f.sched.record_refusal(SITE, Some("status:403"), f.clock);
    let out = f.sched.take_outbox();
    assert!(out.book.is_some(), "a suspension is saved at once");
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("refusals in a row (last: status:403); leaving the site alone")),
        "{:?}",
        out.notes
    );
    assert_eq!(f.sched.suspended_with_work(f.clock.wall).len(), 1);
}

/// A shared crawl's worker (a real PostgreSQL server of the test's own) that still has a
/// budget waiting out its pause ends as soon as nothing is queued or in flight for anyone:
/// it used to wait the pause out (or another worker's lease) and look once more.
#[test]
fn a_shared_crawl_with_nothing_left_anywhere_ends_without_waiting_out_pauses() {
    use crate::frontier::postgres::{PostgresFrontier, PostgresSettings};
    use crate::frontier::sqlite::CrawlIdentity;
    let pg = crate::pg_cluster::PgCluster::start(&["crawl"]);
    let identity = CrawlIdentity {
        name: "test".into(),
        seeds: vec![format!("{SITE}/")],
    };
    let open = |worker: &str| {
        let settings = PostgresSettings {
            url: pg.url("crawl"),
            worker: worker.into(),
            lease: Duration::from_secs(30),
        };
        PostgresFrontier::open(&settings, &identity).unwrap()
    };
    let mut a = Fixture::on(Box::new(open("a")), 100);
    assert!(a.seed(&format!("{SITE}/")));
    a.sched.commit(a.clock.now);
    // Worker b takes the seed, fetches it and gives its budget back with a minute's pause.
    let mut b = open("b");
    let budget = "ip:127.0.0.1";
    assert!(matches!(
        b.lease(budget),
        Ok(crate::frontier::Lease::Granted(_))
    ));
    let seed = b.pop(SITE).unwrap().expect("the seed, queued by a");
    b.done(&seed.url).unwrap();
    b.give_back(budget, Duration::from_secs(60), Duration::ZERO)
        .unwrap();
    b.commit().unwrap();
    // Worker a still counts the seed as its site's work: its budget waits for b's pause.
    a.resolve(SITE);
    assert!(
        matches!(a.turn(), Turn::Over),
        "nothing is left anywhere: the worker ends"
    );
}
