#!/usr/bin/env python3
"""Writes tests/data/surt_cases.tsv: URL <TAB> the SURT key Python gives it.

Run with the venv that has surt 0.3.1 (the version pywb 2.10 uses):

    .venv/bin/python tools/gen_surt_cases.py

The expected key is what cdxj-indexer writes: surt.surt(url), or the URL itself where surt
raises (cdxj-indexer falls back to the raw URL then). Fields are escaped so that a line stays a
line: backslash as \\\\, tab \\t, newline \\n, carriage return \\r, other control characters as
\\xHH. The Rust test in src/canon.rs reads the file and compares every line.
"""

import os
import random
import sys

import surt

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "surt_cases.tsv")

SID32 = "0123456789abcdefABCDEF0123456789"

HAND_WRITTEN = [
    # empty, whitespace, special prefixes
    "", " ", "\t", "\n", "filedesc://IA-001.arc", " filedesc://x", "FILEDESC://x",
    "  http://example.com/  ", "\thttp://exa\tmple.com/pa\nth\r", "http://example.com/a b",
    "http://example.com/\x0b", "\x0chttp://example.com/", "http://example.com/\x7f\x01",
    # scheme handling
    "example.com", "example.com/path", "example.com:8080/path", "localhost:80", "localhost:80/x",
    "www.example.com/", "//example.com/x", "///example.com/x", "http:example.com",
    "http:/example.com/x", "http:////////////////www.vikings.com", "http://", "http:", "http:///",
    "http://:80/", "http://@/", "http://user@/", "HTTP://EXAMPLE.COM/A", "HTTP:///example.com",
    "HTTP://http://x", "http://https://x/", "https://http://https://x/a", "http://http://x",
    "hTTp://Example.com/", "httpx://example.com/", "https:example.com", "https:///example.com/a/",
    "ftp://ftp.example.com/pub/", "ftp://ftp.example.com:21/", "FTP://FTP.Example.com/A",
    "mailto:Foo@Bar.com", "mailto:foo@bar.com?subject=Hi%20There", "dns:WWW.example.com",
    "dns:www.example.com", "whois://whois.example.com/x", "urn:ISBN:0451450523",
    "javascript:void(0)", "data:text/html,%3Ch1%3E", "about:blank", "file:///etc/passwd",
    "file://localhost/C:/x", "a+b.c-d:opaque", "1http://x/", "x:", "x:/", "x://",
    # www
    "http://www.example.com/", "http://www2.example.com/", "http://www10.example.com/",
    "http://www.www.example.com/", "http://wwwexample.com/", "http://www.com/", "http://www./",
    "http://www2/", "http://WWW.EXAMPLE.COM/", "http://w3.example.com/", "http://www-2.example.com/",
    "http://www.example.com.", "http://www.example.com./a", "http://.www.example.com/",
    "dns:www.example.com", "ftp://www.example.com/",
    # ports
    "http://example.com:80/", "http://example.com:8080/", "https://example.com:443/",
    "https://example.com:80/", "http://example.com:443/", "https://example.com:8443/a",
    "http://example.com:0/", "http://example.com:00080/", "http://example.com:65535/",
    "http://example.com:65536/", "http://example.com:99999/", "http://example.com:abc/",
    "http://example.com:/", "http://example.com:::/", "http://example.com:8080:90/",
    "http://example.com: 80/", "http://example.com:-1/", "http://example.com:+80/",
    "http://example.com:\u0661/", "ftp://example.com:21/", "ftp://example.com:80/",
    "HTTP://example.com:80/", "HTTPS://example.com:443/", "ws://example.com:80/",
    # IPv4 in all shapes
    "http://127.0.0.1/", "http://127.0.0.1:8080/path", "http://1.2.3.4/", "http://1.2.3",
    "http://1.2", "http://010.0.0.1/", "http://0x7f.0.0.1/", "http://1.2.3.256/",
    "http://1.08.3.4/", "http://0.1.2.9/", "http://4294967297/", "http://0127/", "http://0/",
    "http://00.1/", "http://1.2.3.010/", "http://99999999999999999999/", "http://1.16777215/",
    "http://1.16777216/", "http://1.2.65535", "http://1.2.65536", "http://3232235777/",
    "http://192.168.1.1.1/", "http://192.168.001.001/", "http://255.255.255.255/",
    "http://256.1.1.1/", "http://1..2/", "http://1...2/", "http://.1.2.3.4./", "http://1.2.3.4./",
    "http://01.02.03.04/", "http://0000000000000010/", "http://017777777777/",
    "http://040000000000/", "http://1.0x2.3.4/", "http://%31%32%37.0.0.1/", "http://127.0.0.1:80/",
    "https://[::1]/", "http://[::1]:8080/x", "http://[::FFFF:1.2.3.4]/", "http://[2001:DB8::1]/a",
    "http://[fe80::1%25eth0]/", "http://[fe80::1%25ETH0]:81/", "http://[::1/", "http://[::1]x:80/",
    "http://a[b]c:90/", "http://[www.example.com]/",
    # case and percent-encoding
    "http://Example.COM/Path/File.HTML", "http://example.com/%7euser/%7Ex", "http://example.com/%41%42c",
    "http://example.com/%2541", "http://example.com/%252541", "http://example.com/%25", "http://example.com/%",
    "http://example.com/%%41", "http://example.com/%zz", "http://example.com/%2", "http://example.com/%2Fa%2fb",
    "http://example.com/a%3Fb", "http://example.com/a%23b", "http://example.com/a%20b", "http://example.com/a+b",
    "http://example.com/%c3%a9t%C3%A9", "http://example.com/été", "http://example.com/日本語/",
    "http://example.com/%E6%97%A5", "http://example.com/%FF%FE", "http://example.com/%00", "http://example.com/%0A",
    "http://example.com/~user", "http://example.com/!$&'()*+,;=:@", "http://example.com/\"<>\\^`{|}",
    "http://example.com/a%2E%2E/b", "http://example.com/%2e/b", "http://ex%41mple.com/", "http://ex%2541mple.com/",
    "http://exa mple.com/", "http://ex%20ample.com/", "http://ex%zzample.com/", "http://ex%25ample.com/",
    "http://ex#ample.com/", "http://ex%23ample.com/", "http://example.com%2F/x", "http://EXAMPLE.com%3A80/",
    # non-ASCII and IDN hosts
    "http://bücher.de/", "http://BÜCHER.de/", "http://Bücher.DE/Straße", "http://faß.de/", "http://FASS.de/",
    "http://xn--bcher-kva.de/", "http://XN--BCHER-KVA.de/", "http://xn--invalid.ü.com/", "http://ü..com/",
    "http://%C3%BC.com/", "http://%c3%bc.com/", "http://a\u3002b.com/", "http://ü\u3002com/",
    "http://ü\uff0ecom/", "http://ü\uff61com/", "http://例え.jp/", "http://例え。ＪＰ/", "http://ＡＢＣ.com/",
    "http://ａｂｃ.ü.com/", "http://пример.рф/", "http://ПРИМЕР.РФ/", "http://παράδειγμα.δοκιμή/",
    "http://ΣΊΣΥΦΟΣ.gr/", "http://σίσυφος.gr/", "http://مثال.إختبار/", "http://שלום.com/", "http://שלום1.com/",
    "http://1שלום.com/", "http://aשלום.com/", "http://١٢٣.com/", "http://😀.com/", "http://☃.net/",
    "http://\u0301abc.com/", "http://ü%zz.com/", "http://ü%25.com/", "http://ü_x.com/", "http://ü x.com/",
    "http://a\u00adb.com/", "http://ü\u00ad.com/", "http://\u00ad.com/", "http://ü\u200d.com/",
    "http://ü\u200b.com/", "http://ü\ufeff.com/", "http://ü\u00a0.com/", "http://ü\u3000x.com/",
    "http://ü\u2000x.com/", "http://münchen.de:8080/ä?ö=ü", "http://www.münchen.de/", "http://www2.bücher.de/",
    "http://" + "ü" * 70 + ".com/", "http://" + "a" * 64 + ".ü.com/", "http://" + "a" * 63 + ".ü.com/",
    "http://" + "a" * 64 + ".com/", "http://ü." + "a" * 64 + "/", "http://ü." + "a" * 63 + "/", "http://ü./",
    "http://ü../", "http://.ü/", "http://%FF.com/", "http://%FFü.com/", "http://%FFa.com/", "http://%FF/",
    "http://%C3/", "http://xn--ü.com/", "http://XN--ü.com/", "http://ǅ.com/", "http://ﬁ.com/",
    "http://①.com/", "http://u\u0308ber.com/", "http://\u0130stanbul.com/", "http://ſ.com/",
    "http://\u2488.com/", "http://a\u2024b.com/", "http://例\ue000.com/", "http://\U000e0041ü.com/",
    "http://ü\ufdd0.com/", "http://\u0378ü.com/", "http://ẞ.de/", "http://STRAẞE.de/", "http://ΣΑΣ.gr/",
    "http://ᏣᎳᎩ.com/", "http://\ufe70b.com/", "http://ﾊﾟ٣.com/", "http://ｶﾞ.jp/", "http://\u209a.com/",
    "http://\u213b.com/", "http://\U0001f146.com/", "http://\U0002f868.com/", "http://a\U000e0100b.com/",
    "http://\u3164x.com/", "http://x\uffa0.com/", "http://ث١ث.com/", "http://١ث.com/", "http://Ⰰⴀȡ.com/",
    "http://ᄀ①.com/", "http://\u1100\u1161\u11a8.com/", "http://y\u0301\u0378.com/", "http://\ufb01x.com/",
    "http://ǆ.com/", "http://ü\u2488.com/", "http://\u00bd.com/", "http://ｍüｎｃｈｅｎ.de/",
    # queries
    "http://example.com/?", "http://example.com/?#", "http://example.com/?#?", "http://example.com?",
    "http://example.com?a=1", "http://example.com/?a", "http://example.com/?a=", "http://example.com/?=",
    "http://example.com/?&", "http://example.com/?&&", "http://example.com/?a&", "http://example.com/?&a",
    "http://example.com/?b=2&a=1", "http://example.com/?B=2&a=1&A=0&b", "http://example.com/?a=2&a=1&a",
    "http://example.com/?a=1&a=", "http://example.com/?A=X&a=x", "http://example.com/?a=%26b&c",
    "http://example.com/?a=%3D&b", "http://example.com/?q=a+b&q=a%20b", "http://example.com/?q=caf%C3%A9",
    "http://example.com/?q=café", "http://example.com/?q=%2525", "http://example.com/?q=%", "http://example.com/?q=#frag",
    "http://example.com/?q=a#b?c", "http://example.com/path?z=1&y=2&x=3#top", "http://example.com/?a=1;b=2",
    "http://example.com/??a=1", "http://example.com/?a=b=c", "http://example.com/?é=1&e=2", "http://example.com/?x",
    "http://example.com/?%41=1", "http://example.com/?a b=1", "http://example.com/?a=1&&b=2",
    # session ids
    "http://example.com/x?jsessionid=" + SID32, "http://example.com/x?a=1&jsessionid=" + SID32,
    "http://example.com/x?jsessionid=" + SID32 + "&a=1", "http://example.com/x?b=2&JSESSIONID=" + SID32 + "&a=1",
    "http://example.com/x?jsessionid=" + SID32 + "0", "http://example.com/x?jsessionid=" + SID32[:31],
    "http://example.com/x?jsessionid=" + SID32 + "&jsessionid=" + SID32,
    "http://example.com/x?phpsessid=" + SID32, "http://example.com/x?PHPSESSID=" + SID32 + "&page=2",
    "http://example.com/x?sid=" + SID32, "http://example.com/x?foosid=" + SID32, "http://example.com/x?sid=" + SID32 + "&x=1",
    "http://example.com/x?ASPSESSIONIDABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVWX",
    "http://example.com/x?a=1&aspsessionidqwertyui=abcdefghijklmnopqrstuvwx&b=2",
    "http://example.com/x?ASPSESSIONIDABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVW1",
    "http://example.com/x?cfid=123&cftoken=456", "http://example.com/x?a=1&CFID=123&CFTOKEN=456&b=2",
    "http://example.com/x?cfid=123&b=1&cftoken=456", "http://example.com/x?cfid=&cftoken=456",
    "http://example.com/x;jsessionid=" + SID32, "http://example.com/x;jsessionid=" + SID32 + "?a=1",
    "http://example.com/x?jsessionid%3D" + SID32, "http://example.com/x?jsessionid=" + SID32.lower(),
    "http://example.com/(S(abcdefghijklmnopqrstuvwx))/default.aspx",
    "http://example.com/app/(S(abcdefghijklmnopqrstuvwx)A(abcdefghijklmnopqrstuvwx))/page.aspx?a=1",
    "http://example.com/(abcdefghijklmnopqrstuvwx)/default.aspx", "http://example.com/(abcdefghijklmnopqrstuvw)/default.aspx",
    "http://example.com/(S(abcdefghijklmnopqrstuvwx))/default.html", "http://example.com/(S(ABCDEFGHIJKLMNOPQRSTUVWX))/X.ASPX",
    "http://example.com/a/(abcdefghijklmnopqrstuvwx)/b/c.aspx/d", "http://example.com/(abcdefghijklmnopqrstuvwx)/a%3Fb.aspx",
    # fragments and userinfo
    "http://example.com/#", "http://example.com/#frag", "http://example.com#frag", "http://example.com/a#b#c",
    "http://example.com/#!/hashbang?x=1", "http://user@example.com/", "http://user:pass@example.com/",
    "http://user:pass@www.example.com:8080/", "http://us@er:p@ss@example.com/", "http://:@example.com/",
    "http://user@pass:example.com/", "http://user:p%40ss@example.com/", "http://a@b@c.com/",
    # paths: dot segments, double slashes, trailing slashes
    "http://example.com", "http://example.com/", "http://example.com/a/", "http://example.com/a//",
    "http://example.com//", "http://example.com///a", "http://example.com/a//b", "http://example.com/a/./b",
    "http://example.com/a/../b", "http://example.com/../a", "http://example.com/../../a", "http://example.com/a/b/..",
    "http://example.com/a/b/../", "http://example.com/a/.", "http://example.com/a/./", "http://example.com/.",
    "http://example.com/./", "http://example.com/..", "http://example.com/.../a", "http://example.com/a/..b",
    "http://example.com/a/b/c/../../d", "http://example.com/a/%2e%2e/b", "http://example.com/index.html",
    "http://example.com/A/B/", "http://example.com/a?b/", "http://example.com/a/?b", "http://.../a/../b",
    "http://./", "http://../a", "http://..example..com../", "http://example..com/", "http://example...com/",
    "http://.example.com/", "http://example.com../", "mailto:/a/../b", "x:/a/../b//c/",
    # weird and invalid
    "http://exa_mple.com/", "http://-example-.com/", "http://example.com\\path", "http:\\\\example.com\\path",
    "http://example.com/path with spaces/", "  ", "/relative/path", "relative/path?x=1", "?x=1", "#frag",
    ":", "::", "://", "http://:/", "http://?x", "http://#x", "http://x?", "http://x#", "http://x?#", "*",
    "http://*.example.com/", "http://example.com/*", "http://a/b/c/d;p?q", "http://a/b/c/g;x=1/../y",
    "http://[]/", "http://[/", "http://]/", "http://%5B::1%5D/", "http://a%2Eb.com/", "http://a%2eb%2ecom/",
    "http://a.b%00.com/", "http://a\x00b.com/", "https://a.b.c.d.e.f.g.h/i", "http://X/", "http://%41/",
    "http://a.com/" + "x/" * 50, "http://a.com/?" + "&".join("k%d=%d" % (i, 50 - i) for i in range(50)),
]


def generated():
    """Combinations of hosts, paths and queries, plus seeded random mutations."""
    hosts = ["example.com", "WWW.Example.COM", "www3.example.co.uk", "10.0.0.1", "[::1]",
             "bücher.de", "sub.domain.example.org.", "EXAMPLE.com:8080", "example.com:80", "a"]
    paths = ["", "/", "/A", "/a/b/", "/a//b/../c", "/%7Efoo/%41", "/caf%C3%A9", "/x.aspx"]
    queries = ["", "?", "?b=1&A=2", "?a=%2F&b", "?jsessionid=" + SID32]
    out = []
    for scheme in ("http://", "https://"):
        for host in hosts:
            for path in paths:
                for query in queries:
                    if (len(out) * 7) % 5 == 0 or path in ("", "/A") or query in ("", "?b=1&A=2"):
                        out.append(scheme + host + path + query)
    rng = random.Random(20260601)
    alphabet = list("aA0.:/?#&=%@[]_-~ ") + ["%2F", "%25", "%C3%A9", "é", "ü", "..", "//", "www."]
    base = ["http://www.example.com/a/b?c=d#e", "https://x.y:443/p", "example.com/q?z&y", "ftp://f.g/h"]
    for _ in range(120):
        s = list(rng.choice(base))
        for _ in range(rng.randint(1, 4)):
            pos = rng.randint(0, len(s))
            s.insert(pos, rng.choice(alphabet))
        out.append("".join(s))
    return out


def expected_key(url):
    try:
        return surt.surt(url)
    except Exception:  # noqa: BLE001 - cdxj-indexer falls back to the URL on any error
        return url


def escape(s):
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def main():
    seen = set()
    lines = ["# url<TAB>surt key (surt %s; the URL itself where surt raises), written by tools/gen_surt_cases.py"
             % getattr(surt, "__version__", "0.3.1")]
    for url in HAND_WRITTEN + generated():
        if url in seen:
            continue
        seen.add(url)
        lines.append(escape(url) + "\t" + escape(expected_key(url)))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("\n".join(lines) + "\n")
    print("%d cases -> %s" % (len(lines) - 1, os.path.normpath(OUT)), file=sys.stderr)


if __name__ == "__main__":
    main()
