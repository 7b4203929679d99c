#!/usr/bin/env bash
# tools/bench/backoff.sh: the "backoff" benchmark of the politeness engine.
#
# Usage: tools/bench/backoff.sh        (from any folder; about four minutes)
#
# Serves one loopback site (backoff_server.py) that answers 429 for a while, some with a
# Retry-After header (in seconds, or as an HTTP date), then 200 again; crawls it with the release
# crawler at min_delay = 1 s; and tabulates every request: when it came, what it got, the gap
# since the end of the previous answer, and the pause the documented rules call for
# (docs/politeness.md, "Backoff": doubling from the current delay, Retry-After sets the pause and becomes the site's
# floor, each normal answer halves it until it is back at the normal delay), so the two can be
# compared line by line.
#
# Environment:
#   BENCH_PLAN=...     the server's answers to page requests, in order (see backoff_server.py)
#   BENCH_NO_BUILD=1   skip `cargo build --release`
#   CARGO_TARGET_DIR   honoured as cargo does
# Output: tools/bench/out/backoff/ (server log, profile, crawl) and tools/bench/out/backoff.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out/backoff"
PLAN="${BENCH_PLAN:-200x2,429x4,429:ra=3,429:date=10,200x14}"
MIN_DELAY=1.0
DEADLINE=420   # seconds; the crawl normally ends by itself in about four minutes

for tool in python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed but not found on PATH"
done
PY="$(python3 -c 'import sys; print(sys.executable)')"

SERVER_PID="" CRAWLER_PID=""
cleanup() {
    stop_pid "$CRAWLER_PID" TERM 20
    stop_pid "$SERVER_PID" TERM 5
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. build -------------------------------------------------------------------------------
release_binary "${BENCH_NO_BUILD:-0}"

# --- 2. the site ----------------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT"
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
say "Serving backoff.test on 127.0.0.1:$PORT with the plan $PLAN"
"$PY" "$HERE/backoff_server.py" --port "$PORT" --plan "$PLAN" --pages 20 \
    --log "$OUT/server.jsonl" --max-seconds $((DEADLINE + 60)) 2>"$OUT/server.stderr" &
SERVER_PID=$!
for _ in $(seq 1 100); do
    "$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' "$PORT" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.stderr" >&2; die "the server exited"; }
    sleep 0.1
done

# The probe above was a connection without a request: the server logs it without a path.
cat >"$OUT/profile.toml" <<EOF
# Written by tools/bench/backoff.sh. min_delay below 5 s is allowed because the host is mapped
# to a loopback address.
[crawl]
name = "backoff"
seeds = ["http://backoff.test:$PORT/"]
sites_at_once = 1
[identity]
user_agent = "archiver/0.1 (+https://example.org/contact)"
[scope]
max_hops = 100
[politeness]
min_delay = $MIN_DELAY
delay_factor = 0.0
# Enough tries that the URL answered 429 again and again is not given up on.
max_retries = 10
# A 429 is also a refusal: by default 5 in a row suspend the site for hours (a separate rule,
# see docs/politeness.md, "Taking no for an answer"). Raised here so the backoff alone is seen.
refusals_before_suspend = 50
[limits]
timeout = 10.0
[output]
dir = "crawl"
prefix = "BACKOFF"
[resolve]
"backoff.test" = "127.0.0.1"
EOF

# --- 3. crawl -------------------------------------------------------------------------------
say "Crawling: $BIN crawl --profile $OUT/profile.toml"
"$BIN" crawl --profile "$OUT/profile.toml" >"$OUT/crawler.stdout" 2>"$OUT/crawler.stderr" &
CRAWLER_PID=$!
for ((i = 0; i < DEADLINE; i++)); do
    kill -0 "$CRAWLER_PID" 2>/dev/null || break
    sleep 1
done
if kill -0 "$CRAWLER_PID" 2>/dev/null; then
    echo "  still running after $DEADLINE s: SIGINT" >&2
    stop_pid "$CRAWLER_PID" INT 30
fi
RC=0
wait "$CRAWLER_PID" || RC=$?
CRAWLER_PID=""
echo "  crawler exit status $RC"
stop_pid "$SERVER_PID" INT 10
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
[[ -s "$OUT/server.jsonl" ]] || die "the server wrote no log"

# --- 4. the table ---------------------------------------------------------------------------
say "Requests over time"
MIN_DELAY="$MIN_DELAY" PLAN="$PLAN" RC="$RC" "$PY" - "$OUT" "$HERE/out/backoff.md" <<'PY'
import datetime, email.utils, json, os, sys

out, md_path = sys.argv[1], sys.argv[2]
base = float(os.environ["MIN_DELAY"])
MAX = 1800.0
recs = [json.loads(l) for l in open(os.path.join(out, "server.jsonl"))]
recs = sorted((r for r in recs if r["path"]), key=lambda r: r["arrival_ns"])
t0 = recs[0]["arrival_ns"]

def retry_after_secs(r):
    """What the crawler should read from the header, relative to the end of that answer."""
    v = r["retry_after"]
    if v is None:
        return None
    if v.isdigit():
        return min(float(v), MAX)
    when = email.utils.parsedate_to_datetime(v).timestamp()
    return min(max(0.0, when - r["end_ns"] / 1e9), MAX)

# The documented rule, as an oracle: an overloaded answer (429, 5xx) doubles the backoff starting
# from the normal delay; a normal answer halves it and drops it once it is back at the normal
# delay; a Retry-After sets it and becomes the site's floor, raised by a larger one and never
# lowered: the normal delay is at least the floor from then on. The pause is
# max(normal delay, backoff). (The crawler adds a clock margin of 2% of the pause, at most 5 ms,
# so gaps should come out about 5 ms longer.)
backoff = 0.0
floor = 0.0
rows, worst = [], None
prev = None
for i, r in enumerate(recs, 1):
    gap = (r["arrival_ns"] - prev["end_ns"]) / 1e9 if prev else None
    expected = prev["expected_next"] if prev else None
    st = r["status"]
    ra = retry_after_secs(r)
    if ra is not None:
        floor = max(floor, ra)
    normal = max(base, floor)
    if st == 429 or st >= 500:
        backoff = min(max(backoff, normal) * 2, MAX)
    else:
        backoff /= 2
        if backoff <= normal:
            backoff = 0.0
    if ra is not None:
        backoff = ra
    pause = max(normal, backoff)
    r["expected_next"] = pause
    r["backoff"] = backoff
    diff = (gap - expected) * 1000 if gap is not None else None
    if diff is not None and (worst is None or diff < worst):
        worst = diff
    bar = "#" * round(gap * 2) if gap is not None else ""
    ra_text = r["retry_after"] or ""
    if ra_text and not ra_text.isdigit():
        ra_text = f"date (+{ra:.2f} s)"
    rows.append(f"| {i} | {(r['arrival_ns'] - t0) / 1e9:7.3f} | {r['path']} | {st} | {ra_text} "
                f"| {'' if gap is None else f'{gap:.3f}'} | {'' if expected is None else f'{expected:.3f}'} "
                f"| {'' if diff is None else f'{diff:+.1f}'} | `{bar}` |")
    prev = r

# crawl.log: what the crawler made of each answer (retry annotations, final statuses).
notes = []
try:
    for line in open(os.path.join(out, "crawl", "crawl.log")):
        f = line.split()
        if len(f) >= 12:
            notes.append(f"{f[1]} /{f[3].split('/', 3)[-1]} {f[11]}")
except OSError:
    pass

head = ("| # | t (s) | path | status | Retry-After sent | gap since previous answer end (s) "
        "| rule says (s) | gap − rule (ms) | gap, one # per 0.5 s |\n"
        "| ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | --- |")
table = head + "\n" + "\n".join(rows)
summary = (f"{len(recs)} requests over {(recs[-1]['end_ns'] - t0) / 1e9:.1f} s; crawler exit status "
           f"{os.environ['RC']}. Smallest difference between the measured gap and the rule: "
           f"{worst:+.1f} ms (negative would mean a request came before the pause was over; "
           f"about +5 ms is the crawler's clock margin).")
doc = f"""# Backoff: one loopback site answering 429, then 200

Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `tools/bench/backoff.sh`.
Profile: min_delay = {base} s, delay_factor = 0, max_retries = 10, refusals_before_suspend = 50
(429 is also a refusal; the default 5 would suspend the site after the fifth 429 in a row).
Server plan for page requests, in order: `{os.environ['PLAN']}` (robots.txt always 200).

Gap: arrival of the request − end of the previous answer, on the server's clock. "Rule says":
the pause the documented backoff rule (docs/politeness.md) calls for after the previous answer (for a Retry-After
date: the date − the end of that answer). The crawler adds a clock margin of 2% of the pause,
at most 5 ms, so "gap − rule" should be a few ms above zero, never below.

{table}

{summary}

crawl.log (status, path, annotations), in order:

```
""" + "\n".join(notes) + "\n```\n"
open(md_path, "w").write(doc)
print(table)
print()
print(summary)
PY
echo
echo "Saved: $HERE/out/backoff.md"
[[ "$RC" -eq 0 ]] || die "the crawler did not finish cleanly (exit status $RC): see $OUT/crawler.stderr"
