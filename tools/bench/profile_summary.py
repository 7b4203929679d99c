#!/usr/bin/env python3
"""Shares of a crawler's CPU samples per component, from `perf script -F comm,ip,sym,dso`.

    python3 tools/bench/profile_summary.py perf.script

A sample counts once, for one component:
- a sample in the kernel goes by the system call it is in (sleeping and waking threads, TCP,
  file writes), or to interrupts and softirqs when it is in none (on loopback, delivering a
  TCP segment to the other end runs in the sender's softirq);
- a sample in user space goes to the first frame, from the leaf up, that belongs to a
  component (so malloc called by lol_html counts as extraction, by SQLite as the frontier).
Samples whose leaf is the allocator or memcpy/memset are also counted on a line of their own.
"""
import collections
import sys

# Checked in this order for each frame; the first match names the component.
USER = [
    ("gzip (libdeflate, zlib-rs)", ["libdeflate", "deflate", "zlib_rs"]),
    ("SQLite frontier", ["sqlite3", "rusqlite", "frontier::sqlite", "walChecksum", "pcache1"]),
    ("HTML and CSS extraction", ["lol_html", "archiver::extract", "cssparser", "selectors::",
                                 "encoding_rs"]),
    ("repeated-content traps", ["scope::traps"]),
    ("crawl.log, reports", ["logs::crawllog", "crawl::journal", "logs::report", "readback"]),
    ("CDXJ, SURT", ["archiver::cdx"]),
    ("WARC records (headers, SHA-1)", ["archiver::warc", "sha1", "crawl::writer"]),
    ("hyper, fetch", ["hyper::", "net::fetch", "http::"]),
    ("scheduler, dispatcher, commits", ["crawl::sched", "crawl::driver", "crawl::commits",
                                        "politeness"]),
    ("scope, candidates, URLs", ["crawl::candidates", "archiver::scope", "url::"]),
    ("tokio runtime", ["tokio::"]),
]
SLEEP = ["futex", "epoll_wait", "epoll_pwait", "sched_yield", "nanosleep"]
TCP = ["connect", "shutdown", "sendto", "recvfrom", "socket", "close", "epoll_ctl",
       "setsockopt", "getsockopt", "sys_read", "writev"]
FILES = ["pwrite", "sys_write", "fsync", "fdatasync"]
ALLOC = ("mi_", "malloc", "free", "memmove", "memcpy", "memset", "realloc")


def component(frames):
    """The component of one sample (frames from the leaf up)."""
    leaf = frames[0] if frames else ""
    if "[kernel.kallsyms]" in leaf:
        call = next((f for f in frames if "__x64_sys_" in f), "")
        if any(k in call for k in SLEEP):
            return "kernel: sleeping and waking threads (futex, epoll_wait)"
        if any(k in call for k in FILES):
            return "kernel: file writes (WARC, SQLite, logs)"
        if any(k in call for k in TCP):
            return "kernel: TCP system calls (connect, send, receive, close)"
        if call:
            return "kernel: other system calls"
        return "kernel: interrupts, softirqs (loopback TCP delivery), context switches"
    for frame in frames:
        for name, keys in USER:
            if any(k in frame for k in keys):
                return name
    return "other"


def samples(path):
    """Each sample's frames: a line without indent starts one, indented lines are frames."""
    frames = None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            if not line[0].isspace():
                if frames is not None:
                    yield frames
                frames = []
            elif frames is not None:
                frames.append(line.strip())
    if frames is not None:
        yield frames


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: profile_summary.py PERF_SCRIPT_OUTPUT")
    counts = collections.Counter()
    allocation = 0
    total = 0
    for frames in samples(sys.argv[1]):
        total += 1
        counts[component(frames)] += 1
        leaf = frames[0] if frames else ""
        if "[kernel.kallsyms]" not in leaf and any(k in leaf for k in ALLOC):
            allocation += 1
    if total == 0:
        sys.exit("profile_summary.py: no samples in the file")
    for name, n in counts.most_common():
        print(f"{n * 100 / total:5.1f}%  {name}")
    print(f"{allocation * 100 / total:5.1f}%  (across them: allocator, memcpy, memset at the leaf)")
    print(f"{total} samples")


if __name__ == "__main__":
    main()
