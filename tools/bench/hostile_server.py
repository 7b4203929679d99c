#!/usr/bin/env python3
"""Servers for tools/bench/hostile.sh: link-flood sites next to an ordinary site, on loopback.

    hostile_server.py OUT_DIR SCENARIO

Scenarios (the sizes of issue 9):
  repeated        one site whose page is 4.2 MB of gzip: links drawn from 10,000 URLs, repeated
  unique          one site whose page is 8.5 MB of unique links (plain HTML)
  eight-repeated  eight sites like "repeated" at once
  eight-unique    eight sites like "unique" at once

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
        elif site["kind"] == "repeated":
            self.send(200, "text/html", site["body"], [("Content-Encoding", "gzip")])
        else:
            self.send(200, "text/html", site["body"])
        if site["kind"] == "ordinary":
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
    count = {"repeated": 1, "unique": 1, "eight-repeated": 8, "eight-unique": 8}[scenario]
    kind = "repeated" if scenario.endswith("repeated") else "unique"
    if kind == "repeated":
        body, links, decoded = repeated_page()
        note = f"repeated: {len(body)} bytes of gzip, {decoded} bytes decoded, {links} links (10,000 distinct)"
    else:
        body, links = unique_page()
        note = f"unique: {len(body)} bytes, {links} distinct links"
    with open(os.path.join(out, "pages.txt"), "w") as f:
        f.write(note + "\n")
    LOG = open(os.path.join(out, "server.log"), "w")
    sites = [{"kind": "ordinary", "addr": "127.0.9.1"}]
    sites += [{"kind": kind, "addr": f"127.0.9.{10 + i}", "body": body} for i in range(count)]
    servers = []
    for site in sites:
        srv = ThreadingHTTPServer((site["addr"], 0), Handler)
        srv.site = site
        srv.daemon_threads = True
        site["port"] = srv.server_address[1]
        servers.append(srv)
    seeds = [f"http://127.0.9.1:{sites[0]['port']}/p0"]
    seeds += [f"http://{s['addr']}:{s['port']}/" for s in sites[1:]]
    with open(os.path.join(out, "seeds.txt"), "w") as f:
        f.write("\n".join(seeds) + "\n")
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
