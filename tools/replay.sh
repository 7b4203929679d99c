#!/usr/bin/env bash
# Replay a crawl in pywb, straight from the crawl's own CDXJ indexes and WARCs (no re-indexing).
#
#   tools/replay.sh OUT_DIR [PORT]      (PORT defaults to 8080)
#
# OUT_DIR is a crawl's output folder (the profile's [output] dir, holding warcs/ and indexes/).
# pywb ("wayback") comes from the venv that tools/test.sh creates: $ARCHIVER_VENV, else
# <repo>/.venv. It is bound to 127.0.0.1 only. Stop it with Ctrl-C.
set -euo pipefail

die() { echo "replay.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: tools/replay.sh OUT_DIR [PORT]"
[ -d "$1" ] || die "no such folder: $1"
OUT=$(cd "$1" && pwd)
PORT=${2:-8080}
[[ "$PORT" =~ ^[0-9]+$ ]] || die "PORT must be a number, got: $PORT"
[ -d "$OUT/indexes" ] || die "$OUT has no indexes/ folder: is it a crawl output folder?"
[ -d "$OUT/warcs" ] || die "$OUT has no warcs/ folder: is it a crawl output folder?"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${ARCHIVER_VENV:-$REPO/.venv}
[ -x "$VENV/bin/wayback" ] || die "pywb not found in $VENV: run tools/test.sh first (it creates the venv)"

# pywb's collection: our CDXJ folder as the index, our WARC folder as the archive. The CDXJ
# "filename" is the bare WARC name and archive_paths is a plain prefix, hence the trailing /.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/archiver-replay.XXXXXX")
yaml_quote() { printf "'%s'" "${1//\'/\'\'}"; }
cat > "$TMP/config.yaml" <<YAML
# written by tools/replay.sh for $OUT
collections:
  crawl:
    index_paths: $(yaml_quote "$OUT/indexes")
    archive_paths: [$(yaml_quote "$OUT/warcs/")]
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
EXAMPLE=$(cat "$OUT"/indexes/*.cdxj 2>/dev/null | sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' | head -n 1 || true)
echo "pywb: replaying $OUT"
echo "browse: http://127.0.0.1:$PORT/crawl/*/URL"
[ -z "$EXAMPLE" ] || echo "e.g.:   http://127.0.0.1:$PORT/crawl/*/$EXAMPLE"
echo "(Ctrl-C stops pywb)"

"$VENV/bin/wayback" -b 127.0.0.1 -p "$PORT" -d "$TMP" &
PID=$!
wait "$PID"
