use super::*;
use std::time::Duration;

const GOOD: &str = r#"
[crawl]
name = "t"
seeds = ["http://127.0.0.1:8080/"]
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact)"
[politeness]
min_delay = 0.5
"#;

fn parse(src: &str) -> Result<Profile, ProfileError> {
    Profile::parse(Path::new("/p/site.toml"), src)
}

#[test]
fn good_profile_gets_defaults() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.agent_token, "archiver");
    assert_eq!(p.politeness.min_delay, Duration::from_millis(500));
    assert_eq!(p.scope.max_hops, 20);
    assert_eq!(p.output_dir, Path::new("/p/crawls/example"));
    assert_eq!(p.warc_version, WarcVersion::V1_1);
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let src = GOOD.replace("min_delay = 0.5", "min_delay = 0.5\nmin_dealy = 3");
    let e = parse(&src).unwrap_err();
    assert_eq!(e.file, "/p/site.toml");
    assert_eq!(e.line, 9);
    assert_eq!(e.key, "politeness.min_dealy");
    assert!(e.message.contains("unknown key"), "{e}");
}

#[test]
fn wrong_type_names_the_key() {
    let src = GOOD.replace("min_delay = 0.5", "min_delay = \"fast\"");
    let e = parse(&src).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (8, "politeness.min_delay"), "{e}");
}

#[test]
fn short_delay_refused_off_loopback() {
    let src = GOOD.replace("http://127.0.0.1:8080/", "http://192.0.2.1/");
    let e = parse(&src).unwrap_err();
    assert_eq!(e.key, "politeness.min_delay");
    assert_eq!(e.line, 8);
    assert!(e.message.contains("loopback"), "{e}");
}

#[test]
fn user_agent_needs_contact_url() {
    let src = GOOD.replace("(+https://example.org/contact)", "(no contact)");
    let e = parse(&src).unwrap_err();
    assert_eq!(e.key, "identity.user_agent");
    assert_eq!(e.line, 6);
}

#[test]
fn missing_seeds_is_named() {
    let src = GOOD.replace("seeds = [\"http://127.0.0.1:8080/\"]\n", "");
    let e = parse(&src).unwrap_err();
    assert!(e.message.contains("seeds"), "{e}");
}

#[test]
fn bad_regex_and_version_are_named() {
    let src = format!("{GOOD}[scope]\nexclude = [\"(\"]\n");
    assert_eq!(parse(&src).unwrap_err().key, "scope.exclude");
    let src = format!("{GOOD}[output]\nwarc_version = \"2.0\"\n");
    let e = parse(&src).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("output.warc_version", 10));
}

#[test]
fn unrestricted_needs_a_reason_and_says_so_in_its_user_agent() {
    let off = format!("{GOOD}[robots]\nobey = false\n");
    let e = parse(&off).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("robots.obey", 10), "{e}");
    let p = parse(&format!(
        "{off}reason = \"legal deposit, letter 2026-11\"\n"
    ))
    .unwrap();
    assert_eq!(
        p.user_agent,
        "archiver-unrestricted/0.1 (+https://example.org/contact)"
    );
    assert_eq!(p.agent_token, "archiver-unrestricted");
    assert_eq!(p.robots_token, "archiver");
    assert_eq!(p.unrestricted_reason, "legal deposit, letter 2026-11");
}

#[test]
fn resolve_table_maps_names_and_counts_as_loopback() {
    let src = GOOD.replace("http://127.0.0.1:8080/", "http://site-a.test/")
        + "[resolve]\n\"site-a.test\" = \"127.0.0.5\"\n";
    let p = parse(&src).unwrap();
    assert_eq!(
        p.dns.overrides["site-a.test"],
        "127.0.0.5".parse::<IpAddr>().unwrap()
    );
    let bad = src.replace("127.0.0.5", "not-an-ip");
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.key, "resolve.site-a.test");
    assert_eq!(e.line, 10);
    let budget = format!("{GOOD}budget = \"server\"\n");
    assert_eq!(parse(&budget).unwrap_err().key, "politeness.budget");
}

#[test]
fn browser_table() {
    use crate::browser::RenderMode;
    let p = parse(GOOD).unwrap();
    assert_eq!(p.browser.render, RenderMode::Empty);
    assert_eq!(p.browser.max_share, 0.1);
    assert_eq!(p.browser.render_timeout, Duration::from_secs(120));
    assert!(p.browser.executable.is_none());
    let src = format!(
        "{GOOD}[browser]\nrender = \"all\"\nmax_share = 0.5\nexecutable = \"/opt/c/chrome\"\n\
         render_timeout = 30\n"
    );
    let p = parse(&src).unwrap();
    assert_eq!(p.browser.render, RenderMode::All);
    assert_eq!(p.browser.max_share, 0.5);
    assert_eq!(
        p.browser.executable.as_deref(),
        Some(Path::new("/opt/c/chrome"))
    );
    assert!(p
        .describe()
        .contains("[browser]\nrender = \"all\"\nmax_share = 0.5\n"));
    let none = format!("{GOOD}[browser]\nrender = \"none\"\n");
    assert_eq!(parse(&none).unwrap().browser.render, RenderMode::Never);
    let bad = format!("{GOOD}[browser]\nrender = \"sometimes\"\nmax_share = 2\n");
    let e = parse(&bad).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("browser.render", 10), "{e}");
    assert!(e.to_string().contains("browser.max_share"), "{e}");
    let zero = format!("{GOOD}[browser]\nrender_timeout = 0\n");
    assert_eq!(parse(&zero).unwrap_err().key, "browser.render_timeout");
}

#[test]
fn traps_table_and_referer() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.traps, crate::scope::traps::TrapSettings::default());
    assert!(p.send_referer);
    let src = format!(
        "{GOOD}[traps]\ncalendar = false\nrepeated_content = 0\nmax_url_chars = 500\n\
         calendar_years_ahead = 5\n"
    );
    let p = parse(&src).unwrap();
    assert!(!p.traps.calendar);
    assert_eq!(p.traps.repeated_content, 0);
    assert_eq!(p.traps.max_url_chars, 500);
    assert_eq!(p.traps.calendar_years_ahead, 5);
    let text = p.describe();
    assert!(
        text.contains("[traps]\nenabled = true\nmax_url_chars = 500\n"),
        "{text}"
    );
    assert!(text.contains("send_referer = true"), "{text}");
    let bad = format!("{GOOD}[traps]\nrepeated_param = -1\n");
    let e = parse(&bad).unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.line),
        ("traps.repeated_param", 10),
        "{e}"
    );
    assert!(e.message.contains("0 (off) or more"), "{e}");
    let typo = format!("{GOOD}[traps]\ncalender = false\n");
    assert!(parse(&typo).unwrap_err().message.contains("unknown key"));
    let off = format!("{GOOD}[identity]\n");
    assert!(
        parse(&off).is_err(),
        "a second [identity] table is a TOML error"
    );
    let no_referer = GOOD.replace(
        "user_agent = \"archiver/0.1 (+https://example.org/contact)\"",
        "user_agent = \"archiver/0.1 (+https://example.org/contact)\"\nsend_referer = false",
    );
    assert!(!parse(&no_referer).unwrap().send_referer);
}

#[test]
fn scope_rules_defaults_and_values() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.rules, RuleSettings::default());
    assert_eq!(p.rules.max_path_depth, 20);
    assert_eq!(p.rules.keep_mime[0].to_string(), "*/*");
    let src = format!(
        "{GOOD}[scope]\nsurt_prefixes = [\"example.com\", \"https://(org,site,)/docs/\"]\n\
         max_path_depth = 0\nmax_bytes_per_site = 5000000\n\
         keep_mime = [\"embeds\", \"application/pdf\", \"!video/*\"]\n"
    );
    let p = parse(&src).unwrap();
    assert_eq!(
        p.rules.surt_prefixes,
        ["http://(com,example,", "http://(org,site,)/docs/"]
    );
    assert_eq!(p.rules.max_path_depth, 0);
    assert_eq!(p.rules.max_bytes_per_site, 5_000_000);
    assert_eq!(p.rules.keep_mime.len(), 3);
    let text = p.describe();
    assert!(
        text.contains("embeds_off_site = false\nsurt_prefixes = [\"http://(com,example,\""),
        "{text}"
    );
    assert!(
        text.contains(
            "keep_mime = [\"embeds\", \"application/pdf\", \"!video/*\"]\n\n[politeness]"
        ),
        "{text}"
    );
}

#[test]
fn bad_scope_rules_name_file_line_and_key() {
    for (line, key) in [
        (
            "surt_prefixes = [\"ftp://example.com/\"]",
            "scope.surt_prefixes",
        ),
        ("surt_prefixes = [\"(com,example,\"]", "scope.surt_prefixes"),
        ("max_path_depth = -1", "scope.max_path_depth"),
        ("max_bytes_per_site = -5", "scope.max_bytes_per_site"),
        ("keep_mime = [\"embeds\", \"pdf\"]", "scope.keep_mime"),
        ("max_path_depth = \"deep\"", "scope.max_path_depth"),
        ("keep_mimes = []", "scope.keep_mimes"),
    ] {
        let src = format!("{GOOD}[scope]\nmax_hops = 3\n{line}\n");
        let e = parse(&src).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), (key, 11), "{line}: {e}");
        assert_eq!(e.file, "/p/site.toml");
    }
    let src = format!("{GOOD}[scope]\nkeep_mime = [\"text/\"]\n");
    let e = parse(&src).unwrap_err();
    assert!(e.message.contains("\"text/\""), "{e}");
}

#[test]
fn every_bad_value_of_scope_and_traps_is_reported() {
    let src = GOOD.to_string()
        + "[scope]\nmax_hops = -1\ninclude = [\"(\"]\nmax_path_depth = -2\nkeep_mime = [\"\"]\n"
        + "[traps]\nmax_url_chars = -1\ncalendar_min_year = 10000\n";
    let e = parse(&src).unwrap_err();
    let mut keys: Vec<&str> = e.all().map(|e| e.key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "scope.include",
            "scope.keep_mime",
            "scope.max_hops",
            "scope.max_path_depth",
            "traps.calendar_min_year",
            "traps.max_url_chars"
        ],
        "{e}"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let src = GOOD.replace(
        "min_delay = 0.5",
        "min_delay = 0.5\nmax_retries = -1\nbudget = \"server\"",
    ) + "[output]\nprefix = \"a b\"\nwarc_version = \"2\"\n";
    let e = parse(&src).unwrap_err();
    let keys: Vec<&str> = e.all().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "politeness.max_retries",
            "politeness.budget",
            "output.prefix",
            "output.warc_version"
        ],
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("/p/site.toml:9: politeness.max_retries"),
        "{text}"
    );
    assert!(
        text.contains("9 | max_retries = -1\n  |               ^^"),
        "{text}"
    );
    // Unknown keys and wrong types: all of them too, in file order.
    let src = GOOD.replace("min_delay = 0.5", "min_dealy = 0.5\nmax_delay = \"x\"");
    let e = parse(&src).unwrap_err();
    assert_eq!(e.count(), 2, "{e}");
    assert_eq!((e.line, e.more[0].line), (8, 9));
    assert!(e.message.contains("did you mean min_delay?"), "{e}");
    assert!(e.more[0].message.contains("must be a number"), "{e}");
}

#[test]
fn a_syntax_error_shows_its_line_with_a_caret() {
    let src = GOOD.replace("min_delay = 0.5", "min_delay = 0.5\nname = \"unclosed");
    let e = parse(&src).unwrap_err();
    assert_eq!(e.line, 9, "{e}");
    assert!(e.message.starts_with("TOML syntax error"), "{e}");
    let excerpt = e.excerpt.as_deref().unwrap_or("");
    assert!(excerpt.contains("9 | name = \"unclosed"), "{excerpt}");
    assert!(
        excerpt
            .lines()
            .last()
            .unwrap_or("")
            .trim_end()
            .ends_with('^'),
        "{excerpt}"
    );
    let src = "[crawl\nseeds = []\n";
    assert_eq!(parse(src).unwrap_err().line, 1);
}

#[test]
fn a_missing_file_says_so_plainly() {
    let e = Profile::load(Path::new("/nonexistent/site.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/nonexistent/site.toml: there is no such file"
    );
    let dir = tempfile::tempdir().unwrap();
    let e = Profile::load(dir.path()).unwrap_err();
    assert!(e.to_string().contains("a folder"), "{e}");
}

#[test]
fn the_reference_and_a_quick_profile_are_valid() {
    let p = Profile::parse(Path::new("/x/site.toml"), REFERENCE).unwrap();
    assert_eq!(p.politeness.min_delay, Duration::from_secs(5));
    let seeds = [
        "https://example.org/".to_string(),
        "http://a.example/x".to_string(),
    ];
    let text = quick_profile(&seeds, "https://me.example/bot", "example.org");
    let p = Profile::parse(Path::new("/c/q/profile.toml"), &text).unwrap();
    assert_eq!(p.seeds.len(), 2);
    assert_eq!(p.name, "example.org");
    assert_eq!(p.output_dir, Path::new("/c/q/."));
    assert!(
        p.user_agent.ends_with("(+https://me.example/bot)"),
        "{}",
        p.user_agent
    );
    assert_eq!(
        p.politeness.min_delay,
        Duration::from_secs(5),
        "the defaults"
    );
}

#[test]
fn frontier_database_and_lease() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.frontier, crate::frontier::FrontierSettings::default());
    let src = format!(
        "{GOOD}[frontier]\ndatabase = \"postgresql://crawl@db.example:5432/c\"\nlease_seconds = 5\n"
    );
    let p = parse(&src).unwrap();
    assert_eq!(
        p.frontier.database.as_deref(),
        Some("postgresql://crawl@db.example:5432/c")
    );
    assert_eq!(p.frontier.lease, Duration::from_secs(5));
    let src = format!("{GOOD}[frontier]\ndatabase = \"mysql://u:pw@h/c\"\n");
    let e = parse(&src).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("frontier.database", 10), "{e}");
    assert!(!e.message.contains("pw"), "{e}");
    let src = format!("{GOOD}[frontier]\nlease_seconds = 0.5\n");
    let e = parse(&src).unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.line),
        ("frontier.lease_seconds", 10),
        "{e}"
    );
}

#[test]
fn a_database_password_is_never_shown() {
    // A wrong scheme, a syntax error on the line, a wrong type: the quoted line is masked.
    for line in [
        "database = \"mysql://crawler:hunter2@db/c\"",
        "database = \"postgresql://crawler:hunter2@db/c\" oops",
        "database = [\"postgresql://crawler:hunter2@db/c\"]",
        "database = \"postgres://db/c?password=hunter2\" lease_seconds = 3",
    ] {
        let src = format!("{GOOD}[frontier]\n{line}\n");
        let e = parse(&src).unwrap_err().to_string();
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains(":10:") && e.contains("***"), "{e}");
    }
    // The caret stays under the value on the masked line.
    let src = format!("{GOOD}[frontier]\ndatabase = \"mysql://u:hunter2@db/c\"\n");
    let e = parse(&src).unwrap_err().to_string();
    let lines: Vec<&str> = e.lines().collect();
    let (text, caret) = (lines[lines.len() - 2], lines[lines.len() - 1]);
    let at = caret.find('^').unwrap();
    assert_eq!(&text[at..], "\"mysql://u:***@db/c\"", "{e}");
    assert_eq!(caret.trim_end().len() - at, text.len() - at, "{e}");
}

#[test]
fn loopback_detection() {
    assert!(is_loopback_host(&Url::parse("http://127.0.0.9/").unwrap()));
    assert!(is_loopback_host(&Url::parse("http://[::1]:81/").unwrap()));
    assert!(!is_loopback_host(&Url::parse("http://192.0.2.1/").unwrap()));
}
