#!/usr/bin/env bash
# tools/bench/frontier.sh: how fast the durable frontier (src/store.rs, SQLite) takes and gives
# back URLs, and what it costs in disk and memory, at crawl sizes. A measurement, not a test.
#
# Usage: tools/bench/frontier.sh [N ...]      (default: 1e6 1e7; N may be 1000000, 1e6 or 10^6)
# Environment:
#   BENCH_STATE_DIR=DIR   put the database in DIR/frontier-N (default: a temporary folder,
#                         removed afterwards); it needs about 230 bytes a URL (2.2 GB for 1e7)
#   CARGO_TARGET_DIR      honoured as cargo does
#
# Each N runs `cargo bench --bench frontier -- N` (tools/bench/frontier_bench.rs): N new URLs
# over 1,000 sites, each seen-checked then queued, plus a duplicate seen-check every tenth URL,
# a commit every 100 URLs; then a reopen; then every URL popped and marked done, sites
# round-robin, a commit every 100. It prints throughput, CPU and bytes written per phase, the
# database size and the peak RSS (VmHWM). 1e7 takes about 10-20 minutes on 2 cores.
# Output is also kept in tools/bench/out/frontier-N.txt (git-ignored).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
mkdir -p "$OUT"
cd "$REPO"

sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then
    sizes=(1e6 1e7)
fi

cargo bench --bench frontier --no-run

for n in "${sizes[@]}"; do
    args=("$n")
    if [ -n "${BENCH_STATE_DIR:-}" ]; then
        rm -rf "$BENCH_STATE_DIR/frontier-$n"
        args+=(--dir "$BENCH_STATE_DIR/frontier-$n")
    fi
    {
        echo "# frontier bench, N=$n, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(uname -sr)"
        echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
        cargo bench --bench frontier -- "${args[@]}" 2>&1
    } | tee "$OUT/frontier-$n.txt"
done
