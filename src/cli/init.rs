//! `runner init [NAME]`: a first agent file that runs at once. Its model is scripted, so it
//! needs no key and no network; the comments say how to switch to a real one. The agent
//! file's JSON Schema goes to `.runner/agent.schema.json`, named in the file's modeline, so
//! editors complete and check keys offline, with the schema of the binary that wrote it.

use std::path::{Path, PathBuf};

use super::Exit;
use crate::fsutil::write_atomically;
use crate::spec::schema_gen::agent_schema_text;

/// Where `init` puts the schema, relative to the new file.
const SCHEMA: &str = ".runner/agent.schema.json";

pub fn run(name: Option<&str>) -> Exit {
    let name = name.unwrap_or("agent");
    if !is_plain_name(name) {
        eprintln!(
            "error: `{name}` is not a plain name: use letters, digits, `-` and `_` (the file is NAME.yaml)"
        );
        return Exit::Invalid;
    }
    let file = PathBuf::from(format!("{name}.yaml"));
    if file.exists() {
        eprintln!(
            "error: {} exists already: give another name (runner init NAME)",
            file.display()
        );
        return Exit::Invalid;
    }
    if let Err(message) = write(&file, name) {
        eprintln!("error: {message}");
        return Exit::Failed;
    }
    outln!(
        "created {file}: it runs offline, with a scripted model\n  runner exec {file}\n  runner validate {file}\nthen set `model:` to a real one (e.g. openai/gpt-4o-mini)",
        file = file.display()
    );
    Exit::Completed
}

/// Writes the schema, then the agent file (never over an existing one).
fn write(file: &Path, name: &str) -> Result<(), String> {
    let schema = Path::new(SCHEMA);
    if let Some(dir) = schema.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    }
    write_atomically(schema, agent_schema_text().as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", schema.display()))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
        .and_then(|mut out| std::io::Write::write_all(&mut out, agent_file(name).as_bytes()))
        .map_err(|error| format!("cannot write {}: {error}", file.display()))
}

/// A name that makes one plain file name in the current directory.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The new agent file: one input, one tool, a scripted model playing a real one.
fn agent_file(name: &str) -> String {
    format!(
        r#"# yaml-language-server: $schema={SCHEMA}
# Made by `runner init`. Runs offline: the scripted model below plays the model, calling the
# tool and then answering. Try:
#   runner exec {name}.yaml --var topic=tests
# For a real model, replace `model:` with e.g. `model: openai/gpt-4o-mini` (the key is read
# from OPENAI_API_KEY) or `model: ollama/llama3.2` (a local Ollama, no key).
name: {name}
description: Looks at the current directory and answers a question about it.
model:
  provider: scripted
  script:
    - tool_calls:
        - name: list_dir
          arguments: {{ path: . }}
    - text: I listed the directory; a real model would now answer from what it found.
inputs:
  topic:
    type: string
    description: What to look for.
    default: the project
system: You answer questions about the files in the current directory. Look before you answer.
prompt: What can you tell me about {{{{ topic }}}} here?
tools:
  - builtin: list_dir
# The runner sets no bounds of its own: these end a run that goes on too long.
limits:
  max_llm_calls: 20
  timeout: 5m
"#
    )
}
