#!/bin/sh
# post_tool_use hook of examples/guardrails.yaml (docs/hooks.md): after a read of
# README.md, adds a note the model reads with the file. The call arrives as one JSON
# object on stdin; the answer is one JSON object on stdout (empty: no change).
input=$(cat)
case "$input" in
  *'"path":"README.md"'*)
    printf '%s\n' '{"note": "README.md is the public face of the project: quote it, do not rewrite it."}' ;;
esac
