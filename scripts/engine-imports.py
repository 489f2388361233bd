#!/usr/bin/env python3
"""Prints the import graph of src/engine file by file and fails when a file imports a
module that imports it back (directly or through others). `super::x` and
`crate::engine::x::y` are resolved to files; a directory module is its mod.rs."""
import glob
import os
import re
import sys

ROOT = "src/engine"


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


files = {module_of(p): p for p in glob.glob(f"{ROOT}/**/*.rs", recursive=True)}


def resolve(parts):
    """The longest known module prefix of a path inside the engine."""
    for end in range(len(parts), -1, -1):
        if tuple(parts[:end]) in files:
            return tuple(parts[:end])
    return None


def imports(module):
    text = open(files[module]).read()
    text = re.sub(r"//[^\n]*", "", text)
    is_dir = files[module].endswith("mod.rs")
    found = set()
    # `mod x;` declarations are not imports; `use`/paths are.
    for match in re.finditer(r"\b((?:super::)+|crate::engine::)([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)", text):
        prefix, rest = match.groups()
        ups = prefix.count("super::")
        base = list(module[: len(module) - ups]) if ups else []
        target = resolve(base + rest.split("::"))
        if target is not None and target != module:
            found.add(target)
    # A directory module's `pub use child::…` imports its own file `child`.
    for match in re.finditer(r"^\s*(?:pub(?:\([a-z]+\))? )?use ([a-z_]+)::", text, re.M):
        if is_dir and (module + (match.group(1),)) in files:
            found.add(module + (match.group(1),))
    return found


graph = {m: imports(m) for m in files}


def reaches(start, goal):
    seen, stack = set(), [start]
    while stack:
        node = stack.pop()
        for nxt in graph[node]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


name = lambda m: "/".join(m) or "engine"
circles = sorted({(name(a), name(b)) for a in graph for b in graph[a] if reaches(b, a)})
if "-v" in sys.argv:
    for module in sorted(graph):
        print(f"{name(module)} -> {', '.join(sorted(name(t) for t in graph[module]))}")
for a, b in circles:
    print(f"circle: {a} imports {b}, which imports it back")
sys.exit(1 if circles else 0)
