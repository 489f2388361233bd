//! `runner schema [--out FILE] [--events | --test | --project]`: the agent file's JSON
//! Schema, generated from the types, or the schema of events.jsonl lines, of test files, or
//! of the project file (`runner.yaml`).

use std::path::Path;

use super::Exit;
use crate::agent_test::schema::test_schema_text;
use crate::fsutil::write_atomically;
use crate::output::events_schema::events_schema_text;
use crate::spec::project::project_schema_text;
use crate::spec::schema_gen::agent_schema_text;

pub fn run(out: Option<&Path>, events: bool, test: bool, project: bool) -> Exit {
    let text = if events {
        events_schema_text()
    } else if test {
        test_schema_text()
    } else if project {
        project_schema_text()
    } else {
        agent_schema_text()
    };
    match out {
        None => {
            out!("{text}");
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
