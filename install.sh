#!/bin/sh
# Installs `runner` from a release: the binary built for this platform, checked against the
# release's SHA256SUMS (a mismatch is refused: nothing is installed), else built from
# source with `cargo install` when the release has no binary for this platform.
#
#   curl -fsSL https://github.com/OWNER/runner/releases/latest/download/install.sh | sh
#
# Settings (environment variables):
#   RUNNER_VERSION      a release tag (v0.2.0), or latest (the default)
#   RUNNER_REPO         the GitHub repository, OWNER/NAME (the release's install.sh has its own)
#   RUNNER_INSTALL_DIR  where the binary goes (default: ~/.local/bin)
#   RUNNER_BASE_URL     where the release assets are instead of GitHub: ASSET is fetched from
#                       $RUNNER_BASE_URL/ASSET (an http(s):// or file:// URL; for tests and mirrors)
#   RUNNER_TARGET       the target triple to fetch instead of this machine's
#   RUNNER_INSTALL_METHOD_FILE  a file to write `release` or `source` to (the Action reads it)
set -eu

# The release workflow writes the repository here in the install.sh it attaches.
DEFAULT_REPO=OWNER/runner

say() { printf 'install.sh: %s\n' "$*" >&2; }
fail() {
    say "error: $*"
    exit 1
}

# This machine's target triple, as the release names its assets; empty when it has none.
detect_target() {
    os=$(uname -s)
    arch=$(uname -m)
    case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) arch="" ;;
    esac
    case "$os" in
    Linux) os=unknown-linux-musl ;;
    Darwin) os=apple-darwin ;;
    *) os="" ;;
    esac
    if [ -n "$arch" ] && [ -n "$os" ]; then
        echo "$arch-$os"
    fi
}

# fetch URL FILE: downloads URL into FILE; fails (status 1) on any error, a 404 included.
fetch() {
    if command -v curl >/dev/null 2>&1; then
        curl --fail --silent --show-error --location --retry 2 --output "$2" "$1"
    elif command -v wget >/dev/null 2>&1 && [ "${1#file://}" = "$1" ]; then
        wget --quiet --output-document="$2" "$1"
    elif [ "${1#file://}" != "$1" ]; then
        cp "${1#file://}" "$2"
    else
        fail "neither curl nor wget is installed: install one of them, or build from source with cargo install"
    fi
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        fail "no sha256sum or shasum to check the download with: install coreutils, or build from source with cargo install"
    fi
}

# Builds from source: the fallback when the release has no binary for this platform.
# CARGO_TARGET_DIR, when set, keeps the build for the next time (the Action caches it).
from_source() {
    say "$1"
    if ! command -v cargo >/dev/null 2>&1; then
        fail "cargo is not installed either: install Rust (https://rustup.rs), then run this again"
    fi
    if [ "$version" = latest ]; then
        say "building the default branch of $repo from source with cargo install (several minutes)"
        set -- --git "https://github.com/$repo"
    else
        say "building $version of $repo from source with cargo install (several minutes)"
        set -- --git "https://github.com/$repo" --tag "$version"
    fi
    cargo install --locked --root "$work/cargo" "$@" runner
    place "$work/cargo/bin/runner"
    installed source "installed runner (built from source) into $install_dir"
}

# Puts the binary into the install directory, whole: a running `runner` is never half
# overwritten.
place() {
    mkdir -p "$install_dir"
    cp "$1" "$install_dir/.runner.new"
    chmod 755 "$install_dir/.runner.new"
    mv "$install_dir/.runner.new" "$install_dir/runner"
}

# Says how it was installed (and, for the Action, writes it to RUNNER_INSTALL_METHOD_FILE).
installed() {
    if [ -n "${RUNNER_INSTALL_METHOD_FILE:-}" ]; then
        echo "$1" >"$RUNNER_INSTALL_METHOD_FILE"
    fi
    say "$2"
    case ":$PATH:" in
    *":$install_dir:"*) ;;
    *) say "$install_dir is not on your PATH: add it, e.g. export PATH=\"$install_dir:\$PATH\"" ;;
    esac
}

version=${RUNNER_VERSION:-latest}
repo=${RUNNER_REPO:-$DEFAULT_REPO}
install_dir=${RUNNER_INSTALL_DIR:-$HOME/.local/bin}
target=${RUNNER_TARGET:-$(detect_target)}
if [ -n "${RUNNER_BASE_URL:-}" ]; then
    base_url=${RUNNER_BASE_URL%/}
elif [ "$version" = latest ]; then
    base_url="https://github.com/$repo/releases/latest/download"
else
    base_url="https://github.com/$repo/releases/download/$version"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

if [ -z "$target" ]; then
    from_source "no release binary is built for $(uname -s) $(uname -m)"
    exit 0
fi
asset="runner-$target.tar.gz"
if ! fetch "$base_url/$asset" "$work/$asset" 2>"$work/fetch.log"; then
    from_source "no release asset $asset at $base_url ($(tail -n 1 "$work/fetch.log"))"
    exit 0
fi
fetch "$base_url/SHA256SUMS" "$work/SHA256SUMS" ||
    fail "cannot fetch $base_url/SHA256SUMS to check $asset against: refusing to install an unchecked binary"
expected=$(awk -v name="$asset" '$2 == name || $2 == "*" name { print $1; exit }' "$work/SHA256SUMS")
[ -n "$expected" ] || fail "SHA256SUMS at $base_url lists no $asset: refusing to install an unchecked binary"
actual=$(sha256_of "$work/$asset")
if [ "$actual" != "$expected" ]; then
    fail "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; refusing to install it (a broken download or a tampered asset)"
fi
mkdir -p "$work/unpacked"
tar -xzf "$work/$asset" -C "$work/unpacked"
[ -f "$work/unpacked/runner" ] || fail "$asset holds no runner binary"
place "$work/unpacked/runner"
installed release "installed runner $version ($target, SHA-256 checked) into $install_dir"
