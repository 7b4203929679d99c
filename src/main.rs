//! The `archiver` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use archiver::config::Profile;

// The clap definitions, apart from what the commands do.
#[path = "main/cli.rs"]
mod cli;

use cli::{AboutFormat, Cli, Command, ControlOrder, DiffFormat, OptoutCommand, ProfileCommand};

// mimalloc instead of glibc's malloc: at 10,000 sites glibc kept the memory the requests in
// flight freed, so the RSS grew with the crawl, and allocation was a fifth of the CPU
// (tools/bench/RESULTS.md, "Many sites: the memory allocator", where both are measured).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ARCHIVER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match (cli.command, cli.profile) {
        (
            Some(Command::Crawl {
                profile: Some(profile),
                patch,
                ..
            }),
            _,
        ) => crawl(profile, patch.as_deref()),
        (None, Some(profile)) => crawl(profile, None),
        (
            Some(Command::Crawl {
                profile: None,
                urls,
                contact,
                output,
                ..
            }),
            _,
        ) => quick_crawl(&urls, contact.as_deref(), output),
        (
            Some(Command::About {
                profile,
                output,
                format,
            }),
            _,
        ) => about(&profile, output.as_deref(), format),
        (
            Some(Command::Profile {
                command: ProfileCommand::Check { file },
            }),
            _,
        ) => check(file),
        (
            Some(Command::Profile {
                command: ProfileCommand::Init { file },
            }),
            _,
        ) => init(&file),
        (Some(Command::Status { profile, json }), _) => status(&profile, json),
        (Some(Command::Control { profile, order }), _) => control(&profile, order),
        (Some(Command::Index { warcs, output }), _) => index(&warcs, output.as_deref()),
        (
            Some(Command::Diff {
                old,
                new,
                format,
                output,
                pywb,
                url,
                all,
            }),
            _,
        ) => diff(
            &old,
            &new,
            (format, all),
            output.as_deref(),
            pywb.as_deref(),
            url.as_deref(),
        ),
        (Some(Command::Optout { command }), _) => optout(command),
        (
            Some(Command::Qa {
                crawl,
                pages,
                all,
                output,
                json,
                compare,
                missing,
                browser,
                tabs,
                timeout,
            }),
            _,
        ) => qa(archiver::commands::qa::QaOptions {
            crawl,
            pages: match (all, pages) {
                (true, _) => None,
                (false, n) => Some(n.unwrap_or(archiver::commands::qa::DEFAULT_PAGES)),
            },
            report: output,
            json,
            compare,
            missing,
            browser,
            tabs: tabs.max(1),
            timeout: std::time::Duration::from_secs_f64(timeout.clamp(1.0, 3600.0)),
        }),
        (Some(Command::Verify { warcs, index }), _) => verify(&warcs, &index),
        (
            Some(Command::Wacz {
                crawl,
                output,
                title,
                main_page,
            }),
            _,
        ) => wacz(archiver::commands::wacz::WaczOptions {
            crawl_dir: crawl,
            output,
            title,
            main_page,
        }),
        (None, None) => {
            eprintln!("archiver: nothing to do; try `archiver crawl --profile FILE` or --help");
            ExitCode::from(2)
        }
    }
}

/// `archiver control`: 0 done, 1 refused, 2 bad profile or arguments, or no running crawl.
fn control(path: &std::path::Path, order: ControlOrder) -> ExitCode {
    use archiver::commands::control::{render_status, send, Endpoint, Order};
    let profile = match load(path) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (order, json) = match order {
        ControlOrder::Pause => (Order::Pause, true),
        ControlOrder::Resume => (Order::Resume, true),
        ControlOrder::Report => (Order::Report, true),
        ControlOrder::Seed { urls } => (Order::Seeds(urls), true),
        ControlOrder::Exclude { rule, regex } => (Order::Exclude { rule, regex }, true),
        ControlOrder::Site { site, order } => {
            let (verb, delay) = match order {
                cli::SiteOrder::Delay { seconds } => ("delay", Some(seconds)),
                cli::SiteOrder::Hold => ("hold", None),
                cli::SiteOrder::Release => ("release", None),
                cli::SiteOrder::Retire => ("retire", None),
            };
            let verb = verb.to_string();
            (Order::Site { site, verb, delay }, true)
        }
        ControlOrder::Status { json } => (Order::Status, json),
    };
    let answer = Endpoint::of(&profile).and_then(|ep| send(&ep, &order));
    match answer {
        Ok((200, v)) if json => {
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Ok((200, v)) => {
            print!("{}", render_status(&v));
            ExitCode::SUCCESS
        }
        Ok((code, v)) => {
            let why = v.get("error").and_then(|e| e.as_str()).map(str::to_string);
            eprintln!(
                "archiver: refused ({code}): {}",
                why.unwrap_or_else(|| v.to_string())
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("archiver: {e}");
            ExitCode::from(exit::USAGE)
        }
    }
}

/// `archiver status`: 0 printed, 2 bad profile or not a shared crawl, 1 database error.
fn status(path: &std::path::Path, json: bool) -> ExitCode {
    use archiver::commands::status::{self, StatusError};
    let profile = match load(path) {
        Ok(p) => p,
        Err(code) => return code,
    };
    match status::read(&profile) {
        Ok(s) if json => {
            println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Ok(s) => {
            print!("{}", status::render(&s));
            ExitCode::SUCCESS
        }
        Err(e @ StatusError::NotShared(_)) => {
            eprintln!("archiver: {e}");
            ExitCode::from(exit::USAGE)
        }
        Err(e) => {
            eprintln!("archiver: {e}");
            ExitCode::FAILURE
        }
    }
}

fn load(path: &std::path::Path) -> Result<Profile, ExitCode> {
    Profile::load(path).map_err(|e| {
        match e.count() {
            1 => eprintln!("archiver: bad profile: {e}"),
            n => eprintln!("archiver: bad profile ({n} problems):\n{e}"),
        }
        ExitCode::from(exit::USAGE)
    })
}

/// `archiver profile init FILE`: the reference profile, never over an existing file.
fn init(path: &std::path::Path) -> ExitCode {
    use std::io::Write as _;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
    let written = match file {
        Ok(mut f) => f.write_all(archiver::config::REFERENCE.as_bytes()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "archiver: {} already exists; it is left as it is (choose another name, or \
                 remove it first)",
                path.display()
            );
            return ExitCode::from(exit::USAGE);
        }
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        eprintln!("archiver: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    eprintln!(
        "archiver: wrote {p}\n  Set [crawl] seeds and the contact URL in [identity] user_agent, \
         then:\n    archiver profile check {p}\n    archiver crawl --profile {p}",
        p = shell_word(&path.display().to_string())
    );
    ExitCode::SUCCESS
}

/// `archiver crawl URL… --contact URL [-o DIR]`: writes DIR/profile.toml from the defaults
/// (so `archiver crawl --profile DIR/profile.toml` resumes it), then runs it. Every rule of a
/// profile crawl applies, the 5 s floor included.
fn quick_crawl(urls: &[String], contact: Option<&str>, output: Option<PathBuf>) -> ExitCode {
    let Some(contact) = contact else {
        eprintln!(
            "archiver: a crawl without --profile needs --contact URL: a page or address where \
             webmasters can reach you (it goes into the User-Agent), e.g. --contact \
             https://example.org/about-our-crawler"
        );
        return ExitCode::from(exit::USAGE);
    };
    if !(contact.starts_with("http://") || contact.starts_with("https://")) {
        eprintln!(
            "archiver: --contact must be an http:// or https:// URL (a page about your crawl, \
             with a way to reach you), not {contact:?}"
        );
        return ExitCode::from(exit::USAGE);
    }
    // A bare host name is taken as its https:// home page, as browsers do.
    let seeds: Vec<String> = urls
        .iter()
        .map(|u| {
            if u.contains("://") {
                u.clone()
            } else {
                format!("https://{u}")
            }
        })
        .collect();
    let host = seeds
        .first()
        .and_then(|s| url::Url::parse(s).ok())
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "crawl".to_string());
    let dir = output.unwrap_or_else(|| PathBuf::from("crawls").join(&host));
    let path = dir.join("profile.toml");
    let text = archiver::config::quick_profile(&seeds, contact, &host);
    if let Err(e) = Profile::parse(&path, &text) {
        eprintln!("archiver: cannot crawl that: {e}");
        return ExitCode::from(exit::USAGE);
    }
    match std::fs::read_to_string(&path) {
        Ok(existing) if existing == text => {
            eprintln!(
                "archiver: {} exists: going on with that crawl",
                path.display()
            );
        }
        Ok(_) => {
            eprintln!(
                "archiver: {} already exists and describes another crawl; resume it with \
                 `archiver crawl --profile {}`, or choose another -o DIR",
                path.display(),
                shell_word(&path.display().to_string())
            );
            return ExitCode::from(exit::USAGE);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let written = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, &text));
            if let Err(e) = written {
                eprintln!("archiver: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            eprintln!(
                "archiver: wrote {p} (edit it to change the crawl; resume with `archiver crawl \
                 --profile {p}`)",
                p = shell_word(&path.display().to_string())
            );
        }
        Err(e) => {
            eprintln!("archiver: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    crawl(path, None)
}

/// `archiver about`: the page for webmasters, from the profile.
fn about(
    profile: &std::path::Path,
    output: Option<&std::path::Path>,
    format: Option<AboutFormat>,
) -> ExitCode {
    use archiver::commands::about::{page, Format};
    let p = match load(profile) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let html_file = output
        .and_then(|o| o.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let format = match format {
        Some(AboutFormat::Html) => Format::Html,
        Some(AboutFormat::Markdown) => Format::Markdown,
        None if html_file => Format::Html,
        None => Format::Markdown,
    };
    let text = page(&p, format);
    match output {
        Some(path) => {
            let written =
                archiver::warc::save_atomically(path, |out| out.write_all(text.as_bytes()));
            if let Err(e) = written {
                eprintln!("archiver: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            let contact = archiver::commands::about::contact_url(&p.user_agent).unwrap_or("-");
            eprintln!(
                "archiver: wrote {}; publish it at {contact} (the contact URL of the User-Agent)",
                path.display()
            );
        }
        None => print!("{text}"),
    }
    ExitCode::SUCCESS
}

fn check(path: PathBuf) -> ExitCode {
    match load(&path) {
        Ok(p) => {
            print!("{}", p.describe());
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

/// Exit codes of `archiver crawl`.
mod exit {
    /// The profile or the arguments are wrong; nothing was crawled.
    pub const USAGE: u8 = 2;
    /// The crawl ended but not one seed could be fetched (DNS, connection, robots.txt).
    pub const NO_SEED: u8 = 3;
    /// Stopped by Ctrl-C or SIGTERM: run the same command again to resume.
    pub const INTERRUPTED: u8 = 130;
}

/// The async worker threads a crawl runs on unless TOKIO_WORKER_THREADS says otherwise (see
/// `crawl`).
const WORKERS: usize = 2;

fn crawl(path: PathBuf, patch: Option<&std::path::Path>) -> ExitCode {
    let profile = match load(&path) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let patch = match patch.map(archiver::commands::qa::missing::read) {
        None => Vec::new(),
        Some(Ok(lines)) => lines,
        Some(Err(e)) => {
            eprintln!("archiver: --patch: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let name = profile.name.clone();
    let out = profile.output_dir.clone();
    let wacz = profile
        .wacz
        .then(|| archiver::commands::wacz::for_crawl(&profile));
    // The blocking pool runs name lookups (getaddrinfo) and the parsing of the rare big page.
    // tokio's default lets it grow to 512 threads, which a start with thousands of sites would
    // reach; each thread's allocator arena stays after it goes. 64 lookups at once is plenty.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().max_blocking_threads(64);
    // Two async workers, so a crawl can use two cores. Issue 15 chose one (in the steady
    // state of `many_sites.sh`, every worker beyond the first mostly woke up, found little
    // and went back to sleep: 0.141 against 0.20 ms of CPU a request at 10,000 sites,
    // tools/bench/RESULTS.md "Many sites: one async worker"); but the start of a many-sites
    // crawl is bound by one core: 10,000 robots.txt and 10,000 first pages due at once. At
    // that start (`tools/bench/nginx_sites.sh single 10000`, idle machine) two workers took
    // efficiency from 0.918 to 0.933 for 0.226 against 0.190 ms of CPU a request, and at
    // 30,000 sites the crawl needs both cores (tools/bench/RESULTS-scale.md, issue 25).
    // Blocking work (a big record, a big page, name lookups) still runs beside them, on the
    // blocking pool.
    // TOKIO_WORKER_THREADS, when set, decides instead.
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(WORKERS);
    }
    let runtime = match builder.build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("archiver: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(archiver::crawl::run_patched(profile, patch)) {
        Ok(archiver::crawl::Ended::AlreadyComplete(stats)) => {
            already_complete(&name, &path, &out, &stats)
        }
        Ok(archiver::crawl::Ended::Ran(stats)) => {
            let resume = resume_command(&path);
            let summary = stats.summary(&name, &out, Some(&resume));
            eprint!("{}", archiver::logs::report::colour_summary(&summary));
            if let Err(e) = std::fs::write(out.join("summary.txt"), &summary) {
                eprintln!("archiver: cannot write summary.txt: {e}");
            }
            // Only a crawl that ended: an interrupted one is resumed, and would pack again.
            if let (Some(opts), false) = (&wacz, stats.interrupted) {
                if let Err(e) = archiver::commands::wacz::pack_crawl(opts) {
                    eprintln!("archiver: {e:#}");
                    return ExitCode::FAILURE;
                }
            }
            // 130, as for any program stopped by Ctrl-C: scripts can tell an interrupted crawl
            // (resumable) from one that ended.
            if stats.interrupted {
                ExitCode::from(exit::INTERRUPTED)
            } else if stats.no_seed_answered() {
                eprintln!(
                    "archiver: no seed could be fetched; nothing was archived from them:\n{}",
                    stats.seed_failures()
                );
                ExitCode::from(exit::NO_SEED)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("archiver: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A crawl run again after it finished: nothing is fetched and no report changes.
fn already_complete(
    name: &str,
    path: &std::path::Path,
    out: &std::path::Path,
    stats: &archiver::logs::report::Stats,
) -> ExitCode {
    let last = stats
        .runs
        .iter()
        .rev()
        .find_map(|r| r.ended.clone())
        .unwrap_or_else(|| "an earlier run".to_string());
    eprintln!(
        "archiver: crawl {name:?} is already complete (last run ended {last}; {} URLs, {} \
         archived; see {}).\n  Nothing was fetched and no report was changed.\n  To crawl \
         the same sites again, set another [output] dir in {} (or crawl into a new folder \
         with -o).",
        stats.lines(),
        stats.archived,
        out.join("summary.txt").display(),
        path.display()
    );
    if stats.no_seed_answered() {
        eprintln!(
            "archiver: that crawl fetched no seed:\n{}",
            stats.seed_failures()
        );
        return ExitCode::from(exit::NO_SEED);
    }
    ExitCode::SUCCESS
}

/// The command that resumes this crawl: this program with the profile's absolute path.
fn resume_command(profile: &std::path::Path) -> String {
    let program = std::env::args().next().unwrap_or_else(|| "archiver".into());
    let profile = std::path::absolute(profile).unwrap_or_else(|_| profile.to_path_buf());
    format!(
        "{} crawl --profile {}",
        shell_word(&program),
        shell_word(&profile.display().to_string())
    )
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `archiver index`: exit 0 when every file was read whole, 1 when some were damaged or
/// unreadable (the lines of what could be read are written all the same).
fn index(inputs: &[PathBuf], output: Option<&std::path::Path>) -> ExitCode {
    let found = match archiver::commands::index::find_archives(inputs) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("archiver: index: {e}");
            return ExitCode::from(2);
        }
    };
    for open in &found.open {
        eprintln!(
            "archiver: index: skipped {} (still being written)",
            open.display()
        );
    }
    let warcs = &found.files[..];
    let result = match output {
        Some(path) => archiver::warc::save_atomically(path, |out| {
            archiver::commands::index::index_to(warcs, out)
        }),
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            archiver::commands::index::index_to(warcs, &mut out)
                .and_then(|r| std::io::Write::flush(&mut out).map(|_| r))
        }
    };
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("archiver: index: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (path, problem) in &report.problems {
        eprintln!("archiver: index: {}: {problem}", path.display());
    }
    for e in &report.failed {
        eprintln!("archiver: index: {e}");
    }
    eprintln!(
        "archiver: index: {} lines from {} of {} files",
        report.lines,
        report.files,
        warcs.len()
    );
    if report.problems.is_empty() && report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `archiver diff`: exit 0 with a report, 1 when the crawls cannot be compared.
fn diff(
    old: &std::path::Path,
    new: &std::path::Path,
    (format, all): (DiffFormat, bool),
    output: Option<&std::path::Path>,
    pywb: Option<&str>,
    url: Option<&str>,
) -> ExitCode {
    use archiver::commands::diff::{self as d, Crawl, Format};
    let crawls = Crawl::locate(old).and_then(|o| Crawl::locate(new).map(|n| (o, n)));
    let (old, new) = match crawls {
        Ok(pair) => pair,
        // An input that names nothing to compare is a usage error.
        Err(e @ (d::DiffError::NoIndex(_) | d::DiffError::Input(_))) => {
            eprintln!("archiver: diff: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("archiver: diff: {e}");
            return ExitCode::FAILURE;
        }
    };
    let format = match format {
        DiffFormat::Text => Format::Text,
        DiffFormat::Json => Format::Json,
        DiffFormat::Html => Format::Html,
    };
    let run = |out: &mut dyn std::io::Write| -> std::io::Result<Result<(), d::DiffError>> {
        let result = match url {
            Some(url) => d::page_diff(&old, &new, url).map(|text| out.write_all(text.as_bytes())),
            None => d::diff(&old, &new, format, pywb, all, out).map(|_| Ok(())),
        };
        match result {
            Ok(written) => written.map(Ok),
            Err(e) => Ok(Err(e)),
        }
    };
    let result = match output {
        Some(path) => archiver::warc::save_atomically(path, |out| match run(out)? {
            Ok(()) => Ok(Ok(())),
            // Keep the old file rather than replace it with half a report.
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }),
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            run(&mut out).and_then(|r| std::io::Write::flush(&mut out).map(|_| r))
        }
    };
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("archiver: diff: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("archiver: diff: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `archiver optout`: exit 2 on a malformed list, 1 when applying failed (nothing changed in
/// the file that failed), 0 otherwise.
fn optout(command: OptoutCommand) -> ExitCode {
    use archiver::commands::optout as o;
    use archiver::scope::optout::OptOutList;
    let lists = match &command {
        OptoutCommand::Apply { lists, .. } | OptoutCommand::Aclj { lists } => lists,
    };
    let list = match OptOutList::load(lists) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("archiver: optout: {e}");
            return ExitCode::from(2);
        }
    };
    match command {
        OptoutCommand::Aclj { .. } => {
            let mut text = String::new();
            for line in list.aclj_lines() {
                text.push_str(&line);
                text.push('\n');
            }
            print!("{text}");
            ExitCode::SUCCESS
        }
        OptoutCommand::Apply {
            warcs,
            indexes,
            force,
            ..
        } => {
            let opts = o::ApplyOptions {
                inputs: warcs,
                index_dir: indexes,
                force,
            };
            match o::apply(&list, &opts) {
                Ok(report) => {
                    print!("{}", report.describe());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("archiver: optout apply: {e}");
                    // Nothing to apply the lists to is a usage error, like a bad list.
                    if matches!(e, o::ApplyError::Input(_)) {
                        ExitCode::from(2)
                    } else {
                        ExitCode::FAILURE
                    }
                }
            }
        }
    }
}

/// `archiver verify`: one line per problem, notes, a summary; exit 0 clean, 1 problems, 2 when
/// an input cannot be read.
fn verify(inputs: &[PathBuf], indexes: &[PathBuf]) -> ExitCode {
    use archiver::commands::verify::{self as v, KnownCaptures};
    let found = match archiver::commands::index::find_archives(inputs) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("archiver: verify: {e}");
            return ExitCode::from(2);
        }
    };
    let known = match KnownCaptures::load(indexes) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("archiver: verify: {e}");
            return ExitCode::from(2);
        }
    };
    let report = v::verify(&found.files, &known);
    let mut text = String::new();
    for p in &report.problems {
        text.push_str(&format!("{p}\n"));
    }
    for n in &report.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    for e in &report.unreadable {
        text.push_str(&format!("unreadable: {e}\n"));
    }
    for open in &found.open {
        text.push_str(&format!(
            "note: {}: skipped (still being written)\n",
            open.display()
        ));
    }
    text.push_str(&report.summary());
    text.push('\n');
    print!("{text}");
    if !report.unreadable.is_empty() {
        ExitCode::from(2)
    } else if !report.problems.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `archiver qa`: exit 0 with the check done (whatever it found), 2 when the folder is no
/// crawl or holds no page, 1 for anything else.
fn qa(opts: archiver::commands::qa::QaOptions) -> ExitCode {
    use archiver::commands::qa::{self, QaError};
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("archiver: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(qa::run(&opts)) {
        Ok(o) => {
            let j = &o.json;
            let minutes = o.elapsed.as_secs_f64() / 60.0;
            eprintln!(
                "archiver: qa: {} pages in {:.1} s ({:.0} a minute); score {:.1}%: {} of {} \
                 requests answered from the archive; {} pages cut at the timeout",
                j.pages_checked,
                o.elapsed.as_secs_f64(),
                j.pages_checked as f64 / minutes.max(1e-9),
                j.score * 100.0,
                j.answered,
                j.requests,
                j.timed_out
            );
            let missing: Vec<String> = j
                .missing_by_reason
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(r, n)| format!("{n} {r}"))
                .collect();
            if !missing.is_empty() {
                eprintln!("archiver: qa: missing: {}", missing.join(", "));
            }
            if let Some(path) = &opts.missing {
                eprintln!(
                    "archiver: qa: {} URLs a patch crawl may fetch written to {}",
                    o.patch_lines,
                    path.display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e @ (QaError::Plan(_) | QaError::NoPages(_))) => {
            eprintln!("archiver: qa: {e}");
            ExitCode::from(exit::USAGE)
        }
        Err(e) => {
            eprintln!("archiver: qa: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `archiver wacz`: exit 0 with the file written, 2 when the crawl folder holds no WARC, 1 for
/// anything else (the file is then not written).
fn wacz(opts: archiver::commands::wacz::WaczOptions) -> ExitCode {
    use archiver::commands::wacz::WaczError;
    match archiver::commands::wacz::write(&opts) {
        Ok(r) => {
            for open in &r.skipped_open {
                eprintln!(
                    "archiver: wacz: skipped {} (still being written)",
                    open.display()
                );
            }
            eprintln!(
                "archiver: wacz: {}: {} WARC files, {} index lines, {} pages, {} bytes",
                opts.output.display(),
                r.warcs,
                r.index_lines,
                r.pages,
                r.bytes
            );
            ExitCode::SUCCESS
        }
        Err(e @ (WaczError::Input(_) | WaczError::NoWarcs(_))) => {
            eprintln!("archiver: wacz: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("archiver: wacz: {e}");
            ExitCode::FAILURE
        }
    }
}
