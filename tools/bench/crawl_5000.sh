#!/usr/bin/env bash
# tools/bench/crawl_5000.sh: crawl a 5,000-page loopback site with archiver and with
# `wget --recursive --warc-file`, in the same run, and compare them side by side.
#
# Usage: tools/bench/crawl_5000.sh        (from any folder; run it again at will)
# Environment:
#   BENCH_PAGES=N        pages in the generated site (default 5000)
#   BENCH_CSS=0|1        pages carry CSS requisites (stylesheets with @import, fonts and
#                        backgrounds, <style> and style= attributes); default 1
#   BENCH_TIMEOUT=S      give up on one crawl after S seconds (default 1800)
#   BENCH_NO_BUILD=1     skip `cargo build --release` (use the binary already built)
#   CARGO_TARGET_DIR     honoured as cargo does
# Everything lands in tools/bench/out/ (git-ignored): the site, both crawls, the raw
# /usr/bin/time -v reports and results.md. Nothing is sent outside 127.0.0.1.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out"
SITE="$OUT/site"
PAGES="${BENCH_PAGES:-5000}"
TIMEOUT="${BENCH_TIMEOUT:-1800}"
CSS="${BENCH_CSS:-1}"
GENERATOR_VERSION=2        # bump when the generator changes, so old sites are rebuilt

[[ "$PAGES" =~ ^[0-9]+$ && "$PAGES" -ge 10 ]] || die "BENCH_PAGES must be a number >= 10"
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "BENCH_TIMEOUT must be a whole number of seconds"
[[ "$CSS" = 0 || "$CSS" = 1 ]] || die "BENCH_CSS must be 0 or 1"
for tool in python3 cargo wget gzip; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed but not found on PATH"
done
need_gnu_time
# The real interpreter, not a version-manager shim, so the server's PID is python's own.
PY="$(python3 -c 'import sys; print(sys.executable)')"

SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cpu_ticks() {  # cpu_ticks PID: user+system clock ticks used so far by that process
    "$PY" -c 'import sys; f = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split(); print(int(f[11]) + int(f[12]))' "$1"
}

mkdir -p "$OUT"
PIDFILE="$OUT/.crawl.pid"

# --- 1. build -------------------------------------------------------------------------------
release_binary "${BENCH_NO_BUILD:-0}"

# --- 2. the site ----------------------------------------------------------------------------
STAMP="pages=$PAGES css=$CSS generator=$GENERATOR_VERSION"
if [[ -f "$SITE/.generated" && "$(cat "$SITE/.generated")" = "$STAMP" ]]; then
    say "Site already generated: $SITE ($PAGES pages)"
else
    say "Generating a $PAGES-page site in $SITE"
    rm -rf "$SITE"
    "$PY" - "$SITE" "$PAGES" "$CSS" <<'PY'
# Page 0 is /index.html (linked as "/"), page i > 0 is /p/NN/iiii.html with NN = i // 100.
# Links: the parent and the children in a 5-ary tree (so every page is reachable breadth-first
# from the front page), then cross links chosen at random (fixed seed) up to 10 per page.
# Each page is padded with text to a random size between 5 and 10 KB.
# With CSS on, as a documentation site is styled: every page links its section's stylesheet
# /css/sNN.css, which @imports /css/base.css (a web font, a background) and names its own font
# and background; a <style> element and a style= attribute name one image each of the section.
# So each section has 5 requisites of its own and the site 3 shared ones.
import os, random, sys

root, n, css = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rnd = random.Random(5000)
width = max(4, len(str(n - 1)))
words = ("harbour lighthouse river mill slate roof archive crawler record index page link "
         "letter editor council path winter lamp volunteer north pier owl nest town paper "
         "story draft member plan walk morning tide boat net market bridge").split()

def href(i):
    return "/" if i == 0 else f"/p/{i // 100:02d}/{i:0{width}d}.html"

def path(i):
    return os.path.join(root, "index.html" if i == 0 else href(i).lstrip("/"))

def text(k):
    return " ".join(rnd.choice(words) for _ in range(k))

for i in range(n):
    links = [(i - 1) // 5] if i else []
    links += [c for c in range(5 * i + 1, 5 * i + 6) if c < n]
    while len(links) < 10:
        j = rnd.randrange(n)
        if j != i and j not in links:
            links.append(j)
    items = "\n".join(f'  <li><a href="{href(j)}">{text(3)} ({j})</a></li>' for j in links)
    sec = i // 100
    style = (f'<link rel="stylesheet" href="/css/s{sec:02d}.css">\n'
             f"<style>h1 {{ background: url('/img/s{sec:02d}-h.png') no-repeat; }}</style>\n"
             if css else "")
    box = (f'<div style="background-image: url(/img/s{sec:02d}-box.png)">{text(5)}</div>\n'
           if css else "")
    head = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>Bench page {i}</title>\n{style}</head>\n<body>\n<h1>Page {i}: {text(4)}</h1>\n"
            f"{box}<ul>\n{items}\n</ul>\n")
    tail = "</body>\n</html>\n"
    target = rnd.randint(5 * 1024, 10 * 1024)
    paras = []
    size = len(head) + len(tail)
    while size < target:
        p = f"<p>{text(rnd.randint(20, 60))}</p>\n"
        paras.append(p)
        size += len(p)
    os.makedirs(os.path.dirname(path(i)), exist_ok=True)
    with open(path(i), "w", encoding="utf-8") as f:
        f.write(head + "".join(paras) + tail)

def blob(rel, size):
    full = os.path.join(root, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(rnd.randbytes(size))

if css:
    os.makedirs(os.path.join(root, "css"), exist_ok=True)
    with open(os.path.join(root, "css", "base.css"), "w") as f:
        f.write('/* shared by every section */\n'
                '@font-face { font-family: Body; src: url("../fonts/body.woff2") format("woff2"); }\n'
                "body { font-family: Body, serif; background: url(../img/paper.png); }\n")
    blob("fonts/body.woff2", 30_000)
    blob("img/paper.png", 8_000)
    for sec in range((n - 1) // 100 + 1):
        with open(os.path.join(root, "css", f"s{sec:02d}.css"), "w") as f:
            f.write(f'@import "base.css";\n'
                    f"@font-face {{ font-family: S{sec}; src: url('/fonts/s{sec:02d}.woff2') format('woff2'); }}\n"
                    f"h1 {{ font-family: S{sec}; }}\n"
                    f".nav {{ background: image-set('/img/s{sec:02d}-nav.png' 1x); }}\n")
        blob(f"fonts/s{sec:02d}.woff2", 20_000)
        for name in ("nav", "h", "box"):
            blob(f"img/s{sec:02d}-{name}.png", 3_000)

with open(os.path.join(root, "robots.txt"), "w") as f:
    f.write("# The benchmark site: every robot may fetch everything.\nUser-agent: *\nAllow: /\n")
PY
    echo "$STAMP" >"$SITE/.generated"
fi
SITE_FILES="$(find "$SITE" -name '*.html' | wc -l)"
SITE_KB="$(du -sk --apparent-size --exclude=.generated "$SITE" | cut -f1)"
[[ "$SITE_FILES" -eq "$PAGES" ]] || die "expected $PAGES pages in $SITE, found $SITE_FILES"
echo "  $SITE_FILES HTML pages, ${SITE_KB} KB on disk"

# --- 3. serve it ----------------------------------------------------------------------------
PORT="$(free_port)"
BASE="http://127.0.0.1:$PORT"
say "Serving it on $BASE/ (python3 ThreadingHTTPServer, HTTP/1.1 keep-alive, no request log)"
"$PY" - "$SITE" "$PORT" >"$OUT/server.log" 2>&1 <<'PY' &
import functools, http.server, sys

class Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, for clients that reuse connections
    # Headers and body go out in two writes; with Nagle's algorithm on, the body then waits for
    # the client's delayed ACK (~40 ms a page on Linux). The client is not what slows down here.
    disable_nagle_algorithm = True
    def log_message(self, *args):   # a log line per request would only add server overhead
        pass

root, port = sys.argv[1], int(sys.argv[2])
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=root))
server.serve_forever()
PY
SERVER_PID=$!
for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; die "the bench server exited"; }
    "$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()' "$PORT" 2>/dev/null && break
    sleep 0.1
done
"$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()' "$PORT" ||
    die "the bench server did not start on port $PORT"

# --- 4. crawl with archiver -----------------------------------------------------------------
rm -rf "$OUT/archiver" "$OUT/wget"
mkdir -p "$OUT/archiver" "$OUT/wget"
cat >"$OUT/archiver/bench.toml" <<EOF
# Written by tools/bench/crawl_5000.sh for one run; delays are zero, allowed on loopback only.
[crawl]
name = "bench-$PAGES"
seeds = ["$BASE/"]
sites_at_once = 1
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact)"
[scope]
max_hops = 100
max_pages_per_site = $((PAGES * 2 + 100))
[politeness]
min_delay = 0.0
delay_factor = 0.0
max_delay = 1.0
max_crawl_delay = 1.0
max_retries = 1
[limits]
timeout = 30.0
[output]
dir = "crawl"
prefix = "BENCH"
EOF

# measure NAME CMD...: runs CMD under /usr/bin/time -v (report in OUT/NAME.time) and a deadline;
# records the exit status, the load average before and the server's CPU ticks spent meanwhile.
declare -A RC SERVER_TICKS LOAD
measure() {
    local name="$1" before after rc
    shift
    LOAD[$name]="$(cut -d' ' -f1-3 /proc/loadavg)"   # other work on the machine skews the figures
    before="$(cpu_ticks "$SERVER_PID")"
    rc=0
    TIMER=(/usr/bin/time -v -o "$OUT/$name.time")
    with_deadline "$TIMEOUT" "$@" || rc=$?
    TIMER=()
    after="$(cpu_ticks "$SERVER_PID")"
    RC[$name]=$rc
    SERVER_TICKS[$name]=$((after - before))
    [[ $rc -ne 124 ]] || echo "  $name: stopped after ${TIMEOUT}s (BENCH_TIMEOUT)" >&2
}

say "Crawl 1/2: archiver (min_delay = 0, delay_factor = 0)"
measure archiver "$BIN" crawl --profile "$OUT/archiver/bench.toml" \
    >"$OUT/archiver/stdout.log" 2>"$OUT/archiver/stderr.log"
echo "  exit status ${RC[archiver]}; output in $OUT/archiver/crawl"
# archiver stops cleanly on Ctrl-C (exit 130): look for
# its summary, and stop here rather than go on with a half crawl.
if grep -qs 'stopped by Ctrl-C' "$OUT/archiver/crawl/summary.txt"; then
    die "interrupted during the archiver crawl"
fi
if [[ ${RC[archiver]} -ne 0 ]]; then
    echo "  last lines of its stderr:" >&2
    tail -n 15 "$OUT/archiver/stderr.log" >&2 || true
fi

# --- 5. crawl with wget ---------------------------------------------------------------------
say "Crawl 2/2: wget --recursive --level=inf --no-parent --page-requisites --warc-file -e robots=on"
measure wget wget --recursive --level=inf --no-parent --page-requisites --no-verbose -e robots=on \
    --warc-file="$OUT/wget/bench" --directory-prefix="$OUT/wget/files" \
    --output-file="$OUT/wget/wget.log" "$BASE/"
# wget exits 8 when some URL answered with an error status; that is still a finished crawl.
echo "  exit status ${RC[wget]}; output in $OUT/wget"

cleanup
SERVER_PID=""

# --- 6. count, compare, report --------------------------------------------------------------
say "Results"
GIT_REV="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo "no commit")"
CLK_TCK="$(getconf CLK_TCK)"
WGET_VERSION="$(wget --version | sed -n "1s/\.$//p")"
PY_VERSION="$("$PY" --version 2>&1)"
export BENCH_OUT="$OUT" BENCH_PAGES_EXPECTED="$PAGES" BENCH_BASE="$BASE" \
    BENCH_RC_ARCHIVER="${RC[archiver]}" BENCH_RC_WGET="${RC[wget]}" \
    BENCH_SRV_ARCHIVER="${SERVER_TICKS[archiver]}" BENCH_SRV_WGET="${SERVER_TICKS[wget]}" \
    BENCH_CLK_TCK="$CLK_TCK" BENCH_GIT_REV="$GIT_REV" BENCH_SITE_KB="$SITE_KB" \
    BENCH_WGET_VERSION="$WGET_VERSION" BENCH_PY_VERSION="$PY_VERSION" \
    BENCH_LOAD_ARCHIVER="${LOAD[archiver]}" BENCH_LOAD_WGET="${LOAD[wget]}" BENCH_CSS="$CSS"
"$PY" - <<'PY'
import datetime, glob, os, platform, re, zlib

env = os.environ
out, base = env["BENCH_OUT"], env["BENCH_BASE"]
expected = int(env["BENCH_PAGES_EXPECTED"])
tck = int(env["BENCH_CLK_TCK"])

def time_report(name):
    """The figures of a /usr/bin/time -v report."""
    got = {}
    try:
        text = open(os.path.join(out, name + ".time")).read()
    except OSError:
        return got
    for key, pat in [("user", r"User time \(seconds\): ([\d.]+)"),
                     ("sys", r"System time \(seconds\): ([\d.]+)"),
                     ("wall", r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)"),
                     ("rss_kb", r"Maximum resident set size \(kbytes\): (\d+)")]:
        m = re.search(pat, text)
        if not m:
            continue
        v = m.group(1)
        if key == "wall":
            secs = 0.0
            for part in v.split(":"):
                secs = secs * 60 + float(part)
            v = secs
        got[key] = float(v)
    return got

def warc_responses(pattern):
    """Counts HTTP 200 response records (robots.txt left out) in WARC files, HTML pages and
    other files (requisites) apart, reading them gzip member by gzip member and record by
    record."""
    pages, requisites, records, size = 0, 0, 0, 0
    for path in glob.glob(pattern):
        size += os.path.getsize(path)
        data = open(path, "rb").read()
        blob = bytearray()
        while data:
            d = zlib.decompressobj(wbits=31)
            blob += d.decompress(data)
            data = d.unused_data
        pos = 0
        while pos < len(blob):
            end = blob.index(b"\r\n\r\n", pos)
            head = {}
            for line in bytes(blob[pos:end]).split(b"\r\n")[1:]:
                k, _, v = line.decode("utf-8", "replace").partition(":")
                head[k.strip().lower()] = v.strip()
            n = int(head["content-length"])
            block = bytes(blob[end + 4:end + 4 + min(n, 4096)])
            records += 1
            uri = head.get("warc-target-uri", "").strip("<>")
            if (head.get("warc-type") == "response" and uri.startswith(base)
                    and not uri.endswith("/robots.txt") and block.split(b" ", 2)[1:2] == [b"200"]):
                http_head = block.split(b"\r\n\r\n", 1)[0].lower()
                if b"content-type: text/html" in http_head:
                    pages += 1
                else:
                    requisites += 1
            pos = end + 4 + n + 4
    return pages, requisites, records, size

def archiver_log_pages():
    n = 0
    try:
        for line in open(os.path.join(out, "archiver", "crawl", "crawl.log"), errors="replace"):
            f = line.split()
            if len(f) > 3 and f[1] == "200" and not f[3].endswith("/robots.txt"):
                n += 1
    except OSError:
        return None
    return n

def wget_log_pages():
    n = 0
    try:
        for line in open(os.path.join(out, "wget", "wget.log"), errors="replace"):
            m = re.search(r"URL:(\S+) \[", line)
            if m and not m.group(1).endswith("/robots.txt"):
                n += 1
    except OSError:
        return None
    return n

rows, raw = [], []
for tool, warcs, log_pages in [
        ("archiver", os.path.join(out, "archiver", "crawl", "warcs", "*.warc.gz"), archiver_log_pages()),
        ("wget", os.path.join(out, "wget", "*.warc.gz"), wget_log_pages())]:
    t = time_report(tool)
    try:
        pages, requisites, records, size = warc_responses(warcs)
        warc_note = ""
    except (ValueError, KeyError, IndexError, zlib.error) as e:
        pages, requisites, records, size = 0, 0, 0, 0
        warc_note = f" (WARC unreadable: {e})"
    cpu = t.get("user", 0) + t.get("sys", 0)
    wall = t.get("wall", 0)
    per_s = f"{pages / wall:.1f}" if wall and pages else "-"
    cpu_k = f"{cpu / pages * 1000:.2f}" if pages else "-"
    rss = f"{t['rss_kb'] / 1024:.1f}" if "rss_kb" in t else "-"
    rows.append(f"| {tool} | {pages} | {requisites} | {wall:.2f} | {per_s} | {cpu_k} | {rss} |")
    srv = int(env["BENCH_SRV_" + tool.upper()]) / tck
    raw.append(f"- **{tool}**: exit status {env['BENCH_RC_' + tool.upper()]}; "
               f"user {t.get('user', 0):.2f} s, sys {t.get('sys', 0):.2f} s, wall {wall:.2f} s, "
               f"peak RSS {t.get('rss_kb', 0):.0f} KB; with status 200 in the WARC: {pages} HTML pages "
               f"and {requisites} other files (requisites); "
               f"{log_pages if log_pages is not None else '?'} URLs with status 200 in its log; {records} WARC records, "
               f"{size / 1e6:.1f} MB of WARC{warc_note}; the server used {srv:.2f} CPU s meanwhile; "
               f"load average before: {env['BENCH_LOAD_' + tool.upper()]}.")
    if pages != expected:
        raw.append(f"  - note: {tool} fetched {pages} of the {expected} pages.")

table = ("| tool | pages | requisites | wall s | pages/s | CPU s (user+sys) per 1,000 pages | peak RSS MB |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n" + "\n".join(rows))
cpu_model = "?"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
doc = f"""# archiver vs wget: {expected}-page loopback crawl

Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by tools/bench/crawl_5000.sh
(archiver at git {env['BENCH_GIT_REV']}; {env['BENCH_WGET_VERSION']}; server {env['BENCH_PY_VERSION']}).
Machine: {os.cpu_count()} CPUs ({cpu_model}), {platform.system()} {platform.release()}.
Site: {expected} static HTML pages of 5-10 KB ({env['BENCH_SITE_KB']} KB), 10 links each, robots.txt
allowing all, served on 127.0.0.1 by Python's ThreadingHTTPServer on the same machine.
CSS requisites: {"on (per 100-page section a stylesheet, a web font and 3 background images; a shared stylesheet @imported by each, with a font and a background; <style> and style= on every page)" if env["BENCH_CSS"] == "1" else "off (BENCH_CSS=0)"}.

{table}

Pages: HTML pages answered 200 and recorded in the tool's WARC (robots.txt not counted);
requisites: the other files answered 200 in it (stylesheets, fonts, images, when BENCH_CSS=1).
pages/s and CPU per 1,000 pages count HTML pages only, with the requisites' cost included.
Wall, CPU and peak RSS: /usr/bin/time -v of the crawler process alone; the Python server's CPU
is not included (it is listed below) but it ran on the same 2 cores, so it slows both crawls.
archiver: min_delay = 0, delay_factor = 0 (allowed on loopback only). wget: one
keep-alive connection, no delay, also writes every page to disk (out/wget/files) besides its WARC.
A load average near or above the CPU count (below) means other work competed for the CPUs.

## Raw numbers
""" + "\n".join(raw) + "\n"
open(os.path.join(out, "results.md"), "w").write(doc)
print(table)
print()
print("\n".join(raw))
PY
echo
echo "Saved: $OUT/results.md (raw /usr/bin/time -v reports: $OUT/archiver.time, $OUT/wget.time)"
[[ ${RC[archiver]} -eq 0 ]] || die "archiver did not finish cleanly (exit status ${RC[archiver]}): see $OUT/archiver/stderr.log"
