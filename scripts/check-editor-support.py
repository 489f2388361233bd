#!/usr/bin/env python3
"""Checks that an editor using yaml-language-server gets completion and hover docs for agent
files from the `# yaml-language-server: $schema=` line.

Usage: scripts/check-editor-support.py PATH/TO/yaml-language-server
(install it with `npm install yaml-language-server`). Speaks LSP over stdio: opens an
agent file, asks for completions at a new key and inside `limits:`, and for hover on a
key, then prints what came back and exits non-zero if anything is missing.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def send(proc, message):
    body = json.dumps(message).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def receive(proc, want_id):
    """Reads messages until the response with `want_id`; answers server requests."""
    while True:
        headers = {}
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("language server exited")
            line = line.decode().strip()
            if not line:
                break
            key, value = line.split(":", 1)
            headers[key.lower()] = value.strip()
        message = json.loads(proc.stdout.read(int(headers["content-length"])))
        if message.get("id") == want_id and "method" not in message:
            return message
        if "method" in message and "id" in message:  # a request from the server
            result = [None] * len(message.get("params", {}).get("items", [])) if message["method"] == "workspace/configuration" else None
            send(proc, {"jsonrpc": "2.0", "id": message["id"], "result": result})


def main():
    server = sys.argv[1]
    workdir = pathlib.Path(tempfile.mkdtemp())
    agent = workdir / "agent.yaml"
    # A relative path, as the example files write it.
    schema = os.path.relpath(ROOT / "schemas" / "agent.schema.json", workdir)
    agent.write_text(
        f"# yaml-language-server: $schema={schema}\n"
        "name: demo\n"
        "limits:\n"
        "  timeout: 30s\n"
        "  \n"
        "\n"
    )
    proc = subprocess.Popen([server, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    uri = agent.as_uri()
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": workdir.as_uri(),
        "capabilities": {"textDocument": {"completion": {"completionItem": {"documentationFormat": ["markdown", "plaintext"]}}, "hover": {"contentFormat": ["markdown", "plaintext"]}}}}})
    receive(proc, 1)
    send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send(proc, {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"yaml": {"completion": True, "hover": True, "validate": True, "schemaStore": {"enable": False}}}}})
    send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": agent.read_text()}}})

    send(proc, {"jsonrpc": "2.0", "id": 2, "method": "textDocument/completion", "params": {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 0}}})
    top = [item["label"] for item in (receive(proc, 2)["result"] or {}).get("items", [])]
    send(proc, {"jsonrpc": "2.0", "id": 3, "method": "textDocument/completion", "params": {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 2}}})
    limits = [item["label"] for item in (receive(proc, 3)["result"] or {}).get("items", [])]
    send(proc, {"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 4}}})
    hover = receive(proc, 4)["result"]
    proc.kill()

    hover_text = json.dumps(hover)
    print("top-level completions:", sorted(top))
    print("completions inside limits:", sorted(limits))
    print("hover on `timeout`:", hover_text)
    ok = {"model", "tools", "execution"} <= set(top) and {"max_tokens", "max_depth"} <= set(limits) and "Wall clock" in hover_text
    print("OK" if ok else "MISSING completion or hover")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
