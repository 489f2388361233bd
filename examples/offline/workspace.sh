#!/bin/sh
# Builds the workspace the offline runs of examples/plan.yaml and of the agents in agents/
# were recorded in: a small Rust crate in a git repository, the same bytes every time.
#
#   sh examples/offline/workspace.sh DIR
#
# DIR (created; it must not exist yet or be empty) then holds:
#   * a history on branch `main`: tag v0.1.0, then two commits (`git log v0.1.0..HEAD`);
#   * an uncommitted change to src/lib.rs (`git diff main`), a function that panics on
#     empty input;
#   * ci.log, the output of a `cargo test` that failed on the last commit.
# Names, e-mail addresses and dates are fixed, so the commit ids are too; the repository's
# own configuration turns off what would change the output of `git diff` and `git log`.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: sh $0 DIR" >&2
    exit 2
fi
dir=$1
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "$dir exists and is not empty" >&2
    exit 1
fi
mkdir -p "$dir/src"
cd "$dir"

export GIT_AUTHOR_NAME="Ada Example" GIT_AUTHOR_EMAIL="ada@example.com"
export GIT_COMMITTER_NAME="Ada Example" GIT_COMMITTER_EMAIL="ada@example.com"

git init -q .
git symbolic-ref HEAD refs/heads/main
git config color.ui false
git config color.diff false
git config core.abbrev 7
git config diff.noprefix false
git config diff.mnemonicPrefix false
git config diff.algorithm myers
git config log.decorate false
git config log.showSignature false
git config commit.gpgSign false
git config tag.gpgSign false

commit() {
    git add -A
    GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q --no-verify -m "$2"
}

cat > Cargo.toml <<'TOML'
[package]
name = "wordcount"
version = "0.1.0"
edition = "2021"
TOML

cat > src/lib.rs <<'RUST'
//! Counts the words of a text.

/// The number of words in `text`.
pub fn count_words(text: &str) -> usize {
    text.split(' ').filter(|word| !word.is_empty()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count_words("one two  three"), 3);
    }
}
RUST
commit "2025-03-01T10:00:00+00:00" "Count the words of a text"
git tag v0.1.0

cat > src/lib.rs <<'RUST'
//! Counts the words and lines of a text.

/// The number of words in `text`.
pub fn count_words(text: &str) -> usize {
    text.split(' ').filter(|word| !word.is_empty()).count()
}

/// The number of lines in `text`.
pub fn count_lines(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count_words("one two  three"), 3);
    }

    #[test]
    fn counts_lines() {
        assert_eq!(count_lines("one\ntwo\n"), 2);
    }
}
RUST
commit "2025-03-08T10:00:00+00:00" "Add count_lines"

cat > src/lib.rs <<'RUST'
//! Counts the words and lines of a text.

/// The number of words in `text`.
pub fn count_words(text: &str) -> usize {
    text.split(' ').filter(|word| !word.is_empty()).count()
}

/// The number of lines in `text`.
pub fn count_lines(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count_words("one two  three"), 3);
    }

    #[test]
    fn counts_lines() {
        assert_eq!(count_lines("one\ntwo\n"), 2);
    }

    #[test]
    fn counts_words_separated_by_tabs() {
        assert_eq!(count_words("one\ttwo\tthree"), 3);
    }
}
RUST
commit "2025-03-15T10:00:00+00:00" "Test words separated by tabs"

# The change under review: not committed.
cat > src/lib.rs <<'RUST'
//! Counts the words and lines of a text.

/// The number of words in `text`.
pub fn count_words(text: &str) -> usize {
    text.split(' ').filter(|word| !word.is_empty()).count()
}

/// The number of lines in `text`.
pub fn count_lines(text: &str) -> usize {
    text.lines().count()
}

/// The longest word of `text`.
pub fn longest_word(text: &str) -> &str {
    text.split_whitespace().max_by_key(|word| word.len()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count_words("one two  three"), 3);
    }

    #[test]
    fn counts_lines() {
        assert_eq!(count_lines("one\ntwo\n"), 2);
    }

    #[test]
    fn counts_words_separated_by_tabs() {
        assert_eq!(count_words("one\ttwo\tthree"), 3);
    }
}
RUST

# What CI printed for the last commit: not committed either.
cat > ci.log <<'LOG'
Run actions/checkout@v4
Syncing repository: example/wordcount
Checking out the ref refs/heads/main
Run cargo test --locked
    Updating crates.io index
   Compiling wordcount v0.1.0 (/home/runner/work/wordcount/wordcount)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.38s
     Running unittests src/lib.rs (target/debug/deps/wordcount-a07f0cfb7275c93a)

running 3 tests
test tests::counts_lines ... ok
test tests::counts_words ... ok
test tests::counts_words_separated_by_tabs ... FAILED

failures:

---- tests::counts_words_separated_by_tabs stdout ----

thread 'tests::counts_words_separated_by_tabs' panicked at src/lib.rs:29:9:
assertion `left == right` failed
  left: 1
 right: 3
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::counts_words_separated_by_tabs

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.07s

error: test failed, to rerun pass `--lib`
Error: Process completed with exit code 101.
LOG
