#!/usr/bin/env bash
# The test command: sets up the Python tools the end-to-end tests check the output with, then
# runs rustfmt, clippy and every test.
#
#   tools/test.sh            (from any folder)
#
# The tools (warcio, cdxj-indexer, pywb, surt; pinned) live in a venv at <repo>/.venv, or at
# $ARCHIVER_VENV when that is set. pip runs only when a pinned version is missing.
set -euo pipefail
# Nothing here reads standard input; cargo's rustc probe does (`rustc -`), and an odd stdin
# (closed, or a binary pipe) makes that probe fail and cargo cache the failure.
exec </dev/null

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
VENV=${ARCHIVER_VENV:-$REPO/.venv}
PYTHON=${PYTHON:-python3}
PINS=(warcio==1.8.1 cdxj-indexer==1.5.0 pywb==2.10.0 surt==0.3.1 prometheus-client==0.26.0)

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# True when the venv's Python runs and has every pinned version.
pins_installed() {
  "$VENV/bin/python" - "${PINS[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
}

# CI builds once from a clean clone: incremental caches would only double what the build writes.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi
step "free disk space (a clean build and its tests need about 4 GB)"
df -h "$REPO" | tail -n 1

step "Python tools in $VENV (${PINS[*]})"
if ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found: install Python 3.11 (with venv and pip)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" || die "could not create the venv $VENV with $PYTHON -m venv"
fi
if pins_installed; then
  echo "already installed"
else
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "${PINS[@]}" \
    || die "pip could not install ${PINS[*]} into $VENV"
  pins_installed || die "the venv $VENV still lacks one of ${PINS[*]}"
fi
for tool in warcio cdxj-indexer wayback; do
  [ -x "$VENV/bin/$tool" ] || die "$tool missing from $VENV/bin"
done
export ARCHIVER_VENV=$VENV

# tests/it/terminal.rs drives the crawler in a real terminal through tmux.
step "tmux (for the terminal test)"
if command -v tmux >/dev/null; then
  echo "already installed"
else
  { apt-get update -qq && apt-get install -y -qq tmux; } || die "could not install tmux with apt-get"
fi

# The shared-frontier tests start their own PostgreSQL server (initdb + pg_ctl, as the
# postgres user, on 127.0.0.1 only): Debian's server package when no initdb is installed.
step "PostgreSQL server (for the shared-frontier tests)"
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -x "${ARCHIVER_PG_BIN:-/nonexistent}/initdb" ]; then
  echo "already installed"
else
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } \
    || die "could not install postgresql with apt-get"
fi

# tests/it/browser_*.rs render pages in Debian's headless Chromium (and replay them in it).
step "chromium (for the browser tests)"
if command -v chromium >/dev/null; then
  echo "already installed"
else
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
    || die "could not install chromium with apt-get"
fi

# Imports point down the layers and never round a circle, between modules or between the files of
# a folder (see docs/design.md, "The code map").
step "import layers (tools/check_layers.py)"
"$VENV/bin/python" tools/check_layers.py || die "the import graph breaks the layers"

# A file a newcomer opens should hold one job: none under src/ over 900 lines outside its tests.
step "file sizes (tools/check_sizes.py)"
"$VENV/bin/python" tools/check_sizes.py || die "a source file is over 900 lines outside its tests: split it"

step "cargo fmt --all -- --check"
cargo fmt --all -- --check || die "formatting differs: run 'cargo fmt --all'"

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings || die "clippy found problems"

# Doc links that rustdoc cannot resolve (or that point at private items) are broken for a reader.
step "cargo doc --no-deps (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet || die "cargo doc warns: fix the doc links it names"

step "cargo test"
cargo test --no-fail-fast || die "tests failed"

step "all checks passed"
