#!/usr/bin/env bash
# tools/bench/diff.sh: `archiver diff` on two synthetic crawls of 1,000,000 CDXJ records each:
# wall time and peak RSS (GNU time), for the JSON and the text report, with a check that the
# counts are the ones the generator planted. A measurement, not a test.
#
# Usage: tools/bench/diff.sh              (from any folder)
# Environment:
#   BENCH_DIFF_RECORDS=N   records per crawl (default 1000000)
#   BENCH_NO_BUILD=1       skip `cargo build --release`
#   CARGO_TARGET_DIR       honoured as cargo does
# Output in tools/bench/out/diff/ (git-ignored); the crawls are kept and reused while the
# record count and generator are unchanged.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out/diff"
N="${BENCH_DIFF_RECORDS:-1000000}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
GENERATOR_VERSION=1

[[ "$N" =~ ^[0-9]+$ && "$N" -ge 100 ]] || die "BENCH_DIFF_RECORDS must be a whole number >= 100"
command -v python3 >/dev/null || die "python3 is needed"
need_gnu_time
if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet)
fi
BIN="$TARGET/release/archiver"
[[ -x "$BIN" ]] || die "no release binary at $BIN"

mkdir -p "$OUT"
STAMP="v$GENERATOR_VERSION n=$N"
if [[ "$(cat "$OUT/.generated" 2>/dev/null)" != "$STAMP" ]]; then
    echo "generating two crawls of $N records (once; kept in $OUT)"
    rm -rf "$OUT/old" "$OUT/new" "$OUT/.generated"
    # Old: N captures over 200 hosts, in 8 per-WARC CDXJ files (each sorted, as the crawler
    # writes them). New: 2% of the URLs gone, as many new ones, 5% with a new digest, 1% with
    # a new status, 10% as revisits (unchanged), the rest identical.
    python3 - "$OUT" "$N" <<'PY'
import json, os, random, sys
out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
FILES = 8

def line(key, ts, url, mime, status, digest, i):
    fields = {"url": url, "mime": mime}
    if status:
        fields["status"] = status
    fields.update({"digest": digest, "length": str(1000 + i % 5000),
                   "offset": str(i * 3000), "filename": "W-%05d.warc.gz" % (i % FILES)})
    return "%s %s %s" % (key, ts, json.dumps(fields))

def capture(i):
    host = "site%03d.example" % (i % 200)
    path = "/section/%d/page-%d.html" % (i % 977, i)
    return ("example,site%03d)%s" % (i % 200, path), "http://%s%s" % (host, path))

def digest(i, salt=""):
    return "sha1:" + ("%032X" % (hash((i, salt)) & (2**160 - 1)))[:32]

expected = {"added": 0, "removed": 0, "changed": 0, "unchanged": 0, "status_changes": 0}
crawls = {"old": [[] for _ in range(FILES)], "new": [[] for _ in range(FILES)]}
for i in range(n):
    key, url = capture(i)
    f = i % FILES
    crawls["old"][f].append(line(key, "20261101000000", url, "text/html", "200", digest(i), i))
    r = rng.random()
    if r < 0.02:
        expected["removed"] += 1
        continue
    if r < 0.07:
        new = line(key, "20261130000000", url, "text/html", "200", digest(i, "v2"), i)
        expected["changed"] += 1
    elif r < 0.08:
        new = line(key, "20261130000000", url, "text/html", "404", digest(i, "404"), i)
        expected["changed"] += 1
        expected["status_changes"] += 1
    elif r < 0.18:
        new = line(key, "20261130000000", url, "warc/revisit", "200", digest(i), i)
        expected["unchanged"] += 1
    else:
        new = line(key, "20261130000000", url, "text/html", "200", digest(i), i)
        expected["unchanged"] += 1
    crawls["new"][f].append(new)
for j in range(n // 50):
    i = n + j
    key, url = capture(i)
    crawls["new"][i % FILES].append(
        line(key, "20261130000000", url, "text/html", "200", digest(i), i))
    expected["added"] += 1
for name, files in crawls.items():
    os.makedirs(os.path.join(out, name, "indexes"))
    for f, lines in enumerate(files):
        lines.sort()
        with open(os.path.join(out, name, "indexes", "W-%05d.cdxj" % f), "w") as fh:
            fh.write("\n".join(lines) + "\n")
with open(os.path.join(out, "expected.json"), "w") as fh:
    json.dump(expected, fh)
PY
    echo "$STAMP" > "$OUT/.generated"
fi

measure() {  # measure NAME CMD...: wall seconds and peak RSS (MB) of CMD under GNU time
    local name="$1"
    shift
    /usr/bin/time -v -o "$OUT/$name.time" "$@" 2> "$OUT/$name.stderr" > /dev/null \
        || die "$name failed: $(cat "$OUT/$name.stderr")"
    local wall rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$OUT/$name.time" \
        | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/$name.time")
    echo "$wall $((rss / 1024))"
}

cat "$OUT"/old/indexes/* "$OUT"/new/indexes/* > /dev/null   # warm the page cache
OLD_LINES=$(cat "$OUT"/old/indexes/* | wc -l)
NEW_LINES=$(cat "$OUT"/new/indexes/* | wc -l)
read -r J_SECS J_RSS < <(measure json "$BIN" diff "$OUT/old" "$OUT/new" --format json -o "$OUT/report.json")
read -r T_SECS T_RSS < <(measure text "$BIN" diff "$OUT/old" "$OUT/new" -o "$OUT/report.txt")

CHECK=$(python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
got = json.load(open(out + "/report.json"))["summary"]
want = json.load(open(out + "/expected.json"))
print("counts as planted" if got == want else "COUNTS DIFFER: got %s, planted %s" % (got, want))
PY
)
{
    echo "| report | time (s) | peak RSS (MB) |"
    echo "| --- | --- | --- |"
    echo "| --format json | $J_SECS | $J_RSS |"
    echo "| --format text | $T_SECS | $T_RSS |"
    echo
    echo "old: $OLD_LINES records, new: $NEW_LINES records, 8 CDXJ files each, $(nproc) CPUs; $CHECK"
    echo "summary: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"])' "$OUT/report.json")"
} | tee "$OUT/results.md"
[[ "$CHECK" == "counts as planted" ]] || exit 1
