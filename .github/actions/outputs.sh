#!/usr/bin/env bash
# The Action's outputs step: `status`, `exit-code`, `output` (the answer, or the
# structured value as JSON), `result-file` and `run-dir` on GITHUB_OUTPUT, read from what
# run.sh left in RUNNER_ACTION_STATE. Needs jq (on every GitHub-hosted runner).
set -eu
: "${GITHUB_OUTPUT:?not set: run this as a step of the Action}"
: "${RUNNER_ACTION_STATE:?not set: run this as a step of the Action}"

result="$RUNNER_ACTION_STATE/result.json"
code=$(cat "$RUNNER_ACTION_STATE/exit-code" 2>/dev/null || echo "")
if [ -s "$result" ] && jq -e 'type == "object"' "$result" >/dev/null 2>&1; then
    status=$(jq -r '.status' "$result")
    output=$(jq -r 'if .structured != null then .structured | tojson else .output // "" end' "$result")
else
    # runner printed no envelope (it could not start, or was killed).
    status=unknown
    output=""
fi
# A multi-line value goes between delimiters the value cannot contain.
delimiter="runner_output_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
{
    echo "status=$status"
    echo "exit-code=$code"
    echo "result-file=$result"
    echo "run-dir=$(cat "$RUNNER_ACTION_STATE/run-dir" 2>/dev/null || echo "")"
    echo "output<<$delimiter"
    printf '%s\n' "$output"
    echo "$delimiter"
} >>"$GITHUB_OUTPUT"
echo "status: $status, exit code: $code"
