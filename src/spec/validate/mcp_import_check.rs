//! `mcp: {config: …}`: the imported file is read as loading will read it, and each problem
//! is reported at the entry's `config` key (the JSON file has no place in the agent file).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::super::mcp_import::McpImport;
use super::super::yaml::pointer_push;
use super::{FileContext, Validator};

impl Validator {
    pub(super) fn check_mcp_import(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        entry: &Map<String, Value>,
        env: &BTreeSet<String>,
    ) {
        let Ok(import) = serde_json::from_value::<McpImport>(Value::Object(entry.clone())) else {
            return; // the schema reported what is wrong with the entry
        };
        let Err(problems) = import.servers(file.base_dir, env) else {
            return;
        };
        let config_at = pointer_push(at, "config");
        let position = file.doc.value_position(&config_at);
        for problem in problems {
            self.diagnostics
                .push(problem.diagnostic(file.path, position, &config_at));
        }
    }
}
