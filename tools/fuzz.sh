#!/usr/bin/env bash
# Runs every fuzz target of tools/fuzz/ for SECONDS each (libFuzzer through cargo-fuzz, on the
# nightly toolchain), PARALLEL at a time (default 2: the machine is shared), and prints per
# target how long it ran, how many inputs it tried and whether it crashed.
#
#   tools/fuzz.sh SECONDS [TARGET…]        e.g. tools/fuzz.sh 600
#
# Needs `cargo install cargo-fuzz` and `rustup toolchain install nightly`. Crashing inputs land
# in tools/fuzz/artifacts/TARGET/; each one found so far is kept as an ordinary regression test
# of the crate (run by the stable `cargo test`). Corpora grow in tools/fuzz/corpus/ (not kept in
# git). Logs: tools/fuzz/logs/TARGET.log.
set -euo pipefail
exec </dev/null

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SECONDS_EACH=${1:?usage: tools/fuzz.sh SECONDS [TARGET…]}
shift
PARALLEL=${PARALLEL:-2}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(cargo +nightly fuzz list --fuzz-dir tools/fuzz)
fi
LOGS=tools/fuzz/logs
mkdir -p "$LOGS"

cargo +nightly fuzz build --fuzz-dir tools/fuzz

run_one() {
  local target=$1 start end rc
  start=$(date +%s)
  mkdir -p "tools/fuzz/corpus/$target"
  set +e
  cargo +nightly fuzz run --fuzz-dir tools/fuzz "$target" "tools/fuzz/corpus/$target" -- \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 -detect_leaks=0 \
    >"$LOGS/$target.log" 2>&1
  rc=$?
  set -e
  end=$(date +%s)
  local runs
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$target.log" | grep -o '[0-9]*$' || echo '?')
  if [ "$rc" -eq 0 ]; then
    printf '%-8s %6ss %12s runs  no crash\n' "$target" "$((end - start))" "$runs"
  else
    printf '%-8s %6ss %12s runs  FAILED (exit %s): see %s and tools/fuzz/artifacts/%s/\n' \
      "$target" "$((end - start))" "$runs" "$rc" "$LOGS/$target.log" "$target"
  fi
}

failed=0
running=0
for target in "${TARGETS[@]}"; do
  run_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$PARALLEL" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
grep -l 'ERROR: libFuzzer\|panicked at' "$LOGS"/*.log 2>/dev/null && failed=1
exit "$failed"
