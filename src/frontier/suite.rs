//! The frontier test suite: behaviour every [`Frontier`] must show, run against the memory,
//! SQLite and PostgreSQL frontiers (each module's tests call [`all`] on a fresh store).

use url::Url;

use std::time::Duration;

use crate::frontier::{Candidate, FirstCapture, Frontier, Lease, SharedRobots};

pub(crate) fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

pub(crate) fn cand(s: &str, path: &str) -> Candidate {
    Candidate {
        url: url(s),
        path: path.to_string(),
        via: None,
        attempts: 0,
    }
}

/// Everything observable about a candidate, for comparing two frontiers.
pub(crate) fn show(c: &Candidate) -> String {
    format!(
        "{} {} {} {}",
        c.url,
        c.path,
        c.via.as_ref().map_or("-", Url::as_str),
        c.attempts
    )
}

pub(crate) fn urls(cs: &[Candidate]) -> Vec<String> {
    cs.iter().map(|c| c.url.path().to_string()).collect()
}

pub(crate) fn sorted_flight(f: &mut dyn Frontier) -> Vec<String> {
    let mut v: Vec<String> = f
        .in_flight()
        .unwrap()
        .iter()
        .map(|(s, c)| format!("{s} {}", show(c)))
        .collect();
    v.sort();
    v
}

pub(crate) fn check_requisites_before_the_next_page(f: &mut dyn Frontier) {
    f.push("s", cand("http://s/a.png", "LE")).unwrap();
    f.push("s", cand("http://s/1", "L")).unwrap();
    f.push("s", cand("http://s/b.css", "LLE")).unwrap();
    f.push("s", cand("http://s/2", "LL")).unwrap();
    f.push("s", cand("http://s/3", "LR")).unwrap();
    f.push("s", cand("http://s/c.woff2", "LEER")).unwrap();
    assert_eq!(f.total_queued(), 6);
    assert_eq!(f.queued("s"), 6);
    let order: Vec<String> = std::iter::from_fn(|| f.pop("s").unwrap())
        .map(|c| c.url.path().to_string())
        .collect();
    assert_eq!(order, ["/a.png", "/b.css", "/c.woff2", "/1", "/2", "/3"]);
    assert_eq!(f.total_queued(), 0);
    assert_eq!(f.queued("s"), 0);
    assert!(f.pop("s").unwrap().is_none());
    assert!(f.pop("nowhere").unwrap().is_none());
    assert_eq!(f.in_flight().unwrap().len(), 6);
    assert_eq!(f.accepted("s"), 6);
    assert_eq!(f.accepted("nowhere"), 0);
}

pub(crate) fn check_seen(f: &mut dyn Frontier) {
    assert!(f.mark_seen(&url("http://S/a/../b#x")).unwrap());
    assert!(!f.mark_seen(&url("http://s:80/b")).unwrap());
    assert!(!f.mark_seen(&url("http://s/b#other")).unwrap());
    assert!(f.mark_seen(&url("https://s/b")).unwrap());
    assert!(f.mark_seen(&url("http://s/b?q")).unwrap());
    assert!(!f.mark_seen(&url("http://s/b?q")).unwrap());
}

pub(crate) fn check_drain(f: &mut dyn Frontier) {
    f.push("s", cand("http://s/e", "LE")).unwrap();
    f.push("s", cand("http://s/1", "L")).unwrap();
    f.push("s", cand("http://s/2", "L")).unwrap();
    f.push("t", cand("http://t/1", "L")).unwrap();
    assert_eq!(urls(&f.drain("s").unwrap()), ["/1", "/2", "/e"]);
    assert_eq!(f.total_queued(), 1);
    assert_eq!(f.queued("s"), 0);
    assert_eq!(f.accepted("s"), 3);
    assert!(f.drain("s").unwrap().is_empty());
    assert!(f.drain("nowhere").unwrap().is_empty());
    assert_eq!(f.sites_with_work().unwrap(), ["t"]);
    assert!(f.pop("s").unwrap().is_none());
    // A drained site takes new work again.
    f.push("s", cand("http://s/3", "L")).unwrap();
    assert_eq!(
        f.pop("s").unwrap().map(|c| c.url.path().to_string()),
        Some("/3".into())
    );
}

pub(crate) fn check_flight_and_retry(f: &mut dyn Frontier) {
    let mut c = cand("http://s/1", "LL");
    c.via = Some(url("http://s/"));
    f.push("s", c).unwrap();
    f.push("s", cand("http://s/2", "L")).unwrap();
    let mut got = f.pop("s").unwrap().unwrap();
    assert_eq!(show(&got), "http://s/1 LL http://s/ 0");
    assert_eq!(sorted_flight(f), ["s http://s/1 LL http://s/ 0"]);
    // A retry goes behind what is queued, leaves the in-flight list, and is not counted.
    got.attempts += 1;
    f.push_retry("s", got).unwrap();
    assert!(f.in_flight().unwrap().is_empty());
    assert_eq!(f.accepted("s"), 2);
    assert_eq!(f.queued("s"), 2);
    assert_eq!(f.total_queued(), 2);
    let second = f.pop("s").unwrap().unwrap();
    assert_eq!(second.url.path(), "/2");
    let again = f.pop("s").unwrap().unwrap();
    assert_eq!(show(&again), "http://s/1 LL http://s/ 1");
    assert_eq!(f.in_flight().unwrap().len(), 2);
    // done takes a URL off the list, whatever its fragment; unknown URLs are ignored.
    f.done(&url("http://s/2#frag")).unwrap();
    f.done(&url("http://elsewhere/")).unwrap();
    assert_eq!(sorted_flight(f), ["s http://s/1 LL http://s/ 1"]);
    // Pushing an in-flight URL again also takes it off the list.
    f.push("s", cand("http://s/1", "LL")).unwrap();
    assert!(f.in_flight().unwrap().is_empty());
    assert_eq!(f.accepted("s"), 3);
}

pub(crate) fn check_sites_with_work(f: &mut dyn Frontier) {
    assert!(f.sites_with_work().unwrap().is_empty());
    f.push("a", cand("http://a/1", "")).unwrap();
    f.push("b", cand("http://b/1", "L")).unwrap();
    f.push("c", cand("http://c/1", "L")).unwrap();
    f.pop("b").unwrap();
    let mut sites = f.sites_with_work().unwrap();
    sites.sort();
    assert_eq!(sites, ["a", "c"]);
    assert_eq!(f.total_queued(), 2);
    assert_eq!(f.accepted("b"), 1);
}

pub(crate) fn check_seen_in_batches(f: &mut dyn Frontier) {
    assert!(f.mark_seen(&url("http://s/old")).unwrap());
    let (a, b, old, a_again) = (
        url("http://s/a"),
        url("http://s/b#x"),
        url("http://s/old#y"),
        url("http://S/a"),
    );
    let got = f.mark_seen_all(&[&a, &b, &old, &a_again]).unwrap();
    assert_eq!(got, [true, true, false, false]);
    assert!(f.mark_seen_all(&[]).unwrap().is_empty());
    assert_eq!(f.mark_seen_all(&[&url("http://s/b")]).unwrap(), [false]);
    f.commit().unwrap();
    assert!(!f.mark_seen(&url("http://s/a")).unwrap());
}

/// Every shared check, in a fixed order.
pub(crate) fn all() -> Vec<fn(&mut dyn Frontier)> {
    vec![
        check_requisites_before_the_next_page,
        check_seen,
        check_seen_in_batches,
        check_drain,
        check_flight_and_retry,
        check_sites_with_work,
    ]
}

/// What another handle on the same store must see after a commit (a reopen, another worker).
pub(crate) fn snapshot(f: &mut dyn Frontier) -> (usize, Vec<String>, Vec<String>) {
    let mut sites = f.sites_with_work().unwrap();
    sites.sort();
    (f.total_queued(), sorted_flight(f), sites)
}

#[test]
fn memory_frontier_passes_the_suite() {
    for check in all() {
        check(&mut crate::frontier::MemoryFrontier::default());
    }
    check_nothing_shared(&mut crate::frontier::MemoryFrontier::default());
}

/// A frontier of one process shares nothing: the crawl's own state is all there is.
pub(crate) fn check_nothing_shared(f: &mut dyn Frontier) {
    assert!(!f.shared());
    assert_eq!(f.count_refusal("s", true).unwrap(), None);
    assert_eq!(f.shared_robots("s", Duration::from_secs(60)).unwrap(), None);
    let robots = SharedRobots {
        status: 200,
        body: b"User-agent: *\nDisallow: /x\n".to_vec(),
        age: Duration::ZERO,
    };
    f.save_robots("s", &robots).unwrap();
    assert_eq!(f.shared_robots("s", Duration::from_secs(60)).unwrap(), None);
    assert!(f.shared_digests().is_none());
    assert_eq!(
        f.lease("127.0.0.1").unwrap(),
        Lease::Granted(Duration::ZERO)
    );
    f.give_back("127.0.0.1", Duration::from_secs(9), Duration::from_secs(20))
        .unwrap();
    assert_eq!(f.shared_backoff("127.0.0.1"), None);
    assert_eq!(f.database_round_trips(), 0);
}

/// Two workers (`a`, `b`) of one shared crawl: what one learns about a site or a payload,
/// the other knows.
pub(crate) fn check_site_state_between_workers(a: &mut dyn Frontier, b: &mut dyn Frontier) {
    // robots.txt: fetched by a, read by b while valid, with its age.
    let robots = SharedRobots {
        status: 200,
        body: b"User-agent: *\nDisallow: /private\n".to_vec(),
        age: Duration::from_secs(100),
    };
    a.save_robots("http://s", &robots).unwrap();
    let got = b
        .shared_robots("http://s", Duration::from_secs(3600))
        .unwrap()
        .unwrap();
    assert_eq!((got.status, &got.body), (200, &robots.body));
    assert!(
        got.age >= Duration::from_secs(100) && got.age < Duration::from_secs(160),
        "{got:?}"
    );
    // Too old for the caller: fetched again.
    assert_eq!(
        b.shared_robots("http://s", Duration::from_secs(50))
            .unwrap(),
        None
    );
    assert_eq!(
        b.shared_robots("http://nowhere", Duration::from_secs(3600))
            .unwrap(),
        None
    );
    // A fresher answer replaces it; an older one does not.
    let newer = SharedRobots {
        status: 404,
        body: Vec::new(),
        age: Duration::ZERO,
    };
    b.save_robots("http://s", &newer).unwrap();
    a.save_robots("http://s", &robots).unwrap();
    assert_eq!(
        a.shared_robots("http://s", Duration::from_secs(3600))
            .unwrap()
            .unwrap()
            .status,
        404
    );

    // Refusals in a row count across workers; b learns a's count with its next pop of the
    // site, and its good answer clears it for both.
    assert_eq!(a.count_refusal("http://s", true).unwrap(), Some(1));
    assert_eq!(b.count_refusal("http://s", true).unwrap(), Some(2));
    assert_eq!(a.count_refusal("http://s", true).unwrap(), Some(3));
    a.push("http://s", cand("http://s/1", "L")).unwrap();
    a.commit().unwrap();
    assert!(b.pop("http://s").unwrap().is_some());
    assert_eq!(b.count_refusal("http://s", false).unwrap(), Some(0));
    assert_eq!(a.count_refusal("http://s", true).unwrap(), Some(1));
    // b knew of no refusal since its reset: it learns a's with its next pop, then clears it.
    a.push("http://s", cand("http://s/2", "L")).unwrap();
    a.commit().unwrap();
    assert!(b.pop("http://s").unwrap().is_some());
    assert_eq!(b.count_refusal("http://s", false).unwrap(), Some(0));
    assert_eq!(a.count_refusal("http://s", true).unwrap(), Some(1));

    // A budget's backoff goes to its next holder.
    assert!(matches!(a.lease("127.0.0.7").unwrap(), Lease::Granted(_)));
    assert_eq!(a.shared_backoff("127.0.0.7"), Some(Duration::ZERO));
    a.give_back(
        "127.0.0.7",
        Duration::from_millis(10),
        Duration::from_secs(40),
    )
    .unwrap();
    a.commit().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(matches!(b.lease("127.0.0.7").unwrap(), Lease::Granted(_)));
    assert_eq!(b.shared_backoff("127.0.0.7"), Some(Duration::from_secs(40)));

    // A payload a archived is found by b; the first capture stays the one named.
    let mut da = a.shared_digests().unwrap();
    let mut db = b.shared_digests().unwrap();
    assert_eq!(db.find("sha1:AAAA").unwrap(), None);
    let first = FirstCapture {
        uri: "http://s/1".into(),
        date: "2026-01-01T00:00:00Z".into(),
        record_id: Some("<urn:uuid:1>".into()),
    };
    da.add("sha1:AAAA", first.clone());
    // add is not waited for: a find on the same connection comes after it.
    assert_eq!(da.find("sha1:AAAA").unwrap(), Some(first.clone()));
    db.add(
        "sha1:AAAA",
        FirstCapture {
            uri: "http://s/2".into(),
            ..first.clone()
        },
    );
    assert_eq!(db.find("sha1:AAAA").unwrap(), Some(first));
}
