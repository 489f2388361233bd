//! `search_files`: a regular expression over the text files of the workspace.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde_json::{Value, json};

use super::text::{looks_binary, prefix_at_boundary};
use super::{BoxFuture, Signature, Tool, ToolContext, ToolOutput, Workspace, str_arg};

/// At most this many matching lines are returned.
pub const MAX_MATCHES: usize = 200;
/// A matching line longer than this (in bytes) is cut.
pub const MAX_LINE_BYTES: usize = 300;
/// Files larger than this are skipped.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Directories never descended into.
pub const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules"];

/// The `search_files` built-in.
pub struct SearchFilesTool {
    sig: Signature,
    workspace: Workspace,
}

impl SearchFilesTool {
    pub fn new(workspace: Workspace) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression (Rust regex syntax) searched for in each line."
                },
                "path": {
                    "type": "string",
                    "default": ".",
                    "description": "File or directory to search, relative to the workspace root (default: the root)."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob, e.g. `*.rs` (file name) or `src/**/*.rs` (path from the workspace root)."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        });
        SearchFilesTool {
            sig: Signature::new(
                "search_files",
                "Search the text files of the workspace for a regular expression. Returns one \
                 `file:line: text` line per match (binary files, .git, target and node_modules \
                 are skipped).",
                parameters,
            ),
            workspace,
        }
    }

    async fn run(&self, arguments: Value, ctx: &ToolContext) -> ToolOutput {
        let arguments = match self.sig.accept(arguments) {
            Ok(arguments) => arguments,
            Err(out) => return out,
        };
        let pattern = arguments["pattern"].as_str().unwrap_or_default();
        let regex = match regex::RegexBuilder::new(pattern)
            .size_limit(10 * 1024 * 1024)
            .build()
        {
            Ok(regex) => regex,
            Err(e) => return ToolOutput::error(format!("invalid regex `{pattern}`: {e}")),
        };
        let glob = match arguments.get("glob").and_then(Value::as_str) {
            None => None,
            Some(glob) => match Filter::new(glob) {
                Ok(filter) => Some(filter),
                Err(message) => return ToolOutput::error(message),
            },
        };
        let path_arg = str_arg(&arguments, "path", ".");
        let start = match self.workspace.resolve(path_arg) {
            Ok(path) => path,
            Err(message) => return ToolOutput::error(message),
        };
        if let Err(e) = std::fs::metadata(&start) {
            return ToolOutput::error(format!(
                "cannot search `{}`: {e}",
                self.workspace.shown(&start)
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let search = Search {
            workspace: self.workspace.clone(),
            regex,
            glob,
            stop: stop.clone(),
            matches: Vec::new(),
            files_searched: 0,
            truncated: false,
        };
        let worker = tokio::task::spawn_blocking(move || search.run(start));
        let search = tokio::select! {
            done = worker => done,
            _ = ctx.cancelled() => {
                stop.store(true, Ordering::Relaxed);
                return ToolOutput::error("search cancelled: the run was interrupted")
                    .with_meta("cancelled", true);
            }
        };
        let search = match search {
            Ok(search) => search,
            Err(e) => return ToolOutput::error(format!("search failed: {e}")),
        };
        let count = search.matches.len();
        let mut text = if count == 0 {
            "(no matches)".to_string()
        } else {
            search.matches.join("\n")
        };
        if search.truncated {
            text.push_str(&format!(
                "\n[… stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob]"
            ));
        }
        ToolOutput::ok(text)
            .with_meta("matches", count as u64)
            .with_meta("files_searched", search.files_searched)
            .with_meta("truncated", search.truncated)
    }
}

/// A glob filter: without a `/` it matches file names, with one it matches the path from
/// the workspace root.
struct Filter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl Filter {
    fn new(glob: &str) -> Result<Self, String> {
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob `{glob}`: {e}"))?
            .compile_matcher();
        Ok(Filter {
            matcher,
            whole_path: glob.contains('/'),
        })
    }

    fn matches(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(relative)
        } else {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

struct Search {
    workspace: Workspace,
    regex: Regex,
    glob: Option<Filter>,
    stop: Arc<AtomicBool>,
    matches: Vec<String>,
    files_searched: u64,
    truncated: bool,
}

impl Search {
    /// Walks depth-first in name order. Symlinks are not followed (a link could lead out of
    /// the workspace, or into a loop).
    fn run(mut self, start: PathBuf) -> Self {
        let mut stack = vec![start];
        while let Some(path) = stack.pop() {
            if self.truncated || self.stop.load(Ordering::Relaxed) {
                break;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if self.workspace.hides(&path) {
                continue;
            }
            if meta.is_dir() {
                let Ok(read) = std::fs::read_dir(&path) else {
                    continue;
                };
                let mut children: Vec<PathBuf> = read
                    .filter_map(Result::ok)
                    .filter(|entry| {
                        let name = entry.file_name();
                        !SKIPPED_DIRS.iter().any(|skip| name == *skip)
                            || entry.file_type().is_ok_and(|t| !t.is_dir())
                    })
                    .map(|entry| entry.path())
                    .collect();
                children.sort();
                stack.extend(children.into_iter().rev());
            } else if meta.is_file() && meta.len() <= MAX_FILE_BYTES {
                self.search_file(&path);
            }
        }
        self
    }

    fn search_file(&mut self, path: &Path) {
        let relative = path
            .strip_prefix(self.workspace.root())
            .unwrap_or(path)
            .to_path_buf();
        if let Some(glob) = &self.glob
            && !glob.matches(&relative)
        {
            return;
        }
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        if looks_binary(&bytes) {
            return;
        }
        self.files_searched += 1;
        let text = String::from_utf8_lossy(&bytes);
        let shown = relative.to_string_lossy();
        for (index, line) in text.lines().enumerate() {
            if !self.regex.is_match(line) {
                continue;
            }
            if self.matches.len() >= MAX_MATCHES {
                self.truncated = true;
                return;
            }
            let cut = prefix_at_boundary(line, MAX_LINE_BYTES);
            let ellipsis = if cut.len() < line.len() { " […]" } else { "" };
            self.matches
                .push(format!("{shown}:{}: {cut}{ellipsis}", index + 1));
        }
    }
}

impl Tool for SearchFilesTool {
    fn name(&self) -> &str {
        self.sig.name
    }
    fn description(&self) -> &str {
        &self.sig.description
    }
    fn parameters(&self) -> &Value {
        &self.sig.parameters
    }
    fn idempotent(&self) -> bool {
        true
    }
    fn policy_arguments(&self, arguments: &Value) -> Option<Value> {
        self.workspace.policy_path(arguments, Some("."))
    }
    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run(arguments, ctx))
    }
}
