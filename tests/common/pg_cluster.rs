//! A throwaway PostgreSQL server for a test: `initdb` into a temporary folder, `pg_ctl start`
//! listening on 127.0.0.1 only (and a socket in that folder) on a free port, stopped and removed
//! when the value is dropped.
//!
//! PostgreSQL refuses to run as root, so when the tests run as root the server runs as the
//! `postgres` user (`runuser -u postgres --`), which owns the folders it writes. Used by the
//! integration tests (`tests/common`) and, through `#[path]`, by the unit tests in `src/`, so
//! there is one copy of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running test cluster; `url(db)` names a database on it.
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    as_postgres: bool,
}

/// The newest installed server's programs (`/usr/lib/postgresql/<version>/bin`), or
/// `ARCHIVER_PG_BIN` when set.
fn server_bin() -> PathBuf {
    if let Some(dir) = std::env::var_os("ARCHIVER_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let v = e.file_name().to_str()?.parse::<u32>().ok()?;
                    let bin = e.path().join("bin");
                    bin.join("initdb").exists().then_some((v, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    match versions.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "no PostgreSQL server in /usr/lib/postgresql (tools/test.sh installs Debian's \
             `postgresql`; or set ARCHIVER_PG_BIN)"
        ),
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local address").port()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Gives a folder to the `postgres` user (by name, through chown(1), so no uid is guessed).
fn give_to_postgres(path: &Path) {
    let ok = Command::new("chown")
        .arg("postgres:")
        .arg(path)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "chown postgres {} failed", path.display());
}

impl PgCluster {
    /// Creates and starts a cluster, with one database per name in `dbs`.
    pub fn start(dbs: &[&str]) -> PgCluster {
        let bin = server_bin();
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("archiver-pg")
            .tempdir()
            .expect("temp folder");
        let run = PgCluster {
            dir,
            bin,
            port: 0,
            as_postgres,
        };
        if as_postgres {
            use std::os::unix::fs::PermissionsExt;
            // The postgres user must reach its folders inside ours.
            std::fs::set_permissions(run.dir.path(), std::fs::Permissions::from_mode(0o755))
                .expect("chmod temp folder");
        }
        let data = run.data();
        std::fs::create_dir(&data).expect("data folder");
        if as_postgres {
            give_to_postgres(&data);
        }
        run.checked(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let mut cluster = run;
        // A port found free can be taken by someone else before the server binds it: retry.
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = free_port();
            let opts = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=200",
                cluster.port,
                path_str(&data)
            );
            let log = data.join("server.log");
            let out = cluster.run(
                "pg_ctl",
                &[
                    "-D",
                    path_str(&data),
                    "-o",
                    &opts,
                    "-l",
                    path_str(&log),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
            );
            if out.status.success() {
                for db in dbs {
                    cluster.create_db(db);
                }
                return cluster;
            }
            last = format!(
                "{}{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("pg_ctl start failed:\n{last}");
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of the server's programs (as `postgres` when we are root).
    fn run(&self, prog: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(prog);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        // The server's folder, not ours: runuser keeps the working folder, which postgres may
        // not be allowed to read.
        cmd.current_dir(self.dir.path());
        cmd.args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
    }

    fn checked(&self, prog: &str, args: &[&str]) {
        let out = self.run(prog, args);
        assert!(
            out.status.success(),
            "{prog} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Creates a database (`createdb`, over TCP on 127.0.0.1).
    pub fn create_db(&self, name: &str) {
        let port = self.port.to_string();
        self.checked(
            "createdb",
            &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", name],
        );
    }

    /// `postgresql://postgres@127.0.0.1:PORT/DB`.
    pub fn url(&self, db: &str) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Stops the server at once (as a crash or power loss would), keeping its files.
    pub fn stop_immediately(&self) {
        let _ = self.run(
            "pg_ctl",
            &["-D", path_str(&self.data()), "-m", "immediate", "stop"],
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop_immediately();
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}
