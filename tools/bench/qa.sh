#!/usr/bin/env bash
# tools/bench/qa.sh: how fast `archiver qa` replays a crawl (issue 29), and what Chromium costs.
#
# Usage: tools/bench/qa.sh         (from any folder; a few minutes once built)
#
# Serves a loopback site of BENCH_PAGES typical pages (about 12 KB of HTML text each, a shared
# stylesheet with a background image and a web font, a shared script, three images of its own),
# crawls it with the release crawler (`render = "never"`, no delay of our own), then runs
# `archiver qa OUT --all` on it and reports pages per minute, the peak memory of Chromium's whole
# process tree (sum of RSS, and of PSS, sampled every 0.1 s), the check's score, and the load
# average before and after (the machine is shared: the figure is only as good as the load).
#
# Environment:
#   BENCH_PAGES=N      pages in the site (default 120)
#   BENCH_TABS=N       qa --tabs (default 4)
#   BENCH_NO_BUILD=1   skip `cargo build --release`
#   BENCH_BIN=PATH     the binary to measure (default: the release build)
#   CARGO_TARGET_DIR   honoured as cargo does
# Output: tools/bench/out/qa/ (site, crawl, qa.json, report.html) and tools/bench/out/qa.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out/qa"
PAGES="${BENCH_PAGES:-120}"
TABS="${BENCH_TABS:-4}"

source "$REPO/tools/lib.sh"
[[ "$PAGES" =~ ^[0-9]+$ && "$PAGES" -ge 1 ]] || die "BENCH_PAGES must be a number >= 1"
[[ "$TABS" =~ ^[0-9]+$ && "$TABS" -ge 1 ]] || die "BENCH_TABS must be a number >= 1"
for tool in python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed but not found on PATH"
done
command -v chromium >/dev/null 2>&1 || die "chromium is needed (apt-get install chromium)"

if [[ -z "${BENCH_NO_BUILD:-}" && -z "${BENCH_BIN:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet) || die "cargo build --release failed"
fi
BIN="${BENCH_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/archiver}"
[[ -x "$BIN" ]] || die "no binary at $BIN"

rm -rf "$OUT" && mkdir -p "$OUT"
PORT=$(free_port)

cat > "$OUT/site.py" <<'PY'
import struct, sys, zlib
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
PAGES = int(sys.argv[2])
def png(w, h, seed):
    raw = b"".join(b"\x00" + b"".join(bytes(((x * 7 + seed * 13) % 256, (y * 3) % 256, (x + y + seed) % 256))
                                      for x in range(w)) for y in range(h))
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
CSS = (b"@font-face{font-family:Body;src:url(/fonts/body.woff2) format('woff2')}"
       b"body{font-family:Body,serif;max-width:60em;margin:auto;background:url(/img/bg.png)}"
       b"header{display:flex;gap:1em}img{max-width:30%}article p{line-height:1.5}")
JS = b"document.addEventListener('DOMContentLoaded',()=>{document.body.dataset.ready='1';});"
TEXT = " ".join(["An ordinary paragraph of an ordinary page, long enough to wrap a few times."] * 6)
def page(i):
    links = "".join("<li><a href='/page/%d.html'>Page %d</a></li>" % (j, j)
                    for j in range(i + 1, min(i + 6, PAGES)))
    imgs = "".join("<img src='/img/%d-%d.png' alt='figure'>" % (i, k) for k in range(3))
    paras = "".join("<p>%s</p>" % TEXT for _ in range(20))
    return ("<!doctype html><html><head><meta charset=utf-8><title>Page %d</title>"
            "<link rel=stylesheet href=/style.css><script src=/app.js defer></script></head>"
            "<body><header><h1>Page %d</h1><nav><ul>%s</ul></nav></header><article>%s%s</article>"
            "</body></html>" % (i, i, links, imgs, paras)).encode()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        p = self.path
        if p == "/robots.txt": mime, body = "text/plain", b"User-agent: *\nAllow: /\n"
        elif p == "/":
            mime = "text/html"
            body = ("<!doctype html><title>Index</title><ul>%s</ul>" % "".join(
                "<li><a href='/page/%d.html'>%d</a>" % (i, i) for i in range(PAGES))).encode()
        elif p.startswith("/page/"): mime, body = "text/html", page(int(p[6:].split(".")[0]))
        elif p == "/style.css": mime, body = "text/css", CSS
        elif p == "/app.js": mime, body = "application/javascript", JS
        elif p == "/fonts/body.woff2": mime, body = "font/woff2", b"wOF2" + bytes(2000)
        elif p == "/img/bg.png": mime, body = "image/png", png(16, 16, 0)
        elif p.startswith("/img/"):
            a, b = p[5:].split(".")[0].split("-")
            mime, body = "image/png", png(120, 80, int(a) * 3 + int(b))
        else:
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        self.send_response(200)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$OUT/site.py" "$PORT" "$PAGES" &
SITE=$!
trap 'kill $SITE 2>/dev/null || true' EXIT
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done

cat > "$OUT/site.toml" <<TOML
[crawl]
name = "qa-bench"
seeds = ["http://127.0.0.1:$PORT/"]
sites_at_once = 1
[identity]
user_agent = "archiver-bench/0.1 (+https://example.org/bench)"
[politeness]
min_delay = 0.0
delay_factor = 0.0
[browser]
render = "never"
[output]
dir = "crawl"
TOML
(cd "$OUT" && "$BIN" crawl --profile site.toml >crawl.stdout 2>crawl.stderr) \
    || die "the crawl failed (see $OUT/crawl.stderr)"

# Peak memory (KiB) of the process tree under a root, without the root: RSS and PSS summed.
cat > "$OUT/peak.py" <<'PY'
import os, sys, time
root = int(sys.argv[1])
def children():
    kids = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            with open("/proc/%s/stat" % pid) as f: ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError): continue
        kids.setdefault(ppid, []).append(int(pid))
    return kids
def field(path, name):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name): return int(line.split()[1])
    except OSError: pass
    return 0
peak_rss = peak_pss = peak_self = 0
while os.path.exists("/proc/%d" % root):
    kids = children()
    rss = pss = 0
    todo = list(kids.get(root, []))
    while todo:
        p = todo.pop()
        rss += field("/proc/%d/status" % p, "VmRSS:"); pss += field("/proc/%d/smaps_rollup" % p, "Pss:")
        todo += kids.get(p, [])
    peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
    peak_self = max(peak_self, field("/proc/%d/status" % root, "VmRSS:"))
    time.sleep(0.1)
print(peak_self, peak_rss, peak_pss)
PY

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s.%N)
(cd "$OUT" && exec "$BIN" qa crawl --all --tabs "$TABS" --json qa.json -o report.html \
    >qa.stdout 2>qa.stderr) &
QA=$!
read -r SELF RSS PSS < <(python3 "$OUT/peak.py" "$QA")
wait "$QA" || die "qa failed (see $OUT/qa.stderr)"
END=$(date +%s.%N)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

read -r CHECKED SCORE REQUESTS TIMED_OUT < <(python3 -c "
import json, sys
q = json.load(open(sys.argv[1]))
print(q['pages_checked'], round(q['score'], 4), q['requests'], q['timed_out'])" "$OUT/qa.json")
SECS=$(python3 -c "print(round($END - $START, 2))")
RATE=$(python3 -c "print(round($CHECKED / ($END - $START) * 60, 1))")
{
    echo "# tools/bench/qa.sh ($PAGES typical pages, --tabs $TABS, $(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "| pages checked | requests | score | cut at timeout | wall time | pages/min | archiver peak RSS | Chromium peak RSS (tree) | Chromium peak PSS (tree) | load before | load after |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    echo "| $CHECKED | $REQUESTS | $SCORE | $TIMED_OUT | ${SECS} s | $RATE | $((SELF / 1024)) MiB | $((RSS / 1024)) MiB | $((PSS / 1024)) MiB | $LOAD_BEFORE | $LOAD_AFTER |"
    echo
    echo "$(nproc) cores; binary: $BIN"
} | tee "$OUT/../qa.md"
