//! Loading an agent file for running: validate it fully, expand its MCP imports, then
//! deserialise the typed spec.

use std::path::Path;

use super::agent::AgentSpec;
use super::diagnostic::{Code, Diagnostic, redacted};
use super::mcp_import::expand_imports;
use super::project::resolve_models;
use super::validate::{Validator, read_source};
use super::yaml::load_yaml;

/// The typed agent of a valid file, or every diagnostic (warnings included) of an invalid
/// one, redacted like every diagnostic.
pub fn load_agent(path: &Path) -> Result<(AgentSpec, Vec<Diagnostic>), Vec<Diagnostic>> {
    load_unredacted(path).map_err(redacted)
}

fn load_unredacted(path: &Path) -> Result<(AgentSpec, Vec<Diagnostic>), Vec<Diagnostic>> {
    // Read and parsed once: the document validated is the document run, even when the
    // file changes meanwhile.
    let source = read_source(path).map_err(|diagnostic| vec![diagnostic])?;
    let mut validator = Validator::new();
    let parsed = match load_yaml(&source) {
        Ok(document) => {
            validator.validate_document(path, &document);
            Some(document)
        }
        Err(errors) => {
            validator.not_yaml(path, errors);
            None
        }
    };
    // Read once, with the file (only when it names a model): the names resolve against
    // what was validated.
    let project = validator.project_used(path);
    let diagnostics = validator.finish();
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics);
    }
    // One that does not parse has its errors among the diagnostics, returned above.
    let Some(mut document) = parsed else {
        return Err(diagnostics);
    };
    // The validator checked each import's file; a file changed since then is reported the
    // same way.
    let file_dir = path.parent().unwrap_or(Path::new(""));
    if let Err(failure) = expand_imports(&mut document.value, file_dir, "") {
        let at = document.value_position(&failure.pointer);
        return Err(vec![failure.problem.diagnostic(path, at, &failure.pointer)]);
    }
    // The value goes to serde; the positions stay to locate a name that does not resolve.
    let value = std::mem::take(&mut document.value);
    let mut spec = serde_json::from_value(value).map_err(|error| {
        vec![Diagnostic::error(
            path,
            Default::default(),
            Code::Type,
            "",
            format!("the file passed the schema but not the loader (please report this): {error}"),
        )]
    })?;
    resolve_models(&mut spec, project.as_deref(), path).map_err(|(pointer, error)| {
        let at = document.value_position(&pointer);
        vec![
            Diagnostic::error(path, at, Code::Model, &pointer, error.message).with_hint(error.hint),
        ]
    })?;
    Ok((spec, diagnostics))
}
