//! `Test`: one user session with the real binary, in the style of casey/just's harness.
//!
//! ```ignore
//! Test::new()
//!     .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
//!     .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
//!     .reply(Reply::text("Done."))
//!     .stdout("Done.\n")
//!     .run();
//! ```
//!
//! An agent file gets a model on the mock server (OpenAI wire, one attempt) unless it
//! names its own; `$MODEL` in any file is replaced by that model. The default command is
//! `runner exec agent.yaml --run-dir run`; `.args(..)` appends to it, `.command(..)`
//! replaces it. Strict by default: the exit code must be 0 and stderr empty unless the
//! test says otherwise.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use runner::testing::mock_server::{MockRequest, MockResponse, MockServer, Reply};
use serde_json::Value;

use super::{read_events, tempdir};

pub const KEY_ENV: &str = "RUNNER_TEST_KEY";
pub const KEY: &str = "sk-test-not-a-real-key-1234";

/// What stderr must be.
enum Expect {
    Exactly(String),
    Contains(Vec<String>),
    Anything,
}

pub struct Test {
    dir: PathBuf,
    mock: Arc<MockServer>,
    command: Vec<String>,
    extra: Vec<String>,
    env: Vec<(String, String)>,
    stdin: Option<String>,
    status: i32,
    stdout: Option<String>,
    stdout_contains: Vec<String>,
    stderr: Expect,
}

impl Default for Test {
    fn default() -> Self {
        Self::new()
    }
}

impl Test {
    pub fn new() -> Self {
        Self::in_dir(tempdir("test"), Arc::new(MockServer::start()))
    }

    fn in_dir(dir: PathBuf, mock: Arc<MockServer>) -> Self {
        Test {
            dir,
            mock,
            command: ["exec", "agent.yaml", "--run-dir", "run"]
                .map(String::from)
                .to_vec(),
            extra: Vec::new(),
            env: vec![
                (KEY_ENV.into(), KEY.into()),
                ("NO_COLOR".into(), "1".into()),
            ],
            stdin: None,
            status: 0,
            stdout: None,
            stdout_contains: Vec::new(),
            stderr: Expect::Exactly(String::new()),
        }
    }

    /// The mock model, as an inline `model:` mapping.
    pub fn model(&self) -> String {
        format!(
            "{{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}",
            self.mock.openai_base_url()
        )
    }

    /// Writes `agent.yaml`: `name: test-agent` and the mock model, then `body` (a body
    /// that starts with `name:` is written as it is).
    pub fn agent(self, body: &str) -> Self {
        let text = if body.starts_with("name:") {
            body.to_string()
        } else {
            format!("name: test-agent\nmodel: $MODEL\n{body}")
        };
        self.file("agent.yaml", &text)
    }

    /// Writes a file into the workspace (`$MODEL` replaced by the mock model).
    pub fn file(self, path: &str, text: &str) -> Self {
        let path = self.dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text.replace("$MODEL", &self.model())).unwrap();
        self
    }

    /// Queues a reply of the mock model.
    pub fn reply(self, reply: Reply) -> Self {
        self.respond(MockResponse::reply(reply))
    }

    /// Queues a raw response of the mock model (errors, faults).
    pub fn respond(self, response: MockResponse) -> Self {
        self.mock.push(response);
        self
    }

    /// The mock server, for routing by request.
    pub fn mock(&self) -> &MockServer {
        &self.mock
    }

    /// Arguments appended to the command.
    pub fn args<const N: usize>(mut self, args: [&str; N]) -> Self {
        self.extra.extend(args.map(String::from));
        self
    }

    /// Replaces the whole command (`exec agent.yaml --run-dir run` by default).
    pub fn command<const N: usize>(mut self, args: [&str; N]) -> Self {
        self.command = args.map(String::from).to_vec();
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.into());
        self
    }

    /// The expected exit code (default 0).
    pub fn status(mut self, code: i32) -> Self {
        self.status = code;
        self
    }

    pub fn stdout(mut self, text: &str) -> Self {
        self.stdout = Some(text.into());
        self
    }

    pub fn stdout_contains(mut self, text: &str) -> Self {
        self.stdout_contains.push(text.into());
        self
    }

    pub fn stderr(mut self, text: &str) -> Self {
        self.stderr = Expect::Exactly(text.into());
        self
    }

    /// stderr must contain `text` (repeatable); anything else may be there too.
    pub fn stderr_contains(mut self, text: &str) -> Self {
        match &mut self.stderr {
            Expect::Contains(texts) => texts.push(text.into()),
            _ => self.stderr = Expect::Contains(vec![text.into()]),
        }
        self
    }

    pub fn any_stderr(mut self) -> Self {
        self.stderr = Expect::Anything;
        self
    }

    /// Runs the binary and checks the expectations.
    pub fn run(self) -> Ran {
        let mut command = Command::new(env!("CARGO_BIN_EXE_runner"));
        command
            .args(&self.command)
            .args(&self.extra)
            .current_dir(&self.dir)
            .env_remove("RUST_BACKTRACE")
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("the runner binary starts");
        if let Some(text) = &self.stdin {
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(text.as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let ran = Ran {
            dir: self.dir.clone(),
            mock: self.mock.clone(),
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        self.check(&ran);
        ran
    }

    fn check(&self, ran: &Ran) {
        let session = format!(
            "runner {} {}\n--- stdout\n{}--- stderr\n{}",
            self.command.join(" "),
            self.extra.join(" "),
            ran.stdout,
            ran.stderr
        );
        assert_eq!(ran.code, self.status, "unexpected exit code\n{session}");
        if let Some(stdout) = &self.stdout {
            assert_eq!(&ran.stdout, stdout, "unexpected stdout\n{session}");
        }
        for text in &self.stdout_contains {
            assert!(
                ran.stdout.contains(text),
                "stdout lacks {text:?}\n{session}"
            );
        }
        match &self.stderr {
            Expect::Exactly(text) => assert_eq!(&ran.stderr, text, "unexpected stderr\n{session}"),
            Expect::Contains(texts) => {
                for text in texts {
                    assert!(
                        ran.stderr.contains(text),
                        "stderr lacks {text:?}\n{session}"
                    );
                }
            }
            Expect::Anything => {}
        }
    }
}

/// What a finished invocation left behind.
pub struct Ran {
    pub dir: PathBuf,
    mock: Arc<MockServer>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// The next command in the same workspace, against the same mock model.
    pub fn then(&self) -> Test {
        Test::in_dir(self.dir.clone(), self.mock.clone())
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// `run/result.json`.
    pub fn result(&self) -> Value {
        read_json(&self.dir.join("run/result.json"))
    }

    /// stdout as JSON (`--output json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// `run/events.jsonl`, each line checked against `schemas/events.schema.json`.
    pub fn events(&self) -> Vec<Value> {
        read_events(&self.dir.join("run/events.jsonl"))
    }

    /// The events of one type.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// `run/transcript.txt`.
    pub fn transcript(&self) -> String {
        std::fs::read_to_string(self.dir.join("run/transcript.txt"))
            .expect("the run left a transcript")
    }

    /// The requests the mock model received so far.
    pub fn requests(&self) -> Vec<MockRequest> {
        self.mock.requests()
    }

    /// The id of the session the run belongs to (from the result).
    pub fn session(&self) -> String {
        self.result()["session_id"].as_str().unwrap().to_string()
    }
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}
