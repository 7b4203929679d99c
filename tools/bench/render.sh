#!/usr/bin/env bash
# tools/bench/render.sh: what rendering costs (issue 12).
#
# Usage: tools/bench/render.sh         (from any folder; about a minute once built)
#
# Serves a loopback single-page-app site (an ordinary index page linking BENCH_PAGES app shells;
# each shell's script loads a JSON document, then shows its items, links and an image) and
# crawls it twice with the release crawler, no delay of our own: once with
# `[browser] render = "never"` (the shells archived as served), once with `render = "empty"` and
# `max_share = 1` (every shell rendered in headless Chromium, each of its requests fetched by the
# crawler). It reports pages rendered per minute and the peak memory of Chromium's whole process
# tree (sampled every 0.1 s), next to the crawler's own: the sum of the resident sizes (RSS, which
# counts pages shared between Chromium's processes once per process) and the sum of the
# proportional set sizes (PSS, shared pages split between their processes: what the machine
# really gave it).
#
# Environment:
#   BENCH_PAGES=N      app shells in the site (default 40)
#   BENCH_TABS=N       sites_at_once, and so the most tabs at once (default 2)
#   BENCH_NO_BUILD=1   skip `cargo build --release`
#   BENCH_BIN=PATH     the crawler binary to measure (default: the release build)
#   CARGO_TARGET_DIR   honoured as cargo does
# Output: tools/bench/out/render/ (site, profiles, crawls) and tools/bench/out/render.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out/render"
PAGES="${BENCH_PAGES:-40}"
TABS="${BENCH_TABS:-2}"

for tool in python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed but not found on PATH"
done
command -v chromium >/dev/null 2>&1 || die "chromium is needed (apt-get install chromium)"

if [[ -z "${BENCH_NO_BUILD:-}" && -z "${BENCH_BIN:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet) || die "cargo build --release failed"
fi
BIN="${BENCH_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/archiver}"
[[ -x "$BIN" ]] || die "no release binary at $BIN"

rm -rf "$OUT" && mkdir -p "$OUT"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

cat > "$OUT/site.py" <<'PY'
import json, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
PAGES = int(sys.argv[2])
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
APP = b"""document.addEventListener('DOMContentLoaded', async () => {
  const id = location.pathname.split('/')[2];
  const data = await (await fetch('/api/' + id + '.json')).json();
  const root = document.getElementById('root');
  root.textContent = '';
  const h = document.createElement('h1'); h.textContent = data.title; root.appendChild(h);
  for (const it of data.items) {
    const a = document.createElement('a'); a.href = '/detail/' + id + '-' + it + '.html';
    a.textContent = 'Item ' + it; root.appendChild(a);
  }
  const img = document.createElement('img'); img.src = '/img/' + id + '.gif'; root.appendChild(img);
});"""
def shell(i):
    return ('<!doctype html><html><head><title>App %d</title><script src="/app.js"></script>'
            '</head><body><div id="root">Loading...</div></body></html>' % i).encode()
def ordinary(title, links):
    body = "".join("<li><a href='%s'>%s</a></li>" % (l, l) for l in links)
    return ("<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>"
            "<ul>%s</ul></body></html>" % (title, title, "Text of an ordinary page. " * 20, body)).encode()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        p = self.path
        if p == "/robots.txt": mime, body = "text/plain", b"User-agent: *\nAllow: /\n"
        elif p == "/": mime, body = "text/html", ordinary("Index", ["/app/%d/" % i for i in range(PAGES)])
        elif p == "/app.js": mime, body = "application/javascript", APP
        elif p.startswith("/app/"): mime, body = "text/html", shell(int(p.split("/")[2]))
        elif p.startswith("/api/"):
            i = p[5:].split(".")[0]
            mime, body = "application/json", json.dumps({"title": "App " + i, "items": [1, 2, 3]}).encode()
        elif p.startswith("/img/"): mime, body = "image/gif", GIF
        elif p.startswith("/detail/"): mime, body = "text/html", ordinary(p, [])
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

profile() {  # profile NAME RENDER
    cat > "$OUT/$1.toml" <<TOML
[crawl]
name = "render-$1"
seeds = ["http://127.0.0.1:$PORT/"]
sites_at_once = $TABS
[identity]
user_agent = "archiver-bench/0.1 (+https://example.org/bench)"
[politeness]
min_delay = 0.0
delay_factor = 0.0
[browser]
render = "$2"
max_share = 1.0
render_timeout = 30
[output]
dir = "$1"
TOML
}

# Peak RSS (KiB) of a process tree: sums VmRSS of the root and its descendants every 0.1 s.
cat > "$OUT/peak.py" <<'PY'
import os, sys, time
root = int(sys.argv[1])
def children():
    kids = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            with open("/proc/%s/stat" % pid) as f: fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/comm" % pid) as f: comm = f.read().strip()
        except OSError: continue
        kids.setdefault(int(fields[1]), []).append((int(pid), comm))
    return kids
def field(path, name):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name): return int(line.split()[1])
    except OSError: pass
    return 0
def rss(pid): return field("/proc/%d/status" % pid, "VmRSS:")
def pss(pid): return field("/proc/%d/smaps_rollup" % pid, "Pss:")
peak_browser = peak_pss = peak_crawler = 0
while os.path.exists("/proc/%d" % root):
    kids = children()
    browser, shared, todo = 0, 0, [p for p, _ in kids.get(root, [])]
    while todo:
        p = todo.pop(); browser += rss(p); shared += pss(p); todo += [c for c, _ in kids.get(p, [])]
    peak_browser = max(peak_browser, browser); peak_pss = max(peak_pss, shared)
    peak_crawler = max(peak_crawler, rss(root))
    time.sleep(0.1)
print(peak_crawler, peak_browser, peak_pss)
PY

run() {  # run NAME RENDER -> "seconds rendered crawler_kib browser_kib"
    profile "$1" "$2"
    local start end peaks
    start=$(date +%s.%N)
    (cd "$OUT" && exec "$BIN" crawl --profile "$1.toml" >"$1.stdout" 2>"$1.stderr") &
    local pid=$!
    peaks=$(python3 "$OUT/peak.py" "$pid")
    wait "$pid" || die "the $1 crawl failed (see $OUT/$1.stderr)"
    end=$(date +%s.%N)
    local rendered
    rendered=$(python3 -c "import sys; print(sum('rendered' in l.split()[11].split(',') for l in open(sys.argv[1]) if len(l.split()) > 11))" "$OUT/$1/crawl.log")
    local urls
    urls=$(wc -l < "$OUT/$1/crawl.log")
    echo "$(python3 -c "print(round($end - $start, 2))") $rendered $urls $peaks"
}

read -r T0 R0 U0 C0 B0 P0 < <(run never never)
read -r T1 R1 U1 C1 B1 P1 < <(run empty empty)
RATE=$(python3 -c "print(round($R1 / $T1 * 60, 1) if $T1 > 0 else 0)")
{
    echo "# tools/bench/render.sh ($PAGES app shells, sites_at_once = $TABS, $(date -u +%Y-%m-%d))"
    echo
    echo "| run | wall time | URLs in crawl.log | pages rendered | crawler peak RSS | Chromium peak RSS (whole tree) | Chromium peak PSS (whole tree) |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    echo "| render = \"never\" | ${T0} s | $U0 | $R0 | $((C0 / 1024)) MiB | $((B0 / 1024)) MiB | $((P0 / 1024)) MiB |"
    echo "| render = \"empty\" | ${T1} s | $U1 | $R1 | $((C1 / 1024)) MiB | $((B1 / 1024)) MiB | $((P1 / 1024)) MiB |"
    echo
    echo "Rendered: $RATE pages per minute."
} | tee "$OUT/../render.md"
