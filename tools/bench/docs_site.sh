#!/usr/bin/env bash
# tools/bench/docs_site.sh: a real documentation site, archiver (browser on) against wget (issue 25).
#
# Usage: tools/bench/docs_site.sh      (from any folder; a few minutes on 2 cores)
#
# Serves the Rust toolchain's offline docs ($(rustc --print sysroot)/share/doc/rust/html: the
# books (mdBook) and the std/core/alloc/... API docs (rustdoc), some 48,000 HTML files) with a
# private nginx on 127.0.0.1, then crawls it twice in the same run: with archiver (the default
# profile: render = "empty", the browser on; only the delay is 0, which is allowed on loopback)
# and with `wget --recursive --level=inf --no-parent --page-requisites --warc-file`. Each crawl
# runs under /usr/bin/time -v (wall, user + system of the process and its waited-for children,
# peak RSS of the largest process) and, when /sys/fs/cgroup/cpuacct is writable, in a cpuacct
# cgroup of its own, whose CPU counts every descendant (Chromium's helpers included, which
# getrusage loses when they are reparented). It then compares the URLs each archived with status 200: the wget URLs archiver
# lacks, minus the pages archiver fetched and discarded because their meta robots say noindex.
#
# Environment:
#   BENCH_DOCS=DIR      the folder to serve (default: the toolchain's docs)
#   BENCH_NO_BUILD=1    skip `cargo build --release`
#   BENCH_BIN=PATH      the crawler binary (default: the release build)
#   BENCH_SKIP_WGET=1   crawl with archiver only (the wget figures are then left out)
#   BENCH_PROFILE_EXTRA more profile lines, appended (e.g. "[browser]\nrender = \"never\"")
#   BENCH_TIMEOUT=S     seconds after which one crawl is stopped (default 1200)
#   CARGO_TARGET_DIR    honoured as cargo does
#   ARCHIVER_VENV       a Python venv with warcio (default <repo>/.venv, as tools/test.sh makes it), to read wget's WARC
# Output: tools/bench/out/docs_site/ (nginx config and logs, profile, both crawls, *.time) and
# tools/bench/out/docs_site/results.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out/docs_site"
TIMEOUT="${BENCH_TIMEOUT:-1200}"
VENV="${ARCHIVER_VENV:-$REPO/.venv}"

source "$REPO/tools/lib.sh"
command -v python3 >/dev/null 2>&1 || die "'python3' is needed but not found"
need_gnu_time
need_deb nginx nginx-light
need_deb wget wget
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[[ -x "$VENV/bin/python" ]] || die "no Python venv with warcio at $VENV (set ARCHIVER_VENV)"

DOCS="${BENCH_DOCS:-}"
if [[ -z "$DOCS" ]]; then
    command -v rustc >/dev/null 2>&1 || die "rustc is needed to find the docs (or set BENCH_DOCS)"
    DOCS="$(rustc --print sysroot)/share/doc/rust/html"
fi
# `rustup component add rust-docs` needs the network; without the docs there is nothing to serve.
[[ -f "$DOCS/index.html" ]] || die "no docs at $DOCS (install the rust-docs component, or set BENCH_DOCS)"

if [[ -z "${BENCH_NO_BUILD:-}" && -z "${BENCH_BIN:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet) || die "cargo build --release failed"
fi
BIN="${BENCH_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/archiver}"
[[ -x "$BIN" ]] || die "no release binary at $BIN"

rm -rf "$OUT" && mkdir -p "$OUT/nginx" "$OUT/archiver" "$OUT/wget"
PORT=$(free_port)
BASE="http://127.0.0.1:$PORT"

# A private nginx: its own config, pid, logs and temp folders under OUT, 127.0.0.1 only. The docs
# live under the toolchain's folder (often /root/...), so the workers run as the invoking user.
cat > "$OUT/nginx/nginx.conf" <<EOF
user $(id -un) $(id -gn);
worker_processes 1;
pid $OUT/nginx/nginx.pid;
error_log $OUT/nginx/error.log warn;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format bench '\$msec \$request_time \$status \$body_bytes_sent "\$request" "\$http_user_agent"';
    access_log $OUT/nginx/access.log bench;
    client_body_temp_path $OUT/nginx/body;
    proxy_temp_path $OUT/nginx/proxy;
    fastcgi_temp_path $OUT/nginx/fastcgi;
    uwsgi_temp_path $OUT/nginx/uwsgi;
    scgi_temp_path $OUT/nginx/scgi;
    sendfile on;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$PORT;
        root $DOCS;
        index index.html;
    }
}
EOF
"$NGINX" -p "$OUT/nginx" -c "$OUT/nginx/nginx.conf" || die "nginx did not start (see $OUT/nginx/error.log)"
stop_nginx() { [[ -f "$OUT/nginx/nginx.pid" ]] && kill "$(cat "$OUT/nginx/nginx.pid")" 2>/dev/null || true; }
trap stop_nginx EXIT
for _ in $(seq 50); do curl -fsS -o /dev/null "$BASE/" 2>/dev/null && break; sleep 0.1; done

cat > "$OUT/archiver/docs.toml" <<EOF
# written by tools/bench/docs_site.sh: the default profile but for the seed and the delay
[crawl]
name = "docs-site"
seeds = ["$BASE/"]

[identity]
user_agent = "archiver/0.1 (+https://example.org/bench)"

[politeness]
min_delay = 0.0
delay_factor = 0.0

[output]
dir = "crawl"
EOF
if [[ -n "${BENCH_PROFILE_EXTRA:-}" ]]; then
    printf '%b\n' "$BENCH_PROFILE_EXTRA" >> "$OUT/archiver/docs.toml"
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }

# measure NAME DIR CMD...: CMD in DIR under /usr/bin/time -v (OUT/NAME.time), stopped at TIMEOUT.
measure() {
    local name="$1" dir="$2"; shift 2
    say "$name: $* (load average before: $(load))"
    echo "$(load)" > "$OUT/$name.load-before"
    # getrusage counts only children that were waited for: a Chromium helper reparented to
    # init when its parent exits is lost. A cpuacct cgroup of our own counts every descendant.
    local cg="/sys/fs/cgroup/cpuacct/docs-site-bench-$$-$name"
    mkdir "$cg" 2>/dev/null || cg=""
    (if [[ -n "$cg" ]]; then echo "$BASHPID" > "$cg/tasks"; fi
     cd "$dir" && timeout -s TERM "$TIMEOUT" /usr/bin/time -v -o "$OUT/$name.time" "$@" \
        > "$OUT/$name.stdout" 2> "$OUT/$name.stderr") || true
    echo "$(load)" > "$OUT/$name.load-after"
    if [[ -n "$cg" ]]; then
        cat "$cg/cpuacct.usage" > "$OUT/$name.cgroup-ns"
        rmdir "$cg" 2>/dev/null || true
    fi
}

echo "archiver from $(date -u +%H:%M:%S)" > "$OUT/marks"
measure archiver "$OUT/archiver" "$BIN" crawl --profile docs.toml
cp "$OUT/nginx/access.log" "$OUT/nginx/access-archiver.log" && : > "$OUT/nginx/access.log"
kill -USR1 "$(cat "$OUT/nginx/nginx.pid")"
if [[ -z "${BENCH_SKIP_WGET:-}" ]]; then
    echo "wget from $(date -u +%H:%M:%S)" >> "$OUT/marks"
    measure wget "$OUT/wget" wget --recursive --level=inf --no-parent --page-requisites \
        --warc-file=docs --no-verbose -o wget.log "$BASE/"
fi

say "comparing (reading wget's WARC)"
"$VENV/bin/python" - "$OUT" "$BASE" "$(nproc)" "$DOCS" <<'PY'
import json, os, re, sys
out, base, cores, docs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def timing(name):
    path = os.path.join(out, name + ".time")
    if not os.path.exists(path):
        return None
    t = open(path).read()
    g = lambda pat: re.search(pat, t).group(1)
    wall = g(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)").split(":")
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    cg = os.path.join(out, name + ".cgroup-ns")
    tree = int(open(cg).read()) / 1e9 if os.path.exists(cg) else None
    return {"wall": secs, "cpu_tree": tree, "cpu": float(g(r"User time \(seconds\): ([\d.]+)")) + float(g(r"System time \(seconds\): ([\d.]+)")),
            "rss_mb": int(g(r"Maximum resident set size \(kbytes\): (\d+)")) / 1024,
            "exit": g(r"Exit status: (\d+)")}

def archiver_urls():
    ok, noindex, statuses, renders, lines = set(), set(), {}, 0, 0
    notes = {}
    for line in open(os.path.join(out, "archiver", "crawl", "crawl.log"), errors="replace"):
        f = line.split()
        if len(f) < 12:
            continue
        lines += 1
        status, uri, ann = int(f[1]), f[3], f[11].split(",")
        statuses[status] = statuses.get(status, 0) + 1
        for a in ann:
            k = a.split(":")[0] if a.startswith(("max-outlinks", "retry")) else a
            notes[k] = notes.get(k, 0) + 1
        if status == 200:
            ok.add(uri)
            if "noindex" in ann or "none" in ann:
                noindex.add(uri)
            if "rendered" in ann:
                renders += 1
    return ok, noindex, statuses, renders, notes, lines

def wget_urls():
    from warcio.archiveiterator import ArchiveIterator
    ok = set()
    path = os.path.join(out, "wget", "docs.warc.gz")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        for r in ArchiveIterator(f):
            if r.rec_type == "response" and r.http_headers and r.http_headers.get_statuscode() == "200":
                ok.add(r.rec_headers.get_header("WARC-Target-URI"))
    return ok

a, w = timing("archiver"), timing("wget")
a_ok, a_noindex, statuses, renders, notes, lines = archiver_urls()
w_ok = wget_urls()
load = {n: open(os.path.join(out, n + ".load-before")).read().strip() for n in ("archiver", "wget")
        if os.path.exists(os.path.join(out, n + ".load-before"))}
rows = ["| | wall | CPU (incl. children) | CPU (whole process tree) | peak RSS | URLs with 200 | load before |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
def row(name, t, n):
    if t:
        tree = f"{t['cpu_tree']:.1f} s" if t["cpu_tree"] is not None else "-"
        rows.append(f"| {name} | {t['wall']:.1f} s | {t['cpu']:.1f} s | {tree} | {t['rss_mb']:.0f} MB | {n:,} | {load.get(name.split()[0], '-')} |")
row("wget", w, len(w_ok or ()))
row("archiver", a, len(a_ok))
report = ["# docs-site bench (tools/bench/docs_site.sh)", "",
          f"docs: {docs}; served by nginx at {base}; {cores} cores", ""] + rows + [""]
report.append(f"archiver: {lines:,} crawl.log lines; statuses {dict(sorted(statuses.items()))}; "
              f"{renders} pages rendered; exit {a['exit'] if a else '-'}")
report.append("archiver annotations: " + ", ".join(f"{k} {v}" for k, v in sorted(notes.items()) if k != "-"))
if w_ok is not None:
    missing = sorted(w_ok - a_ok - a_noindex)
    extra = len(a_ok - w_ok)
    report.append(f"wget URLs (200) archiver lacks: {len(missing)} (noindex pages not counted); "
                  f"archiver URLs (200) wget lacks: {extra:,}")
    for u in missing[:40]:
        report.append(f"  missing: {u}")
    with open(os.path.join(out, "missing.txt"), "w") as f:
        f.write("".join(u + "\n" for u in missing))
text = "\n".join(report) + "\n"
open(os.path.join(out, "results.md"), "w").write(text)
print(text)
json.dump({"archiver": a, "wget": w, "archiver_200": len(a_ok), "wget_200": len(w_ok or ()),
           "renders": renders}, open(os.path.join(out, "results.json"), "w"), indent=1)
PY
