#!/usr/bin/env python3
"""Checks the crate's import graph, and fails when it finds:

1. a top-level module of src/ (a folder, or a file beside lib.rs) that imports one in its
   own layer or a layer above it (`crate::x`, `crate::{x, ..}`), per LAYERS below;
2. a file of src/engine that imports a module that imports it back (directly or through
   others). `super::x` and `crate::engine::x::y` are resolved to files; a directory module
   is its mod.rs.

`-v` prints both graphs."""
import glob
import os
import re
import sys

# The layers of the crate, top to bottom: a module may import only modules of layers below
# its own (not its peers: two modules in one layer know nothing of each other). Why this
# order:
# * front ends on top: `cli` parses and prints, `run_file` is the library's short door;
#   `serve` is the HTTP front end, which the CLI starts (`runner serve`); `session` hosts
#   runs for all of them.
# * `agent_test`, `nats` (the batch worker and the NATS stores) and `testing` (the
#   `testing` feature's helpers) run agents through what is below them; a worker runs a
#   `batch` job, so `batch` is below `nats`.
# * `reload` recompiles a changed agent file: above `compile`, which turns a spec into an
#   engine agent (providers built, tools and MCP servers started).
# * `checkpoint` (the stores), `output` (subscribers: result, transcript, progress) and
#   `telemetry` (the subscriber that exports spans over OTLP) consume what the engine emits
#   and saves: above `engine`.
# * `engine` drives a run through the ports below it: `mcp` (tools from servers), `policy`
#   (permissions, hooks, redaction), `provider` (models), `tools` (built-in tools).
#   `a2a_client` (remote A2A agents, which `compile` plugs into the engine's remote agent
#   port) sits beside `mcp`: it talks HTTP through `provider`'s client and records into
#   its cassettes.
# * `spec` is the vocabulary of what the user wrote, which nearly everything reads: the
#   agent file's types, its permission patterns, a scripted model's replies.
# * leaves: `log` (which redacts what it writes), `secrets` (the secret values a process
#   holds, and text cleaned of them), `protocol` (the XML tool text), `fsutil`, `sync` (the
#   lock-poisoning policy), `a2a` (the A2A protocol's types, no I/O: what `serve` speaks to
#   A2A clients and what `a2a_client` calls remote agents with). `trace_env` (the trace context the programs a run starts
#   inherit, set by `telemetry`, read by `tools` and `mcp`) sits just above them: it holds
#   its value under the lock policy of `sync`.
# * `sandbox` (the kernel sandbox: Landlock rulesets, a network namespace) confines what
#   `tools` and `mcp` start; it reads only `spec`'s `sandbox:` types.
LAYERS = [
    ["cli", "run_file"],
    ["serve"],
    ["session"],
    ["agent_test", "nats", "testing"],
    ["batch"],
    ["reload"],
    ["compile"],
    ["checkpoint", "output", "telemetry"],
    ["engine"],
    ["mcp", "a2a_client"],
    ["policy"],
    ["provider"],
    ["tools"],
    ["sandbox"],
    ["spec"],
    ["log"],
    ["secrets"],
    ["trace_env"],
    ["protocol", "fsutil", "sync", "a2a"],
]

# Imports known to go up, each with what removes it. Nothing may be added here lightly: a
# new upward import is fixed where it is written, not listed.
ALLOWED = {}


def top_level_imports():
    """{module: {imported module: [files]}} for the top-level modules of src/."""
    graph = {}
    for path in sorted(glob.glob("src/**/*.rs", recursive=True)):
        parts = os.path.relpath(path, "src").split(os.sep)
        module = parts[0][: -len(".rs")] if len(parts) == 1 else parts[0]
        if module in ("lib", "main"):
            continue
        text = re.sub(r"//[^\n]*", "", open(path).read())
        named = [m.group(1) for m in re.finditer(r"\bcrate::([a-z_][a-z0-9_]*)", text)]
        for group in re.finditer(r"\bcrate::\{", text):
            named += heads_of_group(text, group.end())
        edges = graph.setdefault(module, {})
        for target in named:
            if target != module:
                edges.setdefault(target, []).append(path)
    return graph


def heads_of_group(text, start):
    """The first name of each item of the `{..}` group that opens before `start`."""
    heads, depth, item = [], 0, ""
    for char in text[start:]:
        if char in ",}" and depth == 0:
            head = re.match(r"\s*([a-z_][a-z0-9_]*)", item)
            if head:
                heads.append(head.group(1))
            item = ""
            if char == "}":
                return heads
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        item += char
    return heads


def layer_problems(graph):
    layer = {module: rank for rank, members in enumerate(LAYERS) for module in members}
    problems = []
    for module in sorted(graph):
        if module not in layer:
            problems.append(f"src/{module} is in no layer: add it to LAYERS in {sys.argv[0]}")
            continue
        for target, files in sorted(graph[module].items()):
            if target not in layer or layer[target] > layer[module]:
                continue
            if (module, target) in ALLOWED:
                continue
            where = "its own layer" if layer[target] == layer[module] else "a layer above it"
            problems.append(
                f"{module} imports {target}, in {where} ({', '.join(sorted(set(files)))})"
            )
    return problems


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
def self_test():
    """The check finds what it must: an upward import, a peer's, a grouped one."""
    text = "use crate::{engine::Agent, nats::{self, Blocking}};\nlet x = crate::cli::Exit;"
    assert heads_of_group(text, text.index("{") + 1) == ["engine", "nats"], "grouped imports"
    graph = {"tools": {"nats": ["t.rs"]}, "checkpoint": {"output": ["c.rs"]}, "cli": {"spec": ["x.rs"]}}
    found = layer_problems(graph)
    assert len(found) == 2 and "tools imports nats" in found[1], found
    assert "its own layer" in found[0], found
    assert layer_problems({"brand_new": {}}) != [], "a module in no layer"
    print("imports.py: self-test passed")


if "--self-test" in sys.argv:
    self_test()
    sys.exit(0)
top = top_level_imports()
if "-v" in sys.argv:
    for module in sorted(top):
        print(f"{module} -> {', '.join(sorted(top[module]))}")
    for module in sorted(graph):
        print(f"{name(module)} -> {', '.join(sorted(name(t) for t in graph[module]))}")
problems = layer_problems(top)
for problem in problems:
    print(f"layers: {problem}")
for a, b in circles:
    print(f"circle: {a} imports {b}, which imports it back")
sys.exit(1 if circles or problems else 0)
