//! Every agent file in `examples/` and `agents/` runs offline, as the README's "Try the
//! examples offline" section says: with its scripted model, or with the cassette shipped in
//! `examples/cassettes/`, replayed with `--replay` (no network, no API key). Each test runs
//! the command the README gives (checking the README gives it), through the real binary,
//! and checks what the agent did: its answer, its tool calls, its events.
//!
//! Each cassette is also recorded again, every time: the same command with `--record`
//! instead of `--replay`, against the mock model answering what the cassette answers. The
//! new recording must equal the shipped cassette, so a change to an example, to the
//! fixtures or to what `runner` sends, which would make the replay miss, fails here and
//! says which line changed. After such a change, `RECORD_CASSETTES=1 cargo test --test
//! examples` writes the new recordings over the shipped cassettes (review them with `git
//! diff`).
//!
//! The files about a git repository (`examples/plan.yaml` and those in `agents/`) run in
//! the one `examples/offline/workspace.sh` builds; the others in a copy of the files of
//! this repository they read. `examples/partials/` are run by `examples/handoff.yaml`.
//!
//! Docs are claims, and the last tests here hold the pages to them. Every `runner` command
//! of the README's `sh` blocks is run: an example's by its test above, the others by
//! `every_readme_command_runs_offline`. Every line of the README's command summary names a
//! subcommand whose `--help` has each flag the line shows. Every YAML block of `docs/*.md`
//! and of the README goes through the binary (`every_yaml_block_of_the_docs_holds`): a
//! block is a whole agent file, which `runner validate` must pass, unless an HTML comment
//! on the line just before its fence says what else it is:
//!
//! * `<!-- check: agent keys -->`: some keys of an agent file; the test adds `name`,
//!   `model` and `prompt` where absent, and `runner validate` must pass.
//! * `<!-- check: tools -->`: entries of an agent's `tools` list, likewise.
//! * `<!-- check: test file -->`: a test file, which `runner test` must pass.
//! * `<!-- check: part of a test file -->`: its `agent` added when absent, it must load
//!   (`runner test --filter` matching no case).
//! * `<!-- check: answers -->`: an answers file, which `runner exec --answers` must read.
//! * `<!-- check: project file -->`: a `runner.yaml`, which `runner validate` must pass.
//! * `<!-- check: shapes only -->`: a sketch of the keys' shapes (`[PATTERN, ...]`), and
//!   `<!-- check: not runner's -->`: another program's file (Kubernetes, GitHub Actions):
//!   only parsed as YAML.
//!
//! A marker may end with `; files: A, B`: the files the block names (a sub-agent's file, a
//! hook's program, `.mcp.json`), laid in the workspace from `tests/fixtures/docs/` when
//! they are there, else as a stand-in: an agent file for `.yaml`, a program that exits 0
//! for anything else.

mod support;

use std::process::Command;
use std::time::Duration;

use runner::testing::mock_server::Reply;
use serde_json::{Value, json};
use support::http::Api;
use support::{KEY, Ran, Test, root};

/// Setting this re-records the shipped cassettes instead of comparing with them.
const RECORD: &str = "RECORD_CASSETTES";

/// Where an example is run.
enum Workspace {
    /// The repository's root (a copy of these files of it).
    Repository(&'static [&'static str]),
    /// The git repository `examples/offline/workspace.sh` builds; the README's commands
    /// start in it, with `$repo` the repository's root.
    Wordcount,
}

/// How one agent file runs offline.
struct Case {
    /// The command after `runner`, as the README gives it, without `--replay`.
    args: &'static [&'static str],
    /// The cassette replayed, or `None` for a file with a scripted model.
    cassette: Option<&'static str>,
    workspace: Workspace,
    /// What the mock model answers when the cassette is recorded, in order.
    replies: Vec<Reply>,
    /// Paths of the repository present only while the cassette is recorded: the MCP servers
    /// it answers for on replay, when they are absent.
    servers: &'static [&'static str],
}

/// The agent file's case: how it runs offline. Adding an agent file to `examples/` or
/// `agents/` means adding its case here (a scripted model or a cassette), its test below
/// and its command to the README; `every_example_runs_offline` fails until then.
fn case(file: &str) -> Case {
    match file {
        "examples/quickstart.yaml" => Case {
            args: &["exec", "examples/quickstart.yaml"],
            cassette: None,
            workspace: Workspace::Repository(&["examples/quickstart.yaml", "README.md"]),
            replies: Vec::new(),
            servers: &[],
        },
        "examples/guardrails.yaml" => Case {
            args: &[
                "exec",
                "examples/guardrails.yaml",
                "--answers",
                "examples/offline/guardrails.answers",
            ],
            cassette: None,
            workspace: Workspace::Repository(&[
                "examples/guardrails.yaml",
                "examples/offline/guardrails.answers",
                "examples/hooks/quote-readme.sh",
                "examples/hooks/run-ended.sh",
                "README.md",
            ]),
            replies: Vec::new(),
            servers: &[],
        },
        "examples/handoff.yaml" => Case {
            args: &[
                "exec",
                "examples/handoff.yaml",
                "--input",
                "My agent stopped working after I upgraded runner. Can you help?",
            ],
            cassette: Some("examples/cassettes/handoff.jsonl"),
            workspace: Workspace::Repository(&[
                "examples/handoff.yaml",
                "examples/partials/engineering.yaml",
                "examples/partials/engineering-style.txt",
            ]),
            replies: vec![
                Reply::tool_call(
                    "transfer_to_engineering",
                    json!({"reason": "A technical problem after an upgrade."}),
                )
                .with_usage(402, 31),
                Reply::text(
                    "Sorry about that. Which version are you on now (`runner --version`), \
                     and what is the exact error message the run prints?",
                )
                .with_usage(391, 35),
            ],
            servers: &[],
        },
        "examples/middleware.yaml" => Case {
            args: &[
                "exec",
                "examples/middleware.yaml",
                "--input",
                "Who answers technical questions in the handoff example, and what are they told?",
            ],
            cassette: Some("examples/cassettes/middleware.jsonl"),
            workspace: Workspace::Repository(&[
                "examples/middleware.yaml",
                "examples/partials/engineering.yaml",
                "examples/partials/engineering-style.txt",
            ]),
            replies: vec![
                Reply::tool_call(
                    "search_files",
                    json!({"pattern": "include", "path": "examples/partials"}),
                )
                .with_usage(468, 24),
                Reply::tool_call(
                    "read_file",
                    json!({"path": "examples/partials/engineering-style.txt"}),
                )
                .with_usage(541, 26),
                Reply::text(
                    "The `engineering` agent (examples/partials/engineering.yaml). Its system \
                     prompt includes examples/partials/engineering-style.txt, which makes it a \
                     support engineer who asks for the exact error message and the version in use.",
                )
                .with_usage(603, 52),
            ],
            servers: &[],
        },
        "examples/structured-output.yaml" => Case {
            args: &[
                "exec",
                "examples/structured-output.yaml",
                "--var",
                "text=The update fixed every bug I reported. Thank you.",
            ],
            cassette: Some("examples/cassettes/structured-output.jsonl"),
            workspace: Workspace::Repository(&["examples/structured-output.yaml"]),
            replies: vec![
                Reply::text(r#"{"sentiment": "positive", "confidence": 0.94}"#).with_usage(97, 14),
            ],
            servers: &[],
        },
        "examples/xml-tools.yaml" => Case {
            args: &[
                "exec",
                "examples/xml-tools.yaml",
                "--input",
                "What is in examples/partials, and what is each file for?",
            ],
            cassette: Some("examples/cassettes/xml-tools.jsonl"),
            workspace: Workspace::Repository(&[
                "examples/xml-tools.yaml",
                "examples/partials/engineering.yaml",
                "examples/partials/engineering-style.txt",
            ]),
            replies: vec![
                Reply::text(
                    "<thinking>First, what is there.</thinking>\n\
                     <list_dir>\n<path>examples/partials</path>\n</list_dir>",
                )
                .with_usage(733, 30),
                Reply::text("<read_file>\n<path>examples/partials/engineering.yaml</path>\n</read_file>")
                    .with_usage(842, 24),
                Reply::text(
                    "<attempt_completion>\n<result>\n\
                     examples/partials holds two files: engineering.yaml is the `engineering` \
                     agent, to which examples/handoff.yaml hands technical questions, and \
                     engineering-style.txt is the system prompt that agent includes.\n\
                     </result>\n</attempt_completion>",
                )
                .with_usage(951, 58),
            ],
            servers: &[],
        },
        "examples/plan.yaml" => Case {
            args: &["exec", "$repo/examples/plan.yaml", "--var", "since=v0.1.0"],
            cassette: Some("examples/cassettes/plan.jsonl"),
            workspace: Workspace::Wordcount,
            replies: vec![
                Reply::text(
                    json!({"steps": [
                        {"id": "1", "description": "List the commits since v0.1.0 (git log --oneline v0.1.0..HEAD)",
                         "tool": "shell", "depends_on": []},
                        {"id": "2", "description": "See what those commits changed (git diff v0.1.0 HEAD)",
                         "tool": "shell", "depends_on": ["1"]}
                    ]})
                    .to_string(),
                )
                .with_usage(310, 88),
                Reply::tool_call("shell", json!({"command": "git log --oneline v0.1.0..HEAD"}))
                    .with_usage(402, 20),
                Reply::text("Two commits: 318eb53 Add count_lines, 6a9ed55 Test words separated by tabs.")
                    .with_usage(470, 25),
                Reply::tool_call("shell", json!({"command": "git diff v0.1.0 HEAD"}))
                    .with_usage(520, 18),
                Reply::text(
                    "src/lib.rs gains `count_lines`, with a test, and a test that counts words \
                     separated by tabs.",
                )
                .with_usage(898, 27),
                Reply::text(
                    "## Since v0.1.0\n\n\
                     ### Added\n\
                     - `count_lines(text)`: the number of lines of a text (318eb53).\n\n\
                     ### Tests\n\
                     - Words separated by tabs (6a9ed55). The test fails: `count_words` splits \
                     on spaces only.",
                )
                .with_usage(960, 64),
            ],
            servers: &[],
        },
        "agents/ci-triage.yaml" => Case {
            args: &["exec", "$repo/agents/ci-triage.yaml", "--var", "log=ci.log"],
            cassette: Some("examples/cassettes/ci-triage.jsonl"),
            workspace: Workspace::Wordcount,
            replies: vec![
                // react: a reasoning call, then an action call, per step.
                Reply::text("The log names the first failure; I read it first.").with_usage(402, 14),
                Reply::tool_call("read_file", json!({"path": "ci.log"})).with_usage(640, 18),
                Reply::text(
                    "tests::counts_words_separated_by_tabs failed at src/lib.rs:29: count_words \
                     found 1 word in three separated by tabs. I read count_words.",
                )
                .with_usage(1010, 37),
                Reply::tool_call("read_file", json!({"path": "src/lib.rs", "limit": 6}))
                    .with_usage(1090, 24),
                Reply::text(
                    "count_words splits on ' ' only, so a tab does not separate words. I can answer.",
                )
                .with_usage(1180, 22),
                Reply::text(
                    json!({
                        "failing_step": "cargo test --locked: tests::counts_words_separated_by_tabs",
                        "cause": "count_words splits the text on spaces only (text.split(' ')), so \
                                  \"one\\ttwo\\tthree\" is one word; the new test expects 3.",
                        "suggested_fix": "Count text.split_whitespace() in count_words (src/lib.rs:5).",
                        "confidence": "high"
                    })
                    .to_string(),
                )
                .with_usage(1260, 70),
            ],
            servers: &[],
        },
        "agents/code-reviewer.yaml" => Case {
            args: &["exec", "$repo/agents/code-reviewer.yaml"],
            cassette: Some("examples/cassettes/code-reviewer.jsonl"),
            workspace: Workspace::Wordcount,
            replies: vec![
                Reply::tool_call("shell", json!({"command": "git diff main"})).with_usage(980, 20),
                // No `paths`: the tool's prompt must do without the optional parameter.
                Reply::tool_call(
                    "explore",
                    json!({"question": "Where is longest_word called, and which tests cover it?"}),
                )
                .with_usage(1240, 30),
                // The explorer sub-agent, on the caller's model.
                Reply::tool_call("search_files", json!({"pattern": "longest_word", "path": "src"}))
                    .with_usage(330, 22),
                Reply::text(
                    "- src/lib.rs:14 `longest_word`: defined there, called nowhere else.\n\
                     - src/lib.rs `mod tests`: no test calls it.",
                )
                .with_usage(420, 30),
                Reply::text(
                    json!({
                        "verdict": "request_changes",
                        "comments": [
                            {"file": "src/lib.rs", "line": 15,
                             "comment": "`max_by_key` is `None` for an empty or blank text, so \
                                         `unwrap` panics on user input: return `Option<&str>`."},
                            {"file": "src/lib.rs", "line": 14,
                             "comment": "No test covers `longest_word`; add one, with an empty text."}
                        ]
                    })
                    .to_string(),
                )
                .with_usage(1400, 96),
            ],
            servers: &[],
        },
        "agents/explorer.yaml" => Case {
            args: &[
                "exec",
                "$repo/agents/explorer.yaml",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "--input",
                "Where are words counted, and is it tested?",
            ],
            cassette: Some("examples/cassettes/explorer.jsonl"),
            workspace: Workspace::Wordcount,
            replies: vec![
                Reply::tool_call("search_files", json!({"pattern": "count_words", "path": "src"}))
                    .with_usage(318, 22),
                Reply::text(
                    "- src/lib.rs:4 `count_words`: splits the text on spaces and counts the \
                     non-empty pieces.\n\
                     - src/lib.rs:24 and :34: the tests `counts_words` and \
                     `counts_words_separated_by_tabs` call it.",
                )
                .with_usage(415, 48),
            ],
            servers: &[],
        },
        // Its scripted model, and the MCP server's tools and answers, from the cassette: the
        // replay needs neither the server nor Node.
        "examples/mcp.yaml" => Case {
            args: &["exec", "examples/mcp.yaml"],
            cassette: Some("examples/cassettes/mcp.jsonl"),
            workspace: Workspace::Repository(&["examples/mcp.yaml"]),
            replies: Vec::new(),
            servers: &["tests/mcp-server"],
        },
        other => panic!(
            "{other} has no offline run: give it a case in tests/examples.rs (a scripted model \
             or a cassette), a test, and its command in the README"
        ),
    }
}

impl Case {
    /// The command as the README prints it.
    fn line(&self) -> String {
        let mut words: Vec<String> = self.args.iter().map(|arg| quoted(arg)).collect();
        if let Some(cassette) = self.cassette {
            words.push("--replay".into());
            words.push(match self.workspace {
                Workspace::Repository(_) => cassette.to_string(),
                Workspace::Wordcount => format!("$repo/{cassette}"),
            });
        }
        format!("runner {}", words.join(" "))
    }

    /// A fresh workspace laid out for the run.
    fn workspace(&self) -> Test {
        let test = Test::new()
            // Not the person's git or CI settings: the runs must be the same everywhere.
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GITHUB_REPOSITORY");
        match self.workspace {
            Workspace::Repository(files) => files.iter().fold(test, |test, f| test.repo_path(f)),
            Workspace::Wordcount => {
                let status = Command::new("sh")
                    .arg(root().join("examples/offline/workspace.sh"))
                    .arg(test.path(""))
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .status()
                    .expect("sh runs examples/offline/workspace.sh");
                assert!(status.success(), "examples/offline/workspace.sh failed");
                test
            }
        }
    }

    /// The arguments with `$repo` replaced by the repository's root.
    fn args(&self, extra: &[&str]) -> Vec<String> {
        let repo = root().display().to_string();
        self.args
            .iter()
            .chain(extra)
            .map(|arg| arg.replace("$repo", &repo))
            .collect()
    }

    /// The path the command gives for a file of the repository.
    fn repository_path(&self, path: &str) -> String {
        match self.workspace {
            Workspace::Repository(_) => path.to_string(),
            Workspace::Wordcount => root().join(path).display().to_string(),
        }
    }
}

/// `arg` as a shell word in the README: in double quotes when it has spaces.
fn quoted(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=$".contains(c);
    if arg.chars().all(plain) {
        return arg.to_string();
    }
    assert!(
        !arg.contains(['"', '\\', '`', '$', '!']),
        "{arg:?} needs more than double quotes in the README"
    );
    format!("\"{arg}\"")
}

/// The command the README gives for `file`, ready to run (with `--run-dir run`), its
/// cassette checked against a new recording first. The run must not reach any model: the
/// keys are unset and the base URLs lead nowhere.
fn offline(file: &str) -> Test {
    let case = case(file);
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let line = case.line();
    assert!(
        readme.contains(&line),
        "the README does not give the command that runs {file} offline:\n{line}"
    );
    let Some(cassette) = case.cassette else {
        let args = case.args(&["--run-dir", "run"]);
        return case.workspace().command_vec(args);
    };
    record(&case, cassette);
    let test = case.workspace();
    let test = match case.workspace {
        Workspace::Repository(_) => test.repo_path(cassette),
        Workspace::Wordcount => test,
    };
    let replay = case.repository_path(cassette);
    let args = case.args(&["--replay", &replay, "--run-dir", "run"]);
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_HOST",
    ]
    .iter()
    .fold(test, |test, key| test.env_remove(key))
    .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    .env("OLLAMA_HOST", "127.0.0.1:9")
    .command_vec(args)
}

/// Records the case's cassette against the mock model and compares it with the shipped
/// one (or, with `RECORD_CASSETTES` set, writes it there).
fn record(case: &Case, cassette: &str) {
    let test = case
        .servers
        .iter()
        .fold(case.workspace(), |test, path| test.repo_path(path));
    let url = test.mock_url();
    let args = case.args(&["--record", "recorded.jsonl", "--run-dir", "run"]);
    let test = case
        .replies
        .iter()
        .cloned()
        .fold(test, |test, reply| test.reply(reply))
        .env("OPENAI_BASE_URL", &format!("{url}/v1"))
        .env("ANTHROPIC_BASE_URL", &url)
        .env("OLLAMA_HOST", &url)
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY)
        .any_stderr()
        .command_vec(args);
    let ran = test.run();
    assert_eq!(
        ran.requests().len(),
        case.replies.len(),
        "the recording did not use every reply of the case"
    );
    let recorded = ran.read("recorded.jsonl");
    let shipped_path = root().join(cassette);
    if std::env::var_os(RECORD).is_some() {
        std::fs::create_dir_all(shipped_path.parent().unwrap()).unwrap();
        std::fs::write(&shipped_path, &recorded).unwrap();
        return;
    }
    let shipped = std::fs::read_to_string(&shipped_path).unwrap_or_default();
    let rerecord =
        format!("re-record it with `{RECORD}=1 cargo test --test examples` and review the change");
    for (number, (was, now)) in shipped.lines().zip(recorded.lines()).enumerate() {
        assert_eq!(
            was,
            now,
            "line {} of {cassette} is no longer what the run records: {rerecord}",
            number + 1
        );
    }
    assert_eq!(
        shipped.lines().count(),
        recorded.lines().count(),
        "{cassette} does not have as many exchanges as the run records: {rerecord}"
    );
}

/// The exchanges of a shipped cassette.
fn exchanges(cassette: &str) -> Vec<Value> {
    std::fs::read_to_string(root().join(cassette))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The names of the tools the run called, in order, with whether each succeeded.
fn tool_calls(ran: &Ran) -> Vec<(String, bool)> {
    ran.events_of("agent.tool.execution.completed")
        .iter()
        .map(|e| {
            (
                e["data"]["toolName"].as_str().unwrap().to_string(),
                e["data"]["result"]["success"] == true,
            )
        })
        .collect()
}

/// The input of the run's `n`th tool call.
fn tool_input(ran: &Ran, n: usize) -> Value {
    ran.events_of("agent.tool.execution.started")[n]["data"]["input"].clone()
}

/// What the run's `n`th tool call returned.
fn tool_data(ran: &Ran, n: usize) -> Value {
    ran.events_of("agent.tool.execution.completed")[n]["data"]["result"]["data"].clone()
}

fn ok(names: &[&str]) -> Vec<(String, bool)> {
    names.iter().map(|name| (name.to_string(), true)).collect()
}

#[test]
fn quickstart() {
    let ran = offline("examples/quickstart.yaml")
        .stdout("This project is `runner`, a declarative agent runner.\n")
        .run();
    assert_eq!(tool_calls(&ran), ok(&["read_file"]));
    assert_eq!(
        tool_input(&ran, 0),
        json!({"path": "README.md", "limit": 5})
    );
    assert!(tool_data(&ran, 0).as_str().unwrap().starts_with("# runner"));
}

#[test]
fn guardrails() {
    let ran = offline("examples/guardrails.yaml")
        .stdout("Wrote notes/release.md. Rewriting README.md and pushing were not allowed.\n")
        .run();
    // Denied calls finish first: compare as a set.
    let mut calls = tool_calls(&ran);
    calls.sort();
    assert_eq!(
        calls,
        [
            ("read_file", true),
            ("shell", false),
            ("write_file", false),
            ("write_file", true)
        ]
        .map(|(name, ok)| (name.to_string(), ok))
    );
    assert!(ran.path("notes/release.md").exists());
    assert!(
        ran.read("README.md").starts_with("# runner"),
        "README.md is untouched"
    );
    let denied: Vec<Value> = ran
        .events_of("agent.tool.permission.decided")
        .into_iter()
        .filter(|e| e["data"]["decision"] == "deny")
        .map(|e| e["data"]["by"].clone())
        .collect();
    assert_eq!(denied, [json!("answers"), json!("rule")]);
    let read = ran
        .events_of("agent.tool.execution.completed")
        .into_iter()
        .find(|e| e["data"]["toolName"] == "read_file")
        .unwrap();
    let text = read["data"]["result"]["data"].as_str().unwrap().to_string();
    assert!(text.ends_with("quote it, do not rewrite it."), "{text}");
    assert_eq!(
        ran.read("run/hooks.log").lines().last(),
        Some("guardrails run ended: completed")
    );
}

#[test]
fn mcp() {
    let ran = offline("examples/mcp.yaml")
        .stdout("The server says 19 + 23 = 42.\n")
        .run();
    assert!(
        !ran.path("tests/mcp-server").exists(),
        "the server is absent"
    );
    assert_eq!(tool_calls(&ran), ok(&["ev_get-sum"]));
    assert_eq!(tool_data(&ran, 0), "The sum of 19 and 23 is 42.");
}

#[test]
fn handoff() {
    let ran = offline("examples/handoff.yaml")
        .stdout(
            "Sorry about that. Which version are you on now (`runner --version`), and what is \
             the exact error message the run prints?\n",
        )
        .run();
    let handoffs = ran.events_of("agent.handoff");
    assert_eq!(handoffs.len(), 1);
    assert_eq!(handoffs[0]["data"]["from"], "support-triage");
    assert_eq!(handoffs[0]["data"]["to"], "engineering");
    assert_eq!(handoffs[0]["data"]["toolName"], "transfer_to_engineering");
    // The target's system prompt is the partial, with the file it includes.
    let cassette = exchanges("examples/cassettes/handoff.jsonl");
    let system = cassette[1]["request"]["system"].as_str().unwrap();
    assert!(system.contains("Ask for the exact error message and the version in use."));
}

#[test]
fn middleware() {
    let ran = offline("examples/middleware.yaml")
        .stdout_contains("The `engineering` agent (examples/partials/engineering.yaml).")
        // `logging`: a line on stderr per model call.
        .stderr_contains("[runner] long-session step 1: model call with 1 messages\n")
        .stderr_contains("[runner] long-session step 3: 0 tool call(s), 655 tokens in ")
        .run();
    assert_eq!(tool_calls(&ran), ok(&["search_files", "read_file"]));
    assert!(
        tool_data(&ran, 0)
            .as_str()
            .unwrap()
            .contains("examples/partials/engineering.yaml:6:")
    );
    assert!(
        tool_data(&ran, 1)
            .as_str()
            .unwrap()
            .starts_with("You are a support engineer.")
    );
    // `pricing` gives the run a cost.
    let result = ran.result();
    assert_eq!(result["llm_calls"], 3);
    assert!(result["usage"]["cost_usd"].as_f64().unwrap() > 0.0);
}

#[test]
fn structured_output() {
    let ran = offline("examples/structured-output.yaml")
        .stdout("{\n  \"sentiment\": \"positive\",\n  \"confidence\": 0.94\n}\n")
        .run();
    assert_eq!(
        ran.result()["structured"],
        json!({"sentiment": "positive", "confidence": 0.94})
    );
    let cassette = exchanges("examples/cassettes/structured-output.jsonl");
    assert_eq!(
        cassette[0]["request"]["messages"][0]["content"],
        "Classify: The update fixed every bug I reported. Thank you."
    );
    assert!(cassette[0]["request"]["response_format"].is_object());
}

#[test]
fn xml_tools() {
    let ran = offline("examples/xml-tools.yaml")
        .stdout_contains(
            "examples/partials holds two files: engineering.yaml is the `engineering` agent",
        )
        .run();
    assert_eq!(tool_calls(&ran), ok(&["list_dir", "read_file"]));
    assert_eq!(tool_input(&ran, 0), json!({"path": "examples/partials"}));
    let listing = tool_data(&ran, 0);
    let listed: Vec<&str> = listing
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["engineering-style.txt", "engineering.yaml"]);
    // The calls were XML in the model's text: no tools went to the model.
    for exchange in exchanges("examples/cassettes/xml-tools.jsonl") {
        assert!(
            exchange["request"]["tools"]
                .as_array()
                .is_none_or(Vec::is_empty)
        );
        assert!(
            exchange["request"]["system"]
                .as_str()
                .unwrap()
                .contains("### list_dir")
        );
    }
}

#[test]
fn plan() {
    let ran = offline("examples/plan.yaml")
        .stdout_contains("- `count_lines(text)`: the number of lines of a text (318eb53).")
        .run();
    let plans = ran.events_of("agent.plan.updated");
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["data"]["plan"].as_array().unwrap().len(), 2);
    assert_eq!(tool_calls(&ran), ok(&["shell", "shell"]));
    assert_eq!(
        tool_data(&ran, 0)["stdout"],
        "6a9ed55 Test words separated by tabs\n318eb53 Add count_lines\n"
    );
    assert!(
        tool_data(&ran, 1)["stdout"]
            .as_str()
            .unwrap()
            .contains("+pub fn count_lines(text: &str) -> usize {")
    );
    let completed = ran
        .events_of("agent.plan.step.status.changed")
        .iter()
        .filter(|e| e["data"]["status"] == "completed")
        .count();
    assert_eq!(completed, 2);
}

#[test]
fn ci_triage() {
    let ran = offline("agents/ci-triage.yaml").run();
    let triage = ran.json();
    assert_eq!(
        triage["failing_step"],
        "cargo test --locked: tests::counts_words_separated_by_tabs"
    );
    assert_eq!(triage["confidence"], "high");
    assert_eq!(ran.result()["structured"], triage);
    assert_eq!(tool_calls(&ran), ok(&["read_file", "read_file"]));
    assert_eq!(tool_input(&ran, 0), json!({"path": "ci.log"}));
    assert!(
        tool_data(&ran, 0)
            .as_str()
            .unwrap()
            .contains("panicked at src/lib.rs:29:9")
    );
    assert_eq!(ran.events_of("agent.reasoning.created").len(), 3);
}

#[test]
fn code_reviewer() {
    let ran = offline("agents/code-reviewer.yaml").run();
    let review = ran.json();
    assert_eq!(review["verdict"], "request_changes");
    assert_eq!(review["comments"][0]["file"], "src/lib.rs");
    assert_eq!(review["comments"][0]["line"], 15);
    assert_eq!(
        tool_calls(&ran),
        ok(&["shell", "search_files", "explore"]),
        "the explorer's search ends before the explore call it is part of"
    );
    assert_eq!(tool_input(&ran, 0), json!({"command": "git diff main"}));
    assert!(
        tool_data(&ran, 0)["stdout"]
            .as_str()
            .unwrap()
            .contains("+    text.split_whitespace().max_by_key(|word| word.len()).unwrap()")
    );
    // The model left out `paths`, and the explore tool's prompt did without it.
    let cassette = exchanges("examples/cassettes/code-reviewer.jsonl");
    assert_eq!(
        cassette[2]["request"]["messages"][0]["content"],
        "Find the code relevant to: Where is longest_word called, and which tests cover it?\n\n"
    );
    let search = &ran.events_of("agent.tool.execution.completed")[1];
    assert_eq!(search["depth"], 1, "the explorer sub-agent searched");
    assert!(
        tool_data(&ran, 2)
            .as_str()
            .unwrap()
            .contains("called nowhere else")
    );
}

#[test]
fn explorer() {
    let ran = offline("agents/explorer.yaml")
        .stdout_contains("- src/lib.rs:4 `count_words`")
        .run();
    assert_eq!(tool_calls(&ran), ok(&["search_files"]));
    let found = tool_data(&ran, 0);
    let found = found.as_str().unwrap();
    assert!(found.contains("src/lib.rs:4:"), "{found}");
    assert!(found.contains("src/lib.rs:34:"), "{found}");
}

/// Every agent file of `examples/` and `agents/` has an offline run: a case above, a test
/// that runs it, a scripted model or a shipped cassette, and its command in the README. A
/// new example without one fails here.
#[test]
fn every_example_runs_offline() {
    let source = std::fs::read_to_string(root().join("tests/examples.rs")).unwrap();
    let mut cassettes = Vec::new();
    for dir in ["examples", "agents"] {
        let mut files: Vec<String> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
            // Test files (`runner test`), not agents: tests/agent_tests.rs runs them.
            .filter(|name| !runner::spec::paths::is_test_file(name))
            .map(|name| format!("{dir}/{name}"))
            .collect();
        files.sort();
        for file in files {
            let case = case(&file);
            assert!(
                source.contains(&format!("offline(\"{file}\")")),
                "{file} has a case in tests/examples.rs but no test runs it"
            );
            match case.cassette {
                None => {
                    let text = std::fs::read_to_string(root().join(&file)).unwrap();
                    assert!(
                        text.contains("provider: scripted"),
                        "{file} has no cassette, so it needs a scripted model"
                    );
                }
                Some(cassette) => cassettes.push(cassette.to_string()),
            }
        }
    }
    // Nothing in a cassette is a secret or belongs to one machine. A key's prefix starts a
    // word ("task-based" is no key).
    let key = regex::Regex::new(r"\bsk-").unwrap();
    for cassette in &cassettes {
        let text = std::fs::read_to_string(root().join(cassette))
            .unwrap_or_else(|e| panic!("{cassette}: {e}"));
        for secret in [KEY, "Bearer", &root().display().to_string()] {
            assert!(!text.contains(secret), "{cassette} contains {secret:?}");
        }
        assert!(!key.is_match(&text), "{cassette} contains a key's `sk-`");
    }
    // Every shipped cassette is one of them.
    for entry in std::fs::read_dir(root().join("examples/cassettes")).unwrap() {
        let name = format!(
            "examples/cassettes/{}",
            entry.unwrap().file_name().to_string_lossy()
        );
        assert!(cassettes.contains(&name), "{name} is no example's cassette");
    }
}

/// A fenced block of a Markdown page.
struct Block {
    /// `page:line` of the opening fence.
    at: String,
    lang: String,
    /// What the HTML comment on the line before the fence says after `check:`.
    marker: Option<String>,
    text: String,
}

/// The fenced blocks of `page` (a path from the repository's root).
fn blocks(page: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(page)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let Some(lang) = lines[at].strip_prefix("```") else {
            at += 1;
            continue;
        };
        let end = (at + 1..lines.len())
            .find(|&n| lines[n].starts_with("```"))
            .unwrap_or_else(|| panic!("{page}:{}: a fence never closed", at + 1));
        let marker = at
            .checked_sub(1)
            .and_then(|before| lines[before].trim().strip_prefix("<!-- check:"))
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(|marker| marker.trim().to_string());
        found.push(Block {
            at: format!("{page}:{}", at + 1),
            lang: lang.trim().to_string(),
            marker,
            text: lines[at + 1..end]
                .iter()
                .map(|line| format!("{line}\n"))
                .collect(),
        });
        at = end + 1;
    }
    found
}

/// The pages whose blocks are checked: the README and `docs/*.md`.
fn pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    pages.insert(0, "README.md".into());
    pages
}

/// A workspace with the files a block names (`; files: A, B`).
fn with_files(files: &[&str]) -> Test {
    files.iter().fold(Test::new(), |test, file| {
        let fixture = root().join("tests/fixtures/docs").join(file);
        if fixture.exists() {
            return test.file(file, &std::fs::read_to_string(fixture).unwrap());
        }
        if file.ends_with(".yaml") {
            let name = file.trim_end_matches(".yaml").replace(['/', '.'], "");
            return test.file(file, &format!("name: {name}\nprompt: Hi\n"));
        }
        test.executable(file, "#!/bin/sh\nexit 0\n")
    })
}

/// `text` with `key: value` on a line of its own before it, unless it has that top-level
/// key.
fn with_key(text: &str, key: &str, value: &str) -> String {
    match text
        .lines()
        .any(|line| line.starts_with(&format!("{key}:")))
    {
        true => text.to_string(),
        false => format!("{key}: {value}\n{text}"),
    }
}

/// Keys of an agent file made a whole one: `name`, `model` and `prompt` added where absent.
fn whole_agent(keys: &str) -> String {
    let text = with_key(keys, "prompt", "Hi");
    let text = with_key(&text, "model", "openai/gpt-4o-mini");
    with_key(&text, "name", "docs")
}

/// What is wrong with a YAML block, checked as its marker says (`None`: it holds).
fn check_yaml_block(block: &Block) -> Option<String> {
    let marker = block.marker.as_deref().unwrap_or("agent");
    let (kind, files) = match marker.split_once("; files:") {
        Some((kind, files)) => (kind.trim(), files.split(',').map(str::trim).collect()),
        None => (marker, Vec::new()),
    };
    let test = with_files(&files);
    let (test, command): (Test, &[&str]) = match kind {
        "agent" => (
            test.file("agent.yaml", &block.text),
            &["validate", "agent.yaml"],
        ),
        "agent keys" => (
            test.file("agent.yaml", &whole_agent(&block.text)),
            &["validate", "agent.yaml"],
        ),
        "tools" => (
            test.file(
                "agent.yaml",
                &whole_agent(&format!("tools:\n{}", block.text)),
            ),
            &["validate", "agent.yaml"],
        ),
        "test file" => (
            test.file("docs.test.yaml", &block.text),
            &["test", "docs.test.yaml"],
        ),
        "part of a test file" => (
            test.file(
                "docs.test.yaml",
                &with_key(&block.text, "agent", "agent.yaml"),
            ),
            &[
                "test",
                "docs.test.yaml",
                "--filter",
                "no case has this name",
            ],
        ),
        "answers" => (
            test.file("answers.yaml", &block.text).file(
                "agent.yaml",
                "name: docs\nmodel: { provider: scripted, script: [{ text: done }] }\nprompt: Hi\n",
            ),
            &[
                "exec",
                "agent.yaml",
                "--answers",
                "answers.yaml",
                "--run-dir",
                "run",
            ],
        ),
        "project file" => (
            test.file("runner.yaml", &block.text),
            &["validate", "runner.yaml"],
        ),
        "shapes only" | "not runner's" => {
            return runner::spec::yaml::load_yaml(&block.text)
                .err()
                .map(|errors| format!("{}: not YAML: {}", block.at, errors[0].message));
        }
        other => return Some(format!("{}: unknown marker `check: {other}`", block.at)),
    };
    let ran = test
        .env("OPENAI_API_KEY", KEY)
        .command_vec(command.iter().map(|arg| arg.to_string()).collect())
        .status_any()
        .any_stderr()
        .run();
    (ran.code != 0).then(|| {
        format!(
            "{} ({kind}): `runner {}` exited {}\n{}{}",
            block.at,
            command.join(" "),
            ran.code,
            ran.stdout,
            ran.stderr
        )
    })
}

/// Every YAML block of the docs holds, as its marker says (see the module's doc): a doc
/// that stops being true fails here, with the page and line of each block that does not.
#[test]
fn every_yaml_block_of_the_docs_holds() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for page in pages() {
        for block in blocks(&page).into_iter().filter(|b| b.lang == "yaml") {
            checked += 1;
            wrong.extend(check_yaml_block(&block));
        }
    }
    assert!(checked >= 15, "only {checked} YAML blocks found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The `runner` lines of the README's `sh` blocks, without their comments.
fn readme_commands() -> Vec<String> {
    blocks("README.md")
        .into_iter()
        .filter(|block| block.lang == "sh")
        .flat_map(|block| {
            block
                .text
                .lines()
                .map(|line| line.split("  #").next().unwrap().trim().to_string())
                .filter(|line| line.starts_with("runner "))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every `runner` command of the README runs offline: an example's command is run by its
/// test above; the others run here, from a copy of what they read.
#[test]
fn every_readme_command_runs_offline() {
    let mut examples = Vec::new();
    for dir in ["examples", "agents"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".yaml") && !runner::spec::paths::is_test_file(&name) {
                examples.push(case(&format!("{dir}/{name}")).line());
            }
        }
    }
    for command in readme_commands() {
        if examples.contains(&command) {
            continue;
        }
        match command.as_str() {
            "runner validate examples agents" => {
                Test::new()
                    .repo_path("examples")
                    .repo_path("agents")
                    .repo_path("schemas")
                    .command(["validate", "examples", "agents"])
                    .run();
            }
            "runner serve examples" => serves_the_examples(),
            other => panic!(
                "the README's `{other}` is run by no test: give it a case in tests/examples.rs \
                 (an example's), or run it in every_readme_command_runs_offline"
            ),
        }
    }
}

/// `runner serve examples`, as the README's quickstart says: every agent file of
/// `examples/` is served valid, and `quickstart` runs over HTTP with its scripted model.
fn serves_the_examples() {
    let mut running = Test::new()
        .repo_path("examples")
        .repo_path("schemas")
        .repo_path("README.md")
        .command_vec(
            ["serve", "examples", "--listen", "127.0.0.1:0"]
                .map(String::from)
                .to_vec(),
        )
        .any_stderr()
        .time_limit(Duration::from_secs(60))
        .spawn();
    let api = Api::new(running.listening_port());
    api.wait_up();
    let agents = api.get("/api/agents").json();
    let agents = agents.as_array().expect("GET /api/agents answers a list");
    let files = std::fs::read_dir(root().join("examples")).unwrap();
    let served = files
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") && !runner::spec::paths::is_test_file(name));
    for name in served {
        let listed = agents
            .iter()
            .find(|agent| agent["file"].as_str().unwrap().ends_with(&name));
        let agent = listed.unwrap_or_else(|| panic!("examples/{name} is not served: {agents:?}"));
        assert_eq!(agent["valid"], true, "examples/{name}: {agent}");
    }
    let started = api.post("/api/runs", &json!({"agent": "quickstart"}));
    assert_eq!(started.status, 201, "{}", started.body);
    let run = started.json()["run_id"].as_str().unwrap().to_string();
    let (_, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"completed"}"#);
    let result = api.get(&format!("/api/runs/{run}")).json();
    assert_eq!(
        result["output"],
        "This project is `runner`, a declarative agent runner."
    );
    running.kill();
}

/// Each line of the README's command summary names a subcommand whose `--help` shows every
/// flag the line does (`runner batch status|results` in the help of those subcommands).
#[test]
fn every_command_the_readme_lists_has_the_flags_it_shows() {
    let summary = blocks("README.md")
        .into_iter()
        .find(|block| block.lang.is_empty() && block.text.starts_with("runner init"))
        .expect("the README's command summary");
    let flag = regex::Regex::new(r"--[a-z][a-z-]*").unwrap();
    for line in summary.text.lines() {
        let line = line.split("  #").next().unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        // The subcommand's, and those of the words that may be its own subcommands
        // (`status|results`, `[list | show ID | prune --keep N]`).
        let mut helps = vec![vec![words[1].to_string()]];
        let subcommands = words[2..]
            .iter()
            .flat_map(|word| word.split('|'))
            .map(|word| word.trim_matches(['[', ']']))
            .filter(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase()));
        helps.extend(subcommands.map(|sub| vec![words[1].to_string(), sub.to_string()]));
        let mut shown = String::new();
        for args in helps {
            let ran = Test::new()
                .command_vec(args.into_iter().chain(["--help".to_string()]).collect())
                .status_any()
                .any_stderr()
                .run();
            if ran.code == 0 {
                shown.push_str(&ran.stdout);
            }
        }
        assert!(
            !shown.is_empty(),
            "`{line}`: `runner {} --help` failed",
            words[1]
        );
        for flag in flag.find_iter(line).map(|m| m.as_str()) {
            assert!(shown.contains(flag), "`{line}`: its help has no {flag}");
        }
    }
}
