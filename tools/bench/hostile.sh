#!/usr/bin/env bash
# tools/bench/hostile.sh: link floods at the sizes of issue 9, measured on the release build.
#
# Usage: tools/bench/hostile.sh [SCENARIO…]
#   (default: repeated unique eight-repeated eight-unique bombs; see tools/bench/hostile_server.py)
#
#   repeated        one page of 4.2 MB gzip (50 MB decoded, 1.5 million links from 10,000 URLs)
#   unique          one page of 8.5 MB of unique links (190,000)
#   eight-repeated  eight "repeated" sites at once
#   eight-unique    eight "unique" sites at once
#   bombs           issue 26: both link bombs below at once, with six more ordinary sites, 8 sites
#                   crawled in parallel, no delay, max_body_bytes = 20000000, timeout = 10
#   bomb            issue 26: a 4.2 MB gzip page decoding to 2 GiB of <a href=x> (same setting)
#   offsite         issue 26: an 8.5 MB gzip page decoding to ~50 MB of 3.6 million distinct
#                   off-site links under a <base href> of another origin (same setting)
#
# The crawler's RSS is sampled every 0.25 s (/proc/PID/status): the peak of the samples and
# GNU time's maximum go in the results, the samples in SCENARIO/rss.tsv, and a line of the RSS
# over time (the highest sample of each second).
#
# Each scenario crawls the flood sites next to an ordinary 60-page site (min_delay 0.5 s) and
# reports the crawler's peak RSS and wall time (GNU time), the size of crawl.log and the
# ordinary site's worst wait: the longest time from the end of one of its answers to its next
# request, on its server's clock. The flood links are excluded by scope, so each is judged
# and logged (up to max_outlinks per page), never fetched. A measurement, not a test: it
# fails only when the crawl does.
#
# Environment:
#   BENCH_NO_BUILD=1   use the release binary already built
#   BENCH_MAX_OUTLINKS=N  the crawl's [limits] max_outlinks (default: the crawler's)
#   CARGO_TARGET_DIR   honoured as cargo does
# Output: tools/bench/out/hostile/SCENARIO/ (git-ignored) and tools/bench/out/hostile/results.md.
# Nothing listens or connects outside 127.0.0.0/8.
set -euo pipefail
exec </dev/null

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out/hostile"
SCENARIOS=("$@")
[[ ${#SCENARIOS[@]} -gt 0 ]] || SCENARIOS=(repeated unique eight-repeated eight-unique bombs)

for s in "${SCENARIOS[@]}"; do
    case $s in repeated | unique | eight-repeated | eight-unique | bombs | bomb | offsite) ;; *) die "unknown scenario $s" ;; esac
done
command -v python3 >/dev/null || die "python3 is needed"
need_gnu_time

TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
[[ "$TARGET_DIR" = /* ]] || TARGET_DIR="$REPO/$TARGET_DIR"
if [[ "${BENCH_NO_BUILD:-0}" != 1 ]]; then
    (cd "$REPO" && cargo build --release --quiet)
fi
BIN="$TARGET_DIR/release/archiver"
[[ -x "$BIN" ]] || die "no crawler binary at $BIN (build it with: cargo build --release)"

SERVER_PID=""
MAX_OUTLINKS="${BENCH_MAX_OUTLINKS:+max_outlinks = $BENCH_MAX_OUTLINKS}"
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

mkdir -p "$OUT"
RESULTS="$OUT/results.md"
{
    echo "# tools/bench/hostile.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "$(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg); $("$BIN" --version 2>/dev/null || echo archiver)"
    echo
    echo "${MAX_OUTLINKS:-max_outlinks: the default}"
    echo
    echo "| scenario | page | crawl wall s | peak RSS MB (GNU time) | peak RSS MB (0.25 s samples) | crawl.log MB | crawl.log lines | ordinary site, worst wait s |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$RESULTS"

for scenario in "${SCENARIOS[@]}"; do
    dir="$OUT/$scenario"
    rm -rf "$dir"
    mkdir -p "$dir"
    python3 "$HERE/hostile_server.py" "$dir" "$scenario" >"$dir/server.out" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 600); do
        [[ -s "$dir/seeds.txt" ]] && break
        kill -0 "$SERVER_PID" 2>/dev/null || die "the server failed: $(cat "$dir/server.out")"
        sleep 0.1
    done
    [[ -s "$dir/seeds.txt" ]] || die "the server did not start"
    seeds=$(sed 's/.*/"&"/' "$dir/seeds.txt" | paste -sd, -)
    case $scenario in
        bombs | bomb | offsite)
            # Issue 26's setting: 8 sites at once, no delay; the bomb links are in scope or
            # off-site, as the pages make them.
            sites=8 exclude="" delay="min_delay = 0.0" timeout=10.0 ;;
        *)
            sites=16 exclude='exclude = ["/flood-link/"]' delay="min_delay = 0.5" timeout=30.0 ;;
    esac
    cat >"$dir/profile.toml" <<EOF
[crawl]
name = "hostile-bench"
seeds = [$seeds]
sites_at_once = $sites

[identity]
user_agent = "archiver/0.1 (+https://example.org/archiver-bench)"

[scope]
$exclude

[politeness]
$delay
delay_factor = 0.0
max_delay = 1.0

[limits]
max_body_bytes = 20000000
timeout = $timeout
$MAX_OUTLINKS

[output]
dir = "crawl"
EOF
    echo "== $scenario: $(cat "$dir/pages.txt")"
    (cd "$dir" && exec /usr/bin/time -v -o time.txt "$BIN" crawl --profile profile.toml >stdout.log 2>stderr.log) &
    TIME_PID=$!
    # The crawler is GNU time's only child: sample its RSS every 0.25 s until it ends.
    crawler=""
    start=$(date +%s%N)
    : >"$dir/rss.tsv"
    while kill -0 "$TIME_PID" 2>/dev/null; do
        [[ -n "$crawler" ]] || crawler=$(pgrep -P "$TIME_PID" || true)
        if [[ -n "$crawler" ]]; then
            rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$crawler/status" 2>/dev/null || true)
            [[ -z "$rss" ]] || echo "$(( ($(date +%s%N) - start) / 1000000 )) $rss" >>"$dir/rss.tsv"
        fi
        sleep 0.25
    done
    wait "$TIME_PID" || die "the crawl failed ($scenario): see $dir/stderr.log"
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    python3 - "$dir" "$scenario" >>"$RESULTS" <<'PY'
import os, re, sys
d, scenario = sys.argv[1], sys.argv[2]
t = open(os.path.join(d, "time.txt")).read()
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
secs = 0.0
for part in wall.split(":"):
    secs = secs * 60 + float(part)
log = os.path.join(d, "crawl", "crawl.log")
size = os.path.getsize(log)
with open(log, "rb") as f:
    lines = sum(1 for _ in f)
hits = sorted(tuple(map(int, l.split()[1:3])) for l in open(os.path.join(d, "server.log")))
worst = max((b[0] - a[1] for a, b in zip(hits, hits[1:])), default=0) / 1e9
page = open(os.path.join(d, "pages.txt")).read().strip()
# rss.tsv: milliseconds since the start, VmRSS in kB.
samples = [tuple(map(int, l.split())) for l in open(os.path.join(d, "rss.tsv")) if l.strip()]
peak = max((kb for _, kb in samples), default=0) / 1024
print(f"| {scenario} | {page} | {secs:.1f} | {rss_kb / 1024:.1f} | {peak:.1f} | {size / 2**20:.1f} | "
      f"{lines} | {worst:.3f} ({len(hits)} requests) |")
per_second = {}
for ms, kb in samples:
    per_second[ms // 1000] = max(per_second.get(ms // 1000, 0), kb)
over_time = " ".join(f"{per_second[s] / 1024:.0f}" for s in sorted(per_second))
with open(os.path.join(d, "rss_over_time.txt"), "w") as f:
    f.write(f"{scenario}: RSS MB, highest sample of each second from the start: {over_time}\n")
PY
    tail -n 1 "$RESULTS"
    cat "$dir/rss_over_time.txt"
done
{
    echo
    for scenario in "${SCENARIOS[@]}"; do cat "$OUT/$scenario/rss_over_time.txt"; echo; done
} >>"$RESULTS"
echo
echo "written: $RESULTS"
