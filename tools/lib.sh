# tools/lib.sh: shell helpers shared by the scripts of tools/ and tools/bench/ (sourced, not
# run): `source "$REPO/tools/lib.sh"` after `set -euo pipefail`. Messages name the script that
# sourced this file ($0).

# say TEXT: a heading line of the script's output.
say() { printf '\n== %s\n' "$*"; }

# die TEXT: the script's error message on standard error, then exit 1.
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# need_gnu_time: makes sure /usr/bin/time is GNU time's binary, which gives a measured process's
# peak RSS and CPU times (Debian package "time"); installs it with apt-get when running as root,
# else stops with the package to install.
need_gnu_time() {
    need_deb /usr/bin/time time
}

# need_deb PROGRAM PACKAGE: makes sure PROGRAM (a name found on PATH or in /usr/sbin, or a path)
# exists; installs the Debian PACKAGE with apt-get when running as root, else stops naming it.
# For the benches' own servers and peers (nginx-light, wget): tools/test.sh installs what the
# tests need, not these.
need_deb() {
    local prog="$1" pkg="$2"
    has_program "$prog" && return 0
    if [[ "$(id -u)" = 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "installing $pkg (apt-get install -y $pkg)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null ||
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null; }
    fi
    has_program "$prog" || die "'$prog' is needed: install the Debian package '$pkg'"
}

# has_program PROGRAM: true when PROGRAM is on PATH, in /usr/sbin, or an executable path.
has_program() {
    command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]]
}

# free_port: prints a port the kernel just handed out on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# stop_pid PID SIGNAL SECONDS: sends SIGNAL, waits up to SECONDS for the process to end, then
# SIGKILLs it. Nothing happens for an empty PID or a process already gone.
stop_pid() {
    local pid="$1" sig="$2" limit="$3" i
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < limit * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# with_deadline SECONDS CMD...: runs CMD in the foreground, so one Ctrl-C reaches it once (GNU
# timeout would either hide it or, with --foreground, deliver it twice), and sends it SIGTERM
# if it is still running after SECONDS. CMD's pid goes through the file $PIDFILE (the caller
# sets it): the bash started here execs CMD, keeping its pid. The words in the array TIMER, if
# any, run in front of that bash (e.g. /usr/bin/time). Returns CMD's status, 124 if the
# deadline stopped it.
TIMER=()
with_deadline() {
    local limit="$1" pidfile="$PIDFILE" watchdog rc
    shift
    rm -f "$pidfile" "$pidfile.expired"
    (
        trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
        sleep "$limit" &
        sleeper=$!
        wait "$sleeper"
        if [[ -s "$pidfile" ]]; then
            touch "$pidfile.expired"
            kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
        fi
    ) &
    watchdog=$!
    set +e
    # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash
    "${TIMER[@]}" bash -c 'echo $$ >"$0" && exec "$@"' "$pidfile" "$@"
    rc=$?
    set -e
    rm -f "$pidfile"
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
    if [[ -e "$pidfile.expired" ]]; then
        rm -f "$pidfile.expired"
        return 124
    fi
    return "$rc"
}

# release_binary SKIP: sets BIN to the crawler's release build (CARGO_TARGET_DIR honoured as cargo
# does, relative to the repository), building it first with `cargo build --release` unless SKIP
# is 1; stops when there is no binary there. Needs REPO.
release_binary() {
    local target="${CARGO_TARGET_DIR:-target}"
    [[ "$target" = /* ]] || target="$REPO/$target"
    BIN="$target/release/archiver"
    if [[ "${1:-0}" = 1 ]]; then
        say "Skipping the build (the binary already built: $BIN)"
    else
        say "Building the crawler: cargo build --release"
        (cd "$REPO" && cargo build --release) || die "the build failed"
    fi
    [[ -x "$BIN" ]] || die "no crawler binary at $BIN (build it with: cargo build --release)"
}
