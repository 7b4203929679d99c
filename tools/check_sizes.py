#!/usr/bin/env python3
"""Checks that no source file under src/ is over 900 lines outside its tests.

A file a newcomer opens should be readable in one sitting; past ~900 lines a file usually holds
more than one job. Lines of a `#[cfg(test)]` module written inline (`#[cfg(test)] mod tests {
... }`) do not count; test modules in their own files (`mod tests;`) are left out whole when
their name says so (`tests.rs`, `*_tests.rs`) or when their parent declares them under
`#[cfg(test)]`. Prints every file over the limit with its count and exits 1 if there is one.

    python3 tools/check_sizes.py [LIMIT]      (from any folder; LIMIT defaults to 900)
"""
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
CFG_TEST = re.compile(r"^\s*#\[cfg\(test\)\]\s*$")
MOD_FILE = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;")


def test_module_files():
    """Files that are `#[cfg(test)] mod NAME;` of their parent."""
    found = set()
    for path in SRC.rglob("*.rs"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[1:], start=1):
            m = MOD_FILE.match(line)
            if m and CFG_TEST.match(lines[i - 1]):
                base = path.parent if path.name in ("mod.rs", "lib.rs") else path.with_suffix("")
                for candidate in (base / f"{m.group(1)}.rs", base / m.group(1) / "mod.rs"):
                    found.add(candidate.resolve())
    return found


def counted_lines(text):
    """Lines outside inline `#[cfg(test)]` items (a module or function with a braced body)."""
    lines = text.splitlines()
    count = 0
    i = 0
    while i < len(lines):
        if CFG_TEST.match(lines[i]) and i + 1 < len(lines) and "{" in lines[i + 1]:
            # Skip the item: braces balanced from its first line (strings in tests rarely hold
            # unbalanced braces; a miscount only makes the file look bigger).
            depth = 0
            j = i + 1
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                j += 1
                if depth <= 0:
                    break
            i = j
            continue
        count += 1
        i += 1
    return count


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 900
    skip = test_module_files()
    over = []
    for path in sorted(SRC.rglob("*.rs")):
        if path.resolve() in skip or path.name == "tests.rs" or path.name.endswith("_tests.rs"):
            continue
        n = counted_lines(path.read_text(encoding="utf-8"))
        if n > limit:
            over.append((path.relative_to(SRC.parent), n))
    for path, n in over:
        print(f"{path}: {n} lines outside its tests (limit {limit})")
    if over:
        sys.exit(1)
    print(f"no file under src/ over {limit} lines outside its tests")


if __name__ == "__main__":
    main()
