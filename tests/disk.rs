//! A run directory on a full disk: every failed write is reported, once on stderr and in
//! the result envelope, and `events.jsonl` never ends in a torn line.
//!
//! The disk is a real one: a 64 KiB tmpfs mounted for each test (which needs root). Where
//! mounting is not allowed, each test says why and passes without running.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use runner::testing::mock_server::Reply;
use serde_json::Value;
use support::{Ran, Test, tempdir};

/// A 64 KiB tmpfs, unmounted when dropped, so a failing test leaves no mount behind.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    /// `None`, with the reason on stderr, where a tmpfs cannot be mounted (not root, or a
    /// container without the capability).
    fn mount() -> Option<SmallDisk> {
        let dir = tempdir("disk");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&dir)
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(SmallDisk { dir }),
            Ok(output) => {
                let why = String::from_utf8_lossy(&output.stderr);
                eprintln!("skipped: cannot mount a tmpfs (needs root): {}", why.trim());
                None
            }
            Err(error) => {
                eprintln!("skipped: cannot run mount: {error}");
                None
            }
        }
    }

    /// The `--run-dir` on this disk.
    fn run_dir(&self) -> String {
        self.dir.join("run").display().to_string()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// A reply larger than the disk: 100 KB of text, in 1000 words (each a streamed piece,
/// and so an event).
fn big_text() -> String {
    format!("{} ", "x".repeat(99)).repeat(1000)
}

/// The `warning: …` lines of stderr naming `file` of the run directory.
fn warnings_about(stderr: &str, run_dir: &str, file: &str) -> Vec<String> {
    let prefix = format!("warning: cannot write {run_dir}/{file}: No space left on device");
    stderr
        .lines()
        .filter(|line| line.starts_with(&prefix))
        .map(String::from)
        .collect()
}

/// Every line of `events.jsonl` is a whole event (parsed and checked against the schema),
/// and the file ends with a newline.
fn assert_whole_lines(ran: &Ran, run_dir: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(Path::new(run_dir).join("events.jsonl")).unwrap();
    assert!(
        !text.is_empty(),
        "the events before the disk filled are kept"
    );
    assert!(
        text.ends_with('\n'),
        "torn last line: {:?}",
        &text[text.len() - 80..]
    );
    ran.events()
}

#[test]
fn a_full_disk_is_a_warning_on_stderr_and_in_the_envelope_and_never_a_torn_line() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let run_dir = disk.run_dir();
    let text = big_text();
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text(&text))
        .command([
            "exec",
            "agent.yaml",
            "--run-dir",
            &run_dir,
            "--output",
            "json",
        ])
        .stderr_contains("warning: cannot write")
        .run();

    // The run itself completed: exit 0, and the envelope is printed although result.json
    // could not be written.
    let envelope = ran.json();
    assert_eq!(envelope["status"], "completed");
    assert_eq!(envelope["output"], text.as_str());
    assert!(!Path::new(&run_dir).join("result.json").exists());

    // Each file's failure: once on stderr, and in the envelope's warnings.
    let warnings: Vec<&str> = envelope["warnings"]
        .as_array()
        .expect("the envelope has warnings")
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    for file in ["events.jsonl", "transcript.txt", "result.json"] {
        let on_stderr = warnings_about(&ran.stderr, &run_dir, file);
        assert_eq!(on_stderr.len(), 1, "{file}:\n{}", ran.stderr);
        let line = on_stderr[0].strip_prefix("warning: ").unwrap();
        assert!(warnings.contains(&line), "{line:?} not in {warnings:?}");
    }

    let events = assert_whole_lines(&ran, &run_dir);
    assert_eq!(events[0]["type"], "agent.run.created");
}

#[test]
fn a_chat_reports_a_full_disk_once_and_in_every_result_after_it() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let run_dir = disk.run_dir();
    let ran = Test::new()
        .agent("system: Be brief.\n")
        .reply(Reply::text(big_text()))
        .reply(Reply::text("Still here."))
        .command([
            "chat",
            "agent.yaml",
            "--run-dir",
            &run_dir,
            "--output",
            "json",
        ])
        .stdin("Talk a lot.\nAnd now?\n")
        .any_stderr()
        .run();

    let envelopes: Vec<Value> = serde_json::Deserializer::from_str(&ran.stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(envelopes.len(), 2, "{}", ran.stdout);
    assert_eq!(envelopes[1]["output"], "Still here.");
    let events_warning = format!("cannot write {run_dir}/events.jsonl");
    for envelope in &envelopes {
        assert_eq!(envelope["status"], "completed");
        let warnings = envelope["warnings"].as_array().expect("warnings");
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().starts_with(&events_warning)),
            "{warnings:?}"
        );
    }
    assert_eq!(
        warnings_about(&ran.stderr, &run_dir, "events.jsonl").len(),
        1,
        "{}",
        ran.stderr
    );
    assert_whole_lines(&ran, &run_dir);
}

/// A checkpoint that cannot be saved after the step's calls ran ends the run: going on
/// would leave the session at an older state, from which a resume would run them again.
#[test]
fn a_checkpoint_that_cannot_be_saved_ends_the_run_and_leaves_the_calls_marked_in_flight() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let sessions = disk.dir.join("sessions").display().to_string();
    let ran = Test::new()
        .agent(&format!(
            "prompt: Go\ncheckpoints: {{ dir: \"{sessions}\" }}\ntools:\n  - builtin: read_file\n"
        ))
        .file("big.txt", &big_text())
        .reply(Reply::tool_call(
            "read_file",
            serde_json::json!({"path": "big.txt"}),
        ))
        .reply(Reply::text("never asked"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("error[checkpoint_write]")
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["error"]["code"], "checkpoint_write");
    assert_eq!(
        ran.requests().len(),
        1,
        "no model call after the failed save"
    );
    let session = envelope["session_id"].as_str().unwrap();
    // The session's first record, in its journal (a first record takes no snapshot).
    let journal = std::fs::read_to_string(
        disk.dir
            .join("sessions")
            .join(session)
            .join("journal.jsonl"),
    )
    .expect("the checkpoint before the calls is on disk");
    assert!(
        journal.contains("tools_in_flight"),
        "the session knows the calls may have run"
    );
}
