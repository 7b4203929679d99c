#!/usr/bin/env bash
# tools/bench/verify.sh: `archiver verify` against `warcio check` on the same gzip WARCs (the
# ~1 GB that tools/bench/index.sh generates, made first when missing), in one run: wall and CPU
# time for each, and both verdicts. A measurement, not a test: nothing fails on a slow number.
#
# Usage: tools/bench/verify.sh            (from any folder)
# Environment:
#   BENCH_INDEX_MB, BENCH_INDEX_FILES   passed to index.sh when the WARCs must be generated
#   BENCH_NO_BUILD=1     skip `cargo build --release`
#   ARCHIVER_VENV        the venv with warcio (default <repo>/.venv, see tools/test.sh)
#   CARGO_TARGET_DIR     honoured as cargo does
# Output in tools/bench/out/verify/ (git-ignored).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out/verify"
VENV="${ARCHIVER_VENV:-$REPO/.venv}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"

[[ -x "$VENV/bin/warcio" ]] || die "warcio not found in $VENV: run tools/test.sh first"
need_gnu_time
if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet)
fi
BIN="$TARGET/release/archiver"
[[ -x "$BIN" ]] || die "no release binary at $BIN"
if ! compgen -G "$HERE/out/index/warcs/*.warc.gz" > /dev/null; then
    BENCH_NO_BUILD=1 "$HERE/index.sh"
fi
mkdir -p "$OUT"
WARCS=("$HERE"/out/index/warcs/*.warc.gz)
BYTES=$(cat "${WARCS[@]}" | wc -c)
cat "${WARCS[@]}" > /dev/null
echo "input: ${#WARCS[@]} files, $(awk "BEGIN{printf \"%.1f\", $BYTES/1048576}") MB of gzip WARC; $(nproc) CPUs"

measure() {  # measure NAME CMD...: wall s, CPU s, peak RSS MB, exit code
    local name="$1"
    shift
    local code=0
    /usr/bin/time -v -o "$OUT/$name.time" "$@" > "$OUT/$name.out" 2> "$OUT/$name.stderr" || code=$?
    local wall cpu rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$OUT/$name.time" \
        | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$OUT/$name.time")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/$name.time")
    echo "$wall $cpu $((rss / 1024)) $code"
}

LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
read -r A_SECS A_CPU A_RSS A_CODE < <(measure archiver "$BIN" verify "${WARCS[@]}")
# warcio check takes one file at a time on one core, as users run it.
read -r W_SECS W_CPU W_RSS W_CODE < <(measure warcio "$VENV/bin/warcio" check "${WARCS[@]}")
SPEEDUP=$(awk "BEGIN{ if ($A_SECS > 0) printf \"%.1f\", $W_SECS/$A_SECS; else print \"inf\" }")
CPU_RATIO=$(awk "BEGIN{ if ($A_CPU > 0) printf \"%.1f\", $W_CPU/$A_CPU; else print \"inf\" }")
{
    echo "| checker | wall (s) | CPU (s) | peak RSS (MB) | exit |"
    echo "| --- | --- | --- | --- | --- |"
    echo "| archiver verify | $A_SECS | $A_CPU | $A_RSS | $A_CODE |"
    echo "| warcio check | $W_SECS | $W_CPU | $W_RSS | $W_CODE |"
    echo
    echo "$(nproc) CPUs (load average $LOAD_BEFORE before the runs); archiver ${SPEEDUP}x faster by the"
    echo "clock, ${CPU_RATIO}x less CPU. archiver: $(tail -1 "$OUT/archiver.out")"
} | tee "$OUT/results.md"
