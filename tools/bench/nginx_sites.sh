#!/usr/bin/env bash
# tools/bench/nginx_sites.sh: the many-sites start as issues 24 and 25 specify it: N loopback
# sites on a private nginx, exactly 7 requests a site (robots.txt, `/`, 5 pages linked from `/`),
# the REAL 5 s floor, all N seeds at once, the crawl run to its end, judged from nginx's own
# access log. A measurement, not a test.
#
# Usage:
#   tools/bench/nginx_sites.sh single N          one process (SQLite frontier), N sites on N
#                                                addresses, budget "ip" (issue 25 part 1)
#   tools/bench/nginx_sites.sh single-host N     N sites on N/3 addresses, three host names each,
#                                                budget "host" (issue 25: 30000)
#   tools/bench/nginx_sites.sh workers W N       the same N-site crawl as ONE process with the
#                                                SQLite frontier, then as W workers on a private
#                                                PostgreSQL 15 (`[frontier] database`) (issue 24)
#
# Judged from nginx's log (log_format: $msec $request_time $server_addr $host $status
# $request_uri): a request starts at $msec - $request_time and its answer ends at $msec. Per
# politeness budget (the address; the host name under budget "host") the gaps between one
# answer's end and the next request's start; a gap under 5 s minus BENCH_TOL is a violation.
# The span runs from the first request's start to the last answer's end; efficiency = the
# politeness bound (6 gaps of 5 s = 30 s) / span. CPU = user + system of every crawler process
# (/usr/bin/time -v) / the requests nginx logged (7 N when every site is complete).
#
# PostgreSQL's CPU (workers mode) is the server's whole process tree: /proc/<postmaster>/stat's
# utime + stime + cutime + cstime (cutime/cstime hold every backend the postmaster has reaped,
# i.e. every connection that ended) plus utime + stime of the postmaster's live children (the
# backends still connected, checkpointer, walwriter, ...), read before and after the workers'
# run; the difference is what the crawl cost the server. Database round trips per URL come from
# the workers' run.log ("shared frontier: N database calls in this run (M round trips)") and
# transactions per URL from pg_stat_database.xact_commit + xact_rollback.
#
# Environment:
#   BENCH_NO_BUILD=1   use target/release/archiver as it is (no `cargo build --release`)
#   BENCH_TOL=S        tolerance under the floor for a violation (default 0.02 s: nginx's
#                      clock has millisecond resolution)
#   BENCH_TIMEOUT=S    each crawl is stopped (SIGTERM) after S seconds (default 600)
#   BENCH_NGINX_WORKERS=K   nginx worker_processes (default 2)
#   BENCH_PERF=S       `perf record` the crawler for its first S seconds (see sample_cpu);
#   BENCH_PERF_CALLS=dwarf  its call graphs from DWARF instead of frame pointers (the Rust
#                      code has none: with `fp` a stack stops at the first Rust frame)
# Output: tools/bench/out/nginx_sites/<mode>-.../ (git-ignored): access logs, profiles, the
# crawlers' outputs, /usr/bin/time files, results.md. Every server the script starts (nginx,
# PostgreSQL) is stopped on exit, failure included. Nothing listens outside 127.0.0.0/8.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"

MODE="${1:-}"
case "$MODE" in
    single | single-host) N="${2:-}"; W=0 ;;
    workers) W="${2:-}"; N="${3:-}" ;;
    *) die "usage: $0 single N | single-host N | workers W N" ;;
esac
[[ "$N" =~ ^[0-9]+$ && "$N" -ge 1 ]] || die "N must be a positive number of sites"
[[ "$W" =~ ^[0-9]+$ ]] || die "W must be a number of workers"
[[ "$MODE" != workers || "$W" -ge 1 ]] || die "W must be 1 or more"
TOL="${BENCH_TOL:-0.02}"
LIMIT="${BENCH_TIMEOUT:-600}"
NGX_WORKERS="${BENCH_NGINX_WORKERS:-2}"
FLOOR=5
PY="$(command -v python3)"
need_deb nginx nginx-light
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
need_gnu_time

# Addresses: one per site, or one per three sites under single-host.
if [[ "$MODE" = single-host ]]; then
    BUDGET=host
    ADDRS=$(((N + 2) / 3))
else
    BUDGET=ip
    ADDRS="$N"
fi
HARD="$(ulimit -Hn)"
[[ "$HARD" = unlimited ]] && HARD=1048576
ulimit -n "$HARD"
# nginx's workers each hold every listening socket plus their connections: leave room for both.
NGX_FILES=$((HARD - 200))
NGX_CONNS=$((NGX_FILES - 100))
[[ $((ADDRS + 1000)) -lt "$NGX_CONNS" ]] ||
    die "$ADDRS addresses leave nginx too few connections under the open-file limit $HARD"

TAG="$MODE-$N"
[[ "$MODE" = workers ]] && TAG="workers-$W-$N"
OUT="$HERE/out/nginx_sites/$TAG"
rm -rf "$OUT"
mkdir -p "$OUT"

NGINX_PID=""
PGDATA=""
PGBIN=/usr/lib/postgresql/15/bin
CRAWL_PIDS=()
as_pg() { if [[ "$(id -u)" = 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
stop_nginx() {
    if [[ -n "$NGINX_PID" ]]; then
        stop_pid "$NGINX_PID" QUIT 20
        NGINX_PID=""
    fi
}
cleanup() {
    for p in "${CRAWL_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    stop_nginx
    if [[ -n "$PGDATA" && -d "$PGDATA" ]]; then
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n "${BENCH_NO_BUILD:-}" ]]; then release_binary 1; else release_binary 0; fi

# --- the sites: one document root for all (the host name tells them apart in the log) -------
say "Generating $N sites on $ADDRS addresses (budget $BUDGET)"
ROOT="$OUT/htdocs"
mkdir -p "$ROOT" "$OUT/nginx-tmp"
printf 'User-agent: *\nAllow: /\n' >"$ROOT/robots.txt"
{
    echo '<!doctype html><html><head><title>home</title></head><body><h1>home</h1><ul>'
    for p in 1 2 3 4 5; do echo "<li><a href=\"/page$p.html\">page $p</a></li>"; done
    echo '</ul></body></html>'
} >"$ROOT/index.html"
for p in 1 2 3 4 5; do
    echo "<!doctype html><html><head><title>page $p</title></head><body><p>page $p, no links</p></body></html>" >"$ROOT/page$p.html"
done
PORT="$(free_port)"
# sites.txt: "host address" per site; the profiles' seeds and [resolve] come from it.
"$PY" - "$N" "$MODE" >"$OUT/sites.txt" <<'PY'
import sys
n, mode = int(sys.argv[1]), sys.argv[2]
def addr(a):  # 127.2.0.1 upwards, 250 addresses per third octet
    return f"127.{2 + a // 62500}.{(a // 250) % 250}.{a % 250 + 1}"
for i in range(n):
    a = i // 3 if mode == "single-host" else i
    print(f"site-{i:05d}.test {addr(a)}")
PY

# --- nginx --------------------------------------------------------------------------------
# start_nginx NAME: a private nginx on every address of sites.txt, logging to NAME.access.log.
start_nginx() {
    local name="$1" conf="$OUT/$1.nginx.conf" i
    awk '{print $2}' "$OUT/sites.txt" | sort -u >"$OUT/addrs.txt"
    {
        echo "worker_processes $NGX_WORKERS;"
        echo "worker_rlimit_nofile $NGX_FILES;"
        echo "pid $OUT/$name.nginx.pid;"
        echo "error_log $OUT/$name.error.log warn;"
        echo "events { worker_connections $NGX_CONNS; }"
        echo "http {"
        echo "  types { text/html html; text/plain txt; }"
        echo "  default_type application/octet-stream;"
        echo "  log_format bench '\$msec \$request_time \$server_addr \$host \$status \$request_uri';"
        echo "  access_log $OUT/$name.access.log bench buffer=256k flush=1s;"
        for i in client_body proxy fastcgi uwsgi scgi; do echo "  ${i}_temp_path $OUT/nginx-tmp/$i;"; done
        echo "  keepalive_timeout 5s;"
        echo "  server {"
        sed "s/.*/    listen &:$PORT;/" "$OUT/addrs.txt"
        echo "    root $ROOT;"
        echo "  }"
        echo "}"
    } >"$conf"
    "$NGINX" -t -q -e "$OUT/$name.error.log" -c "$conf" -p "$OUT" -g "daemon off;" 2>"$OUT/$name.nginx-t.log" ||
        die "nginx refused its configuration: $(tail -n 3 "$OUT/$name.nginx-t.log")"
    "$NGINX" -e "$OUT/$name.error.log" -c "$conf" -p "$OUT" -g "daemon off;" 2>>"$OUT/$name.error.log" &
    NGINX_PID=$!
    for ((i = 0; i < 600; i++)); do
        curl -s -o /dev/null --max-time 2 "http://$(tail -n 1 "$OUT/addrs.txt"):$PORT/robots.txt" && break
        kill -0 "$NGINX_PID" 2>/dev/null || die "nginx ended: $(tail -n 3 "$OUT/$name.error.log")"
        sleep 0.2
    done
    # The readiness probe is not part of the crawl: start the log afresh.
    sleep 1.5
    : >"$OUT/$name.access.log"
    echo "nginx on $(wc -l <"$OUT/addrs.txt") addresses, port $PORT ($NGX_WORKERS workers, $NGX_CONNS connections each)"
}

# write_profile FILE OUTDIR [DATABASE] [UA_SUFFIX]
write_profile() {
    "$PY" - "$OUT/sites.txt" "$PORT" "$1" "$2" "$BUDGET" "$FLOOR" "$N" "${3:-}" "${4:-}" <<'PY'
import sys
sites, port, path, outdir, budget, floor, n, db, ua = sys.argv[1:10]
rows = [l.split() for l in open(sites)]
seeds = "".join(f'  "http://{h}:{port}/",\n' for h, _ in rows)
resolve = "".join(f'"{h}" = "{a}"\n' for h, a in rows)
frontier = f'[frontier]\ndatabase = "{db}"\n' if db else ""
with open(path, "w") as f:
    f.write(f"""[crawl]
name = "nginx-sites-{n}"
sites_at_once = {n}
seeds = [
{seeds}]
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact){ua}"
[politeness]
# The real floor: min_delay = 5 on loopback too (the loopback exception only lets a profile go
# below 5 s; it does not when min_delay says 5), no delay factor on top.
min_delay = {floor}
delay_factor = 0.0
budget = "{budget}"
max_retries = 1
[limits]
timeout = 30.0
# Exactly the 7 requests a site the bench is specified with: /sitemap.xml, looked for by
# default since the sitemaps came in, would be an 8th (a 404 here) and a 7th gap of 5 s.
[discovery]
sitemaps = false
[output]
dir = "{outdir}"
{frontier}[resolve]
{resolve}""")
PY
}

# run_crawler NAME PROFILE: one crawler under /usr/bin/time -v, its exit instant in NAME.exit.
run_crawler() {
    local name="$1" profile="$2"
    (
        set +e
        # timeout inside time: the TERM reaches the crawler itself, and time's figures (its
        # child's rusage) include the crawler, which timeout waits for.
        /usr/bin/time -v -o "$OUT/$name.time" timeout -s TERM "$LIMIT" \
            "$BIN" crawl --profile "$profile" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"
        echo $? >"$OUT/$name.rc"
        date +%s.%N >"$OUT/$name.exit"
    ) &
    CRAWL_PIDS+=($!)
    sample_cpu "$name" &
}

# sample_cpu NAME: once a second, the crawler's CPU ticks (all threads) and its busiest thread's,
# to NAME.cpu ("seconds-since-start total-ticks busiest-thread-ticks threads"), so the report
# can say whether the start is bound by one core. With BENCH_PERF=S, `perf record -g` on the
# crawler for its first S seconds (NAME.perf.data).
sample_cpu() {
    local name="$1" pid="" i f tot best n tk c
    for ((i = 0; i < 100; i++)); do
        pid="$(pgrep -f -n -- "^$BIN crawl --profile $OUT/$name.toml" || true)"
        [[ -n "$pid" ]] && break
        sleep 0.05
    done
    [[ -n "$pid" ]] || return 0
    if [[ -n "${BENCH_PERF:-}" ]] && command -v perf >/dev/null; then
        # After the runtime's threads exist: `perf record -p` follows only the threads it finds.
        (sleep 1.5 && perf record -F 499 --call-graph "${BENCH_PERF_CALLS:-fp}" -o "$OUT/$name.perf.data" -p "$pid" -- sleep "$BENCH_PERF" \
            >"$OUT/$name.perf.log" 2>&1) &
    fi
    while kill -0 "$pid" 2>/dev/null; do
        tot=0 best=0 n=0
        for tk in /proc/"$pid"/task/*/stat; do
            f=($(sed 's/^.*) //' "$tk" 2>/dev/null)) || continue
            [[ ${#f[@]} -gt 12 ]] || continue
            c=$((f[11] + f[12]))
            tot=$((tot + c)); n=$((n + 1))
            [[ "$c" -gt "$best" ]] && best="$c"
        done
        echo "$EPOCHREALTIME $tot $best $n" >>"$OUT/$name.cpu"
        sleep 1
    done
}

# analyse NAME NCRAWLERS [PG_CPU] [XACTS]: one row of figures from NAME.access.log.
analyse() {
    "$PY" - "$OUT" "$1" "$2" "$N" "$BUDGET" "$FLOOR" "$TOL" "${3:-}" "${4:-}" <<'PY'
import glob, os, re, sys
from collections import defaultdict
out, name, ncrawl, n, budget, floor, tol, pgcpu, xacts = sys.argv[1:10]
n, ncrawl, floor, tol = int(n), int(ncrawl), float(floor), float(tol)
by_budget, by_site, per_sec = defaultdict(list), defaultdict(set), defaultdict(int)
first, last, total, bad = None, None, 0, 0
for line in open(os.path.join(out, f"{name}.access.log")):
    parts = line.split()
    if len(parts) != 6:
        continue
    end, rt, addr, host, status, uri = parts
    end = float(end); start = end - float(rt)
    total += 1
    first = start if first is None else min(first, start)
    last = end if last is None else max(last, end)
    by_budget[host if budget == "host" else addr].append((start, end))
    if status == "200":
        by_site[host].add(uri)
    else:
        bad += 1
    per_sec[int(start)] += 1
want = {"/robots.txt", "/", "/page1.html", "/page2.html", "/page3.html", "/page4.html", "/page5.html"}
complete = sum(1 for s in by_site.values() if want <= s)
violations, min_gap = 0, None
for v in by_budget.values():
    v.sort()
    for (_, e0), (s1, _) in zip(v, v[1:]):
        g = s1 - e0
        min_gap = g if min_gap is None else min(min_gap, g)
        if g < floor - tol:
            violations += 1
span = (last - first) if total else 0.0
eff = 6 * floor / span if span > 0 else 0.0
cpu = rss = 0.0
exits = []
for k in range(ncrawl):
    tag = name if ncrawl == 1 else f"{name}{k + 1}"
    t = open(os.path.join(out, f"{tag}.time")).read()
    u = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1))
    s = float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
    cpu += u + s
    rss = max(rss, int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024)
    exits.append(float(open(os.path.join(out, f"{tag}.exit")).read()))
calls = trips = 0
for log in glob.glob(os.path.join(out, f"{name}*.out", "run.log")):
    m = re.findall(r"shared frontier: (\d+) database calls in this run \((\d+) round trips\)", open(log, errors="replace").read())
    if m:
        calls += int(m[-1][0]); trips += int(m[-1][1])
start_file = os.path.join(out, f"{name}.start")
wall = max(exits) - float(open(start_file).read()) if os.path.exists(start_file) else 0.0
exit_after = max(exits) - last if total else 0.0
peak = max(per_sec.values()) if per_sec else 0
t_first = int(first) if total else 0
timeline = " ".join(str(per_sec.get(t_first + i, 0)) for i in range(16))
cores = ""
cpu_file = os.path.join(out, f"{name}.cpu")
if ncrawl == 1 and os.path.exists(cpu_file):
    hz = os.sysconf("SC_CLK_TCK")
    rows_ = [list(map(float, l.split())) for l in open(cpu_file) if len(l.split()) == 4]
    steps = [((b[1] - a[1]) / hz / max(b[0] - a[0], 1e-3), (b[2] - a[2]) / hz / max(b[0] - a[0], 1e-3))
             for a, b in zip(rows_, rows_[1:])]
    cores = " ".join(f"{c:.2f}/{t:.2f}" for c, t in steps[:16])
row = {
    "run": name, "crawlers": ncrawl, "requests": total, "non-200": bad,
    "sites complete": f"{complete}/{n}", "violations": violations,
    "min gap": f"{min_gap:.3f} s" if min_gap is not None else "-",
    "span": f"{span:.1f} s", "efficiency": f"{eff:.3f}", "wall": f"{wall:.1f} s",
    "last exit after last answer": f"{exit_after:.1f} s",
    "crawler CPU": f"{cpu:.1f} s", "crawler CPU/request": f"{cpu * 1e3 / max(total, 1):.3f} ms",
    "peak RSS (largest process)": f"{rss:.0f} MB", "peak requests/s": peak,
    "requests started per second, first 16 s": timeline,
}
if cores:
    row["crawler cores used per second (all threads/busiest thread), first 16 s"] = cores
if pgcpu:
    pg = float(pgcpu)
    row["PostgreSQL CPU"] = f"{pg:.1f} s"
    row["PostgreSQL CPU/request"] = f"{pg * 1e3 / max(total, 1):.3f} ms"
    row["total CPU/request"] = f"{(cpu + pg) * 1e3 / max(total, 1):.3f} ms"
    row["round trips/URL (run.log)"] = f"{trips / max(total, 1):.2f}"
    row["transactions/URL"] = f"{int(xacts) / max(total, 1):.2f}"
with open(os.path.join(out, f"{name}.row"), "w") as f:
    for k, v in row.items():
        f.write(f"| {k} | {v} |\n")
for k, v in row.items():
    print(f"| {k} | {v} |")
PY
}

# crawl_once NAME NCRAWLERS [DATABASE]: a fresh nginx, NCRAWLERS crawlers on the same profile
# (each its own output dir), waits for them all.
crawl_once() {
    local name="$1" k tag
    start_nginx "$name"
    CRAWL_PIDS=()
    date +%s.%N >"$OUT/$name.start"
    for ((k = 1; k <= $2; k++)); do
        tag="$name"
        [[ "$2" = 1 ]] || tag="$name$k"
        write_profile "$OUT/$tag.toml" "$OUT/$tag.out" "${3:-}" "${3:+ worker-$k}"
        run_crawler "$tag" "$OUT/$tag.toml"
    done
    say "$name: $2 crawler(s) on $N sites (timeout ${LIMIT} s each)"
    for p in "${CRAWL_PIDS[@]}"; do wait "$p" || true; done
    CRAWL_PIDS=()
    sleep 1.5 # nginx flushes its log buffer every second
    stop_nginx
}

# --- PostgreSQL's CPU: the whole server tree, reaped backends included ---------------------
pg_cpu_ticks() {
    local pm ticks=0 c f
    pm="$(head -n 1 "$PGDATA/postmaster.pid")"
    f=($(sed 's/^.*) //' "/proc/$pm/stat"))
    # fields after "(comm) ": state is [0], utime [11], stime [12], cutime [13], cstime [14]
    ticks=$((f[11] + f[12] + f[13] + f[14]))
    for c in $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
        [[ -r "/proc/$c/stat" ]] || continue
        f=($(sed 's/^.*) //' "/proc/$c/stat" 2>/dev/null)) || continue
        ticks=$((ticks + f[11] + f[12]))
    done
    echo "$ticks"
}

start_pg() {
    [[ -x "$PGBIN/initdb" ]] || die "no PostgreSQL 15 in $PGBIN"
    PGDATA="$OUT/pgdata"
    mkdir -p "$PGDATA"
    chmod 755 "$OUT"
    [[ "$(id -u)" = 0 ]] && chown postgres: "$PGDATA"
    chmod 700 "$PGDATA"
    as_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C >/dev/null
    PGPORT="$(free_port)"
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDATA -c max_connections=100" start >/dev/null
    as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench
    echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT"
}
psql_() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d bench -At "$@"; }

# --- the runs -------------------------------------------------------------------------------
{
    echo "# tools/bench/nginx_sites.sh $*"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$REPO" rev-parse --short HEAD), $(nproc) cores"
    echo "uptime before: $(uptime)"
} >"$OUT/results.md"

if [[ "$MODE" = workers ]]; then
    crawl_once sqlite 1
    start_pg
    X0="$(psql_ -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'bench'")"
    T0="$(pg_cpu_ticks)"
    crawl_once pg "$W" "postgresql://postgres@127.0.0.1:$PGPORT/bench"
    T1="$(pg_cpu_ticks)"
    X1="$(psql_ -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'bench'")"
    PGCPU="$("$PY" -c "print(($T1 - $T0) / $(getconf CLK_TCK))")"
    { echo; echo "## one process, SQLite frontier"; echo; echo "| | |"; echo "| --- | ---: |"; } >>"$OUT/results.md"
    analyse sqlite 1 >>"$OUT/results.md"
    { echo; echo "## $W workers, [frontier] database"; echo; echo "| | |"; echo "| --- | ---: |"; } >>"$OUT/results.md"
    analyse pg "$W" "$PGCPU" "$((X1 - X0))" >>"$OUT/results.md"
else
    crawl_once crawl 1
    { echo; echo "| | |"; echo "| --- | ---: |"; } >>"$OUT/results.md"
    analyse crawl 1 >>"$OUT/results.md"
fi
echo "uptime after: $(uptime)" >>"$OUT/results.md"
say "Results: $OUT/results.md"
cat "$OUT/results.md"
