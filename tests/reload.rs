//! `exec --watch`: saved changes of the agent file take effect at the next step boundary,
//! with the history kept; an invalid save is refused and the run goes on.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;
use support::{Run, tempdir};

const KEY_ENV: &str = "RUNNER_TEST_KEY";

fn agent(mock: &MockServer, system: &str) -> String {
    format!(
        "name: watched\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: {KEY_ENV} }}\nsystem: {system}\nprompt: Go\ntools:\n  - builtin: read_file\n",
        mock.openai_base_url()
    )
}

/// Saves the way many editors do: write a temp file, rename it over the original.
fn save_by_rename(path: &Path, text: &str) {
    let temp = path.with_extension("yaml.swp");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

fn wait_for_requests(mock: &MockServer, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while mock.request_count() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn slow(reply: Reply) -> MockResponse {
    MockResponse::reply(reply).chunk_delay(Duration::from_millis(150))
}

fn project(mock: &MockServer) -> (PathBuf, PathBuf) {
    let dir = tempdir("reload");
    std::fs::write(dir.join("notes.txt"), "line one\n").unwrap();
    let file = dir.join("agent.yaml");
    std::fs::write(&file, agent(mock, "You are OLD.")).unwrap();
    (dir, file)
}

#[test]
fn a_saved_change_shows_up_in_the_next_request_with_the_history_kept() {
    let mock = MockServer::start();
    mock.push(slow(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(MockResponse::text("done"));
    let (dir, file) = project(&mock);
    let child = Run::new(["exec", "agent.yaml", "--watch", "--run-dir", "run"])
        .current_dir(&dir)
        .env(KEY_ENV, "k")
        .spawn();
    wait_for_requests(&mock, 1);
    save_by_rename(&file, &agent(&mock, "You are NEW."));
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = mock.requests();
    assert_eq!(requests[0].system_prompt().as_deref(), Some("You are OLD."));
    assert_eq!(requests[1].system_prompt().as_deref(), Some("You are NEW."));
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("line one"),
        "the history is kept"
    );
    let events = support::read_events(&dir.join("run/events.jsonl"));
    let reloaded = events
        .iter()
        .find(|e| e["type"] == "agent.definition.reloaded")
        .expect("a reload event");
    assert_eq!(reloaded["data"]["changes"], json!(["system"]));
    let transcript = std::fs::read_to_string(dir.join("run/transcript.txt")).unwrap();
    assert!(
        transcript.contains("definition reloaded: system"),
        "{transcript}"
    );
}

#[test]
fn an_invalid_save_is_refused_and_the_run_finishes_on_the_old_definition() {
    let mock = MockServer::start();
    mock.push(slow(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(MockResponse::text("done"));
    let (dir, file) = project(&mock);
    let child = Run::new(["exec", "agent.yaml", "--watch", "--run-dir", "run"])
        .current_dir(&dir)
        .env(KEY_ENV, "k")
        .spawn();
    wait_for_requests(&mock, 1);
    save_by_rename(
        &file,
        &agent(&mock, "You are NEW.").replace("prompt:", "promt:"),
    );
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown key `promt`"), "{stderr}");
    assert_eq!(
        mock.requests()[1].system_prompt().as_deref(),
        Some("You are OLD.")
    );
    let events = support::read_events(&dir.join("run/events.jsonl"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "agent.definition.reload_failed")
    );
}

/// The CPU time (user and system, in clock ticks, 10 ms here) process `pid` has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which ends with the last `)`: utime and stime are
    // the 12th and 13th of them.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn validate_watch_reports_again_after_each_save() {
    let dir = tempdir("validate-watch");
    let file = dir.join("agent.yaml");
    std::fs::write(&file, "name: a\npromt: hi\n").unwrap();
    let mut child = Run::new(["validate", "--watch", "agent.yaml"])
        .current_dir(&dir)
        .spawn();
    let rx = stdout_lines(&mut child);
    let first = next_summary(&rx);
    assert!(
        first.iter().any(|l| l.contains("unknown key `promt`")),
        "{first:?}"
    );
    assert!(first.last().unwrap().contains("not valid"), "{first:?}");
    // Idle until a save: validating reads the file, and a read is no change. Nor does the
    // watch poll: a second of waiting costs (next to) no CPU.
    let cpu_before = cpu_ticks(child.id());
    let idle = rx.recv_timeout(Duration::from_millis(1000));
    assert!(idle.is_err(), "validated again with no edit: {idle:?}");
    let spent = cpu_ticks(child.id()) - cpu_before;
    assert!(
        spent <= 5,
        "{spent} clock ticks of CPU in a second of waiting"
    );
    save_by_rename(&file, "name: a\nprompt: hi\nlimits: { timeout: 1m }\n");
    let second = next_summary(&rx);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(second[0].contains("1 file(s) valid"), "{second:?}");
}

#[test]
fn chat_over_a_pipe_keeps_the_history_across_an_edit() {
    use std::io::{BufRead, BufReader, Write};
    let mock = MockServer::start();
    mock.push(MockResponse::text("Hello Ann."));
    mock.push(MockResponse::text("You are Ann."));
    let (dir, file) = project(&mock);
    let mut child = Run::new(["chat", "agent.yaml", "--run-dir", "run"])
        .current_dir(&dir)
        .env(KEY_ENV, "k")
        .spawn_interactive();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    writeln!(stdin, "My name is Ann.").unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        "Hello Ann."
    );
    save_by_rename(&file, &agent(&mock, "You are NEW."));
    std::thread::sleep(Duration::from_millis(200));
    writeln!(stdin, "Who am I?").unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        "You are Ann."
    );
    writeln!(stdin, "/save").unwrap();
    let saved = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(saved.starts_with("saved session "), "{saved}");
    writeln!(stdin, "/exit").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let requests = mock.requests();
    assert_eq!(requests[0].system_prompt().as_deref(), Some("You are OLD."));
    assert_eq!(
        requests[1].system_prompt().as_deref(),
        Some("You are NEW."),
        "reloaded between turns"
    );
    let history = requests[1].body["messages"].to_string();
    assert!(
        history.contains("My name is Ann.") && history.contains("Hello Ann."),
        "{history}"
    );
    let session = saved.trim_start_matches("saved session ");
    assert!(
        dir.join(".runner/sessions")
            .join(session)
            .join("checkpoint.json")
            .is_file(),
        "resumable"
    );
}

/// An invalid save between two chat turns is refused: its diagnostics are printed once (by
/// the chat, not again by the run's progress), and the next turn runs on the old definition.
#[test]
fn chat_prints_an_invalid_save_once_and_goes_on_with_the_old_definition() {
    use std::io::Write;
    let mock = MockServer::start();
    mock.push(slow(Reply::text("Hello Ann.")));
    mock.push(MockResponse::text("You are Ann."));
    let (dir, file) = project(&mock);
    let mut child = Run::new(["chat", "agent.yaml", "--run-dir", "run"])
        .current_dir(&dir)
        .env(KEY_ENV, "k")
        .spawn_interactive();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "My name is Ann.\nWho am I?").unwrap();
    drop(stdin);
    // Saved while the first turn's reply streams: the chat sees it before the second turn.
    wait_for_requests(&mock, 1);
    save_by_rename(
        &file,
        &agent(&mock, "You are NEW.").replace("prompt:", "promt:"),
    );
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stderr.matches("unknown key `promt`").count(), 1, "{stderr}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].system_prompt().as_deref(), Some("You are OLD."));
}

/// `validate --watch` watches the project file the agent file's model names resolve
/// through: fixing a typo there validates again.
#[test]
fn validate_watch_reports_again_after_a_save_of_the_project_file() {
    let dir = tempdir("validate-watch-project");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "name: a\nmodel: smart\nprompt: hi\n",
    )
    .unwrap();
    let project = dir.join("runner.yaml");
    std::fs::write(&project, "models:\n  smrt: { provider: openai, name: m }\n").unwrap();
    let mut child = Run::new(["validate", "--watch", "agent.yaml"])
        .current_dir(&dir)
        .spawn();
    let rx = stdout_lines(&mut child);
    let first = next_summary(&rx);
    assert!(
        first.iter().any(|l| l.contains("did you mean `smrt`?")),
        "{first:?}"
    );
    save_by_rename(
        &project,
        "models:\n  smart: { provider: openai, name: m }\n",
    );
    let second = next_summary(&rx);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        second.last().unwrap().contains("1 file(s) valid"),
        "{second:?}"
    );
}

/// The lines `validate --watch` prints, as they come.
fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::{BufRead, BufReader};
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    rx
}

/// The lines of the next report, up to its summary line (`-- …`); bounded by a 10 s wait
/// for each line.
fn next_summary(rx: &std::sync::mpsc::Receiver<String>) -> Vec<String> {
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        let done = line.starts_with("-- ");
        lines.push(line);
        if done {
            break;
        }
    }
    lines
}
