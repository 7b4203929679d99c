#!/usr/bin/env bash
# tools/demo.sh: a first crawl that works offline.
#
# Builds the crawler (release), serves the bundled sample site tools/demo-site on 127.0.0.1,
# crawls it with profiles/demo.toml, checks the output (WARC structure, one gzip member per
# record, what robots.txt and meta robots must keep out, `warcio check` when the project venv
# exists) and prints where the WARCs are, a crawl.log summary and how to replay the crawl.
#
# Usage: tools/demo.sh            (from any folder; run it again at will: it starts afresh)
# Environment:
#   DEMO_PORT=N          serve on port N instead of 8631 (or a free port if 8631 is taken)
#   DEMO_NO_BUILD=1      skip `cargo build --release` (use the binary already built)
#   ARCHIVER_VENV=DIR    venv holding warcio (default: <repo>/.venv, made by tools/test.sh)
#   CARGO_TARGET_DIR     honoured as cargo does
# Nothing is ever sent to an address outside 127.0.0.1.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO/tools/lib.sh"
SITE="$REPO/tools/demo-site"
PROFILE="$REPO/profiles/demo.toml"
DEFAULT_PORT=8631          # the port written in profiles/demo.toml
CRAWL_TIMEOUT=300          # seconds; the demo crawl takes a few

for tool in python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed but not found on PATH"
done
[[ -f "$SITE/index.html" ]] || die "the sample site is missing: $SITE"
[[ -f "$PROFILE" ]] || die "the demo profile is missing: $PROFILE"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/archiver-demo.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- ports ---------------------------------------------------------------------------------
port_is_free() {  # port_is_free PORT: can we bind 127.0.0.1:PORT right now?
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does: TIME_WAIT is no obstacle
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}
wait_for_port() {  # wait_for_port PORT PID: until the server accepts connections (10 s at most)
    local _
    for _ in $(seq 1 100); do
        kill -0 "$2" 2>/dev/null || return 1
        if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()' "$1" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# --- the output folder, read from the profile (relative dirs are relative to profiles/) -----
OUT="$(python3 - "$PROFILE" <<'PY'
import os, re, sys
path = sys.argv[1]
try:
    import tomllib  # Python 3.11+
    with open(path, "rb") as f:
        d = tomllib.load(f).get("output", {}).get("dir", "")
except ImportError:  # older Python: the demo profile's dir line is a plain quoted string
    m = re.search(r'(?m)^dir\s*=\s*"([^"]*)"', open(path, encoding="utf-8").read())
    d = m.group(1) if m else ""
if not d:
    sys.exit(f"{path}: [output] dir is not set")
print(os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), d)))
PY
)" || die "cannot read [output] dir from $PROFILE"
case "$OUT" in
    / | "$REPO" | "$REPO/profiles" | "$HOME") die "refusing to use $OUT as the demo output folder" ;;
esac

# --- 1. build -------------------------------------------------------------------------------
release_binary "${DEMO_NO_BUILD:-0}"

# --- 2. serve the sample site ---------------------------------------------------------------
PORT="${DEMO_PORT:-$DEFAULT_PORT}"
if ! port_is_free "$PORT"; then
    [[ -z "${DEMO_PORT:-}" ]] || die "DEMO_PORT=$PORT is already in use on 127.0.0.1"
    PORT="$(free_port)"
    echo "port $DEFAULT_PORT is taken; using port $PORT instead"
fi
say "Serving tools/demo-site on http://127.0.0.1:$PORT/ (python3 http.server, loopback only)"
python3 -m http.server --bind 127.0.0.1 --directory "$SITE" "$PORT" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
wait_for_port "$PORT" "$SERVER_PID" || { cat "$WORK/server.log" >&2; die "the demo web server did not start on port $PORT"; }

# The profile names port 8631. On another port, crawl with a copy that differs only in the
# port and in the output folder (made absolute, since the copy lives elsewhere).
RUN_PROFILE="$PROFILE"
if [[ "$PORT" != "$DEFAULT_PORT" ]]; then
    RUN_PROFILE="$WORK/demo.toml"
    python3 - "$PROFILE" "$RUN_PROFILE" "$DEFAULT_PORT" "$PORT" "$OUT" <<'PY'
import json, re, sys
src, dst, old, new, out = sys.argv[1:]
text = open(src, encoding="utf-8").read()
text, n_seed = re.subn(r"127\.0\.0\.1:" + old + r"\b", "127.0.0.1:" + new, text)
text, n_dir = re.subn(r"(?m)^dir\s*=.*$", "dir = " + json.dumps(out), text)
if n_seed == 0 or n_dir != 1:
    sys.exit(f"cannot adapt {src} to port {new}: seed 127.0.0.1:{old} or the dir line not found")
open(dst, "w", encoding="utf-8").write(text)
PY
    echo "crawling with a copy of profiles/demo.toml for port $PORT"
fi

# --- 3. crawl -------------------------------------------------------------------------------
if [[ -e "$OUT" ]]; then
    # Only ever empty a folder that looks like a crawl output (or is empty).
    if [[ -n "$(ls -A "$OUT")" && ! -e "$OUT/crawl.log" && ! -d "$OUT/warcs" ]]; then
        die "$OUT exists and does not look like a crawl output; move it away first"
    fi
    rm -rf "$OUT"
fi
say "Crawling: archiver crawl --profile ${RUN_PROFILE/#$REPO\//}"
PIDFILE="$WORK/crawl.pid"
rc=0
(cd "$REPO" && with_deadline "$CRAWL_TIMEOUT" "$BIN" crawl --profile "$RUN_PROFILE") || rc=$?
# archiver stops cleanly on Ctrl-C (exit 130); its
# summary says so.
if grep -qs 'stopped by Ctrl-C' "$OUT/summary.txt"; then
    die "interrupted during the crawl"
fi
if [[ $rc -ne 0 ]]; then
    echo "--- last lines of the demo server's log:" >&2
    tail -n 20 "$WORK/server.log" >&2 || true
    [[ $rc -eq 124 ]] && die "the crawl did not finish within ${CRAWL_TIMEOUT}s"
    die "the crawler exited with status $rc"
fi

# --- 4. verify ------------------------------------------------------------------------------
say "Checking the output in $OUT"
failed=0
python3 - "$OUT" "http://127.0.0.1:$PORT" <<'PY' || failed=1
# Reads every WARC gzip member by member and crawl.log, and compares them with what the demo
# site must produce. Prints one line per check; exits 1 if any check fails.
import glob, os, sys, zlib

out, base = sys.argv[1], sys.argv[2]
fails = 0

def check(ok, what):
    global fails
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        fails += 1

def members(path):
    """Yields the decompressed bytes of each gzip member of a file."""
    data = open(path, "rb").read()
    while data:
        d = zlib.decompressobj(wbits=31)
        chunk = d.decompress(data)
        if not d.eof:
            raise ValueError("truncated gzip member")
        yield chunk
        data = d.unused_data

def records(blob):
    """Splits decompressed WARC bytes into (headers dict, block) pairs."""
    pos = 0
    while pos < len(blob):
        end = blob.index(b"\r\n\r\n", pos)
        lines = blob[pos:end].split(b"\r\n")
        if not lines[0].startswith(b"WARC/"):
            raise ValueError(f"no WARC version line at byte {pos}")
        h = {}
        for line in lines[1:]:
            k, _, v = line.decode("utf-8", "replace").partition(":")
            h[k.strip().lower()] = v.strip()
        n = int(h["content-length"])
        block = blob[end + 4:end + 4 + n]
        if len(block) != n or blob[end + 4 + n:end + 8 + n] != b"\r\n\r\n":
            raise ValueError(f"record at byte {pos}: block shorter than Content-Length or no CRLFCRLF after it")
        yield h, block
        pos = end + 8 + n

# -- WARC files
open_files = glob.glob(os.path.join(out, "warcs", "*.open"))
warcs = sorted(glob.glob(os.path.join(out, "warcs", "*.warc.gz")))
check(not open_files, "no WARC left open (*.open)")
check(bool(warcs), f"WARC files written: {len(warcs)}")
captured = {}   # URI -> set of record types
for w in warcs:
    name = os.path.basename(w)
    try:
        n_members = n_records = 0
        first_type = None
        for m in members(w):
            n_members += 1
            recs = list(records(m))
            n_records += len(recs)
            for h, block in recs:
                first_type = first_type or h.get("warc-type")
                uri = h.get("warc-target-uri", "").strip("<>")
                if uri:
                    captured.setdefault(uri, set()).add(h.get("warc-type"))
        check(n_members == n_records, f"{name}: {n_records} records, each in its own gzip member")
        check(first_type == "warcinfo", f"{name}: warcinfo is the first record")
    except (ValueError, KeyError, zlib.error, OSError) as e:
        check(False, f"{name}: unreadable: {e}")
check(bool(glob.glob(os.path.join(out, "indexes", "*.cdxj"))), "CDXJ index written (indexes/*.cdxj)")

def in_warc(path):
    """A response record, or a revisit one (same payload as an earlier capture)."""
    return bool({"response", "revisit"} & captured.get(base + path, set()))

for path, what in [("/robots.txt", ""), ("/", " (the seed)"), ("/style.css", " (embed)"),
                   ("/images/lighthouse.png", " (embed)"),
                   ("/articles", " (a 301 redirect, no Content-Type)"),
                   ("/articles/", " (the redirect's target)"),
                   ("/articles/found-via-noindex.html", " (linked from the noindex page only)"),
                   ("/drafts/", " (allowed by the archiver group of robots.txt)")]:
    check(in_warc(path), f"archived: {path}{what}")
for path in ["/noindex.html", "/no-archive.html", "/private/", "/private/plans.html"]:
    check(base + path not in captured, f"no record of any kind: {path}")
foreign = sorted(u for u in captured if u.startswith("http") and not u.startswith(base + "/"))
check(not foreign, "nothing captured outside the demo site" + (f": {foreign}" if foreign else ""))

# -- crawl.log: status (field 2), URI (4) and annotations (12) of each line
log_path = os.path.join(out, "crawl.log")
log = {}
bad_lines = 0
if os.path.exists(log_path):
    for line in open(log_path, encoding="utf-8", errors="replace"):
        f = line.split(None, 12)
        if len(f) < 13:
            bad_lines += 1
            continue
        log.setdefault(f[3], []).append((f[1], f[11]))
check(bool(log), "crawl.log written")
check(bad_lines == 0, f"every crawl.log line has 13 fields ({bad_lines} bad)")

def logged(uri, status, note=None):
    got = log.get(uri, [])
    ok = any(s == status and (note is None or note in a.split(",")) for s, a in got)
    want = status + (f" [{note}]" if note else "")
    seen = ", ".join(f"{s} [{a}]" for s, a in got) or "no line"
    check(ok, f"crawl.log: {want:<16} {uri}" + ("" if ok else f"   (found: {seen})"))

for path, status, note in [
    ("/robots.txt", "200", None),
    ("/", "200", None),
    ("/articles", "301", None),                      # redirect archived, target queued
    ("/articles/", "200", None),
    ("/articles/lost-post.html", "404", None),
    ("/noindex.html", "200", "noindex"),             # discarded, links still followed
    ("/articles/found-via-noindex.html", "200", None),
    ("/no-archive.html", "200", "noarchive"),        # <meta name="archiver" content="noarchive">
    ("/drafts/", "200", None),                       # allowed by the "archiver" group
    ("/private/", "-9998", None),                    # robots.txt: Disallow: /private/
    ("/private/plans.html", "-9998", None),
]:
    logged(base + path, status, note)
logged("http://www.example.invalid/partner.html", "-5000")

print(f"\n  {fails} check(s) failed" if fails else "\n  all checks passed")
sys.exit(1 if fails else 0)
PY

VENV="${ARCHIVER_VENV:-$REPO/.venv}"
shopt -s nullglob
warcs=("$OUT"/warcs/*.warc.gz)
shopt -u nullglob
if [[ -x "$VENV/bin/warcio" ]]; then
    for w in "${warcs[@]}"; do
        # `warcio check` exits 0 even on a file it cannot parse, so also count the records it read.
        if report="$("$VENV/bin/warcio" check -v "$w" 2>&1)" &&
            n="$(grep -c 'WARC-Record-ID <urn:' <<<"$report")" && [[ "$n" -gt 0 ]] &&
            ! grep -qi 'fail' <<<"$report"; then
            echo "  ok    warcio check: $(basename "$w") ($n records, digests pass)"
        else
            echo "  FAIL  warcio check: $(basename "$w")"
            grep -i -B2 -A2 'fail\|error\|None None' <<<"$report" | head -n 20 | sed 's/^/        /' || true
            failed=1
        fi
    done
else
    echo "  note  warcio not found at $VENV/bin/warcio: skipped \`warcio check\`"
    echo "        (tools/test.sh creates that venv; or point ARCHIVER_VENV at one holding warcio)"
fi

# --- 5. report ------------------------------------------------------------------------------
say "WARCs and indexes"
find "$OUT/warcs" "$OUT/indexes" -type f -printf '  %10s  %p\n' 2>/dev/null | sort -k2 || true

say "crawl.log summary ($OUT/crawl.log): URLs by status"
if [[ -f "$OUT/crawl.log" ]]; then
    awk '{ n[$2]++ } END { for (s in n) print s, n[s] }' "$OUT/crawl.log" | sort -n | while read -r status count; do
        case "$status" in
            2??) what="fetched" ;;
            3??) what="redirect, archived; target queued" ;;
            4??) what="client error, archived" ;;
            5??) what="server error" ;;
            -9998) what="precluded by robots.txt, not fetched" ;;
            -5000) what="out of scope, not fetched" ;;
            -61) what="robots.txt prerequisite failed" ;;
            -1 | -2 | -3 | -4 | -5 | -8) what="network error / retries exhausted" ;;
            *) what="" ;;
        esac
        printf '  %6s  %5s  %s\n' "$count" "$status" "$what"
    done
    annotated="$(awk '$12 ~ /noindex|noarchive|none/ { print "  discarded (" $12 "): " $4 }' "$OUT/crawl.log")"
    [[ -z "$annotated" ]] || echo "$annotated"
fi
[[ ! -f "$OUT/summary.txt" ]] || echo "  (the crawler's own summary: $OUT/summary.txt)"

say "Replay"
echo "  tools/replay.sh $OUT"
echo "  (starts pywb on 127.0.0.1 over this crawl's indexes/ and warcs/; the demo site's pages"
echo "   are then at the replay URL it prints, e.g. .../http://127.0.0.1:$PORT/)"

if [[ $failed -ne 0 ]]; then
    printf '\ndemo.sh: the crawl finished but its output failed the checks above\n' >&2
    exit 1
fi
printf '\nDemo finished: %s\n' "$OUT"
