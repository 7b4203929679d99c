//! What a person sees in a real terminal (tmux): the progress line with a rate, and after
//! Ctrl-C the command that resumes the crawl.
//!
//! tmux must be installed (`tools/test.sh` installs it when it is missing).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::site::{html, response, Request, TestSite};

/// tmux on a socket of its own, killed when dropped (also when the test fails).
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Tmux {
        let found = Command::new("tmux").arg("-V").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "tmux is needed for this test: install it (tools/test.sh does)"
        );
        Tmux {
            socket: format!("archiver-test-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen, with lines the terminal wrapped joined again (`-J`): a resume command holding
    /// a long checkout path is one line to the user, however the 100 columns cut it.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", "t"])
    }

    /// Waits until the screen shows `what`; returns the screen.
    fn wait_for(&self, what: &str, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(what) {
                return screen;
            }
            assert!(
                start.elapsed() < limit,
                "{what:?} not on the screen after {limit:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

fn write_profile(dir: &Path, seed: &str) {
    let text = format!(
        r#"[crawl]
name = "terminal"
seeds = ["{seed}"]

[identity]
user_agent = "archiver/0.1 (+https://example.org/archiver-tests)"

[politeness]
min_delay = 0.1
delay_factor = 0.0

[output]
dir = "out"
"#
    );
    std::fs::write(dir.join("profile.toml"), text).expect("profile");
}

#[test]
fn the_progress_line_shows_a_rate_and_ctrl_c_prints_the_resume_command() {
    let site = TestSite::start(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(|req: &Request| match req.target.as_str() {
            "/robots.txt" => response("404 Not Found", &[], b""),
            "/" => {
                let links: String = (0..200).map(|i| format!("<a href=/p{i}>p</a>")).collect();
                html(links.as_bytes())
            }
            t => html(format!("<p>page {t} of the test site</p>").as_bytes()),
        }),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    write_profile(dir.path(), &format!("{}/", site.origin()));
    let tmux = Tmux::new();
    let command = format!(
        "cd '{}' && '{}' crawl --profile profile.toml; echo EXIT=$?; sleep 60",
        dir.path().display(),
        env!("CARGO_BIN_EXE_archiver")
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "100",
        "-y",
        "40",
        &command,
    ]);
    let screen = tmux.wait_for("URLs/s", Duration::from_secs(30));
    let progress = screen
        .lines()
        .find(|l| l.contains("URLs/s"))
        .unwrap_or_default();
    assert!(
        progress.contains("queued") || progress.contains("fetched"),
        "{progress}"
    );
    assert!(
        progress.trim_end().chars().count() <= 100,
        "fits the width: {progress}"
    );
    // Let the rate settle on a number above zero, then Ctrl-C.
    let start = Instant::now();
    while !tmux
        .screen()
        .lines()
        .any(|l| l.contains("URLs/s") && !l.contains(" 0.0 URLs/s"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux.run(&["send-keys", "-t", "t", "C-c"]);
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(30));
    assert!(screen.contains("EXIT=130"), "{screen}");
    let resume = screen
        .lines()
        .find(|l| l.contains("resume with:"))
        .unwrap_or_else(|| panic!("no resume command:\n{screen}"));
    let profile = dir.path().join("profile.toml");
    assert!(
        resume.contains("crawl --profile") && resume.contains(&*profile.to_string_lossy()),
        "{resume}"
    );
}
