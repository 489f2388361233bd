//! How many tokens a text makes, estimated without a tokenizer.
//!
//! Measured against OpenAI's tokenizers (`o200k_base`, `cl100k_base`, through
//! `tiktoken-rs`; figures in `docs/benchmarks.md`): English prose, code and JSON make 3.1 to
//! 4.2 bytes a token, Chinese and Japanese 2.9 to 3.8, Russian 3.9 to 5.4; but base64, hex
//! and runs of digits make 1.4 to 1.8 bytes a token, and emoji 1.4 to 2.1. A flat 3 bytes a
//! token counted those at half to two thirds of what they are, so tool results full of hashes
//! or encoded data overflowed the window before the estimate said so. Here a byte counts a
//! third of a token, and three quarters of one in what tokenizes densely: a run of ASCII
//! letters and digits that holds a digit or is longer than [`LONG_RUN`] bytes, and a
//! character of four bytes (emoji). A tokenizer crate was measured and not taken: it adds
//! 5.7 MB to the binary, 25 to 45 MiB of memory and up to 370 ms to load its tables.

/// A run of letters without a digit longer than this is counted as dense: random
/// identifiers and encoded data, not words.
pub const LONG_RUN: usize = 24;

/// Twelfths of a token, so both weights are whole numbers.
const ORDINARY: u64 = 4;
const DENSE: u64 = 9;

/// The estimated number of tokens `text` makes (rounded up). One pass over the bytes, no
/// allocation: it runs over the whole history before each model call.
pub fn estimate_tokens(text: &str) -> u64 {
    let mut twelfths = 0;
    let mut run = 0;
    let mut digit = false;
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() {
            run += 1;
            digit |= byte.is_ascii_digit();
            continue;
        }
        twelfths += run_twelfths(run, digit);
        (run, digit) = (0, false);
        // A four-byte character's first byte brings it to four dense bytes; its three
        // continuation bytes count as ordinary ones below.
        twelfths += match byte {
            0xF0.. => 4 * DENSE - 3 * ORDINARY,
            _ => ORDINARY,
        };
    }
    (twelfths + run_twelfths(run, digit)).div_ceil(12)
}

/// A run of ASCII letters and digits: dense when it holds a digit or is long.
fn run_twelfths(run: u64, digit: bool) -> u64 {
    let dense = digit || run > LONG_RUN as u64;
    run * if dense { DENSE } else { ORDINARY }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_counts_a_third_of_a_token_a_byte() {
        assert_eq!(estimate_tokens("the cat sat on the mat"), 8);
        assert_eq!(estimate_tokens(""), 0);
    }

    #[test]
    fn dense_text_counts_three_quarters_of_a_token_a_byte() {
        assert_eq!(estimate_tokens("9f86d081884c7d659a2feaa0"), 18);
        assert_eq!(estimate_tokens(&"x".repeat(LONG_RUN + 4)), 21);
        assert_eq!(estimate_tokens("🦀🦀"), 6);
    }
}
