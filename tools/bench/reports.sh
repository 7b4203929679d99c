#!/usr/bin/env bash
# How long a run takes to rebuild the whole crawl's reports from crawl.log (issue 14: reports
# that survive re-runs). Crawls a one-page loopback site to the end, appends N synthetic lines
# (distinct URLs on 100 hosts, mixed statuses and annotations) to its crawl.log, then times
# `archiver crawl` on the finished crawl: it reads crawl.log whole, finds nothing to do and
# exits 0 without touching the reports.
#
#   tools/bench/reports.sh [N]          (N defaults to 1000000)
#
# Needs cargo, python3 and GNU time (/usr/bin/time). Output in tools/bench/out/reports/.
set -euo pipefail
N=${1:-1000000}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$REPO/tools/bench/out/reports
BIN=${CARGO_TARGET_DIR:-$REPO/target}/release/archiver
[ -n "${BENCH_NO_BUILD:-}" ] || (cd "$REPO" && cargo build --release --quiet)
rm -rf "$OUT" && mkdir -p "$OUT/site"
echo "<p>one page</p>" > "$OUT/site/index.html"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 -d "$OUT/site" >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
sleep 0.5
cat > "$OUT/p.toml" <<TOML
[crawl]
name = "reports-bench"
seeds = ["http://127.0.0.1:$PORT/"]
[identity]
user_agent = "archiver/0.1 (+https://example.org/bench)"
[politeness]
min_delay = 0.0
delay_factor = 0.0
[output]
dir = "crawl"
TOML
"$BIN" crawl --profile "$OUT/p.toml" 2>/dev/null
python3 - "$OUT/crawl/crawl.log" "$N" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
kinds = [
    ("  200", "5123", "text/html", "-"),
    ("  200", "5123", "text/html", "duplicate:digest"),
    ("  404", "312", "text/html", "-"),
    ("-5000", "-", "-", "scope:off-site"),
    ("-9998", "-", "-", "robots"),
    ("   -2", "-", "-", "retry:1"),
]
with open(path, "a") as f:
    for i in range(n):
        st, size, mime, ann = kinds[i % len(kinds)]
        f.write(f"2026-12-01T22:00:00.000Z {st} {size:>10} http://site-{i % 100}.test/p/{i} L "
                f"http://site-{i % 100}.test/ {mime} #001 20261201220000000+5 sha1:AAAA - {ann} {{}}\n")
PY
echo "crawl.log: $(wc -l < "$OUT/crawl/crawl.log") lines, $(du -h "$OUT/crawl/crawl.log" | cut -f1)"
/usr/bin/time -v "$BIN" crawl --profile "$OUT/p.toml" 2> "$OUT/time.txt" || true
grep -E "already complete" "$OUT/time.txt" | head -1
grep -E "Elapsed \(wall|Maximum resident|User time|System time" "$OUT/time.txt"
