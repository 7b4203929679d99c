#!/usr/bin/env bash
# Replay one or more crawls in pywb, straight from the crawls' own CDXJ indexes and WARCs (no
# re-indexing), all in one collection: give the two crawls of a diff and the report's links
# replay the old capture from the old crawl and the new one from the new.
#
#   tools/replay.sh OUT_DIR... [PORT]      (PORT defaults to 8080)
#
# Each OUT_DIR is a crawl's output folder (the profile's [output] dir, holding warcs/ and
# indexes/). pywb ("wayback") comes from the venv $ARCHIVER_VENV, else <repo>/.venv; when it is
# not there, the pinned pywb is installed into that venv first (once; needs Python 3 with venv
# and pip, and access to PyPI). It is bound to 127.0.0.1 only. Stop it with Ctrl-C.
set -euo pipefail

die() { echo "replay.sh: $*" >&2; exit 1; }
PYWB_PIN=pywb==2.10.0

[ $# -ge 1 ] || die "usage: tools/replay.sh OUT_DIR... [PORT]"
PORT=8080
ARGS=("$@")
LAST=${ARGS[$(( ${#ARGS[@]} - 1 ))]}
if [[ "$LAST" =~ ^[0-9]+$ ]] && [ ! -d "$LAST" ]; then
  PORT=$LAST
  unset 'ARGS[${#ARGS[@]}-1]'
fi
[ ${#ARGS[@]} -ge 1 ] || die "usage: tools/replay.sh OUT_DIR... [PORT]"
OUTS=()
for dir in "${ARGS[@]}"; do
  [ -d "$dir" ] || die "no such folder: $dir"
  out=$(cd "$dir" && pwd)
  [ -d "$out/indexes" ] || die "$out has no indexes/ folder: is it a crawl output folder?"
  [ -d "$out/warcs" ] || die "$out has no warcs/ folder: is it a crawl output folder?"
  OUTS+=("$out")
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${ARCHIVER_VENV:-$REPO/.venv}
if [ ! -x "$VENV/bin/wayback" ]; then
  PYTHON=${PYTHON:-python3}
  command -v "$PYTHON" >/dev/null || die "pywb is not in $VENV and $PYTHON is not found to install it"
  echo "replay.sh: pywb is not in $VENV: installing $PYWB_PIN there (once)" >&2
  if ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    "$PYTHON" -m venv "$VENV" || die "could not create the venv $VENV"
  fi
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "$PYWB_PIN" \
    || die "pip could not install $PYWB_PIN into $VENV"
  [ -x "$VENV/bin/wayback" ] || die "wayback still missing from $VENV/bin"
fi

# pywb's collection: one index folder holding (links to) every crawl's CDXJ, and every crawl's
# WARC folder as an archive path. The CDXJ "filename" is the bare WARC name and archive_paths
# are plain prefixes tried in turn, hence the trailing /. WARC names are unique across crawls
# (time, serial, process id).
TMP=$(mktemp -d "${TMPDIR:-/tmp}/archiver-replay.XXXXXX")
mkdir "$TMP/indexes"
yaml_quote() { printf "'%s'" "${1//\'/\'\'}"; }
ARCHIVES=
n=0
for out in "${OUTS[@]}"; do
  for cdxj in "$out"/indexes/*.cdxj; do
    [ -e "$cdxj" ] || continue
    ln -s "$cdxj" "$TMP/indexes/$n-$(basename "$cdxj")"
  done
  ARCHIVES+="${ARCHIVES:+, }$(yaml_quote "$out/warcs/")"
  n=$((n + 1))
done
cat > "$TMP/config.yaml" <<YAML
# written by tools/replay.sh for ${OUTS[*]}
collections:
  crawl:
    index_paths: $(yaml_quote "$TMP/indexes")
    archive_paths: [$ARCHIVES]
YAML

PID=
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# An example URL to browse: the first capture in the index.
EXAMPLE=$(cat "$TMP"/indexes/*.cdxj 2>/dev/null | sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' | head -n 1 || true)
for out in "${OUTS[@]}"; do echo "pywb: replaying $out"; done
echo "browse: http://127.0.0.1:$PORT/crawl/*/URL"
[ -z "$EXAMPLE" ] || echo "e.g.:   http://127.0.0.1:$PORT/crawl/*/$EXAMPLE"
echo "diff links: archiver diff OLD NEW --format html --pywb http://127.0.0.1:$PORT/crawl"
echo "(Ctrl-C stops pywb)"

"$VENV/bin/wayback" -b 127.0.0.1 -p "$PORT" -d "$TMP" &
PID=$!
wait "$PID"
