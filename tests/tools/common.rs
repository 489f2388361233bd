//! Helpers: scratch directories and calling a tool.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use runner::tools::{Tool, ToolContext, ToolOutput};
use serde_json::Value;

/// A directory under the system temp dir, removed when dropped.
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "runner-tools-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch {
            path: std::fs::canonicalize(&path).unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `content` at `rel`, creating parent directories.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let path = self.path.join(rel);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path.join(rel)).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Calls `tool` with a context that is never cancelled.
pub async fn call(tool: &dyn Tool, arguments: Value) -> ToolOutput {
    tool.call(arguments, &ToolContext::detached("call-1")).await
}

/// The error of a failed call (panics, with the output, when it succeeded).
pub fn error_of(out: &ToolOutput) -> &str {
    assert!(!out.success, "expected a failure, got {out:#?}");
    out.error.as_deref().expect("a failed call has an error")
}

/// Asserts success and returns the output for further checks.
pub fn ok(out: ToolOutput) -> ToolOutput {
    assert!(out.success, "expected success, got {out:#?}");
    assert!(out.error.is_none());
    out
}

/// Builds a built-in from its agent-file form, e.g. `{"builtin": "shell", "allow": ["echo"]}`,
/// with `base` as the directory `root:` is resolved against.
pub fn builtin(spec: Value, base: &Path) -> std::sync::Arc<dyn Tool> {
    builtin_with_deny(spec, base, &[])
}

pub fn builtin_with_deny(spec: Value, base: &Path, deny: &[String]) -> std::sync::Arc<dyn Tool> {
    let spec: runner::spec::tools::BuiltinTool =
        serde_json::from_value(spec).expect("a valid builtin entry");
    runner::tools::build_builtin(&spec, base, &Default::default(), deny).expect("the tool builds")
}
