//! Diagnostics: what is wrong, where (`file:line:col` and the JSON path), and what to do.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::yaml::Position;

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// The stable codes of diagnostics; `docs/diagnostics.md` explains each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Code {
    /// The file cannot be read.
    Io,
    /// YAML syntax, duplicate keys, unsupported YAML features.
    Yaml,
    /// A key the schema does not know.
    UnknownKey,
    /// A required key is missing.
    MissingKey,
    /// A value of the wrong type.
    Type,
    /// A value outside what the key accepts (enum, pattern, range).
    InvalidValue,
    /// A malformed duration.
    Duration,
    /// A malformed `model` shorthand or an inconsistent model mapping.
    Model,
    /// A template that does not compile.
    Template,
    /// A template variable that is not declared.
    UndeclaredVariable,
    /// A declared required input no template uses (warning).
    UnusedInput,
    /// A `stop_when` expression that does not compile or reads an unknown variable.
    StopWhen,
    /// A sub-agent's `parameters` that is not a valid JSON Schema of an object.
    ParameterSchema,
    /// An `output.schema` or `plan_schema` that is not a valid JSON Schema.
    OutputSchema,
    /// Sub-agent files that refer to each other without a depth bound.
    Cycle,
    /// A referenced file that does not exist.
    MissingFile,
    /// Two tools with the same name.
    DuplicateTool,
    /// A `depends_on` naming no tool of the agent.
    UnknownTool,
    /// An include that leaves the agent file's directory tree.
    IncludeEscape,
    /// An option of another execution strategy.
    StrategyOption,
    /// An input's default or enum that does not fit its type.
    InputDefault,
    /// A setting that has no effect (warning).
    NoEffect,
    /// A `permissions` pattern or `redact` expression that does not parse.
    Permission,
    /// A root agent that nothing bounds: no limit on model calls, tokens, cost or time
    /// (warning, from `runner validate` only).
    Unbounded,
    /// An MCP `config` file that gives no servers: not JSON, not of the `mcpServers`
    /// shape, a key or transport runner does not read, a server it does not list.
    McpConfig,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Io => "io",
            Code::Yaml => "yaml",
            Code::UnknownKey => "unknown-key",
            Code::MissingKey => "missing-key",
            Code::Type => "type",
            Code::InvalidValue => "invalid-value",
            Code::Duration => "duration",
            Code::Model => "model",
            Code::Template => "template",
            Code::UndeclaredVariable => "undeclared-variable",
            Code::UnusedInput => "unused-input",
            Code::StopWhen => "stop-when",
            Code::ParameterSchema => "parameter-schema",
            Code::OutputSchema => "output-schema",
            Code::Cycle => "cycle",
            Code::MissingFile => "missing-file",
            Code::DuplicateTool => "duplicate-tool",
            Code::UnknownTool => "unknown-tool",
            Code::IncludeEscape => "include-escape",
            Code::StrategyOption => "strategy-option",
            Code::InputDefault => "input-default",
            Code::NoEffect => "no-effect",
            Code::Permission => "permission",
            Code::McpConfig => "mcp-config",
            Code::Unbounded => "unbounded",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub severity: Severity,
    #[serde(serialize_with = "serialize_code")]
    pub code: Code,
    pub message: String,
    /// JSON pointer of the node concerned ("" is the whole document).
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn serialize_code<S: serde::Serializer>(code: &Code, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(code.as_str())
}

impl Diagnostic {
    pub fn error(file: &Path, at: Position, code: Code, path: &str, message: String) -> Self {
        Diagnostic {
            file: file.to_path_buf(),
            line: at.line,
            column: at.column,
            severity: Severity::Error,
            code,
            message,
            path: path.to_string(),
            hint: None,
        }
    }

    pub fn warning(file: &Path, at: Position, code: Code, path: &str, message: String) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, at, code, path, message)
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_optional_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// `path:line:col: error[code]: message (at /json/path)` and an indented hint line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{}:{}:{}: {severity}[{}]: {}",
            self.file.display(),
            self.line,
            self.column,
            self.code,
            self.message
        )?;
        if !self.path.is_empty() {
            write!(f, " (at {})", self.path)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  help: {hint}")?;
        }
        Ok(())
    }
}

/// `diagnostics` with every secret the tool-output redactor knows (common token formats)
/// replaced in their messages and hints: a message may quote a value of any file a
/// definition references.
pub fn redacted(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if diagnostics.is_empty() {
        return diagnostics;
    }
    static REDACTOR: std::sync::LazyLock<crate::secrets::TextRedactor> =
        std::sync::LazyLock::new(crate::secrets::TextRedactor::default);
    for diagnostic in &mut diagnostics {
        if let Some(message) = REDACTOR.redact_text(&diagnostic.message) {
            diagnostic.message = message;
        }
        if let Some(hint) = diagnostic
            .hint
            .as_deref()
            .and_then(|h| REDACTOR.redact_text(h))
        {
            diagnostic.hint = Some(hint);
        }
    }
    diagnostics
}

/// The closest candidate to `word`, when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::jaro_winkler(word, candidate), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}
