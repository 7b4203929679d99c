#!/usr/bin/env bash
# tools/bench/many_sites.sh: the "many sites" benchmark of the politeness engine.
#
# Usage: tools/bench/many_sites.sh [N_SITES] [SECONDS]     (defaults: 10000 90)
#
# Serves N_SITES distinct sites (site-00000.test …), each on its OWN loopback address
# 127.1.x.y (one listening socket per address, one port for all), crawls them with the release
# crawler at the real 5-second floor (min_delay = 5, delay_factor = 0, sites_at_once = N),
# stops it with SIGINT after SECONDS, and reports from the server's own request log:
# fetches/s against the ideal N / 5 s, the worst gap between the end of an answer and the
# next request to the same site, CPU and peak RSS of the crawler, and its open descriptors.
#
# Environment:
#   BENCH_WARMUP=S     seconds after the first request left out of the rate (default 10)
#   BENCH_NO_BUILD=1   skip the builds (use the binaries already built)
#   BENCH_REPORT_ONLY=1  run nothing: recompute the figures of the last run with these arguments
#   BENCH_WARC_MAX_BYTES=B   [output] warc_max_bytes of the crawl (default: the crawler's, 1 GB)
#   BENCH_MAX_DIGESTS=D  [dedup] max_digests of the crawl (default: the crawler's, 1,000,000):
#                      every page here has its own payload, so the digest index grows by one
#                      entry a fetch up to D; a small D shows what else grows over a long run
#   BENCH_NICE=K       run the server and the crawler under `nice -n K` (e.g. -10 as root, so
#                      other jobs on a shared machine disturb the measure less; default: not)
#   CARGO_TARGET_DIR   honoured as cargo does
# Output: tools/bench/out/many_sites-N-SECONDSs/ (+ -warcB, -niceK with those settings; git-ignored),
# replaced on each run; results.md there.
# Nothing listens or connects outside 127.0.0.0/8.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
N="${1:-10000}"
SECS="${2:-90}"
WARMUP="${BENCH_WARMUP:-10}"
WARC_MAX="${BENCH_WARC_MAX_BYTES:-}"
MAX_DIGESTS="${BENCH_MAX_DIGESTS:-}"
OUT="$HERE/out/many_sites-$N-${SECS}s${WARC_MAX:+-warc$WARC_MAX}${MAX_DIGESTS:+-digests$MAX_DIGESTS}${BENCH_NICE:+-nice$BENCH_NICE}"

[[ "$N" =~ ^[0-9]+$ && "$N" -ge 1 && "$N" -le 62500 ]] || die "N_SITES must be 1..62500"
[[ "$SECS" =~ ^[0-9]+$ && "$SECS" -ge 20 && "$SECS" -le 3600 ]] || die "SECONDS must be 20..3600"
[[ "$WARMUP" =~ ^[0-9]+$ && "$WARMUP" -lt "$SECS" ]] || die "BENCH_WARMUP must be below SECONDS"
[[ -z "$WARC_MAX" || "$WARC_MAX" =~ ^[0-9]+$ ]] || die "BENCH_WARC_MAX_BYTES must be a number of bytes"
[[ -z "$MAX_DIGESTS" || "$MAX_DIGESTS" =~ ^[0-9]+$ ]] || die "BENCH_MAX_DIGESTS must be a whole number"
NICE=()
if [[ -n "${BENCH_NICE:-}" ]]; then
    [[ "$BENCH_NICE" =~ ^-?[0-9]+$ ]] || die "BENCH_NICE must be a whole number"
    NICE=(nice -n "$BENCH_NICE")
fi
for tool in python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed but not found on PATH"
done
need_gnu_time
PY="$(python3 -c 'import sys; print(sys.executable)')"

# One descriptor per listening socket in a server process, one per request in flight in the
# crawler (which caps its requests in flight below the limit by itself).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
FD_LIMIT="$(ulimit -n)"
# More sites than one process may hold are served by several server processes, each with its
# own range of sites (BENCH_SITES_PER_SERVER, default 10,000: the 1,000- and 10,000-site runs
# keep their single server).
PER_SERVER="${BENCH_SITES_PER_SERVER:-10000}"
[[ "$PER_SERVER" =~ ^[0-9]+$ && "$PER_SERVER" -ge 1 ]] || die "BENCH_SITES_PER_SERVER must be a number >= 1"
ONE_SERVER=$((N < PER_SERVER ? N : PER_SERVER))
[[ "$FD_LIMIT" = unlimited || "$FD_LIMIT" -ge $((ONE_SERVER + 512)) ]] ||
    die "open-file limit $FD_LIMIT is too low for $ONE_SERVER sites in one server (need about $((ONE_SERVER + 512))); lower BENCH_SITES_PER_SERVER"
# A server holds its listening sockets AND one descriptor per connection in flight to its sites:
# short of that it refuses connections (accept errors in its last line) and the figures are the
# server's, not the crawler's.
[[ "$FD_LIMIT" = unlimited || "$FD_LIMIT" -ge $((2 * ONE_SERVER + 512)) ]] ||
    echo "many_sites.sh: warning: open-file limit $FD_LIMIT is below 2 x $ONE_SERVER + 512: a server may refuse connections (see its accept errors)" >&2

# --- processes and cleanup ------------------------------------------------------------------
SERVER_PIDS=() TIMER_PID="" CRAWLER_PID="" SAMPLER_PID=""
cleanup() {
    stop_pid "$SAMPLER_PID" TERM 2
    stop_pid "$CRAWLER_PID" TERM 20
    stop_pid "$TIMER_PID" TERM 5
    local pid
    for pid in "${SERVER_PIDS[@]}"; do stop_pid "$pid" TERM 10; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# report: computes the figures of the run in $OUT from its logs and run.env (section 5).
report() {
    say "Results ($N sites, $SECS s)"
    set -a
    # shellcheck disable=SC1091  # written by the run itself
    source "$OUT/run.env"
    set +a
    MS_TCK="$(getconf CLK_TCK)"
    export MS_OUT="$OUT" MS_N="$N" MS_SECS="$SECS" MS_WARMUP="$WARMUP" MS_TCK
"$PY" - <<'PY'
import datetime, os, re
from collections import defaultdict

env = os.environ
out, n, secs = env["MS_OUT"], int(env["MS_N"]), int(env["MS_SECS"])
warmup, tck = int(env["MS_WARMUP"]), int(env["MS_TCK"])
start, stop, end = int(env["MS_START"]), int(env["MS_STOP"]), int(env["MS_END"])
FLOOR = 5_000_000_000  # ns

# Server log: site arrival_ns end_ns status kind wrong_host
per_site = defaultdict(list)
kinds = defaultdict(int)
wrong = 0
for line in open(os.path.join(out, "server.log")):
    s, a, e, st, kind, w = line.split()
    per_site[int(s)].append((int(a), int(e)))
    kinds[(kind, st)] += 1
    wrong += int(w)
total = sum(kinds.values())
first = min(a for v in per_site.values() for a, _ in v)

# Rate: arrivals in [first + warmup, first + warmup + 5k s], the largest whole number of
# 5-second periods before SIGINT, so the periodic waves of requests are counted whole.
w0 = first + warmup * 10**9
periods = max(1, (stop - w0) // FLOOR)
w1 = w0 + periods * FLOOR
in_window = sum(1 for v in per_site.values() for a, _ in v if w0 <= a < w1)
win_s = (w1 - w0) / 1e9
count_rate = in_window / win_s
ideal = n / 5.0

# Gaps per site: next arrival - previous end.
gaps, worst = [], None
steady_gaps = []
for site, v in per_site.items():
    v.sort()
    for (a0, e0), (a1, _) in zip(v, v[1:]):
        g = a1 - e0
        gaps.append(g)
        if worst is None or g < worst[0]:
            worst = (g, site, a1)
        if a1 >= w0:
            steady_gaps.append(g)
gaps.sort()
steady_gaps.sort()
def pct(xs, p):
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else 0
violations = sum(1 for g in gaps if g < FLOOR)
# Arrival-to-arrival cycle per site, between requests that both arrived in the rate window:
# N / mean cycle is the rate the crawl sustains, free of the sampling noise of counting waves.
steady_cycles = []
for v in per_site.values():
    arr = [a for a, _ in v if w0 <= a < w1]
    steady_cycles += [b - a for a, b in zip(arr, arr[1:])]
mean_cycle = sum(steady_cycles) / len(steady_cycles) / 1e9 if steady_cycles else 0
# The headline rate: each site's own pace in the window, (requests - 1) / (last - first arrival),
# summed over the sites. Counting arrivals in a fixed window is the same in the long run, but
# with every site started at once the requests come in waves and a count can be off by a
# fraction of a wave; the per-site pace is not.
rate = 0.0
for v in per_site.values():
    arr = [a for a, _ in v if w0 <= a < w1]
    if len(arr) > 1:
        rate += (len(arr) - 1) / ((arr[-1] - arr[0]) / 1e9)
fetches_per_site = sorted(len(v) for v in per_site.values())
# Whole-run efficiency (ideal / actual), start-up burst included: a site's k requests take at
# best (k - 1) x 5 s from its first, and that first could leave as the crawler starts; so per
# site ideal = (k - 1) x 5 s and actual = its last arrival - the crawler's start, summed over
# all N sites (a site never asked counts its whole run as actual).
whole_ideal = sum((len(v) - 1) * FLOOR for v in per_site.values())
whole_actual = sum(max(a for a, _ in v) - start for v in per_site.values()) + (n - len(per_site)) * (stop - start)
efficiency = whole_ideal / whole_actual if whole_actual > 0 else 0.0
crawler_cpu_s = None

# Crawler's own view, from crawl.log: start yyyyMMddHHmmssSSS+ms per URL, per host.
crawl_gap_min = None
by_site = defaultdict(list)
log_lines = 0
try:
    for line in open(os.path.join(out, "crawl", "crawl.log"), errors="replace"):
        f = line.split()
        if len(f) < 9 or "+" not in f[8]:
            continue
        log_lines += 1
        t, d = f[8].split("+")
        ts = datetime.datetime.strptime(t, "%Y%m%d%H%M%S%f").replace(tzinfo=datetime.timezone.utc)
        ms = round(ts.timestamp() * 1000)
        host = f[3].split("/")[2]          # site-NNNNN.test:PORT
        by_site[int(host.split(".")[0][5:])].append((ms, ms + int(d)))
    for v in by_site.values():
        v.sort()
        for (s0, e0), (s1, _) in zip(v, v[1:]):
            g = s1 - e0
            crawl_gap_min = g if crawl_gap_min is None else min(crawl_gap_min, g)
except (OSError, ValueError):
    pass

# A gap below 5 s on the server's clock is checked against the crawler's log. The server takes
# its "end" right after handing the last bytes to the kernel; if its thread is descheduled just
# then (a loaded machine), that timestamp comes late and the gap looks short. The answer really
# ended no later than the crawler had it whole (crawl.log start + duration, +2 ms for the
# rounding to ms), so a gap is a real violation only if it is still below 5 s from that instant.
suspects = []   # (server gap, gap from the earlier of the two ends or None, server end late by ms)
for site, v in per_site.items():
    c = by_site.get(site)
    for i in range(1, len(v)):
        g = v[i][0] - v[i - 1][1]
        if g >= FLOOR:
            continue
        if not c or len(c) != len(v):
            suspects.append((g, None, None))   # cannot be matched: counted as real
            continue
        crawler_end = (c[i - 1][1] + 2) * 1_000_000
        suspects.append((g, v[i][0] - min(v[i - 1][1], crawler_end), (v[i - 1][1] - crawler_end) / 1e6))
real = [x for x in suspects if x[1] is None or x[1] < FLOOR]
explained = [x for x in suspects if x not in real]

# /usr/bin/time -v
t = {}
try:
    text = open(os.path.join(out, "crawler.time")).read()
    for key, pat in [("user", r"User time \(seconds\): ([\d.]+)"),
                     ("sys", r"System time \(seconds\): ([\d.]+)"),
                     ("cpu_pct", r"Percent of CPU this job got: (\d+)%"),
                     ("wall", r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)"),
                     ("rss_kb", r"Maximum resident set size \(kbytes\): (\d+)"),
                     ("vcs", r"Voluntary context switches: (\d+)"),
                     ("ivcs", r"Involuntary context switches: (\d+)")]:
        m = re.search(pat, text)
        if m:
            v = m.group(1)
            if key == "wall":
                secs_ = 0.0
                for part in v.split(":"):
                    secs_ = secs_ * 60 + float(part)
                v = secs_
            t[key] = float(v)
except OSError:
    pass

# CPU per request: all the crawler's user + system time over every request the server saw.
if "user" in t and "sys" in t and total:
    crawler_cpu_s = t["user"] + t["sys"]
cpu_per_request_ms = crawler_cpu_s / total * 1e3 if crawler_cpu_s is not None else None

# Samples: CPU in the steady window, descriptors, RSS over time.
rows = []
try:
    for line in list(open(os.path.join(out, "samples.tsv")))[1:]:
        rows.append([int(x) for x in line.split()])
except (OSError, ValueError):
    pass
def window_cpu(col):
    r = [x for x in rows if w0 <= x[0] <= w1]
    if len(r) < 2:
        return None
    return (r[-1][col] - r[0][col]) / tck / ((r[-1][0] - r[0][0]) / 1e9) * 100
crawler_cpu_w = window_cpu(3)
server_cpu_w = window_cpu(4)
main_cpu_w = window_cpu(6) if rows and len(rows[0]) > 8 else None
machine_cpu_w = window_cpu(7) if rows and len(rows[0]) > 8 else None
irq_cpu_w = window_cpu(8) if rows and len(rows[0]) > 8 else None
# Softirq time of the loopback traffic is partly charged to the crawler and the server, so this
# difference is only good to about ±5% of a core; below zero is shown as zero.
others_cpu_w = (max(0.0, machine_cpu_w - crawler_cpu_w - (server_cpu_w or 0))
                if machine_cpu_w is not None and crawler_cpu_w is not None else None)
max_fds = max((x[1] for x in rows), default=0)
max_threads = max((x[9] for x in rows if len(x) > 9), default=0)
server_fds = max((x[5] for x in rows), default=0)
def rss_slope():
    r = [x for x in rows if w0 <= x[0] <= stop]   # before SIGINT: shutdown frees memory
    if len(r) < 2:
        return None
    return (r[-1][2] - r[0][2]) / 1024 / ((r[-1][0] - r[0][0]) / 60e9)
rss_growth = rss_slope()
rss_per_100k = rss_growth / (rate * 60) * 1e5 if rss_growth is not None and rate else None
running = [x for x in rows if x[0] <= stop] or rows
rss_at = lambda frac: running[min(len(running) - 1, int(frac * len(running)))][2] / 1024 if running else 0

# Over time, per 10 s from the first request: requests/s, lateness (gap − 5 s) of the requests
# that arrived then, the most requests in flight (crawler descriptors) and other jobs' CPU.
# Shows the warm-up (N sites all due at the same instant), WARC rotations, outside load.
slices = defaultdict(list)
for v in per_site.values():
    for (a0, e0), (a1, _) in zip(v, v[1:]):
        slices[(a1 - first) // 10**10].append((a1 - e0 - FLOOR) / 1e6)
counts = defaultdict(int)
for v in per_site.values():
    for a, _ in v:
        counts[(a - first) // 10**10] += 1
def slice_load(k):
    r = [x for x in rows if first + k * 10**10 <= x[0] < first + (k + 1) * 10**10]
    if len(r) < 2 or len(r[0]) < 9:
        return "-", "-"
    dt = (r[-1][0] - r[0][0]) / 1e9 * tck / 100
    others = ((r[-1][7] - r[0][7]) - (r[-1][3] - r[0][3]) - (r[-1][4] - r[0][4])) / dt if dt else 0
    return max(x[1] for x in r), f"{max(0.0, others):.0f}%"
timeline = ["| from s | requests/s | lateness median ms | p90 ms | max ms | crawler fds (max) | other jobs' CPU |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
for k in sorted(set(counts) | set(slices)):
    late = sorted(slices.get(k, [])) or [0.0]
    fds, others = slice_load(k)
    timeline.append(f"| {k * 10} | {counts[k] / 10:,.0f} | {late[len(late) // 2]:.0f} | {late[int(len(late) * 0.9)]:.0f} "
                    f"| {late[-1]:.0f} | {fds} | {others} |")
ms = lambda ns: f"{ns / 1e6:+.1f} ms"
worst_v = worst[0] - FLOOR if worst else None
table = f"""| sites | run s | whole-run efficiency | fetches/s (steady) | ideal/s | % of ideal | worst gap − 5 s (server clock) | real violations | crawler CPU % | CPU per request | peak RSS MB | other load % |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| {n:,} | {secs} | {efficiency:.3f} | {rate:,.1f} | {ideal:,.0f} | {rate / ideal * 100:.1f}% | {ms(worst_v) if worst else '-'} | {len(real)} | {crawler_cpu_w if crawler_cpu_w is not None else t.get('cpu_pct', 0):.0f}% | {f'{cpu_per_request_ms:.3f} ms' if cpu_per_request_ms is not None else '-'} | {t.get('rss_kb', 0) / 1024:.0f} | {f'{others_cpu_w:.0f}%' if others_cpu_w is not None else '-'} |"""
raw = f"""- requests seen by the server: {total:,} ({', '.join(f'{k}/{st}: {c:,}' for (k, st), c in sorted(kinds.items()))}; r = robots.txt, p = page, e = no request); Host header naming another site: {wrong}
- crawl.log lines with a fetch: {log_lines:,}; crawler exit status {env['MS_RC']} (130 = stopped by SIGINT)
- first request {(first - start) / 1e9:.2f} s after the crawler started; rate window: {warmup} s after the first request, {periods} whole 5-s periods ({win_s:.0f} s), {in_window:,} requests
- per-site fetches in the run: min {fetches_per_site[0]}, median {fetches_per_site[len(fetches_per_site) // 2]}, max {fetches_per_site[-1]}; sites that got no request: {n - len(per_site)}
- gap (next arrival − previous end, server clock), all {len(gaps):,} gaps: min {gaps[0] / 1e9:.4f} s (site {worst[1]}), median {pct(gaps, 50) / 1e9:.4f} s, p99 {pct(gaps, 99) / 1e9:.4f} s, max {gaps[-1] / 1e9:.4f} s
- same in the steady window ({len(steady_gaps):,} gaps): median {pct(steady_gaps, 50) / 1e9:.4f} s, p90 {pct(steady_gaps, 90) / 1e9:.4f} s, p99 {pct(steady_gaps, 99) / 1e9:.4f} s, max {steady_gaps[-1] / 1e9 if steady_gaps else 0:.4f} s
- rate: sum over sites of (requests − 1) ÷ (last − first arrival) in the window = {rate:,.1f}/s; plain count of arrivals in the window ÷ its length = {count_rate:,.1f}/s ({count_rate / ideal * 100:.1f}% of ideal; counts whole waves of requests, so it can be off by a fraction of a wave); mean arrival-to-arrival cycle per site {mean_cycle:.4f} s (= 5 s + fetch time + the crawler's 5 ms margin + scheduling lateness)
- crawler's own view (crawl.log, ms): smallest gap between one fetch's end and the next start on a host: {crawl_gap_min} ms
- gaps below 5 s on the server clock: {violations}{(f"; {len(explained)} of them are the server logging its end late (by {min(x[2] for x in explained):.1f} to {max(x[2] for x in explained):.1f} ms after the crawler already had the whole answer; from the crawler's end the smallest such gap is {min(x[1] for x in explained) / 1e9:.4f} s)") if explained else ""}; real violations (still below 5 s from the earlier of the two ends, or unmatched): {len(real)}{f", worst {min(x[0] for x in real) / 1e6 - 5000:+.1f} ms" if real else ""}
- whole-run efficiency (ideal / actual, the start-up burst included): Σ over sites of (requests − 1) × 5 s = {whole_ideal / 1e9:,.0f} s ÷ Σ of (last arrival − crawler start) = {whole_actual / 1e9:,.0f} s = {efficiency:.3f}
- CPU per request: crawler user + sys {f'{crawler_cpu_s:.2f} s' if crawler_cpu_s is not None else '-'} ÷ {total:,} requests = {f'{cpu_per_request_ms:.3f} ms' if cpu_per_request_ms is not None else '-'} (the whole run: start-up, the steady state and the shutdown)
- crawler (/usr/bin/time -v): user {t.get('user', 0):.1f} s, sys {t.get('sys', 0):.1f} s, wall {t.get('wall', 0):.1f} s, CPU {t.get('cpu_pct', 0):.0f}% over the whole run, {f'{crawler_cpu_w:.0f}%' if crawler_cpu_w is not None else '-'} in the steady window (100% = one core of 2); peak RSS {t.get('rss_kb', 0) / 1024:.0f} MB; RSS at 25/50/75/100% of the run (before SIGINT): {rss_at(0.25):.0f}/{rss_at(0.5):.0f}/{rss_at(0.75):.0f}/{rss_at(1.0):.0f} MB, {'-' if rss_growth is None else (f'growing {rss_growth:.0f} MB/min ({rss_per_100k or 0:.0f} MB per 100,000 fetches) after the warm-up' if rss_growth > 0 else f'not growing after the warm-up ({rss_growth:.0f} MB/min)')}; context switches {t.get('vcs', 0):.0f} voluntary, {t.get('ivcs', 0):.0f} involuntary
- crawler's main thread (the dispatcher): {f'{main_cpu_w:.0f}%' if main_cpu_w is not None else '-'} of a core in the steady window
- machine, in the steady window, out of {os.cpu_count() * 100}%: {f'{machine_cpu_w:.0f}%' if machine_cpu_w is not None else '-'} in processes (user + system), of which {f'{others_cpu_w:.0f}%' if others_cpu_w is not None else '-'} in processes other than the crawler and the server (other jobs on a shared machine, kernel threads; this script's sampler is ~1%; ±5%); {f'{irq_cpu_w:.0f}%' if irq_cpu_w is not None else '-'} in interrupts and softirqs (mostly the loopback TCP traffic itself) and steal
- server: {f'{server_cpu_w:.0f}%' if server_cpu_w is not None else '-'} CPU in the steady window (one thread per server process), up to {server_fds:,} descriptors ({n:,} listening sockets)
- priority: {f"crawler and server under nice -n {env['MS_NICE']}" if env.get('MS_NICE') else "normal (no BENCH_NICE)"}
- threads: the crawler had up to {max_threads} at once (tokio's workers and blocking pool, the WARC writer thread)
- descriptors: crawler up to {max_fds:,} open (limit {env['MS_FDLIMIT']}); load average before the run: {env['MS_LOAD']}"""
doc = f"""# Many sites: {n:,} loopback sites at the 5 s floor

Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `tools/bench/many_sites.sh {n} {secs}`, {os.cpu_count()} CPUs.
Crawler: {env.get('MS_BIN', '?')} (built {env.get('MS_BIN_TIME', '?')}); repository at git {env['MS_GIT']}.

{table}

Whole-run efficiency: per site, (requests − 1) × 5 s ÷ (last arrival − crawler start), summed
over the sites before dividing; 1 would be every site asked the instant the crawler started and
every 5 s after. CPU per request: the crawler's user + system time ÷ the requests the server saw.
Rate: requests the server received in the steady window ÷ its length; ideal = sites ÷ 5 s.
Worst gap: min over sites and consecutive requests of (arrival − end of the previous answer),
minus 5 s, on the server's clock; ≥ 0 means no violation. CPU %: the crawler process in the
steady window (from /proc samples), where 100% is one full core. Other load: CPU used meanwhile
by processes other than the crawler and the server, out of the machine's {os.cpu_count() * 100}%: the
figures are only comparable between runs with little of it.

## Raw numbers
{raw}

## Over time (10-s slices from the first request; lateness = gap − 5 s)
{chr(10).join(timeline)}
"""
open(os.path.join(out, "results.md"), "w").write(doc)
print(table)
print()
print(raw)
PY
    echo
    echo "Saved: $OUT/results.md"
}
if [[ "${BENCH_REPORT_ONLY:-0}" = 1 ]]; then
    # Recompute the figures of an earlier run with the same N_SITES and SECONDS; runs nothing.
    [[ -s "$OUT/run.env" && -s "$OUT/server.log" ]] || die "no earlier run in $OUT"
    report
    exit 0
fi

# --- 1. build -------------------------------------------------------------------------------
release_binary "${BENCH_NO_BUILD:-0}"

# The server is the bench target `manysites_server` of Cargo.toml when it is declared there;
# otherwise it is built as a one-file crate under out/ (tokio only, versions from Cargo.lock).
mkdir -p "$HERE/out"
if grep -q '^name = "manysites_server"' "$REPO/Cargo.toml"; then
    say "Building the server: cargo bench --no-run --bench manysites_server"
    SERVER_BIN="$(cd "$REPO" && cargo bench --no-run --bench manysites_server --message-format=json 2>/dev/null |
        "$PY" -c 'import json, sys
exe = [m["executable"] for m in map(json.loads, sys.stdin)
       if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "manysites_server"]
print(exe[-1] if exe else "")')" || true
else
    say "Building the server (standalone; Cargo.toml declares no manysites_server bench)"
    CRATE="$HERE/out/manysites_server_crate"
    mkdir -p "$CRATE"
    cat >"$CRATE/Cargo.toml" <<EOF
[package]
name = "manysites_server"
version = "0.1.0"
edition = "2021"
publish = false
[[bin]]
name = "manysites_server"
path = "$HERE/manysites_server.rs"
[dependencies]
tokio = { version = "1", features = ["rt", "net", "time", "io-util", "signal", "macros"] }
[profile.release]
debug = 1
[workspace]
EOF
    cp "$REPO/Cargo.lock" "$CRATE/Cargo.lock"
    if [[ "${BENCH_NO_BUILD:-0}" != 1 ]]; then
        (cd "$CRATE" && CARGO_TARGET_DIR="$CRATE/target" cargo build --release --quiet) ||
            die "the server build failed"
    fi
    SERVER_BIN="$CRATE/target/release/manysites_server"
fi
[[ -n "${SERVER_BIN:-}" && -x "$SERVER_BIN" ]] || die "could not build the manysites_server benchmark server"

# --- 2. serve N sites -----------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT"
SERVERS=$(((N + PER_SERVER - 1) / PER_SERVER))
say "Serving $N sites on 127.1.x.y (one address each) from $SERVERS server process(es)"
# The first server picks the port; the others bind their sites on the same one.
PORT=""
for ((k = 0; k < SERVERS; k++)); do
    first=$((k * PER_SERVER))
    count=$((N - first < PER_SERVER ? N - first : PER_SERVER))
    "${NICE[@]}" "$SERVER_BIN" --first "$first" --sites "$count" --log "$OUT/server.log.$k" \
        --ready "$OUT/server.port.$k" ${PORT:+--port "$PORT"} \
        --max-seconds $((SECS + 300)) 2>"$OUT/server.stderr.$k" &
    SERVER_PIDS+=($!)
    for _ in $(seq 1 600); do
        [[ -s "$OUT/server.port.$k" ]] && break
        kill -0 "${SERVER_PIDS[$k]}" 2>/dev/null || { cat "$OUT/server.stderr.$k" >&2; die "server $k exited"; }
        sleep 0.1
    done
    [[ -s "$OUT/server.port.$k" ]] || die "server $k did not start within 60 s"
    PORT="$(cat "$OUT/server.port.$k")"
    cat "$OUT/server.stderr.$k"
done

# --- 3. the profile -------------------------------------------------------------------------
"$PY" - "$N" "$PORT" "$OUT/profile.toml" "$WARC_MAX" "$MAX_DIGESTS" <<'PY'
import sys
n, port, path, warc_max, max_digests = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def addr(i):  # as site_addr() in manysites_server.rs
    return f"127.1.{i // 250}.{i % 250 + 1}"
with open(path, "w") as f:
    f.write(f"""# Written by tools/bench/many_sites.sh: {n} sites, each on its own loopback address.
[crawl]
name = "many-sites-{n}"
sites_at_once = {n}
seeds = [
""")
    f.writelines(f'  "http://site-{i:05d}.test:{port}/",\n' for i in range(n))
    f.write("""]
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact)"
operator = "tools/bench/many_sites.sh"
[scope]
max_hops = 100000
[politeness]
# The real floor: 5 s between the end of an answer and the next request to one address.
min_delay = 5.0
delay_factor = 0.0
max_retries = 1
[limits]
timeout = 30.0
[output]
dir = "crawl"
prefix = "MANY"
""")
    if warc_max:
        f.write(f"warc_max_bytes = {warc_max}\n")
    if max_digests:
        f.write(f"[dedup]\nmax_digests = {max_digests}\n")
    f.write("[resolve]\n")
    f.writelines(f'"site-{i:05d}.test" = "{addr(i)}"\n' for i in range(n))
PY
"$BIN" profile check "$OUT/profile.toml" >/dev/null || die "the generated profile was refused"

# --- 4. crawl for SECONDS, then SIGINT ------------------------------------------------------
say "Crawling for $SECS s: $BIN crawl --profile $OUT/profile.toml"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
START_NS="$(date +%s%N)"
# bash writes its pid and execs the crawler, so CRAWLER_PID is the crawler itself (the child
# of /usr/bin/time). The crawler installs its own SIGINT handler, so a background start is fine.
# shellcheck disable=SC2016  # $$ and $@ belong to the inner bash
"${NICE[@]}" /usr/bin/time -v -o "$OUT/crawler.time" \
    bash -c 'echo $$ >"$0" && exec "$@"' "$OUT/crawler.pid" \
    "$BIN" crawl --profile "$OUT/profile.toml" >"$OUT/crawler.stdout" 2>"$OUT/crawler.stderr" &
TIMER_PID=$!
for _ in $(seq 1 100); do
    [[ -s "$OUT/crawler.pid" ]] && break
    sleep 0.05
done
CRAWLER_PID="$(cat "$OUT/crawler.pid")"

# Once a second: the crawler's descriptors, RSS and CPU ticks (all threads, and its main thread,
# where the dispatcher runs), the server's CPU ticks and descriptors, and the whole machine's
# busy ticks (so CPU taken by other processes during the run shows in the report).
SERVER_LIST="$(IFS=,; echo "${SERVER_PIDS[*]}")"
"$PY" - "$CRAWLER_PID" "$SERVER_LIST" "$OUT/samples.tsv" <<'PY' &
import os, sys, time
crawler, servers, path = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
def ticks(pid, stat=None):
    f = open(stat or f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
def machine_busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    # (user + nice + system, irq + softirq + steal): loopback TCP is largely softirq work
    return f[0] + f[1] + f[2], f[5] + f[6] + f[7]
def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
with open(path, "w") as out:
    out.write("t_ns\tcrawler_fds\tcrawler_rss_kb\tcrawler_ticks\tserver_ticks\tserver_fds"
              "\tcrawler_main_ticks\tmachine_task_ticks\tmachine_irq_ticks\tcrawler_threads\n")
    while True:
        try:
            row = (time.time_ns(), len(os.listdir(f"/proc/{crawler}/fd")), rss_kb(crawler),
                   ticks(crawler), sum(ticks(s) for s in servers),
                   sum(len(os.listdir(f"/proc/{s}/fd")) for s in servers),
                   ticks(crawler, f"/proc/{crawler}/task/{crawler}/stat"), *machine_busy(),
                   len(os.listdir(f"/proc/{crawler}/task")))
        except (OSError, IndexError, ValueError):
            break
        out.write("\t".join(map(str, row)) + "\n")
        out.flush()
        time.sleep(1.0)
PY
SAMPLER_PID=$!

for ((i = 0; i < SECS; i++)); do
    kill -0 "$CRAWLER_PID" 2>/dev/null || break
    sleep 1
done
STOP_NS="$(date +%s%N)"
CRAWLER_RC=0
if kill -0 "$CRAWLER_PID" 2>/dev/null; then
    echo "  SIGINT to the crawler (pid $CRAWLER_PID) after $SECS s"
    kill -INT "$CRAWLER_PID"
    for _ in $(seq 1 600); do
        kill -0 "$CRAWLER_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$CRAWLER_PID" 2>/dev/null; then
        echo "  the crawler did not stop within 60 s of SIGINT: SIGTERM, then SIGKILL" >&2
        stop_pid "$CRAWLER_PID" TERM 10
    fi
else
    echo "  the crawler ended by itself before $SECS s" >&2
fi
wait "$TIMER_PID" || CRAWLER_RC=$?
TIMER_PID="" CRAWLER_PID=""
END_NS="$(date +%s%N)"
stop_pid "$SAMPLER_PID" TERM 2
SAMPLER_PID=""
echo "  crawler exit status $CRAWLER_RC (130 = stopped by SIGINT, as asked)"

# The servers write their logs when they stop; each log is sorted by site, and the ranges of
# sites follow each other, so the logs joined in order are one sorted log.
for pid in "${SERVER_PIDS[@]}"; do stop_pid "$pid" INT 60; done
for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
SERVER_PIDS=()
: >"$OUT/server.log"
for ((k = 0; k < SERVERS; k++)); do
    tail -n 1 "$OUT/server.stderr.$k"
    [[ -s "$OUT/server.log.$k" ]] || die "server $k wrote no request log"
    cat "$OUT/server.log.$k" >>"$OUT/server.log" && rm -f "$OUT/server.log.$k"
done
cat "$OUT"/server.stderr.* >"$OUT/server.stderr"

# --- 5. the figures -------------------------------------------------------------------------
GIT_REV="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo "no commit")"
if [[ -n "$(git -C "$REPO" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
    GIT_REV="$GIT_REV, with uncommitted changes in src/ or Cargo.*"
fi
BIN_TIME="$(date -u -r "$BIN" '+%Y-%m-%d %H:%M:%S UTC')"
cat >"$OUT/run.env" <<EOF
MS_BIN="$BIN"
MS_BIN_TIME="$BIN_TIME"
MS_START=$START_NS
MS_STOP=$STOP_NS
MS_END=$END_NS
MS_RC=$CRAWLER_RC
MS_FDLIMIT=$FD_LIMIT
MS_LOAD="$LOAD_BEFORE"
MS_GIT="$GIT_REV"
MS_NICE="${BENCH_NICE:-}"
EOF
report
