#!/usr/bin/env bash
# Crash test: kills the crawler with SIGKILL at 20 pseudo-random moments of a loopback crawl,
# resumes it each time, and reports refetched URLs (target 0), lost URLs (target 0) and WARC
# records that `warcio check` rejects (target 0). The same test runs with 4 kills in the test
# suite (tests/it/crash_resume.rs).
#
#   tools/bench/crash_test.sh [KILLS]        (default 20; needs the venv of tools/test.sh)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
KILLS=${1:-20}
[[ "$KILLS" =~ ^[0-9]+$ ]] || { echo "crash_test.sh: KILLS must be a number" >&2; exit 2; }
export ARCHIVER_VENV=${ARCHIVER_VENV:-$REPO/.venv}
[ -x "$ARCHIVER_VENV/bin/warcio" ] || { echo "crash_test.sh: run tools/test.sh first (it creates the venv)" >&2; exit 1; }
CRASH_KILLS=$KILLS cargo test --release --test it crash_resume:: -- --nocapture 2>&1 \
  | grep -E '^crash test:|^test result:|panicked|archived more|never archived'
