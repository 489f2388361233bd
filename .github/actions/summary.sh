#!/usr/bin/env bash
# The Action's summary step. `runner exec` writes the run's job summary itself (it sees
# GITHUB_ACTIONS=true); this adds what runner could not say: that it never printed a
# result (not installed, killed), and the artifact its run directory is kept as.
#
# Reads RUNNER_ACTION_STATE, INPUT_UPLOAD ("true" when the run directory is uploaded) and
# INPUT_ARTIFACT (its name); appends to GITHUB_STEP_SUMMARY.
set -eu
: "${GITHUB_STEP_SUMMARY:?not set: run this as a step of the Action}"
: "${RUNNER_ACTION_STATE:?not set: run this as a step of the Action}"

result="$RUNNER_ACTION_STATE/result.json"
code=$(cat "$RUNNER_ACTION_STATE/exit-code" 2>/dev/null || echo "none")
# Only digits reach the page: the exit code is runner's, or "none".
case "$code" in
"" | *[!0-9]*) code=none ;;
esac
{
    if ! [ -s "$result" ] || ! jq -e 'type == "object"' "$result" >/dev/null 2>&1; then
        echo "### runner: no result"
        echo
        echo "runner printed no result envelope (exit code: $code); see the step's log."
        echo
    fi
    if [ "${INPUT_UPLOAD:-false}" = true ]; then
        # The artifact's name is the workflow's own input, shown as code.
        name=$(printf '%s' "${INPUT_ARTIFACT:-runner-run}" | tr -d '`\r\n')
        echo "The run directory is kept as the artifact \`$name\`."
        echo
    fi
} >>"$GITHUB_STEP_SUMMARY"
