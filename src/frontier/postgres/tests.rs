//! The PostgreSQL frontier against a real server of its own.

use super::*;
use crate::frontier::suite;
use crate::pg_cluster::PgCluster;

fn ident() -> CrawlIdentity {
    CrawlIdentity {
        name: "test".into(),
        seeds: vec!["http://a/".into(), "http://b/".into()],
    }
}

fn settings(url: String, worker: &str) -> PostgresSettings {
    PostgresSettings {
        url,
        worker: worker.into(),
        lease: Duration::from_secs(2),
    }
}

fn open(url: String, worker: &str) -> PostgresFrontier {
    PostgresFrontier::open(&settings(url, worker), &ident()).unwrap()
}

/// The shared suite, each check on a fresh database of one real server.
#[test]
fn shared_suite_on_a_real_server() {
    let checks = suite::all();
    let names: Vec<String> = (0..checks.len()).map(|i| format!("suite{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let pg = PgCluster::start(&refs);
    for (check, db) in checks.iter().zip(&names) {
        let mut f = open(pg.url(db), "w1");
        check(&mut f);
        f.commit().unwrap();
        // A second worker joining sees the same crawl.
        let before = suite::snapshot(&mut f);
        let mut g = open(pg.url(db), "w1");
        assert_eq!(suite::snapshot(&mut g), before, "{db}");
    }
}

#[test]
fn site_state_and_digests_between_two_workers() {
    let pg = PgCluster::start(&["state"]);
    let mut a = open(pg.url("state"), "a");
    let mut b = open(pg.url("state"), "b");
    suite::check_site_state_between_workers(&mut a, &mut b);
    // Every call is counted, and costs about one round trip once its statement is prepared.
    assert!(
        a.calls() > 5 && a.round_trips() >= a.calls(),
        "{} {}",
        a.calls(),
        a.round_trips()
    );
}

#[test]
fn an_older_format_is_brought_up_to_date_and_a_newer_one_refused() {
    let pg = PgCluster::start(&["old"]);
    let url = pg.url("old");
    let mut a = open(url.clone(), "a");
    a.push(
        "http://s",
        Candidate::seed(Url::parse("http://s/1").unwrap()),
    )
    .unwrap();
    a.leave().unwrap();
    drop(a);
    // Back to format 1, as the last release left its crawls.
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(
        "SET search_path = archiver; ALTER TABLE sites DROP COLUMN refusals; \
         ALTER TABLE budgets DROP COLUMN backoff_ms; DROP TABLE robots, digests; \
         ALTER TABLE workers DROP COLUMN batch_at, DROP COLUMN batch_done, \
         DROP COLUMN batch_queued, DROP COLUMN mark_done, DROP COLUMN mark_at, \
         DROP COLUMN prev_done, DROP COLUMN prev_at; \
         UPDATE crawl SET format = 1; UPDATE workers SET done = 5 WHERE name = 'a'",
    )
    .unwrap();
    // `status` reads an older crawl as it is (it never migrates): no marks, no batches.
    let st = status(&url, Duration::from_secs(2)).unwrap();
    assert!(
        st.workers
            .iter()
            .all(|w| w.last_batch_age_seconds.is_none()),
        "{st:?}"
    );
    let mut b = open(url.clone(), "b");
    // A worker already there counts its rate from the migration, not from its start.
    let marks: (i64, i64) = c
        .query_one(
            "SELECT mark_done, prev_done FROM workers WHERE name = 'a'",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert_eq!(marks, (5, 5));
    assert_eq!(b.sites_with_work().unwrap(), ["http://s"]);
    assert_eq!(b.count_refusal("http://s", true).unwrap(), Some(1));
    let format: i32 = c.query_one("SELECT format FROM crawl", &[]).unwrap().get(0);
    assert_eq!(format, 3);
    // The worker columns of format 3 are there and written: `status` reads them.
    b.done(&Url::parse("http://s/1").unwrap()).unwrap();
    b.commit().unwrap();
    let st = status(&url, Duration::from_secs(2)).unwrap();
    let wb = st.workers.iter().find(|w| w.name == "b").unwrap();
    assert!(wb.last_batch_age_seconds.is_some(), "{wb:?}");
    b.leave().unwrap();
    c.batch_execute("UPDATE crawl SET format = 4").unwrap();
    let msg = PostgresFrontier::open(&settings(url, "c"), &ident())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("frontier format 4"), "{msg}");
}

#[test]
fn crawl_identity_workers_leases_and_reaping() {
    let pg = PgCluster::start(&["crawl"]);
    let url = pg.url("crawl");
    let mut a = open(url.clone(), "a");
    // Another profile's crawl is refused, naming both.
    let other = CrawlIdentity {
        name: "other".into(),
        ..ident()
    };
    let msg = PostgresFrontier::open(&settings(url.clone(), "x"), &other)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("\"test\"") && msg.contains("\"other\""),
        "{msg}"
    );
    assert!(msg.contains(&format!("127.0.0.1:{}", pg.port)), "{msg}");

    // Two workers: a URL both find is queued once.
    let mut b = open(url.clone(), "b");
    let u = Url::parse("http://s/1").unwrap();
    assert!(a.mark_seen(&u).unwrap());
    assert!(b.mark_seen(&u).unwrap());
    a.push("http://s", Candidate::seed(u.clone())).unwrap();
    b.push("http://s", Candidate::seed(u.clone())).unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    assert_eq!(a.sites_with_work().unwrap(), ["http://s"]);
    assert_eq!(a.queued("http://s"), 1);
    assert_eq!(a.accepted("http://s"), 1);

    // A budget is held by one worker at a time, and keeps its pause when it moves.
    assert!(matches!(a.lease("127.0.0.9").unwrap(), Lease::Granted(d) if d.is_zero()));
    assert!(matches!(b.lease("127.0.0.9").unwrap(), Lease::Busy));
    a.give_back("127.0.0.9", Duration::from_secs(30), Duration::ZERO)
        .unwrap();
    // Given back with the next commit (one statement with the finished URL).
    assert!(matches!(b.lease("127.0.0.9").unwrap(), Lease::Busy));
    a.commit().unwrap();
    match b.lease("127.0.0.9").unwrap() {
        Lease::Granted(d) => assert!(d > Duration::from_secs(25), "{d:?}"),
        Lease::Busy => panic!("given back but still busy"),
    }

    // A suspension and a Retry-After floor recorded by one worker are seen by the other;
    // larger values win.
    let until = crate::politeness::epoch_secs(std::time::SystemTime::now()) + 3600;
    let facts = SiteFacts {
        round: 2,
        until: Some(until),
        retry_after: Some(Duration::from_secs(7)),
    };
    a.save_site_facts("http://t", &facts).unwrap();
    let smaller = SiteFacts {
        round: 1,
        until: Some(until - 100),
        retry_after: None,
    };
    b.save_site_facts("http://t", &smaller).unwrap();
    assert_eq!(b.site_facts("http://t").unwrap(), Some(facts.clone()));
    assert_eq!(
        b.suspended_sites().unwrap(),
        [("http://t".to_string(), facts)]
    );
    assert_eq!(b.site_facts("http://nowhere").unwrap(), None);

    // b takes the URL and dies: after the lease a's poll queues it again.
    let c = b.pop("http://s").unwrap().unwrap();
    assert_eq!(c.url, u);
    assert!(!a.idle_everywhere().unwrap());
    drop(b); // no heartbeat any more, nor sign-off
    assert!(a.poll().unwrap().is_empty());
    // a's own heartbeat goes on while b's stops.
    std::thread::sleep(Duration::from_millis(2600));
    assert_eq!(a.poll().unwrap(), ["http://s"]);
    // b's lease lapsed too.
    assert!(matches!(a.lease("127.0.0.9").unwrap(), Lease::Granted(_)));
    let again = a.pop("http://s").unwrap().unwrap();
    assert_eq!(again.url, u);
    a.done(&again.url).unwrap();
    a.commit().unwrap();
    assert!(a.idle_everywhere().unwrap());
    let st = status(&url, Duration::from_secs(2)).unwrap();
    assert_eq!(st.crawl, "test");
    assert_eq!((st.queued, st.in_flight, st.seen), (0, 0, 1));
    let wa = st.workers.iter().find(|w| w.name == "a").unwrap();
    assert!(wa.alive && wa.done == 1, "{wa:?}");
    // Its last batch (the done-mark), its lease still held, its rate since it started.
    assert_eq!((wa.last_batch_done, wa.last_batch_queued), (1, 0), "{wa:?}");
    assert!(
        wa.last_batch_age_seconds
            .is_some_and(|s| (0.0..60.0).contains(&s)),
        "{wa:?}"
    );
    assert_eq!(wa.leased, ["127.0.0.9"], "{wa:?}");
    assert!(wa.rate_last_minute > 0.0, "{wa:?}");
    assert!(
        (st.rate_last_minute - wa.rate_last_minute).abs() < 1e-9,
        "{st:?}"
    );
    let wb = st.workers.iter().find(|w| w.name == "b").unwrap();
    assert!(!wb.alive, "{wb:?}");
    assert_eq!(
        wb.rate_last_minute, 0.0,
        "a gone worker has no rate: {wb:?}"
    );
    a.leave().unwrap();
}

#[test]
fn an_unreachable_database_is_a_clear_error() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgresql://me:secret@127.0.0.1:{port}/crawl");
    let msg = PostgresFrontier::open(&settings(url, "w"), &ident())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("cannot connect"), "{msg}");
    assert!(!msg.contains("secret"), "{msg}");
    let msg = PostgresFrontier::open(&settings("postgresql://[".into(), "w"), &ident())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("not a PostgreSQL address"), "{msg}");
}
