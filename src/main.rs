//! The `archiver` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use archiver::profile::Profile;

/// An archival web crawler: polite, site by site, writing gzip WARCs and CDXJ indexes.
#[derive(Parser)]
#[command(name = "archiver", version, about)]
struct Cli {
    /// Crawl with this profile (the same as `archiver crawl --profile FILE`).
    #[arg(long, value_name = "FILE", global = false)]
    profile: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the crawl a profile describes.
    Crawl {
        /// The crawl profile (TOML).
        #[arg(long, value_name = "FILE")]
        profile: PathBuf,
    },
    /// Work with profiles.
    Profile {
        #[command(subcommand)]
        command: ProfileCommand,
    },
}

#[derive(Subcommand)]
enum ProfileCommand {
    /// Validate a profile and print the effective settings; crawls nothing.
    Check {
        /// The crawl profile (TOML).
        file: PathBuf,
    },
}

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
        (Some(Command::Crawl { profile }), _) | (None, Some(profile)) => crawl(profile),
        (
            Some(Command::Profile {
                command: ProfileCommand::Check { file },
            }),
            _,
        ) => check(file),
        (None, None) => {
            eprintln!("archiver: nothing to do; try `archiver crawl --profile FILE` or --help");
            ExitCode::from(2)
        }
    }
}

fn load(path: &std::path::Path) -> Result<Profile, ExitCode> {
    Profile::load(path).map_err(|e| {
        eprintln!("archiver: bad profile: {e}");
        ExitCode::from(2)
    })
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

fn crawl(path: PathBuf) -> ExitCode {
    let profile = match load(&path) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let name = profile.name.clone();
    let out = profile.output_dir.clone();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("archiver: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(archiver::crawl::run(profile)) {
        Ok(stats) => {
            let summary = stats.summary(&name, &out);
            eprint!("{summary}");
            if let Err(e) = std::fs::write(out.join("summary.txt"), &summary) {
                eprintln!("archiver: cannot write summary.txt: {e}");
            }
            // 130, as for any program stopped by Ctrl-C: scripts can tell an interrupted crawl
            // (resumable) from one that ended.
            if stats.interrupted {
                ExitCode::from(130)
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
