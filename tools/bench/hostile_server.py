#!/usr/bin/env python3
"""Servers for tools/bench/hostile.sh: link-flood sites next to an ordinary site, on loopback.

    hostile_server.py OUT_DIR SCENARIO

Scenarios (the sizes of issue 9):
  repeated        one site whose page is 4.2 MB of gzip: links drawn from 10,000 URLs, repeated
  unique          one site whose page is 8.5 MB of unique links (plain HTML)
  eight-repeated  eight sites like "repeated" at once
  eight-unique    eight sites like "unique" at once
and the link bombs of issue 26, each next to six more ordinary sites (8 sites in all):
  bombs           both pages below on two sites at once
  bomb            a 4.2 MB gzip body decoding to 2 GiB: <html><body> then <a href=x> repeated
  offsite         an 8.5 MB gzip body decoding to ~50 MB: <base href> of another origin, then
                  3,600,000 distinct links <a href=0> <a href=1> ...
The issue-26 pages are built once and kept in OUT_DIR/../cache (building the 2 GiB one takes
about 15 s).

Every site listens on its own address 127.0.9.N (the ordinary one on 127.0.9.1). Writes OUT_DIR/seeds.txt (one seed per line), OUT_DIR/pages.txt (what each flood page
holds) and, for the ordinary site, OUT_DIR/server.log: one line per request, "path arrival_ns
end_ns" on the monotonic clock, so its waits are measured where they happen. Runs until killed.
Nothing listens outside 127.0.0.0/8.
"""

import os
import random
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GZIP_BYTES = 4_200_000
UNIQUE_BYTES = 8_500_000
ORDINARY_PAGES = 60


def repeated_page():
    """HTML of links drawn at random from 10,000 URLs, until its gzip is 4.2 MB."""
    rng = random.Random(9)
    z = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    out = [z.compress(b"<html><body>\n")]
    done = len(out[0])
    links = 0
    size = 0
    while done < GZIP_BYTES:
        block = b"".join(
            b'<a href="/flood-link/%d">x</a>\n' % rng.randrange(10_000) for _ in range(20_000)
        )
        links += 20_000
        size += len(block)
        piece = z.compress(block)
        out.append(piece)
        done += len(piece)
    out.append(z.flush())
    return b"".join(out), links, size


def cached(out, name, build):
    """The bytes `build()` makes, kept in OUT_DIR/../cache/NAME across runs."""
    cache = os.path.join(os.path.dirname(os.path.abspath(out)), "cache")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, name)
    if not os.path.exists(path):
        with open(path + ".part", "wb") as f:
            f.write(build())
        os.rename(path + ".part", path)
    with open(path, "rb") as f:
        return f.read()


BOMB_DECODED = 2 << 30
OFFSITE_LINKS = 3_600_000


def bomb_page():
    """gzip (level 9, one stream) of <html><body> and <a href=x> up to 2 GiB decoded."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(b"<html><body>")]
    chunk = b"<a href=x>" * (1 << 20)
    for _ in range(BOMB_DECODED // len(chunk)):
        out.append(z.compress(chunk))
    out.append(z.flush())
    return b"".join(out)


def offsite_page():
    """gzip of a <base href> of another origin, then 3.6 million distinct relative links."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(b'<html><head><base href="http://127.0.9.250:9/elsewhere/"></head><body>')]
    step = 100_000
    for start in range(0, OFFSITE_LINKS, step):
        out.append(z.compress(b"".join(b"<a href=%d>" % i for i in range(start, start + step))))
    out.append(z.flush())
    return b"".join(out)


def unique_page():
    """8.5 MB of HTML, every link a URL of its own."""
    out = [b"<html><body>\n"]
    size = 0
    i = 0
    while size < UNIQUE_BYTES:
        line = b'<a href="/flood-link/u%d">link %d</a>\n' % (i, i)
        out.append(line)
        size += len(line)
        i += 1
    return b"".join(out), i


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, ctype, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self):
        arrived = time.monotonic_ns()
        site = self.server.site
        path = self.path
        if path == "/robots.txt":
            self.send(404, "text/plain", b"")
        elif site["kind"] == "ordinary":
            n = int(path[2:]) if path.startswith("/p") and path[2:].isdigit() else 0
            words = " ".join(WORDS[(n * 7 + i * (n % 5 + 1) + i * i) % len(WORDS)] for i in range(40))
            links = "".join(f'<a href="/p{i}">page {i}</a> ' for i in range(n + 1, min(n + 4, ORDINARY_PAGES)))
            body = f"<html><body><h1>page {n}</h1><p>{words}</p>{links}</body></html>".encode()
            self.send(200, "text/html", body)
        elif site["kind"] in ("repeated", "bomb", "offsite"):
            self.send(200, "text/html", site["body"], [("Content-Encoding", "gzip")])
        else:
            self.send(200, "text/html", site["body"])
        if site["kind"] == "ordinary" and not site.get("quiet"):
            with LOG_LOCK:
                LOG.write(f"{path} {arrived} {time.monotonic_ns()}\n")
                LOG.flush()


WORDS = ["harbour", "lantern", "orchard", "granite", "meadow", "copper", "violet", "thunder",
         "saffron", "glacier", "pepper", "willow", "falcon", "marble", "cobalt", "juniper"]
LOG_LOCK = threading.Lock()
LOG = None


def main():
    global LOG
    out, scenario = sys.argv[1], sys.argv[2]
    LOG = open(os.path.join(out, "server.log"), "w")
    sites = [{"kind": "ordinary", "addr": "127.0.9.1"}]
    if scenario in ("bombs", "bomb", "offsite"):
        kinds = ["bomb", "offsite"] if scenario == "bombs" else [scenario]
        notes = []
        for i, kind in enumerate(kinds):
            if kind == "bomb":
                body = cached(out, "bomb.html.gz", bomb_page)
                notes.append(f"bomb: {len(body)} bytes of gzip, {BOMB_DECODED} bytes decoded, "
                             f"<a href=x> repeated")
            else:
                body = cached(out, "offsite.html.gz", offsite_page)
                notes.append(f"offsite: {len(body)} bytes of gzip, {OFFSITE_LINKS} distinct "
                             f"links under a <base href> of another origin")
            sites.append({"kind": kind, "addr": f"127.0.9.{10 + i}", "body": body})
        # More ordinary sites, for 8 at once (their requests are not logged).
        while len(sites) < 8:
            sites.append({"kind": "ordinary", "addr": f"127.0.9.{30 + len(sites)}", "quiet": True})
        note = "; ".join(notes) + f"; {len(sites) - len(kinds)} ordinary sites"
    else:
        count = {"repeated": 1, "unique": 1, "eight-repeated": 8, "eight-unique": 8}[scenario]
        kind = "repeated" if scenario.endswith("repeated") else "unique"
        if kind == "repeated":
            body, links, decoded = repeated_page()
            note = f"repeated: {len(body)} bytes of gzip, {decoded} bytes decoded, {links} links (10,000 distinct)"
        else:
            body, links = unique_page()
            note = f"unique: {len(body)} bytes, {links} distinct links"
        sites += [{"kind": kind, "addr": f"127.0.9.{10 + i}", "body": body} for i in range(count)]
    with open(os.path.join(out, "pages.txt"), "w") as f:
        f.write(note + "\n")
    servers = []
    for site in sites:
        srv = ThreadingHTTPServer((site["addr"], 0), Handler)
        srv.site = site
        srv.daemon_threads = True
        site["port"] = srv.server_address[1]
        servers.append(srv)
    seeds = [
        f"http://{s['addr']}:{s['port']}/p0" if s["kind"] == "ordinary" else f"http://{s['addr']}:{s['port']}/"
        for s in sites
    ]
    with open(os.path.join(out, "seeds.txt"), "w") as f:
        f.write("\n".join(seeds) + "\n")
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
