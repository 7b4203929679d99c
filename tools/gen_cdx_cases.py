#!/usr/bin/env python3
"""Writes the CDXJ fixtures under tests/data/cdx/: small WARCs with tricky records, and what
cdxj-indexer 1.5.0 writes for them.

Run with the venv that has warcio and cdxj-indexer:

    .venv/bin/python tools/gen_cdx_cases.py

For each NAME.warc.gz it writes NAME.cdxj (cdxj-indexer's lines, in file order), and
basic.sorted.cdxj (cdxj-indexer --sort). The Rust tests in src/cdx.rs read
the WARCs back, build the lines themselves and compare.

Records are written with warcio's WARCWriter (one gzip member per record). Records whose HTTP
head must stay byte for byte as given (LF line ends, headers without colon, odd status lines)
are handed to the writer as raw blocks, so warcio does not rewrite the head.
"""

import base64
import hashlib
import io
import os
import subprocess
import sys
import uuid
import zlib

from warcio.recordloader import ArcWarcRecord, ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.normpath(os.path.join(HERE, "..", "tests", "data", "cdx"))
BIN = os.path.dirname(os.path.abspath(sys.executable))

DIGEST = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
_ids = iter(range(1, 1000))


def record_id():
    return "<urn:uuid:%s>" % uuid.UUID(int=next(_ids))


class Fixture:
    def __init__(self, version, date):
        self.buf = io.BytesIO()
        self.writer = WARCWriter(self.buf, gzip=True, warc_version=version)
        self.date = date

    def warc_headers(self, extra=None):
        headers = {"WARC-Record-ID": record_id(), "WARC-Date": self.date}
        headers.update(extra or {})
        return headers

    def http(self, uri, status, headers, body=b""):
        """A response whose HTTP head warcio writes from (status, headers)."""
        rec = self.writer.create_warc_record(
            uri, "response", payload=io.BytesIO(body), length=len(body),
            http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"),
            warc_headers_dict=self.warc_headers())
        self.writer.write_record(rec)

    def raw(self, uri, rec_type, block, content_type="application/http; msgtype=response"):
        """A record whose block is written exactly as given, with the payload digest warcio
        computes when it checks the record (over what follows the HTTP head it parses)."""
        stream = io.BytesIO(block)
        ArcWarcRecordLoader(verify_http=False).load_http_headers(rec_type, uri.strip("<>").replace(" ", "%20"),
                                                stream, len(block))
        digest = "sha1:" + base64.b32encode(hashlib.sha1(block[stream.tell():]).digest()).decode()
        headers = {"WARC-Type": rec_type, "WARC-Target-URI": uri, "WARC-Payload-Digest": digest}
        rec_headers = StatusAndHeaders("", list(self.warc_headers(headers).items()),
                                       protocol=self.writer.warc_version)
        rec = ArcWarcRecord("warc", rec_type, rec_headers, io.BytesIO(block), None,
                            content_type, len(block))
        rec.payload_length = len(block)
        self.writer.write_record(rec)

    def by_hand(self, uri, rec_type, block, extra=None):
        """A record serialised here, for what warcio's writer will not write as given (it
        drops the block of a revisit it did not parse, and adds missing digests)."""
        lines = ["WARC/%s" % self.writer.warc_version.split("/")[-1], "WARC-Type: " + rec_type,
                 "WARC-Record-ID: " + record_id(), "WARC-Date: " + self.date,
                 "WARC-Target-URI: " + uri]
        lines += ["%s: %s" % kv for kv in (extra or {}).items()]
        lines += ["Content-Length: %d" % len(block)]
        record = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + block + b"\r\n\r\n"
        comp = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        self.buf.write(comp.compress(record) + comp.flush())

    def save(self, name):
        path = os.path.join(OUT_DIR, name + ".warc.gz")
        with open(path, "wb") as fh:
            fh.write(self.buf.getvalue())
        return path


def basic():
    """Ordinary records as a crawler writes them (WARC/1.1, microsecond dates)."""
    f = Fixture("1.1", "2024-05-06T07:08:09.123456Z")
    info = f.writer.create_warcinfo_record("basic.warc.gz", {"software": "gen_cdx_cases"})
    for name, value in f.warc_headers().items():  # fixed id and date: reproducible fixtures
        info.rec_headers.replace_header(name, value)
    f.writer.write_record(info)
    req = f.writer.create_warc_record(
        "http://www.Example.com/index.html?b=2&a=1", "request", payload=io.BytesIO(b""), length=0,
        http_headers=StatusAndHeaders("/index.html?b=2&a=1 HTTP/1.1", [("Host", "www.example.com")],
                                      protocol="GET", is_http_request=False),
        warc_headers_dict=f.warc_headers())
    f.writer.write_record(req)
    f.http("http://www.Example.com/index.html?b=2&a=1", "200 OK",
           [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "5")], b"hello")
    f.http("https://example.com:443/missing", "404 Not Found", [("Content-Length", "0")])
    f.http("http://例え.jp/パス?q=ü&A=1", "200 OK", [("Content-Type", "text/plain")], b"x")
    f.http("http://example.com/no-reason", "204", [("Server", "x")])
    f.http("http://example.com/emoji/😀", "200 OK", [("Content-Type", "image/png")], b"\x89PNG")
    f.http("http://example.com/q\"uote\\back", "200 OK", [("Content-Type", "text/css")], b"a{}")
    rev = f.writer.create_revisit_record(
        "http://www.Example.com/index.html?b=2&a=1", DIGEST,
        "http://www.Example.com/index.html?b=2&a=1", "2024-05-01T00:00:00Z",
        http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
        warc_headers_dict=f.warc_headers())
    f.writer.write_record(rev)
    rev = f.writer.create_revisit_record(
        "http://example.com/bare-revisit", DIGEST, "http://example.com/bare-revisit",
        "2024-05-01T00:00:00Z", warc_headers_dict=f.warc_headers())
    f.writer.write_record(rev)
    f.raw("dns:example.com", "resource", b"20240506070809\nexample.com. 60 IN A 127.0.0.1\n",
          content_type="text/dns")
    f.raw("http://example.com/file.txt", "resource", b"plain", content_type="text/plain; charset=utf-8")
    f.raw("http://example.com/fields", "metadata", b"via: x\r\n", content_type="application/warc-fields")
    f.raw("http://example.com/notes", "metadata", b"note", content_type="text/plain")
    f.raw("http://example.com/untyped", "resource", b"?", content_type=None)
    return f.save("basic")


def odd():
    """HTTP heads warcio parses leniently, odd URLs (WARC/1.0, second dates)."""
    f = Fixture("1.0", "2023-12-31T23:59:58Z")
    raw = f.raw
    raw("http://example.com/lf-only", "response", b"HTTP/1.1 200 OK\nContent-Type: image/gif\n\nGIF89a")
    raw("http://example.com/no-colon", "response",
        b"HTTP/1.1 301 Moved\r\nBogusHeader\r\n  continued: x\r\nContent-Type:\r\n text/html;x=1\r\n\r\n")
    raw("http://example.com/case", "response", b"HTTP/1.1 200 OK\r\nContent-Type: TEXT/HTML ;charset=x\r\n\r\n")
    raw("http://example.com/dup", "response",
        b"HTTP/1.1 200 OK\r\ncontent-type: text/a\r\nContent-Type: text/b\r\n\r\n")
    raw("http://example.com/tab", "response", b"HTTP/1.1 200 OK\r\nContent-Type:\ttext/plain\tfoo\r\n\r\n")
    raw("http://example.com/spaces", "response", b"HTTP/1.1  200  OK\r\nContent-Type: a/b\r\n\r\n")
    raw("http://example.com/proto-only", "response", b"HTTP/1.0\r\nContent-Type: a/b\r\n\r\n")
    raw("http://example.com/proto-only-bare", "response", b"HTTP/1.0\r\n\r\n")
    raw("http://example.com/tab-status", "response", b"HTTP/1.1\t200 OK\r\nX: y\r\n\r\n")
    raw("http://example.com/weird-code", "response", b"HTTP/1.1 999 Weird\r\n\r\n")
    raw("http://example.com/latin1", "response", b"HTTP/1.1 200 Caf\xe9\r\nContent-Type: t\xe9xt/html\r\n\r\n")
    raw("http://example.com/utf8", "response", "HTTP/1.1 200 OK\r\nContent-Type: text/ü\r\n\r\n".encode())
    raw("http://example.com/nbsp", "response", "HTTP/1.1 200 OK\r\nContent-Type: text/x\u00a0y\r\n\r\n".encode())
    raw("http://example.com/sep", "response", b"HTTP/1.1 200 OK\r\nContent-Type: text/a\x1cb\r\n\r\n")
    raw("http://example.com/name-space", "response", b"HTTP/1.1 200 OK\r\nContent-Type  : text/css\r\n\r\n")
    raw("http://example.com/lead-space", "response", b"HTTP/1.1 200 OK\r\n Content-Type: text/css\r\n\r\n")
    raw("http://example.com/empty-ct", "response", b"HTTP/1.1 200 OK\r\nContent-Type:\r\n\r\n")
    raw("http://example.com/semicolon", "response", b"HTTP/1.1 200 OK\r\nContent-Type: ;charset=x\r\n\r\n")
    raw("http://example.com/empty-block", "response", b"")
    raw("http://example.com/blank-first", "response", b"\r\nHTTP/1.1 200 OK\r\n\r\n")
    raw("http://example.com/garbage", "response", b"garbage")
    raw("http://example.com/head-only", "response", b"HTTP/1.1 200 OK\r\n\r\n")
    raw("http://example.com/a b", "response", b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n\r\n")
    raw("<http://example.com/wrapped>", "response", b"HTTP/1.1 200 OK\r\n\r\n")
    raw("HTTP://EXAMPLE.COM/upper", "response", b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n\r\n")
    f.by_hand("http://example.com/rev-nodigest", "revisit", b"HTTP/1.1 304 Not Modified\r\n\r\n",
              extra={"WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/server-not-modified",
                     "Content-Type": "application/http; msgtype=response"})
    raw("ftp://example.com/file", "response", b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n\r\n")
    raw("http://example.com:abc/bad-port", "response", b"HTTP/1.1 200 OK\r\n\r\n")
    return f.save("odd")


def indexer(*args):
    return subprocess.run([os.path.join(BIN, "cdxj-indexer"), *args], check=True,
                          capture_output=True, text=True, encoding="utf-8").stdout


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    warcs = [basic(), odd()]
    for warc in warcs:
        with open(warc[: -len(".warc.gz")] + ".cdxj", "w", encoding="utf-8", newline="\n") as fh:
            fh.write(indexer(warc))
    with open(os.path.join(OUT_DIR, "basic.sorted.cdxj"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(indexer("--sort", warcs[0]))
    print("wrote %s" % OUT_DIR, file=sys.stderr)


if __name__ == "__main__":
    main()
