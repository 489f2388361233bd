#!/usr/bin/env bash
# The Action's install step: `runner` from the release binary for this machine (the
# repository's install.sh: SHA-256 checked), else built with `cargo install`; its
# directory goes on GITHUB_PATH for the next steps. `version: installed` uses the
# `runner` already on PATH instead.
#
# Reads INPUT_VERSION (a tag, `latest`, `installed`, or empty: the Action's own tag when it
# is used at one, else latest), ACTION_REPOSITORY and ACTION_REF (github.action_*),
# RUNNER_ACTION_STATE (a directory for the steps' state); writes `method` (release, source
# or installed) to GITHUB_OUTPUT.
set -eu
: "${GITHUB_OUTPUT:?not set: run this as a step of the Action}"
: "${GITHUB_PATH:?not set: run this as a step of the Action}"
: "${RUNNER_ACTION_STATE:?not set: run this as a step of the Action}"

action_dir=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$RUNNER_ACTION_STATE"

version=${INPUT_VERSION:-}
if [ "$version" = installed ]; then
    if ! command -v runner >/dev/null; then
        echo "::error title=runner action::version: installed, but no runner is on PATH" >&2
        exit 1
    fi
    echo "method=installed" >>"$GITHUB_OUTPUT"
    runner --version
    exit 0
fi
if [ -z "$version" ]; then
    # The Action used at a release tag installs that release's binary.
    case "${ACTION_REF:-}" in
    v[0-9]*) version=$ACTION_REF ;;
    *) version=latest ;;
    esac
fi

install_dir="$RUNNER_ACTION_STATE/bin"
method_file="$RUNNER_ACTION_STATE/install-method"
RUNNER_VERSION=$version \
    RUNNER_REPO=${ACTION_REPOSITORY:-${RUNNER_REPO:-}} \
    RUNNER_INSTALL_DIR=$install_dir \
    RUNNER_INSTALL_METHOD_FILE=$method_file \
    sh "$action_dir/install.sh"
echo "$install_dir" >>"$GITHUB_PATH"
echo "method=$(cat "$method_file")" >>"$GITHUB_OUTPUT"
"$install_dir/runner" --version
