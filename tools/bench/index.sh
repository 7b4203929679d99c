#!/usr/bin/env bash
# tools/bench/index.sh: `archiver index` against `cdxj-indexer --sort` on the same generated
# gzip WARCs (about 1 GB by default) and on a real crawl of small pages (about 150 MB), in one
# run: MB/s of compressed WARC for each, and a check that both wrote the same CDXJ. A measurement, not a test: nothing fails on a slow number.
#
# Usage: tools/bench/index.sh             (from any folder)
# Environment:
#   BENCH_INDEX_MB=N     total size of the generated WARCs in MB (default 1024)
#   BENCH_INDEX_FILES=N  how many WARC files (default 8; archiver indexes files in parallel)
#   BENCH_INDEX_REAL_COPIES=N  copies of the small-page crawl fixture in the second input
#                        (default 13: about 150 MB)
#   BENCH_NO_BUILD=1     skip `cargo build --release`
#   ARCHIVER_VENV        the venv with cdxj-indexer (default <repo>/.venv, see tools/test.sh)
#   CARGO_TARGET_DIR     honoured as cargo does
# Output in tools/bench/out/index/ (git-ignored); the WARCs are kept and reused while size,
# file count and generator are unchanged.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$REPO/tools/lib.sh"
OUT="$HERE/out/index"
MB="${BENCH_INDEX_MB:-1024}"
FILES="${BENCH_INDEX_FILES:-8}"
VENV="${ARCHIVER_VENV:-$REPO/.venv}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
GENERATOR_VERSION=2

[[ "$MB" =~ ^[0-9]+$ && "$MB" -ge 1 ]] || die "BENCH_INDEX_MB must be a whole number >= 1"
[[ "$FILES" =~ ^[0-9]+$ && "$FILES" -ge 1 ]] || die "BENCH_INDEX_FILES must be a whole number >= 1"
[[ -x "$VENV/bin/cdxj-indexer" ]] || die "cdxj-indexer not found in $VENV: run tools/test.sh first"
need_gnu_time

if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet)
fi
BIN="$TARGET/release/archiver"
[[ -x "$BIN" ]] || die "no release binary at $BIN"

mkdir -p "$OUT/warcs"
STAMP="v$GENERATOR_VERSION mb=$MB files=$FILES"
if [[ "$(cat "$OUT/.generated" 2>/dev/null)" != "$STAMP" ]]; then
    echo "generating $MB MB of WARCs in $FILES files (once; kept in $OUT/warcs)"
    rm -f "$OUT"/warcs/* "$OUT/.generated"
    # A crawl-like mix, one gzip member per record: per URL a request and a response; the
    # responses are HTML pages (5-80 kB of varied text), images (2-60 kB, incompressible),
    # and now and then a 404 or a revisit.
    "$VENV/bin/python" - "$OUT/warcs" "$MB" "$FILES" <<'PY'
import gzip, hashlib, base64, os, random, sys, uuid
from multiprocessing import Pool

out, total_mb, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per_file = total_mb * 1024 * 1024 // files
WORDS = ("archive crawler page record digest replay index capture site link image "
         "the of and to in is for on with as by at from this that web snapshot").split()

def corpus(seed):
    rng = random.Random(seed)
    words = [rng.choice(WORDS) if rng.random() < 0.8 else "%x" % rng.getrandbits(24)
             for _ in range(400000)]
    return " ".join(words)

CORPUS = corpus(0)

def text(rng, n):
    # Pieces of a large random text: as compressible as prose-like HTML, cheap to make.
    parts = []
    size = 0
    while size < n:
        start = rng.randrange(len(CORPUS) - 4096)
        piece = CORPUS[start:start + rng.randrange(512, 4096)]
        parts.append(piece)
        size += len(piece)
    return "\n".join(parts)[:n]

def record(rtype, uri, date, block, extra=()):
    rid = "<urn:uuid:%s>" % uuid.uuid4()
    head = ["WARC/1.1", "WARC-Type: " + rtype, "WARC-Record-ID: " + rid,
            "WARC-Date: " + date, "WARC-Target-URI: " + uri]
    head += list(extra)
    head.append("Content-Length: %d" % len(block))
    return rid, gzip.compress(("\r\n".join(head) + "\r\n\r\n").encode() + block + b"\r\n\r\n", 6)

def digest(b):
    return "sha1:" + base64.b32encode(hashlib.sha1(b).digest()).decode()

def one_file(i):
    rng = random.Random(i)
    path = os.path.join(out, "BENCH-%05d.warc.gz" % i)
    size = 0
    n = 0
    seen = []
    with open(path + ".part", "wb") as fh:
        _, m = record("warcinfo", "", "2026-11-30T00:00:00Z", b"software: bench\r\n",
                      ["Content-Type: application/warc-fields"])
        fh.write(m)
        while size < per_file:
            n += 1
            host = "site%d.example" % rng.randrange(50)
            uri = "http://%s/p/%d/%d.html" % (host, i, n)
            date = "2026-11-30T%02d:%02d:%02d.%06dZ" % (n // 3600 % 24, n // 60 % 60, n % 60, n % 999999)
            kind = rng.random()
            if kind < 0.55:
                body = ("<html><head><title>%s</title></head><body><p>%s</p></body></html>"
                        % (text(rng, 40), text(rng, rng.randrange(5000, 80000)))).encode()
                ctype, status = "text/html; charset=utf-8", "200 OK"
            elif kind < 0.93:
                body = os.urandom(rng.randrange(2000, 60000))
                uri = uri.replace(".html", ".jpg")
                ctype, status = "image/jpeg", "200 OK"
            else:
                body = b"<p>not found</p>"
                ctype, status = "text/html", "404 Not Found"
            http = ("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                    % (status, ctype, len(body))).encode()
            req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: bench\r\n\r\n" % (uri, host)).encode()
            if seen and rng.random() < 0.05:
                ouri, odate, odig = rng.choice(seen)
                rid, m = record("revisit", uri, date, http[:http.index(b"\r\n\r\n") + 4], [
                    "WARC-Payload-Digest: " + odig, "WARC-Refers-To-Target-URI: " + ouri,
                    "WARC-Refers-To-Date: " + odate,
                    "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
                    "Content-Type: application/http;msgtype=response"])
            else:
                rid, m = record("response", uri, date, http + body, [
                    "WARC-Payload-Digest: " + digest(body),
                    "Content-Type: application/http;msgtype=response"])
                if len(seen) < 1000:
                    seen.append((uri, date, digest(body)))
            fh.write(m)
            size += len(m)
            _, q = record("request", uri, date, req, [
                "WARC-Concurrent-To: " + rid, "Content-Type: application/http;msgtype=request"])
            fh.write(q)
            size += len(q)
    os.rename(path + ".part", path)

with Pool(os.cpu_count() or 1) as p:
    p.map(one_file, range(files))
PY
    echo "$STAMP" > "$OUT/.generated"
fi

WARCS=("$OUT"/warcs/*.warc.gz)
BYTES=$(cat "${WARCS[@]}" | wc -c)
MBYTES=$(awk "BEGIN{printf \"%.1f\", $BYTES/1048576}")
echo "input: ${#WARCS[@]} files, $MBYTES MB of gzip WARC; $(nproc) CPUs"

# Warm the page cache so neither run pays for the first read from disk.
cat "${WARCS[@]}" > /dev/null

measure() {  # measure NAME CMD...: runs CMD under GNU time; prints wall s, CPU s, peak RSS MB
    local name="$1"
    shift
    /usr/bin/time -v -o "$OUT/$name.time" "$@" > /dev/null 2> "$OUT/$name.stderr"
    local wall cpu rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$OUT/$name.time" \
        | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$OUT/$name.time")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/$name.time")
    echo "$wall $cpu $((rss / 1024))"
}

LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
read -r A_SECS A_CPU A_RSS < <(measure archiver "$BIN" index "${WARCS[@]}" -o "$OUT/archiver.cdxj")
read -r P_SECS P_CPU P_RSS < <(measure cdxj-indexer "$VENV/bin/cdxj-indexer" --sort "${WARCS[@]}" -o "$OUT/cdxj-indexer.cdxj")

if cmp -s "$OUT/archiver.cdxj" "$OUT/cdxj-indexer.cdxj"; then
    SAME="identical ($(wc -l < "$OUT/archiver.cdxj") lines)"
else
    SAME="DIFFERENT (see diff $OUT/archiver.cdxj $OUT/cdxj-indexer.cdxj)"
fi
rate() { awk "BEGIN{ if ($2 > 0) printf \"%.1f\", $1/1048576/$2; else print \"inf\" }"; }
A_RATE=$(rate "$BYTES" "$A_SECS")
P_RATE=$(rate "$BYTES" "$P_SECS")
SPEEDUP=$(awk "BEGIN{ if ($A_SECS > 0) printf \"%.1f\", $P_SECS/$A_SECS; else print \"inf\" }")
CPU_RATIO=$(awk "BEGIN{ if ($A_CPU > 0) printf \"%.1f\", $P_CPU/$A_CPU; else print \"inf\" }")

{
    echo "| indexer | wall (s) | MB/s of gzip WARC (wall) | CPU (s) | peak RSS (MB) |"
    echo "| --- | --- | --- | --- | --- |"
    echo "| archiver index | $A_SECS | $A_RATE | $A_CPU | $A_RSS |"
    echo "| cdxj-indexer --sort | $P_SECS | $P_RATE | $P_CPU | $P_RSS |"
    echo
    echo "input $MBYTES MB in ${#WARCS[@]} files, $(nproc) CPUs (load average $LOAD_BEFORE before the runs);"
    echo "archiver ${SPEEDUP}x faster by the clock, ${CPU_RATIO}x less CPU; output $SAME"
} | tee "$OUT/results.md"
[[ "$SAME" == identical* ]] || exit 1

# The same on a real crawl of small pages: this crawler's WARC of a documentation site
# (tests/data/warc/index-merge.warc.gz, 11.7 MB, 3,601 pages) concatenated REAL_COPIES times into
# one file (gzip members and WARC records simply follow each other; about 150 MB by default).
REAL_COPIES="${BENCH_INDEX_REAL_COPIES:-13}"
REAL="$OUT/real/small-pages.warc.gz"
mkdir -p "$OUT/real"
if [[ "$(cat "$OUT/real/.generated" 2>/dev/null)" != "copies=$REAL_COPIES" ]]; then
    rm -f "$REAL"
    for _ in $(seq "$REAL_COPIES"); do cat "$REPO/tests/data/warc/index-merge.warc.gz"; done > "$REAL"
    echo "copies=$REAL_COPIES" > "$OUT/real/.generated"
fi
cat "$REAL" > /dev/null
RBYTES=$(wc -c < "$REAL")
read -r RA_SECS RA_CPU RA_RSS < <(measure archiver-real "$BIN" index "$REAL" -o "$OUT/archiver-real.cdxj")
read -r RP_SECS RP_CPU RP_RSS < <(measure cdxj-indexer-real "$VENV/bin/cdxj-indexer" --sort "$REAL" -o "$OUT/cdxj-indexer-real.cdxj")
if cmp -s "$OUT/archiver-real.cdxj" "$OUT/cdxj-indexer-real.cdxj"; then
    RSAME="identical ($(wc -l < "$OUT/archiver-real.cdxj") lines)"
else
    RSAME="DIFFERENT (see diff $OUT/archiver-real.cdxj $OUT/cdxj-indexer-real.cdxj)"
fi
RSPEEDUP=$(awk "BEGIN{ if ($RA_SECS > 0) printf \"%.1f\", $RP_SECS/$RA_SECS; else print \"inf\" }")
{
    echo
    echo "| small pages ($(awk "BEGIN{printf \"%.1f\", $RBYTES/1048576}") MB, one file) | wall (s) | MB/s (wall) | CPU (s) | peak RSS (MB) |"
    echo "| --- | --- | --- | --- | --- |"
    echo "| archiver index | $RA_SECS | $(rate "$RBYTES" "$RA_SECS") | $RA_CPU | $RA_RSS |"
    echo "| cdxj-indexer --sort | $RP_SECS | $(rate "$RBYTES" "$RP_SECS") | $RP_CPU | $RP_RSS |"
    echo
    echo "small pages: archiver ${RSPEEDUP}x faster by the clock; output $RSAME"
} | tee -a "$OUT/results.md"
[[ "$RSAME" == identical* ]] || exit 1
