"""A static site for tests/sitemap_recrawl.rs that honours conditional requests.

    python3 conditional_site.py PORT ROOT LOG

Serves the files under ROOT on 127.0.0.1:PORT. Every 200 carries an ETag (a hash of the file)
and a Last-Modified (its mtime); a request whose If-None-Match names the ETag gets a 304, and
one without If-None-Match whose If-Modified-Since is not before the mtime gets one too
(RFC 9110 13.1.3). Each answer is appended to LOG as "METHOD PATH STATUS BYTES" (BYTES: every
byte written for it, head and body), so the test can add up what a crawl received.
"""
import email.utils
import hashlib
import http.server
import os
import sys

PORT, ROOT, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3]
TYPES = {".html": "text/html; charset=utf-8", ".xml": "application/xml", ".gz": "application/gzip",
         ".txt": "text/plain"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def end_headers(self):
        # Counted before the buffer is flushed.
        self._sent_head = b"".join(self._headers_buffer) + b"\r\n"
        super().end_headers()

    def do_GET(self):
        path = os.path.normpath(self.path.split("?")[0]).lstrip("/") or "index.html"
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            body = b"not here\n"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            with open(LOG, "a") as log:
                log.write(f"GET {self.path} 404 {len(self._sent_head) + len(body)}\n")
            return
        with open(full, "rb") as f:
            body = f.read()
        mtime = int(os.stat(full).st_mtime)
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        last_modified = email.utils.formatdate(mtime, usegmt=True)
        validators = [("ETag", etag), ("Last-Modified", last_modified)]
        inm = self.headers.get("If-None-Match")
        ims = self.headers.get("If-Modified-Since")
        not_modified = False
        if inm is not None:
            not_modified = etag in [t.strip() for t in inm.split(",")]
        elif ims is not None:
            try:
                since = email.utils.parsedate_to_datetime(ims).timestamp()
                not_modified = mtime <= since
            except (TypeError, ValueError):
                pass
        if not_modified:
            self.send_response(304)
            for name, value in validators:
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            with open(LOG, "a") as log:
                log.write(f"GET {self.path} 304 {len(self._sent_head)}\n")
            return
        kind = TYPES.get(os.path.splitext(full)[1], "application/octet-stream")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        for name, value in validators:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        with open(LOG, "a") as log:
            log.write(f"GET {self.path} 200 {len(self._sent_head) + len(body)}\n")


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
