//! `runner schema [--out FILE]`: the agent file's JSON Schema, generated from the types.

use std::path::Path;

use super::Exit;
use crate::fsutil::write_atomically;
use crate::spec::schema_gen::agent_schema_text;

pub fn run(out: Option<&Path>) -> Exit {
    let text = agent_schema_text();
    match out {
        None => {
            print!("{text}");
            Exit::Completed
        }
        Some(path) => match write_atomically(path, text.as_bytes()) {
            Ok(()) => Exit::Completed,
            Err(error) => {
                eprintln!("error: cannot write {}: {error}", path.display());
                Exit::Failed
            }
        },
    }
}
