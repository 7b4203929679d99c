#!/usr/bin/env bash
# tools/bench/profile.sh: where the crawler's CPU goes on the many-sites bench.
#
# Usage: tools/bench/profile.sh [N_SITES] [SECONDS]      (defaults: 10000 30)
#
# Runs tools/bench/many_sites.sh N_SITES SECONDS (release build, BENCH_NICE=-10 when root),
# attaches `perf record --call-graph dwarf` to the crawler from 8 s after its start for 12 s
# (the steady state, after the start-up burst), and prints the share of samples per component
# (tools/bench/profile_summary.py). Needs Linux perf (Debian: linux-perf; installed with apt-get
# when run as root and missing). Output: tools/bench/out/profile-N-SECONDSs/ (perf.data,
# perf.script, summary.txt, the bench's results.md).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
N="${1:-10000}"
SECS="${2:-30}"
[[ "$N" =~ ^[0-9]+$ && "$SECS" =~ ^[0-9]+$ && "$SECS" -ge 25 ]] || {
    echo "profile.sh: usage: profile.sh [N_SITES] [SECONDS >= 25]" >&2
    exit 1
}
if ! command -v perf >/dev/null 2>&1; then
    if [[ "$(id -u)" = 0 ]] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y -qq linux-perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
    fi
    command -v perf >/dev/null 2>&1 || { echo "profile.sh: perf is missing (Debian package linux-perf)" >&2; exit 1; }
fi
NICE="${BENCH_NICE:-}"
[[ -z "$NICE" && "$(id -u)" = 0 ]] && NICE=-10
BENCH_OUT="$HERE/out/many_sites-$N-${SECS}s${NICE:+-nice$NICE}"
OUT="$HERE/out/profile-$N-${SECS}s"
rm -rf "$OUT"
mkdir -p "$OUT"
rm -f "$BENCH_OUT/crawler.pid"
BENCH_NICE="$NICE" BENCH_WARMUP="${BENCH_WARMUP:-5}" "$HERE/many_sites.sh" "$N" "$SECS" >"$OUT/bench.log" 2>&1 &
BENCH_PID=$!
for _ in $(seq 1 3000); do
    [[ -s "$BENCH_OUT/crawler.pid" ]] && break
    kill -0 "$BENCH_PID" 2>/dev/null || { cat "$OUT/bench.log" >&2; exit 1; }
    sleep 0.2
done
CRAWLER="$(cat "$BENCH_OUT/crawler.pid")"
sleep 8
perf record -F 997 --call-graph dwarf,16384 -p "$CRAWLER" -o "$OUT/perf.data" -- sleep 12 \
    >"$OUT/perf-record.log" 2>&1 || true
wait "$BENCH_PID" || true
grep -A2 '^| sites' "$OUT/bench.log" | tail -n 1 || true
cp "$BENCH_OUT/results.md" "$OUT/" 2>/dev/null || true
perf script -i "$OUT/perf.data" -F comm,ip,sym,dso 2>/dev/null >"$OUT/perf.script"
python3 "$HERE/profile_summary.py" "$OUT/perf.script" | tee "$OUT/summary.txt"
