//! The command line as clap reads it: every command, its options and help texts. What each
//! command does is in `main.rs`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Examples under `archiver --help`.
const MAIN_HELP: &str = "\
Examples:
  archiver crawl https://example.org/ --contact https://example.net/our-crawler
      crawl one site without writing a profile first (into crawls/example.org/)
  archiver profile init site.toml          write the commented reference profile
  archiver crawl --profile site.toml       run it; the same command resumes it
  archiver about --profile site.toml -o about.html
      the page for webmasters who find the User-Agent in their logs
  tools/replay.sh crawls/example.org       replay the crawl in pywb

Exit codes of crawl: 0 done, 3 no seed could be fetched, 130 interrupted (resumable),
2 bad profile or arguments, 1 other errors.";

/// What `archiver crawl --help` adds: examples, the outputs, resuming and exit codes.
const CRAWL_HELP: &str = "\
Examples:
  archiver crawl https://example.org/ --contact https://example.net/our-crawler
      a quick crawl of one site into crawls/example.org/; crawls/example.org/profile.toml
      is written first from the defaults (5 s between requests, robots.txt obeyed)
  archiver crawl https://a.example/ https://b.example/docs/ --contact URL -o crawls/ab
      several seeds, into crawls/ab/
  archiver crawl --profile crawls/example.org/profile.toml
      resume that crawl (after Ctrl-C, a crash or a reboot), or run it again

Output, in the profile's [output] dir (for a quick crawl: the -o folder):
  warcs/*.warc.gz        every exchange, byte for byte (WARC 1.1, one gzip member per record)
  indexes/*.cdxj         their CDXJ indexes: pywb replays the folder as it is
  crawl.log              one line per URL, Heritrix's format (why each URL was not fetched too)
  run.log                the crawler's decisions, every run
  summary.txt            the summary printed at the end; report.json: figures per host, type
                         and status (rewritten every minute and on kill -USR1 PID)
  state/                 the frontier and the list of runs: what a resumed crawl needs

Resuming: Ctrl-C (or SIGTERM) finishes the requests in flight, closes the WARC and prints the
command that resumes; a second Ctrl-C stops at once. Running the same command again resumes
where the crawl stopped, and the reports count the whole crawl. A crawl that is already
complete does nothing when run again and says so.

Exit codes:
  0    the crawl ended (or was already complete)
  3    no seed could be fetched at all (DNS, connection or robots.txt failed for each)
  130  interrupted by Ctrl-C or SIGTERM: resumable
  2    bad profile or arguments
  1    any other error (the message says what)";

const INDEX_HELP: &str = "\
Examples:
  archiver index crawls/example.org/warcs -o example.cdxj
      one sorted CDXJ for every WARC of a crawl
  archiver index wget-output.warc.gz > wget.cdxj
      any tool's WARC (wget, warcio, Heritrix): the lines cdxj-indexer --sort writes

Exit codes: 0 every file read whole, 1 some files were damaged or unreadable (the lines of
what could be read are written all the same).";

const DIFF_HELP: &str = "\
Examples:
  archiver diff crawls/2026-11 crawls/2026-12
      what changed between two crawls of the same sites (text, changes only)
  archiver diff crawls/2026-11 crawls/2026-12 --format html -o diff.html \\
      --pywb http://127.0.0.1:8080/crawl
      an HTML report whose links replay both captures (tools/replay.sh OLD NEW serves them)
  archiver diff crawls/2026-11 crawls/2026-12 --url https://example.org/news
      the text diff of one page between its two captures";

const QA_HELP: &str = "\
Examples:
  archiver qa crawls/example.org -o qa.html
      replay up to 200 archived pages (spread over the sites) from the crawl's own WARCs in
      headless Chromium; the report lists what each page asked for that the archive lacks
  archiver qa crawls/example.org --all --json qa.json --missing missing.txt
      every page; the JSON form; the URLs a patch crawl may fetch
  archiver crawl --profile site.toml --patch missing.txt
      fetch them into the same crawl, as embeds of the pages that wanted them
  archiver qa crawls/2026-12 --compare crawls/2026-11 -o change.html
      the same pages of two crawls side by side, most changed first

Nothing leaves the machine: every request is answered from the WARCs or refused, and the
browser runs behind a dead proxy with no name resolution.

Exit codes: 0 checked, 2 not a crawl folder or nothing to replay, 1 other errors.";
const CONTROL_HELP: &str = "\
Examples:
  archiver control --profile site.toml status
  archiver control --profile site.toml pause
  archiver control --profile site.toml exclude 'http://(org,example,)/calendar/'
  archiver control --profile site.toml exclude --regex '\\?sessionid='
  archiver control --profile site.toml site example.org delay 30
  archiver control --profile site.toml seed https://example.org/new/

Exit codes: 0 done, 1 the crawl refused the order (the message says why), 2 bad profile or
arguments, or no running crawl.";

const ABOUT_HELP: &str = "\
Examples:
  archiver about --profile site.toml -o about.html
      an HTML page to publish at the contact URL of the User-Agent
  archiver about --profile site.toml --format markdown > ABOUT.md";

const PROFILE_HELP: &str = "\
Examples:
  archiver profile init site.toml     write the commented reference profile (never overwrites)
  archiver profile check site.toml    every problem at once, or the effective settings";

const VERIFY_HELP: &str = "\
Examples:
  archiver verify crawls/example.org
      every WARC of a crawl folder (and its sub-folders), one line per problem
  archiver verify old-crawl.arc.gz new.warc.gz --index collection/index.cdxj
      revisits whose originals live elsewhere are looked up in the CDXJ given

Exit codes: 0 clean, 1 problems found (listed with file, offset, record id and what),
2 a file could not be read at all.";

const WACZ_HELP: &str = "\
Examples:
  archiver wacz crawls/example.org -o example.wacz
      one file for ReplayWeb.page, Browsertrix or pywb (wb-manager add --unpack-wacz)
  archiver wacz crawls/example.org -o example.wacz --title 'Example, December 2026' \\
      --main-page https://example.org/

Exit codes: 0 written, 2 the folder holds no WARC or cannot be read, 1 other errors (no
file is left behind).";

const OPTOUT_HELP: &str = "\
Examples:
  archiver optout apply optouts.txt --warcs crawls/example.org
      remove what the list covers from the crawl's WARCs and rewrite their CDXJ
  archiver optout aclj optouts.txt > collections/web/acl/optouts.aclj
      pywb access rules that hide the same captures without rewriting anything

Exit codes: 0 done, 2 a list or a --warcs folder is unusable (a folder with no WARC is named),
1 other errors.";

const OPTOUT_APPLY_HELP: &str = "\
Examples:
  archiver optout apply optouts.txt --warcs crawls/example.org
      a crawl folder: its warcs/ and indexes/ are found by themselves
  archiver optout apply a.txt b.txt --warcs collection/archive --indexes collection/indexes
      any folder of WARCs (searched with its sub-folders), CDXJ kept elsewhere";

const OPTOUT_ACLJ_HELP: &str = "\
Examples:
  archiver optout aclj optouts.txt > collections/web/acl/optouts.aclj";

const PROFILE_CHECK_HELP: &str = "\
Examples:
  archiver profile check site.toml
      every problem at once (file:line: key: what), or the effective settings; exit 2 on problems";

const PROFILE_INIT_HELP: &str = "\
Examples:
  archiver profile init site.toml
      the commented reference profile; edit seeds and [identity], then archiver crawl --profile site.toml";

/// An archival web crawler: polite, site by site, writing gzip WARCs and CDXJ indexes.
#[derive(Parser)]
#[command(name = "archiver", version, about, after_help = MAIN_HELP)]
pub(crate) struct Cli {
    /// Crawl with this profile (the same as `archiver crawl --profile FILE`).
    #[arg(long, value_name = "FILE", global = false)]
    pub(crate) profile: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run (or resume) a crawl: the one a profile describes, or a quick one from URLs.
    #[command(after_help = CRAWL_HELP)]
    Crawl {
        /// The crawl profile (TOML). The same command resumes the crawl.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "contact", "output"])]
        profile: Option<PathBuf>,
        /// Seeds of a quick crawl without a profile file (needs --contact).
        #[arg(value_name = "URL", required_unless_present = "profile")]
        urls: Vec<String>,
        /// Where webmasters can reach you (a URL), put into the User-Agent of a quick crawl.
        #[arg(long, value_name = "URL")]
        contact: Option<String>,
        /// Output folder of a quick crawl (default: crawls/HOST of the first URL); its
        /// profile.toml is written there first.
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// With --profile: also fetch the URLs of this list (`archiver qa --missing`), as
        /// embeds of the pages that wanted them, even when the crawl is complete.
        #[arg(long, value_name = "FILE", requires = "profile")]
        patch: Option<PathBuf>,
    },
    /// Replay archived pages in headless Chromium from the crawl's own WARCs: what each page
    /// asked for that the archive lacks, and why.
    #[command(after_help = QA_HELP)]
    Qa {
        /// The crawl's output folder (with crawl.log and warcs/).
        crawl: PathBuf,
        /// Replay this many pages, spread over the sites (default 200).
        #[arg(long, value_name = "N", conflicts_with = "all")]
        pages: Option<usize>,
        /// Replay every archived page.
        #[arg(long)]
        all: bool,
        /// Write the HTML report here (one file, opens offline).
        #[arg(short, long, value_name = "FILE.html")]
        output: Option<PathBuf>,
        /// Write the JSON form here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Compare with another crawl of the same sites (its output folder).
        #[arg(long, value_name = "OTHER_CRAWLDIR")]
        compare: Option<PathBuf>,
        /// Write the missing URLs a patch crawl may fetch here (for `crawl --patch`).
        #[arg(long, value_name = "FILE")]
        missing: Option<PathBuf>,
        /// The Chromium to run (default: chromium on PATH).
        #[arg(long, value_name = "PATH")]
        browser: Option<PathBuf>,
        /// Pages replayed at once, each in its own tab.
        #[arg(long, value_name = "N", default_value_t = 4)]
        tabs: usize,
        /// Seconds one page may take before it is cut and reported.
        #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
        timeout: f64,
    },
    /// Write the page webmasters read ("if you see this User-Agent…"), from a profile.
    #[command(after_help = ABOUT_HELP)]
    About {
        /// The crawl profile (TOML).
        #[arg(long, value_name = "FILE")]
        profile: PathBuf,
        /// Write the page here instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// html or markdown (default: html for an -o file ending in .html, else markdown).
        #[arg(long, value_enum)]
        format: Option<AboutFormat>,
    },
    /// A shared crawl's state across its workers: queued, in flight, done per worker, leases.
    Status {
        /// The crawl profile (TOML) whose `[frontier] database` (or ARCHIVER_DATABASE) to read.
        #[arg(long, value_name = "FILE")]
        profile: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Steer a running crawl through its control endpoint (docs/control.md).
    #[command(after_help = CONTROL_HELP)]
    Control {
        /// The crawl profile (TOML) of the running crawl (its OUT/state/control.json is read).
        #[arg(long, value_name = "FILE")]
        profile: PathBuf,
        #[command(subcommand)]
        order: ControlOrder,
    },
    /// Work with profiles.
    #[command(after_help = PROFILE_HELP)]
    Profile {
        #[command(subcommand)]
        command: ProfileCommand,
    },
    /// (Re)build sorted CDXJ from WARC files (any tool's), as cdxj-indexer would.
    #[command(after_help = INDEX_HELP)]
    Index {
        /// WARC files (.warc.gz with one gzip member per record, or plain .warc), or folders
        /// to search for them.
        #[arg(required = true, value_name = "WARC")]
        warcs: Vec<PathBuf>,
        /// Write the CDXJ here instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compare two crawls of the same sites: pages added, removed, changed, unchanged.
    #[command(after_help = DIFF_HELP)]
    Diff {
        /// The earlier crawl: an output folder (with indexes/), a folder of .cdxj files, or a
        /// .cdxj file.
        old: PathBuf,
        /// The later crawl, given the same way.
        new: PathBuf,
        /// Report format.
        #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
        format: DiffFormat,
        /// Write the report here instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// pywb collection URL (e.g. http://127.0.0.1:8080/crawl) the HTML report links to.
        #[arg(long, value_name = "BASE_URL")]
        pywb: Option<String>,
        /// Instead of the report: the text diff of this page between its two captures.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// Text report: list the unchanged pages too (by default only their count).
        #[arg(long)]
        all: bool,
    },
    /// Check WARC (and ARC) files against WARC 1.1: headers, lengths, digests (payload
    /// de-chunked), unique record IDs, link targets, revisit originals, one gzip member per
    /// record. Exit 0 when clean, 1 with problems, 2 when a file cannot be read.
    #[command(after_help = VERIFY_HELP)]
    Verify {
        /// WARC/ARC files, or folders to search (with their sub-folders).
        #[arg(required = true, value_name = "WARC|DIR")]
        warcs: Vec<PathBuf>,
        /// CDXJ files where revisits' originals may be (e.g. the collection's index).
        #[arg(long, value_name = "CDXJ", action = clap::ArgAction::Append)]
        index: Vec<PathBuf>,
    },
    /// Pack a crawl as a WACZ 1.1.1 file (WARCs stored byte for byte, one CDXJ, a page
    /// list, datapackage.json), for ReplayWeb.page, Browsertrix or pywb.
    #[command(after_help = WACZ_HELP)]
    Wacz {
        /// The crawl's output folder.
        crawl: PathBuf,
        /// The WACZ file to write.
        #[arg(short, long, value_name = "FILE.wacz")]
        output: PathBuf,
        /// The package title (default: the crawl folder's name).
        #[arg(long)]
        title: Option<String>,
        /// The page replay opens first (default: the first page captured).
        #[arg(long, value_name = "URL")]
        main_page: Option<String>,
    },
    /// Apply opt-out lists to archived WARCs, or turn them into pywb access rules.
    #[command(after_help = OPTOUT_HELP)]
    Optout {
        #[command(subcommand)]
        command: OptoutCommand,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum AboutFormat {
    Html,
    Markdown,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum DiffFormat {
    Text,
    Json,
    Html,
}

#[derive(Subcommand)]
pub(crate) enum OptoutCommand {
    /// Rewrite the WARCs (and their CDXJ) without the records the lists cover.
    #[command(after_help = OPTOUT_APPLY_HELP)]
    Apply {
        /// Opt-out list files.
        #[arg(required = true, value_name = "LIST")]
        lists: Vec<PathBuf>,
        /// The WARCs: a crawl's output folder, its warcs/ folder, any folder (searched with
        /// its sub-folders) or single files. Repeat for more.
        #[arg(long, value_name = "DIR|FILE", required = true, action = clap::ArgAction::Append)]
        warcs: Vec<PathBuf>,
        /// The folder of their CDXJ files (default: beside each WARC, i.e. OUT/indexes of a
        /// crawl folder, or NAME.cdxj in the WARC's own folder).
        #[arg(long, value_name = "DIR")]
        indexes: Option<PathBuf>,
        /// Go ahead even when the lists cover every capture.
        #[arg(long)]
        force: bool,
    },
    /// Print a pywb access-control file (.aclj) excluding what the lists cover.
    #[command(after_help = OPTOUT_ACLJ_HELP)]
    Aclj {
        /// Opt-out list files.
        #[arg(required = true, value_name = "LIST")]
        lists: Vec<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ControlOrder {
    /// Pause: requests in flight finish, none starts (survives a restart until resumed).
    Pause,
    /// Resume after a pause.
    Resume,
    /// Write report.json now (as kill -USR1 does).
    Report,
    /// Add seeds (their origins join the scope as profile seeds do).
    Seed {
        #[arg(required = true, value_name = "URL")]
        urls: Vec<String>,
    },
    /// Exclude a SURT prefix (or a URL's folder): queued URLs it covers are dropped.
    Exclude {
        /// `http://(org,example,)/trap/`, `org,example)/trap/` or `https://example.org/trap/`.
        rule: String,
        /// RULE is a regular expression matched against whole URLs.
        #[arg(long)]
        regex: bool,
    },
    /// One site's orders: delay SECONDS, hold, release, retire.
    Site {
        /// The site: `https://host[:port]`, or `host[:port]` for http.
        site: String,
        #[command(subcommand)]
        order: SiteOrder,
    },
    /// The crawl's status: totals, rates, sites.
    Status {
        /// Print the JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum SiteOrder {
    /// At least SECONDS between two requests to the site (never below the profile's floor).
    Delay { seconds: f64 },
    /// Fetch nothing of the site until released.
    Hold,
    /// Undo a hold.
    Release,
    /// Drop the site's queue and refuse its new URLs.
    Retire,
}

#[derive(Subcommand)]
pub(crate) enum ProfileCommand {
    /// Validate a profile and print the effective settings; crawls nothing.
    #[command(after_help = PROFILE_CHECK_HELP)]
    Check {
        /// The crawl profile (TOML).
        file: PathBuf,
    },
    /// Write the commented reference profile to FILE (never over an existing file).
    #[command(after_help = PROFILE_INIT_HELP)]
    Init {
        /// Where to write it.
        file: PathBuf,
    },
}
