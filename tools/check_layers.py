#!/usr/bin/env python3
"""Checks the import graph between the crate's top-level modules.

Imports point down the layers of ARCHITECTURE's table and never form a circle, so a newcomer can
read the crate bottom-up and a change to a lower layer cannot need a change above it. The check
reads every `crate::NAME` path under src/ (comments stripped) and fails, naming the file, when a
module imports one in a higher layer, when modules import each other round a circle, or when a
module is in no layer (a new module must be given one here and in src/lib.rs's map).

    python3 tools/check_layers.py        (from any folder)
"""
import re
import sys
from pathlib import Path

# Layer of each top-level module: 4 the engine and the offline tools, 3 the one translator of the
# profile, 2 domain logic, 1 formats. main.rs (layer 5) reaches the library only as `archiver::`.
LAYERS = {
    "crawl": 4,
    "commands": 4,
    "config": 3,
    "frontier": 2,
    "politeness": 2,
    "scope": 2,
    "net": 2,
    "extract": 2,
    "browser": 2,
    "dedup": 2,
    "recrawl": 2,
    "logs": 2,
    "warc": 1,
    "cdx": 1,
    "spool": 1,
}

# Upward imports tolerated, each as (module, imported module): reason. None is left; an entry
# here is a debt to pay, not a way round the check.
KNOWN_UPWARD = {}

CRATE_PATH = re.compile(r"\bcrate::(\{|[a-z_][a-z0-9_]*)")


def strip_comments(text):
    """Source without `//` comments (doc comments name modules in links, not imports)."""
    out = []
    for line in text.splitlines():
        # Good enough for this code base: no `//` inside the string literals that hold paths.
        cut = line.find("//")
        out.append(line if cut < 0 else line[:cut])
    return "\n".join(out)


def group_heads(text, start):
    """Top-level names in the `{…}` group that opens at `start`."""
    depth, names, item = 0, [], ""
    for ch in text[start:]:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and ch == ",":
            names.append(item)
            item = ""
        elif depth >= 1:
            item += ch
    names.append(item)
    heads = []
    for name in names:
        m = re.match(r"\s*([a-z_][a-z0-9_]*)", name)
        if m and m.group(1) != "self":
            heads.append(m.group(1))
    return heads


def module_of(src, path):
    rel = path.relative_to(src)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports(src):
    """{module: {imported module: first file that imports it}}."""
    graph = {}
    for path in sorted(src.rglob("*.rs")):
        module = module_of(src, path)
        if module in ("main", "lib"):
            continue
        text = strip_comments(path.read_text(encoding="utf-8"))
        edges = graph.setdefault(module, {})
        for m in CRATE_PATH.finditer(text):
            heads = group_heads(text, m.start(1)) if m.group(1) == "{" else [m.group(1)]
            for head in heads:
                if head != module:
                    edges.setdefault(head, path.relative_to(src.parent).as_posix())
    return graph


def circles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    src = Path(__file__).resolve().parent.parent / "src"
    graph = imports(src)
    problems = []
    for module in sorted(set(graph) | {w for e in graph.values() for w in e}):
        if module not in LAYERS:
            problems.append(f"module `{module}` is in no layer: add it to LAYERS in {__file__}")
    for module, edges in sorted(graph.items()):
        for target, where in sorted(edges.items()):
            if module in LAYERS and target in LAYERS and LAYERS[target] > LAYERS[module]:
                if (module, target) not in KNOWN_UPWARD:
                    problems.append(
                        f"{where}: `{module}` (layer {LAYERS[module]}) imports `{target}` "
                        f"(layer {LAYERS[target]}), a higher layer"
                    )
    for comp in circles(graph):
        problems.append("import circle between " + ", ".join(f"`{m}`" for m in comp))
    for problem in problems:
        print(f"check_layers: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"{len(graph)} modules, imports point down, no circle")


if __name__ == "__main__":
    main()
