#!/usr/bin/env python3
"""The loopback site of the backoff benchmark (tools/bench/backoff.sh).

One site on 127.0.0.1 whose answers follow a script: robots.txt (allow all) is always 200;
page requests, in the order they arrive, get the statuses of --plan, then 200 until the site
runs out of pages. Pages form a chain (/ links to /p/1, /p/k to /p/k+1, the last links nowhere),
so the crawl ends by itself once every page was answered 200.

--plan is a comma-separated list; each item is one answer:
    200            a page
    429            Too Many Requests, no Retry-After
    429:ra=N       429 with "Retry-After: N" (seconds)
    429:date=N     429 with "Retry-After: <HTTP date N seconds from now>"
    503            Service Unavailable (same forms as 429)
    200xK / 429xK  K such answers in a row

Every request is logged in memory (arrival and end-of-response times in ns since the epoch,
path, status, Retry-After sent) and written as JSON lines to --log when the server stops
(SIGINT, SIGTERM or --max-seconds). Times come from this process, like the crawler's.
"""
import argparse
import asyncio
import email.utils
import json
import os
import signal
import sys
import time


def parse_plan(text):
    """The answers, in order: a list of (status, kind, seconds) with kind None, 'ra' or 'date'."""
    plan = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        count = 1
        if "x" in item:
            item, _, n = item.partition("x")
            count = int(n)
        status, _, extra = item.partition(":")
        kind, secs = None, 0
        if extra:
            kind, _, v = extra.partition("=")
            if kind not in ("ra", "date"):
                raise ValueError(f"unknown plan item {item!r}")
            secs = int(v)
        plan += [(int(status), kind, secs)] * count
    return plan


class Site:
    def __init__(self, plan, pages):
        self.plan = plan
        self.pages = pages
        self.page_requests = 0
        self.log = []

    def answer(self, path):
        """Status, extra headers, content type and body for one request."""
        if path == "/robots.txt":
            return 200, [], "text/plain", "User-agent: *\nAllow: /\n", None
        if path == "/":
            k = 0
        elif path.startswith("/p/") and path[3:].isdigit():
            k = int(path[3:])
        else:
            return 404, [], "text/plain", "not found\n", None
        if k > self.pages:
            return 404, [], "text/plain", "not found\n", None
        n = self.page_requests
        self.page_requests += 1
        status, kind, secs = self.plan[n] if n < len(self.plan) else (200, None, 0)
        headers, retry_after = [], None
        if kind == "ra":
            retry_after = str(secs)
        elif kind == "date":
            retry_after = email.utils.formatdate(time.time() + secs, usegmt=True)
        if retry_after is not None:
            headers.append(("Retry-After", retry_after))
        if status != 200:
            body = f"<html><head><title>Slow down</title></head><body>status {status}</body></html>\n"
            return status, headers, "text/html", body, retry_after
        link = f'<a href="/p/{k + 1}">next</a>' if k < self.pages else "the end"
        body = (f"<!DOCTYPE html>\n<html><head><title>Backoff page {k}</title></head>"
                f"<body><h1>Page {k}</h1><p>{link}</p></body></html>\n")
        return 200, headers, "text/html; charset=utf-8", body, retry_after

    async def handle(self, reader, writer):
        arrival = time.time_ns()
        rec = {"arrival_ns": arrival, "path": None, "status": None, "retry_after": None}
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            parts = head.split(b"\r\n", 1)[0].split()
            path = parts[1].decode("ascii", "replace") if len(parts) > 1 else "/"
            status, headers, ctype, body, retry_after = self.answer(path)
            data = body.encode()
            reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests",
                      503: "Service Unavailable"}.get(status, "Status")
            lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {ctype}",
                     f"Content-Length: {len(data)}", "Connection: close"]
            lines += [f"{k}: {v}" for k, v in headers]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
            await writer.drain()
            rec.update(path=path, status=status, retry_after=retry_after)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                ConnectionError):
            pass
        rec["end_ns"] = time.time_ns()
        self.log.append(rec)
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-seconds", type=float, default=600)
    a = ap.parse_args()
    site = Site(parse_plan(a.plan), a.pages)
    server = await asyncio.start_server(site.handle, "127.0.0.1", a.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"backoff_server: listening on 127.0.0.1:{a.port}", file=sys.stderr, flush=True)
    try:
        await asyncio.wait_for(stop.wait(), a.max_seconds)
    except asyncio.TimeoutError:
        print("backoff_server: --max-seconds reached", file=sys.stderr)
    server.close()
    tmp = a.log + ".tmp"
    with open(tmp, "w") as f:
        for rec in site.log:
            f.write(json.dumps(rec) + "\n")
    os.replace(tmp, a.log)
    print(f"backoff_server: {len(site.log)} requests logged to {a.log}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
