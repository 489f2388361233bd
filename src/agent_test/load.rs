//! Reading a test file: YAML with positions, the generated schema, then the checks a schema
//! cannot say ([`super::check`]). Every problem is a located [`Diagnostic`], printed like
//! `runner validate` prints an agent file's.

use std::path::{Path, PathBuf};

use super::check::check_test_file;
use super::schema::compiled;
use super::spec::TestFile;
use crate::spec::schema_check::diagnostics_against;
use crate::spec::validate::read_bounded;
use crate::spec::yaml::{MAX_INPUT_BYTES, Position, load_yaml};
use crate::spec::{Code, Diagnostic};

/// A valid test file, with where each case and assertion is written.
#[derive(Debug, Clone)]
pub struct LoadedFile {
    /// The path as found (relative to where `runner test` runs, for reports).
    pub path: PathBuf,
    /// The directory the file's relative paths start from, absolute (cases run elsewhere).
    pub dir: PathBuf,
    pub spec: TestFile,
    /// The agent file, resolved against `dir`.
    pub agent: PathBuf,
    /// Where each case starts.
    pub case_at: Vec<Position>,
    /// Where each assertion of each case is, by case then by assertion.
    pub assertion_at: Vec<Vec<Position>>,
}

/// Reads, checks and types the test file at `path`, or says everything wrong with it.
pub fn load_test_file(path: &Path) -> Result<LoadedFile, Vec<Diagnostic>> {
    let error = |at: Position, code: Code, message: String| {
        vec![Diagnostic::error(path, at, code, "", message)]
    };
    let bytes = read_bounded(path).map_err(|e| {
        error(
            Position::default(),
            Code::Io,
            format!("cannot read the file: {e}"),
        )
    })?;
    if bytes.len() > MAX_INPUT_BYTES {
        let at = Position { line: 1, column: 1 };
        return Err(error(at, Code::Yaml, "the file is too large".into()));
    }
    let source = String::from_utf8(bytes).map_err(|_| {
        error(
            Position::default(),
            Code::Io,
            "the file is not valid UTF-8".into(),
        )
    })?;
    let doc = load_yaml(&source).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| Diagnostic::error(path, e.position, Code::Yaml, &e.pointer, e.message))
            .collect::<Vec<_>>()
    })?;
    let diagnostics = diagnostics_against(compiled(), &doc, &doc.value, "", path);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics);
    }
    let spec: TestFile = serde_json::from_value(doc.value.clone()).map_err(|e| {
        error(
            Position::default(),
            Code::Type,
            format!("the file passed the schema but not the loader (please report this): {e}"),
        )
    })?;
    let dir = base_dir(path);
    let problems = check_test_file(&spec, &doc, path, &dir);
    if !problems.is_empty() {
        return Err(problems);
    }
    let case_at = (0..spec.cases.len())
        .map(|i| doc.value_position(&format!("/cases/{i}")))
        .collect();
    let assertion_at = spec
        .cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            (0..case.expect.len())
                .map(|j| doc.value_position(&format!("/cases/{i}/expect/{j}")))
                .collect()
        })
        .collect();
    Ok(LoadedFile {
        path: path.to_path_buf(),
        agent: dir.join(&spec.agent),
        dir,
        spec,
        case_at,
        assertion_at,
    })
}

/// The test file's directory, absolute: runs happen in other directories.
fn base_dir(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let absolute = std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf());
    crate::spec::normalize(&absolute)
}
