//! The transcript parser on arbitrary input: it must never panic, the lenient parser must
//! agree with the strict one on valid input, and whatever parses must survive a rewrite:
//! `parse(write(parse(x))) == parse(x)`.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run transcript_parse -- -max_total_time=300`
//! from the repository root (needs `cargo install cargo-fuzz`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use runner::output::transcript::{parse, parse_partial, write_transcript};

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let partial = parse_partial(input);
    match parse(input) {
        Ok(tree) => {
            assert!(partial.tail.is_none());
            assert_eq!(partial.transcript, tree);
            let rewritten = write_transcript(&tree);
            match parse(&rewritten) {
                Ok(again) => assert_eq!(again, tree),
                Err(e) => panic!("rewrite does not parse: {e}\n{rewritten}"),
            }
        }
        Err(_) => assert!(partial.tail.is_some()),
    }
});
