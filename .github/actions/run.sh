#!/usr/bin/env bash
# The Action's run step: `runner exec` of the agent file, with the `vars` (one NAME=VALUE
# a line) and the extra `args` (split at whitespace), its result envelope kept. The step
# itself does not fail: the exit code is kept for the outputs and the last step.
#
# Reads INPUT_AGENT, INPUT_VARS, INPUT_ARGS, INPUT_RUN_DIR (default: a directory under
# RUNNER_ACTION_STATE) and RUNNER_ACTION_STATE; leaves there `result.json` (the envelope
# runner printed), `exit-code` and `run-dir`.
set -eu
: "${RUNNER_ACTION_STATE:?not set: run this as a step of the Action}"
: "${INPUT_AGENT:?the agent input is required: the agent file to run}"

mkdir -p "$RUNNER_ACTION_STATE"
run_dir=${INPUT_RUN_DIR:-$RUNNER_ACTION_STATE/run}
args=(exec "$INPUT_AGENT" --run-dir "$run_dir" --output json)
while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    line=${line%"${line##*[![:space:]]}"}
    case "$line" in
    "" | "#"*) ;;
    *=*) args+=(--var "$line") ;;
    *)
        echo "::error title=runner action::vars: \`$line\` is not NAME=VALUE" >&2
        exit 2
        ;;
    esac
done <<<"${INPUT_VARS:-}"
read -r -a extra <<<"${INPUT_ARGS:-}"
# (bash 3.2, macOS's, calls an empty array unset under set -u.)
args+=(${extra[@]+"${extra[@]}"})

set +e
runner "${args[@]}" >"$RUNNER_ACTION_STATE/result.json"
code=$?
set -e
echo "$code" >"$RUNNER_ACTION_STATE/exit-code"
echo "$run_dir" >"$RUNNER_ACTION_STATE/run-dir"
echo "runner exited with $code"
