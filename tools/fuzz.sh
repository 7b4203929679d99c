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
# git); an empty one is first seeded from files of this repository (profiles, the demo site,
# the test WARCs and CDXJ) and a small ARC file written here. Logs: tools/fuzz/logs/TARGET.log.
#
# The fuzzers run at `nice -n $FUZZ_NICE` (default 19, so other work on the machine goes
# first; FUZZ_NICE=0 for a campaign on an idle machine). FUZZ_BUILD=0 skips the build and runs
# the binaries already in tools/fuzz/target. FUZZ_TIMEOUT (default 60) is libFuzzer's -timeout
# per input in seconds, FUZZ_MAX_LEN (default 262144) its -max_len.
#
# Results: tools/fuzz/logs/summary.md, a table to paste (per target: seconds, executions,
# executions per second, corpus size, outcome), with the machine's cores and load.
set -euo pipefail
exec </dev/null

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SECONDS_EACH=${1:?usage: tools/fuzz.sh SECONDS [TARGET…]}
shift
PARALLEL=${PARALLEL:-2}
FUZZ_NICE=${FUZZ_NICE:-19}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(cargo +nightly fuzz list --fuzz-dir tools/fuzz)
fi
LOGS=tools/fuzz/logs
mkdir -p "$LOGS"

if [ "${FUZZ_BUILD:-1}" != 0 ]; then
  nice -n "$FUZZ_NICE" cargo +nightly fuzz build --fuzz-dir tools/fuzz
fi
HOST=$(rustc +nightly -vV | sed -n 's/^host: //p')
BIN=tools/fuzz/target/$HOST/release

# Starting inputs for an empty corpus: real files of each kind, so the fuzzer begins deep in
# the format rather than at its first byte.
seed() {
  local target=$1 dir=tools/fuzz/corpus/$1
  if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    return
  fi
  mkdir -p "$dir"
  case $target in
    profile) cp profiles/*.toml "$dir"/ ;;
    robots) cp tools/demo-site/robots.txt "$dir"/
      printf 'User-agent: archiver\nDisallow: /private/\nAllow: /private/ok$\nCrawl-delay: 7\n\nUser-agent: *\nDisallow: /*.pdf$\n' >"$dir/groups.txt" ;;
    html) find tools/demo-site -name '*.html' -size -64k -exec cp {} "$dir"/ \; ;;
    css) find tools/demo-site -name '*.css' -exec cp {} "$dir"/ \;
      printf '@import url("a.css") screen;\nbody { background: url(img/b\\).png) }\n@font-face { src: url(f.woff2) format("woff2") }\n' >"$dir/import.css" ;;
    warc)
      # The target's first byte picks the framing (see fuzz_targets/warc.rs): 0 as is, 1 one
      # gzip member, 2 an ARC file after a version block.
      local f n=0
      # Only the small test files: a 12 MB seed makes every mutation of it a multi-second run,
      # which libFuzzer reports as a timeout instead of searching.
      for f in tests/data/warc/*.warc.gz tests/data/cdx/*.warc.gz; do
        [ "$(stat -c %s "$f")" -le 262144 ] || continue
        n=$((n + 1))
        { printf '\0'; cat "$f"; } >"$dir/gz-$n"
        { printf '\1'; gzip -dc "$f"; } >"$dir/plain-$n"
      done
      local body=$'HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>arc</p>'
      { printf '\2'; printf 'http://example.com/ 93.184.216.34 20260101000000 text/html %d\n%s\n' \
          "${#body}" "$body"; } >"$dir/arc" ;;
    cdxj) cp tests/data/cdx/*.cdxj "$dir"/ ;;
    optout) printf 'http://example.com/private/   2026-11-30   # a prefix\nexample.org\nexample.net:8080\n*.example.edu\ncom,example)/cgi-bin\n' >"$dir/list.txt" ;;
  esac
}

run_one() {
  local target=$1 start end rc
  start=$(date +%s)
  rm -f "$LOGS/$target.row"
  seed "$target"
  mkdir -p "tools/fuzz/artifacts/$target"
  set +e
  nice -n "$FUZZ_NICE" "$BIN/$target" "tools/fuzz/corpus/$target" \
    -artifact_prefix="tools/fuzz/artifacts/$target/" \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-60}" -max_len="${FUZZ_MAX_LEN:-262144}" -print_final_stats=1 -detect_leaks=0 \
    >"$LOGS/$target.log" 2>&1
  rc=$?
  set -e
  end=$(date +%s)
  local runs corpus
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$target.log" | grep -o '[0-9]*$' || echo '?')
  corpus=$(find "tools/fuzz/corpus/$target" -type f | wc -l)
  local secs=$((end - start)) per_sec='?' outcome='no crash'
  if [ "$runs" != '?' ] && [ "$secs" -gt 0 ]; then
    per_sec=$((runs / secs))
  fi
  if [ "$rc" -ne 0 ]; then
    outcome="FAILED (exit $rc): $(grep -m1 -o 'ERROR: libFuzzer: [a-z-]*\|panicked at [^ ]*' "$LOGS/$target.log" || echo see log)"
  fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "$target" "$secs" "$runs" "$per_sec" "$corpus" "$outcome" \
    >"$LOGS/$target.row"
  if [ "$rc" -eq 0 ]; then
    printf '%-8s %6ss %12s runs %8s/s %7s corpus  no crash\n' "$target" "$secs" "$runs" "$per_sec" "$corpus"
  else
    printf '%-8s %6ss %12s runs %8s/s %7s corpus  FAILED (exit %s): see %s and tools/fuzz/artifacts/%s/\n' \
      "$target" "$secs" "$runs" "$per_sec" "$corpus" "$rc" "$LOGS/$target.log" "$target"
  fi
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')

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
{
  echo "# tools/fuzz.sh $SECONDS_EACH, $STARTED"
  echo
  echo "$(nproc) cores, $PARALLEL targets at a time, nice $FUZZ_NICE, -timeout=${FUZZ_TIMEOUT:-60}; load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg); $(rustc +nightly -V)"
  echo
  echo "| target | seconds | executions | executions/s | corpus | outcome |"
  echo "| --- | ---: | ---: | ---: | ---: | --- |"
  for target in "${TARGETS[@]}"; do
    cat "$LOGS/$target.row" 2>/dev/null || echo "| $target | | | | | did not run |"
  done
} >"$LOGS/summary.md"
echo "written: $LOGS/summary.md"
for target in "${TARGETS[@]}"; do
  grep -l 'ERROR: libFuzzer\|panicked at' "$LOGS/$target.log" 2>/dev/null && failed=1
done
exit "$failed"
