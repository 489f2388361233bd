#!/bin/sh
# runner as the client of the MCP conformance suite (@modelcontextprotocol/conformance):
# the suite starts a scenario's server and runs this script with the server's URL last, and
# the scenario's name in MCP_CONFORMANCE_SCENARIO. It writes an agent whose only tools are
# that server's and whose scripted model calls the scenario's tool once, then answers; the
# suite checks what runner sent. A form the server asks to fill in is accepted through
# `--answers` (the person's part). RUNNER_BIN names the binary under test.
set -eu
url="$1"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
    tools_call) call='{ name: add_numbers, arguments: { a: 2, b: 3 } }' ;;
    sse-retry) call='{ name: test_reconnection, arguments: {} }' ;;
    elicitation-sep1034-client-defaults) call='{ name: test_client_elicitation_defaults, arguments: {} }' ;;
    *) call='' ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{
    echo "name: conformance-client"
    echo "model:"
    echo "  provider: scripted"
    echo "  name: conformance"
    echo "  script:"
    if [ -n "$call" ]; then
        echo "    - tool_calls: [$call]"
    fi
    echo "    - text: done"
    echo "prompt: Call the tool."
    echo "checkpoints: false"
    echo "tools:"
    echo "  - mcp:"
    echo "      url: \"$url\""
} > "$dir/agent.yaml"
echo "- accept" > "$dir/answers.yaml"
cd "$dir"
exec "${RUNNER_BIN:?RUNNER_BIN names the runner binary}" exec agent.yaml --quiet --run-dir run --answers answers.yaml
