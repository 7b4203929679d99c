#!/usr/bin/env bash
# tools/bench/distributed.sh: one crawl on 1, 2 and 4 workers through a shared PostgreSQL
# frontier, on the many-sites loopback server (tools/bench/manysites_server.rs), then the
# frontier alone at 10^6 queued URLs. A measurement, not a test.
#
# Usage: tools/bench/distributed.sh [N_SITES] [SECONDS] [WORKERS...]   (defaults: 1000 60 1 2 4)
#
# Starts its own PostgreSQL server (initdb + pg_ctl as the postgres user, 127.0.0.1 only, a
# free port, in a temporary folder removed at the end). For each worker count W: a fresh
# database, the N-site server, W release crawlers on one profile (each its own output folder and
# User-Agent suffix), SIGINT to all after SECONDS. Reported from the server's own request log:
# fetches/s, and gaps under the floor between the end of one answer and the next request to
# one address across all workers (must be 0); from /usr/bin/time: CPU per URL of all workers;
# from the workers' run.log: database calls and round trips per URL; from pg_stat_database: transactions per
# URL.
#
# Environment:
#   BENCH_DELAY=S       the politeness floor (default 5, the real one)
#   BENCH_DB_URLS=N     URLs queued for the database-alone part (default 1000000; 0 skips it)
#   BENCH_DB_TAKE=K     URLs taken at that size (default 20000)
#   BENCH_NO_BUILD=1    use the binaries already built
#   BENCH_PROFILE=debug the debug builds instead of release (quicker to build; more CPU per URL)
# Output: tools/bench/out/distributed-N-SECONDSs/ (git-ignored), results.md there.
# Nothing listens or connects outside 127.0.0.0/8.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
N="${1:-1000}"
SECS="${2:-60}"
shift 2 2>/dev/null || shift $# 
WORKERS=("$@")
[[ ${#WORKERS[@]} -gt 0 ]] || WORKERS=(1 2 4)
DELAY="${BENCH_DELAY:-5}"
DB_URLS="${BENCH_DB_URLS:-1000000}"
DB_TAKE="${BENCH_DB_TAKE:-20000}"
OUT="$HERE/out/distributed-$N-${SECS}s"
[[ "$N" =~ ^[0-9]+$ && "$N" -ge 1 && "$N" -le 62500 ]] || die "N_SITES must be 1..62500"
[[ "$SECS" =~ ^[0-9]+$ && "$SECS" -ge 10 ]] || die "SECONDS must be 10 or more"
need_gnu_time
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
[[ -x "$PGBIN/initdb" ]] || die "no PostgreSQL server in /usr/lib/postgresql (apt-get install postgresql)"
ulimit -n 65536 2>/dev/null || true
PY="$(command -v python3)"

rm -rf "$OUT"
mkdir -p "$OUT"
PIDS=()
PGDIR="$(mktemp -d /tmp/archiver-bench-pg.XXXXXX)"
as_pg() { if [[ "$(id -u)" = 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PGDIR"
}
trap cleanup EXIT

# --- builds ---------------------------------------------------------------------------------
PROFILE="${BENCH_PROFILE:-release}"
[[ "$PROFILE" = release || "$PROFILE" = debug ]] || die "BENCH_PROFILE must be release or debug"
CARGO_FLAG=(--release)
[[ "$PROFILE" = debug ]] && CARGO_FLAG=()
BIN="${CARGO_TARGET_DIR:-$REPO/target}/$PROFILE/archiver"
CRATE="$HERE/out/manysites_server_crate"
SERVER_BIN="$CRATE/target/$PROFILE/manysites_server"
if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    say "Building ($PROFILE): the crawler, the server"
    (cd "$REPO" && cargo build "${CARGO_FLAG[@]}") || die "the crawler build failed"
    mkdir -p "$CRATE"
    cat >"$CRATE/Cargo.toml" <<TOML
[package]
name = "manysites_server"
version = "0.0.0"
edition = "2021"
[[bin]]
name = "manysites_server"
path = "$HERE/manysites_server.rs"
[dependencies]
tokio = { version = "1", features = ["rt-multi-thread", "macros", "net", "time", "io-util", "signal"] }
[workspace]
TOML
    (cd "$CRATE" && CARGO_TARGET_DIR="$CRATE/target" cargo build "${CARGO_FLAG[@]}" --quiet) || die "server build failed"
fi
[[ -x "$BIN" && -x "$SERVER_BIN" ]] || die "binaries missing (run without BENCH_NO_BUILD)"

# --- PostgreSQL -----------------------------------------------------------------------------
chmod 755 "$PGDIR"
mkdir "$PGDIR/data"
[[ "$(id -u)" = 0 ]] && chown postgres: "$PGDIR/data"
as_pg "$PGBIN/initdb" -D "$PGDIR/data" -A trust -U postgres -E UTF8 --locale=C >/dev/null
PGPORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/data/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDIR/data -c max_connections=100" start >/dev/null
psql_() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -At "$@"; }
echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT"

{
    echo "# tools/bench/distributed.sh $N $SECS ${WORKERS[*]} (floor ${DELAY} s, $PROFILE build)"
    echo
    echo "$(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); $(git -C "$REPO" rev-parse --short HEAD)"
    echo
    echo "| workers | fetches/s | ideal (N / floor) | crawl.log lines per worker | gaps under the floor | CPU per URL (all workers) | database calls per URL | round trips per URL | transactions per URL |"
    echo "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
} >"$OUT/results.md"

for W in "${WORKERS[@]}"; do
    RUN="$OUT/w$W"
    mkdir -p "$RUN"
    DB="bench_w$W"
    as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres "$DB"
    say "$W worker(s): $N sites for $SECS s"
    "$SERVER_BIN" --sites "$N" --log "$RUN/server.log" --ready "$RUN/server.port" \
        --max-seconds $((SECS + 300)) 2>"$RUN/server.stderr" &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    for _ in $(seq 1 600); do [[ -s "$RUN/server.port" ]] && break; sleep 0.1; done
    PORT="$(cat "$RUN/server.port")"
    "$PY" - "$N" "$PORT" "$RUN" "$W" "$DELAY" "postgresql://postgres@127.0.0.1:$PGPORT/$DB" <<'PY'
import sys
n, port, run, w, delay, db = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
def addr(i):  # as site_addr() in manysites_server.rs
    return f"127.1.{i // 250}.{i % 250 + 1}"
seeds = "".join(f'  "http://site-{i:05d}.test:{port}/",\n' for i in range(n))
resolve = "".join(f'"site-{i:05d}.test" = "{addr(i)}"\n' for i in range(n))
for k in range(1, w + 1):
    with open(f"{run}/worker{k}.toml", "w") as f:
        f.write(f"""[crawl]
name = "distributed-{n}"
sites_at_once = {n}
seeds = [
{seeds}]
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact) worker-{k}"
[scope]
max_hops = 100000
[politeness]
min_delay = {delay}
delay_factor = 0.0
max_retries = 1
[limits]
timeout = 30.0
[output]
dir = "out{k}"
[frontier]
database = "{db}"
[resolve]
{resolve}""")
PY
    X0="$(psql_ -d "$DB" -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$DB'")"
    WPIDS=()
    for k in $(seq 1 "$W"); do
        /usr/bin/time -f "%U %S" -o "$RUN/worker$k.time" \
            "$BIN" crawl --profile "$RUN/worker$k.toml" >"$RUN/worker$k.stdout" 2>"$RUN/worker$k.stderr" &
        WPIDS+=($!)
        PIDS+=($!)
    done
    sleep "$SECS"
    for k in $(seq 1 "$W"); do
        pkill -INT -P "${WPIDS[$((k - 1))]}" 2>/dev/null || true
    done
    for p in "${WPIDS[@]}"; do wait "$p" || true; done
    X1="$(psql_ -d "$DB" -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$DB'")"
    kill -INT "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    "$PY" - "$RUN" "$N" "$W" "$DELAY" "$((X1 - X0))" "$SECS" >>"$OUT/results.md" <<'PY'
import glob, os, re, sys
from collections import defaultdict
run, n, w, delay, xacts, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
floor = int(delay * 1e9)
per_site = defaultdict(list)
for line in open(os.path.join(run, "server.log")):
    s, a, e, st, kind, _ = line.split()
    per_site[int(s)].append((int(a), int(e)))
total = sum(len(v) for v in per_site.values())
first = min(a for v in per_site.values() for a, _ in v)
last = max(a for v in per_site.values() for a, _ in v)
gaps = 0
for v in per_site.values():
    v.sort()
    gaps += sum(1 for (_, e0), (a1, _) in zip(v, v[1:]) if a1 - e0 < floor)
rate = total / max((last - first) / 1e9, 1e-9)
cpu = 0.0
for t in glob.glob(os.path.join(run, "worker*.time")):
    u, s = open(t).read().split()[-2:]
    cpu += float(u) + float(s)
calls, trips, per_worker = 0, 0, []
for k in range(1, w + 1):
    log = os.path.join(run, f"out{k}", "run.log")
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    m = re.findall(r"shared frontier: (\d+) database calls in this run \((\d+) round trips\)", text)
    calls += int(m[-1][0]) if m else 0
    trips += int(m[-1][1]) if m else 0
    cl = os.path.join(run, f"out{k}", "crawl.log")
    per_worker.append(sum(1 for _ in open(cl, errors="replace")) if os.path.exists(cl) else 0)
print(f"| {w} | {rate:.1f} | {n / delay:.1f} | {' / '.join(map(str, per_worker))} | {gaps} | {cpu * 1e3 / max(total, 1):.2f} ms | {calls / max(total, 1):.1f} | {trips / max(total, 1):.1f} | {xacts / max(total, 1):.1f} |")
PY
    tail -n 1 "$OUT/results.md"
done

if [[ "$DB_URLS" -gt 0 ]]; then
    say "The database alone: $DB_URLS URLs queued, $DB_TAKE taken"
    as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_db
    # harness = false: `cargo test --bench` runs the same main in the debug build.
    BENCH_CMD=bench
    [[ "$PROFILE" = debug ]] && BENCH_CMD=test
    (cd "$REPO" && cargo "$BENCH_CMD" --bench pg_frontier -- \
        "postgresql://postgres@127.0.0.1:$PGPORT/bench_db" "$DB_URLS" "$DB_TAKE") | tee "$OUT/db.txt"
    { echo; echo "The database alone ($DB_URLS URLs queued over 1,000 sites, $DB_TAKE taken):"; echo; grep '^|' "$OUT/db.txt"; } >>"$OUT/results.md"
fi
say "Results: $OUT/results.md"
cat "$OUT/results.md"
