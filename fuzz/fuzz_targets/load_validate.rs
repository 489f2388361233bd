//! Loading and validating any text must never panic: every input ends in diagnostics.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use runner::spec::Validator;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut validator = Validator::new();
        validator.validate_source(Path::new("fuzz/agent.yaml"), text);
        let _ = validator.finish();
    }
});
