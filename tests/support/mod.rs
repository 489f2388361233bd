//! Driving the real `runner` binary so each test reads like the user's session: `Test`
//! (harness.rs), a workspace with its files and the mock model; `Run`, the plainer older
//! way, still used by tests/reload.rs and tests/validate.rs.
#![allow(dead_code)] // each test binary uses a different part

pub mod code_quality;
mod harness;
pub mod http;
pub mod markdown;
mod nats;
#[allow(unused_imports)]
pub use harness::{KEY, KEY_ENV, Ran, Running, Test, read_json, terminal_available, wait_until};
#[allow(unused_imports)]
pub use nats::{Freezer, NatsServer};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root (tests run with it as the working directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One invocation of the binary.
pub struct Run {
    command: Command,
}

/// What an invocation left behind.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = Command::new(env!("CARGO_BIN_EXE_runner"));
        command
            .args(args)
            .current_dir(root())
            .env("NO_COLOR", "1")
            .env_remove("CI")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .stdin(Stdio::null());
        Run { command }
    }

    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.command.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.command.env_remove(key);
        self
    }

    pub fn run(mut self) -> Outcome {
        let output = self.command.output().expect("the runner binary starts");
        Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Outcome {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// A fresh directory under the target dir, kept after the test for a look at what it left;
/// the next test process removes it (with every directory of a process that has ended).
pub fn tempdir(prefix: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(remove_dirs_of_ended_processes);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Removes the directories `tempdir` made for test processes that are no longer running
/// (`{prefix}-{pid}-{n}`), so runs of the suite do not pile them up.
fn remove_dirs_of_ended_processes() {
    let Ok(entries) = std::fs::read_dir(env!("CARGO_TARGET_TMPDIR")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut parts = name.rsplitn(3, '-');
        let (Some(_), Some(pid)) = (parts.next(), parts.next()) else {
            continue;
        };
        let ended = pid.parse::<u32>().is_ok_and(|pid| {
            pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
        });
        if ended {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Run {
    /// Starts the binary without waiting (for signal tests).
    pub fn spawn(mut self) -> std::process::Child {
        self.command.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.command.spawn().expect("the runner binary starts")
    }
}

/// Parses events.jsonl and checks every line against `schemas/events.schema.json`.
pub fn read_events(path: &Path) -> Vec<serde_json::Value> {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/events.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the events schema compiles");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
            let problems: Vec<String> = validator
                .iter_errors(&event)
                .map(|e| format!("{e} at {}", e.instance_path().as_str()))
                .collect();
            assert!(
                problems.is_empty(),
                "event does not match the schema: {problems:?}\n{line}"
            );
            event
        })
        .collect()
}

impl Run {
    /// Starts the binary with stdin, stdout and stderr piped (interactive tests).
    pub fn spawn_interactive(mut self) -> std::process::Child {
        self.command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.command.spawn().expect("the runner binary starts")
    }
}
