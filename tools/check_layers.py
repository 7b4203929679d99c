#!/usr/bin/env python3
"""Checks the import graph between the crate's top-level modules, and between the files of
each folder.

Imports point down the layers of ARCHITECTURE's table and never form a circle, so a newcomer can
read the crate bottom-up and a change to a lower layer cannot need a change above it. The check
reads every `crate::NAME` path under src/ (comments stripped) and fails, naming the file, when a
module imports one in a higher layer, when modules import each other round a circle, or when a
module is in no layer (a new module must be given one here, in src/lib.rs and in the code map of
docs/design.md).

Inside a folder the same holds between its files: every `crate::`, `super::` and `self::` path
(and, in a `mod.rs`, a path through a module it declares) is resolved to the file it names, and
files that import each other round a circle fail the check, except a circle listed in
KNOWN_FILE_CIRCLES. A folder's `mod.rs` is the folder's entrance: a file that takes an item it
defines imports it, but what the mod.rs itself takes from the folder's own files (the modules
it declares, the names it hands on, the entry functions it runs) points down by construction
and is no edge, as farm-studio draws it. A sub-folder is one file of its parent. Test modules
are left out.

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
    # Test builds only (`#[cfg(test)]` in lib.rs): the throwaway PostgreSQL server of
    # tests/common, shared with the unit tests that need one; it imports nothing of the crate.
    "pg_cluster": 0,
}

# Upward imports tolerated, each as (module, imported module): reason. None is left; an entry
# here is a debt to pay, not a way round the check.
KNOWN_UPWARD = {}

# Circles between the files of one folder tolerated, each as folder: the files a circle may hold.
# A circle passes only when all its files are listed; a new file in it, or a circle elsewhere,
# fails. A debt to pay, not a way round the check.
KNOWN_FILE_CIRCLES = {}

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


# ---- circles between the files of one folder -----------------------------------------------

USE_STMT = re.compile(r"\buse\s+([^;]*);")
INLINE_PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
MOD_DECL = re.compile(r"\bmod\s+([a-z_][a-z0-9_]*)\s*;")
CFG_TEST = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([a-z]+\))?\s+)?mod\s+[a-z_][a-z0-9_]*\s*\{")


def is_test_file(rel):
    """Test modules are no part of the house: `tests.rs`, `*_tests.rs`, anything under `tests/`."""
    return rel.name == "tests.rs" or rel.name.endswith("_tests.rs") or "tests" in rel.parts[:-1]


def strip_test_blocks(text):
    """`text` without its inline `#[cfg(test)] mod NAME { … }` blocks (their `super` is the file)."""
    while True:
        m = CFG_TEST.search(text)
        if not m:
            return text
        depth, end = 0, len(text)
        for i in range(m.end() - 1, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        text = text[: m.start()] + text[end:]


def use_paths(tree):
    """The full paths (lists of segments) of one `use` tree: `a::{b, c::{d, e}}` gives a::b,
    a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(r"\bas[A-Za-z_][A-Za-z0-9_]*", "", tree)  # after whitespace removal: `x as y`
    out = []

    def walk(prefix, text):
        depth, item, items = 0, "", []
        for ch in text:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                items.append(item)
                item = ""
            else:
                item += ch
        items.append(item)
        for it in items:
            if not it:
                continue
            brace = it.find("{")
            if brace >= 0:
                head = [p for p in it[:brace].split("::") if p]
                walk(prefix + head, it[brace + 1 : it.rfind("}")])
            else:
                out.append(prefix + [p for p in it.split("::") if p])

    walk([], tree)
    return out


def module_path(src, path):
    """The module path of a file under src/: src/warc/record.rs is warc::record, src/warc/mod.rs
    is warc; the crate root is []."""
    rel = path.relative_to(src)
    parts = list(rel.parts[:-1])
    if rel.name not in ("mod.rs", "lib.rs"):
        parts.append(rel.stem)
    return parts


def resolve(module, is_mod_rs, declared, path, face):
    """The absolute module path a path names, or None for a path outside the crate. `face`: the
    path is a `pub use` of a mod.rs (it hands a name on, it imports nothing)."""
    head, rest = path[0], path[1:]
    own = module if is_mod_rs else module[:-1]  # the folder `super` and `self` count from
    if head == "crate":
        return rest
    if head == "self":
        return module + rest
    if head == "super":
        base = own[:-1] if is_mod_rs else own
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
        return base + rest
    if head in declared and not face:
        return module + path
    return None


def file_edges(src):
    """{file: set of absolute module paths it imports}, for every non-test file but main's."""
    edges, files = {}, {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        if is_test_file(rel) or rel.parts[0] in ("main.rs", "main"):
            continue
        module = module_path(src, path)
        files[tuple(module)] = path
        text = strip_test_blocks(strip_comments(path.read_text(encoding="utf-8")))
        is_mod_rs = path.name in ("mod.rs", "lib.rs")
        declared = set(MOD_DECL.findall(text)) if is_mod_rs else set()  # paths through them
        targets = set()
        for m in USE_STMT.finditer(text):
            face = is_mod_rs and re.search(r"\bpub(\([a-z]+\))?\s+use\s*$", text[: m.start() + 3])
            for p in use_paths(m.group(1)):
                t = resolve(module, is_mod_rs, declared, p, face)
                if t is not None:
                    targets.add(tuple(t))
        code = USE_STMT.sub("", text)
        for m in INLINE_PATH.finditer(code):
            p = [m.group(1)] + m.group(2).split("::")[1:]
            t = resolve(module, is_mod_rs, declared, p, False)
            if t is not None:
                targets.add(tuple(t))
        edges[path] = (tuple(module), targets)
    return edges, files


def folder_graphs(src):
    """{folder: {node: {node: first file of the source node}}}: a folder's nodes are its files
    and sub-folders (a sub-folder is one node); its mod.rs is a node only as a target."""
    edges, files = file_edges(src)
    folders = {m[:-1] for m in files if m} | {()}
    graphs = {}
    for folder in folders:
        children = {m[len(folder)] for m in files if len(m) > len(folder) and m[: len(folder)] == folder}
        # What each child node is called: a file `x.rs`, or a folder `x/`.
        def node(c):
            return f"{c}/" if any(len(m) > len(folder) + 1 and m[: len(folder) + 1] == folder + (c,) for m in files) else f"{c}.rs"
        own = "mod.rs" if folder else "lib.rs"
        g = {}
        for path, (module, targets) in edges.items():
            if module[: len(folder)] != folder:
                continue
            if module == folder:
                continue  # the folder's entrance: what it takes from its own files points down
            source = node(module[len(folder)])
            for t in targets:
                if t[: len(folder)] != folder:
                    continue
                if len(t) > len(folder) and t[len(folder)] in children:
                    target = node(t[len(folder)])
                else:
                    target = own  # an item defined in (or handed on by) the folder's mod.rs
                if target != source:
                    g.setdefault(source, {}).setdefault(target, path.relative_to(src.parent).as_posix())
        graphs["/".join(("src",) + folder)] = g
    return graphs


def file_circle_problems(src):
    problems = []
    for folder, g in sorted(folder_graphs(src).items()):
        for comp in circles(g):
            known = KNOWN_FILE_CIRCLES.get(folder, set())
            if set(comp) <= known:
                continue
            ties = "; ".join(
                f"{a} -> {b}" for a in comp for b in sorted(g.get(a, {})) if b in comp
            )
            problems.append(f"import circle between the files of {folder}: {', '.join(comp)} ({ties})")
    return problems


def main():
    src = Path(__file__).resolve().parent.parent / "src"
    graph = imports(src)
    problems = file_circle_problems(src)
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
    print(f"{len(graph)} modules, imports point down, no circle (between modules or between the files of a folder)")


if __name__ == "__main__":
    main()
