//! `runner batch` end to end: the real binary against the mock model server, each input a
//! child run, the envelopes read back from the batch directory's `results.jsonl`.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::{Ran, Test, wait_until};

/// The agent of most tests: one input, echoed by the model (see [`echo`]).
/// The batch most tests run: `agent.yaml` over `inputs.jsonl`, in the directory `out`.
const BATCH: [&str; 6] = [
    "batch",
    "agent.yaml",
    "--inputs",
    "inputs.jsonl",
    "--batch-dir",
    "out",
];

/// [`BATCH`] with more options.
fn batch_with(options: &[&str]) -> Vec<String> {
    BATCH.iter().chain(options).map(|a| a.to_string()).collect()
}

const ECHO_AGENT: &str =
    "inputs:\n  n: { type: integer, required: true }\nprompt: \"Echo {{ n }}\"\n";

/// The mock model's answer to an echo agent: the prompt back. Routed, since the runs of a
/// batch ask in no fixed order.
fn echo(request: &MockRequest) -> Option<MockResponse> {
    let prompt = request.last_user_text()?;
    Some(MockResponse::reply(Reply::text(format!("said: {prompt}"))))
}

/// The envelopes of `results.jsonl` in a batch directory, by line: the last one of each.
fn results(ran: &Ran, batch_dir: &str) -> BTreeMap<u64, Value> {
    let text = ran.read(&format!("{batch_dir}/results.jsonl"));
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("each line is JSON"))
        .map(|envelope| (envelope["input"]["line"].as_u64().unwrap(), envelope))
        .collect()
}

fn lines_of(count: u64, line: impl Fn(u64) -> String) -> String {
    (1..=count).map(|n| line(n) + "\n").collect()
}

#[test]
fn two_hundred_inputs_eight_at_a_time_each_leave_one_envelope() {
    let inputs = lines_of(200, |n| match n % 2 {
        0 => json!({"id": format!("item-{n}"), "n": n}).to_string(),
        _ => json!({"n": n}).to_string(),
    });
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", &inputs)
        .route(echo)
        .command([
            "batch",
            "agent.yaml",
            "--inputs",
            "inputs.jsonl",
            "-j",
            "8",
            "--batch-id",
            "big",
        ])
        .stdout_contains("batch big · 200 inputs · 200 completed · ")
        .stdout_contains("results: .runner/batches/big/results.jsonl")
        .run();
    let text = ran.read(".runner/batches/big/results.jsonl");
    assert_eq!(text.lines().count(), 200, "one envelope per input");
    let by_line = results(&ran, ".runner/batches/big");
    assert_eq!(
        by_line.keys().copied().collect::<Vec<_>>(),
        (1..=200).collect::<Vec<_>>()
    );
    for (line, envelope) in &by_line {
        assert_eq!(envelope["status"], "completed", "{envelope}");
        assert_eq!(envelope["exit_code"], 0);
        assert_eq!(envelope["output"], format!("said: Echo {line}"));
        assert_eq!(envelope["session_id"], format!("big-{line}"));
        let id = match line % 2 {
            0 => format!("item-{line}"),
            _ => line.to_string(),
        };
        assert_eq!(envelope["input"]["id"], id);
    }
    assert_eq!(ran.requests().len(), 200);
}

/// An agent that appends a line per input through `append.sh` ([`APPEND`]).
const APPENDING_AGENT: &str = "inputs:\n  n: { type: integer, required: true }\nprompt: \"Append {{ n }}\"\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n";

/// A tool that takes a moment, then appends its argument to `side-effects.log`.
const APPEND: &str = "#!/bin/sh\nsleep 0.05\necho \"$1\" >> side-effects.log\n";

/// Each input appends its line once through `shell`, then answers.
fn append_once(request: &MockRequest) -> Option<MockResponse> {
    let answered = request
        .conversation()
        .iter()
        .any(|message| message["role"] == "tool");
    let reply = match answered {
        true => Reply::text("appended"),
        false => {
            let prompt = request.last_user_text()?;
            let n = prompt.trim_start_matches("Append ");
            Reply::tool_call("shell", json!({"command": format!("./append.sh line-{n}")}))
        }
    };
    Some(MockResponse::reply(reply).chunk_delay(Duration::from_millis(10)))
}

/// `runner batch` of `agent.yaml` over `inputs.jsonl`, `jobs` at once, with batch id `id`.
fn batch_args<'a>(jobs: &'a str, id: &'a str) -> [&'a str; 8] {
    [
        "batch",
        "agent.yaml",
        "--inputs",
        "inputs.jsonl",
        "-j",
        jobs,
        "--batch-id",
        id,
    ]
}

/// A workspace with `inputs` inputs of [`APPENDING_AGENT`], running `batch`.
fn appending_batch(inputs: u64, batch: [&str; 8]) -> Test {
    Test::new()
        .agent(APPENDING_AGENT)
        .executable("append.sh", APPEND)
        .file(
            "inputs.jsonl",
            &lines_of(inputs, |n| json!({"n": n}).to_string()),
        )
        .route(append_once)
        .command(batch)
}

#[test]
fn a_batch_killed_midway_goes_on_when_run_again_and_no_side_effect_repeats() {
    const INPUTS: u64 = 40;
    let batch = batch_args("4", "crash");
    let running = appending_batch(INPUTS, batch).spawn();
    let results_path = running.path(".runner/batches/crash/results.jsonl");
    wait_until("five inputs finished", || {
        std::fs::read_to_string(&results_path).is_ok_and(|text| text.lines().count() >= 5)
    });
    let killed = running.kill();
    let before = results(&killed, ".runner/batches/crash");
    assert!(
        (before.len() as u64) < INPUTS,
        "killed midway: {} inputs had ended",
        before.len()
    );

    let ran = killed
        .then()
        .command(batch)
        .stdout_contains("batch crash · 40 inputs · 40 completed · ")
        .run();
    let after = results(&ran, ".runner/batches/crash");
    assert_eq!(after.len() as u64, INPUTS);
    assert!(after.values().all(|e| e["status"] == "completed"));
    for (line, envelope) in &before {
        assert_eq!(
            after[line]["run_id"], envelope["run_id"],
            "line {line} had ended: it is not run again"
        );
    }
    // Inputs that were running when the batch died were resumed: a second run directory.
    let resumed = (1..=INPUTS)
        .filter(|n| {
            ran.path(&format!(".runner/batches/crash/inputs/{n}/2"))
                .is_dir()
        })
        .count();
    eprintln!("crash test: {resumed} input(s) resumed");
    assert!(resumed >= 1, "no input was resumed");
    let log = ran.read("side-effects.log");
    let mut appended: Vec<&str> = log.lines().collect();
    let total = appended.len();
    appended.sort();
    appended.dedup();
    assert_eq!(appended.len(), total, "a call ran twice:\n{log}");
    assert!(total as u64 <= INPUTS, "{log}");
}

#[test]
fn an_interrupted_batch_stops_its_runs_ends_130_and_goes_on_when_run_again() {
    const INPUTS: u64 = 12;
    let batch = batch_args("2", "stop");
    let running = appending_batch(INPUTS, batch)
        .status(130)
        .stdout_contains("batch stop · ")
        .stderr_contains("interrupted; run the batch again (with --batch-id stop) to go on")
        .spawn();
    let results_path = running.path(".runner/batches/stop/results.jsonl");
    wait_until("two inputs finished", || {
        std::fs::read_to_string(&results_path).is_ok_and(|text| text.lines().count() >= 2)
    });
    running.interrupt();
    let stopped = running.wait();
    assert!(
        (results(&stopped, ".runner/batches/stop").len() as u64) < INPUTS,
        "{}",
        stopped.stdout
    );

    let ran = stopped.then().command(batch).status_any().run();
    let failed: Vec<_> = results(&ran, ".runner/batches/stop")
        .into_values()
        .filter(|e| e["status"] != "completed")
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(
        results(&ran, ".runner/batches/stop")
            .values()
            .all(|e| e["status"] == "completed")
    );
    let log = ran.read("side-effects.log");
    let mut appended: Vec<&str> = log.lines().collect();
    let total = appended.len();
    appended.sort();
    appended.dedup();
    assert_eq!(appended.len(), total, "a call ran twice:\n{log}");
}

#[test]
fn the_budget_stops_new_inputs_and_a_rerun_with_more_goes_on() {
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", &lines_of(10, |n| json!({"n": n}).to_string()))
        .route(|_| Some(MockResponse::reply(Reply::text("ok").with_usage(90, 10))))
        .command([
            "batch", "agent.yaml", "--inputs", "inputs.jsonl", "-j", "1", "--max-tokens", "250",
        ])
        .status(3)
        .stdout_contains("batch test-agent-inputs · 3 inputs · 3 completed · 7 not started · 300 tokens")
        .stderr_contains("--max-tokens reached: 300 tokens spent, the bound is 250; run the batch again with a higher bound (and --batch-id test-agent-inputs) to go on")
        .run();
    assert_eq!(results(&ran, ".runner/batches/test-agent-inputs").len(), 3);
    assert_eq!(ran.requests().len(), 3);

    let ran = ran
        .then()
        .route(|_| Some(MockResponse::reply(Reply::text("ok").with_usage(90, 10))))
        .command([
            "batch",
            "agent.yaml",
            "--inputs",
            "inputs.jsonl",
            "-j",
            "1",
            "--max-tokens",
            "5000",
        ])
        .stdout_contains("batch test-agent-inputs · 10 inputs · 10 completed · 1000 tokens")
        .run();
    assert_eq!(results(&ran, ".runner/batches/test-agent-inputs").len(), 10);
    assert_eq!(
        ran.requests().len(),
        10,
        "the first three were not run again"
    );
}

#[test]
fn bad_lines_get_an_error_envelope_each_and_the_batch_goes_on() {
    let inputs = [
        r#"{"n": 1}"#,
        "not json",
        "[1, 2]",
        r#"{"m": 3}"#,
        "",
        r#"{"n": "five"}"#,
        r#"{"id": {"a": 1}, "n": 7}"#,
        r#"{}"#,
        r#"{"id": "last", "n": 9}"#,
    ]
    .join("\n");
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", &inputs)
        .route(echo)
        .command(BATCH)
        .status(2)
        .stdout_contains("batch test-agent-inputs · 8 inputs · 2 completed · 6 invalid · ")
        .run();
    let by_line = results(&ran, "out");
    let error = |line: u64| {
        let envelope = &by_line[&line];
        assert_eq!(envelope["status"], "invalid", "{envelope}");
        assert_eq!(envelope["exit_code"], 2);
        assert_eq!(envelope["error"]["code"], "invalid_input");
        envelope["error"]["message"].as_str().unwrap().to_string()
    };
    assert!(error(2).starts_with("line 2 is not JSON: "), "{}", error(2));
    assert_eq!(
        error(3),
        "line 3 is an array, not a JSON object of input values"
    );
    assert_eq!(error(4), "line 4: unknown input `m`; declared inputs: n");
    assert_eq!(
        error(6),
        "line 6: input `n` is an integer, but `\"five\"` is not"
    );
    assert_eq!(
        error(7),
        "line 7: `id` names the input and must be a non-empty string or an integer, not an object"
    );
    assert_eq!(error(8), "line 8: missing required input `n`");
    assert!(!by_line.contains_key(&5), "a blank line is no input");
    assert_eq!(by_line[&1]["status"], "completed");
    assert_eq!(by_line[&9]["status"], "completed");
    assert_eq!(by_line[&9]["input"]["id"], "last");
    assert_eq!(ran.requests().len(), 2, "bad lines never reach the model");
}

#[test]
fn an_agent_that_declares_id_gets_it_as_an_input() {
    let ran = Test::new()
        .agent("inputs:\n  id: { type: string, required: true }\nprompt: \"Look at {{ id }}\"\n")
        .file("inputs.jsonl", "{\"id\": \"issue-7\"}\n")
        .route(echo)
        .command(BATCH)
        .stdout_contains("1 completed")
        .run();
    assert_eq!(results(&ran, "out")[&1]["output"], "said: Look at issue-7");
}

#[test]
fn the_exit_code_is_the_most_severe_status_among_the_inputs() {
    let inputs = [r#"{"n": 1}"#, r#"{"n": 2}"#, "oops", r#"{"n": 4}"#].join("\n");
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", &inputs)
        .route(|request| match request.last_user_text()?.as_str() {
            "Echo 2" => Some(MockResponse::error(400, "this one is refused")),
            _ => echo(request),
        })
        .command(BATCH)
        .status(1)
        .stdout_contains("4 inputs · 2 completed · 1 failed · 1 invalid · ")
        .run();
    let by_line = results(&ran, "out");
    assert_eq!(by_line[&2]["status"], "failed");
    assert_eq!(by_line[&2]["exit_code"], 1);
    assert_eq!(by_line[&3]["status"], "invalid");
    // Run again, nothing runs: every input is over, and the exit code is the same.
    let again = ran
        .then()
        .command(BATCH)
        .status(1)
        .stdout_contains("4 inputs · 2 completed · 1 failed · 1 invalid · ")
        .run();
    assert_eq!(again.requests().len(), ran.requests().len());
}

#[test]
fn a_batch_of_another_agent_or_inputs_file_is_refused() {
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("other.yaml", "name: other\nmodel: $MODEL\nprompt: Hi\n")
        .file("inputs.jsonl", "{\"n\": 1}\n")
        .route(echo)
        .command([
            "batch",
            "agent.yaml",
            "--inputs",
            "inputs.jsonl",
            "--batch-id",
            "b",
        ])
        .stdout_contains("1 completed")
        .run();
    ran.then()
        .command([
            "batch",
            "other.yaml",
            "--inputs",
            "inputs.jsonl",
            "--batch-id",
            "b",
        ])
        .status(2)
        .stderr_contains("was started with the agent file ")
        .stderr_contains("give another --batch-id (or --batch-dir) for a new batch")
        .run();
}

#[test]
fn a_new_batch_directory_cannot_take_the_sessions_of_another_batch_of_the_same_id() {
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", "{\"n\": 1}\n")
        .route(echo)
        .command(BATCH)
        .stdout_contains("1 inputs · 1 completed")
        .run();
    let elsewhere = [
        BATCH[0],
        BATCH[1],
        BATCH[2],
        BATCH[3],
        BATCH[4],
        "elsewhere",
    ];
    ran.then()
        .command(elsewhere)
        .status(2)
        .stderr_contains("already names sessions in ")
        .stderr_contains("give this batch its own --batch-id")
        .run();
    let own_id = [&elsewhere[..], &["--batch-id", "second"]].concat();
    ran.then()
        .command_vec(own_id.iter().map(|a| a.to_string()).collect())
        .stdout_contains("1 inputs · 1 completed")
        .run();
}

#[test]
fn plain_progress_has_a_timestamped_line_per_input() {
    Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", "{\"n\": 1}\n{\"id\": \"two\", \"n\": \"x\"}\n")
        .route(echo)
        .command([
            "batch", "agent.yaml", "--inputs", "inputs.jsonl", "-j", "1", "--progress", "plain",
        ])
        .status(2)
        .stderr_contains("Z line 1: completed · 1 step · ")
        .stderr_contains("Z line 2 (two): invalid · error[invalid_input]: line 2: input `n` is an integer, but `\"x\"` is not")
        .stderr_contains(" — 2/2 finished · 1 done · 1 failed · 0 running · ")
        .run();
}

#[test]
fn model_runs_every_input_with_the_model_given() {
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", "{\"n\": 1}\n{\"n\": 2}\n")
        .route(echo)
        .command_vec(batch_with(&["--model", "openai/batch-model"]))
        .stdout_contains("2 inputs · 2 completed")
        .run();
    let models: Vec<Value> = ran
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, ["batch-model", "batch-model"]);
    Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", "{\"n\": 1}\n")
        .command_vec(batch_with(&["--model", "no-slash"]))
        .status(2)
        .stderr_contains("error: --model: ")
        .run();
}

#[test]
fn an_input_whose_session_completed_before_its_envelope_was_written_is_not_run_again() {
    let batch = batch_args("1", "late");
    let ran = appending_batch(3, batch)
        .stdout_contains("batch late · 3 inputs · 3 completed · ")
        .run();
    // The batch is killed (with its runs) just after line 2's session completed: neither
    // its run's result.json nor its envelope was written.
    let dir = ".runner/batches/late";
    let kept: String = ran
        .read(&format!("{dir}/results.jsonl"))
        .lines()
        .filter(|line| !line.starts_with("{\"input\":{\"line\":2,"))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(ran.path(&format!("{dir}/results.jsonl")), kept).unwrap();
    std::fs::remove_file(ran.path(&format!("{dir}/inputs/2/1/result.json"))).unwrap();

    let again = ran
        .then()
        .command(batch)
        .stdout_contains("batch late · 3 inputs · 3 completed · ")
        .run();
    let envelope = &results(&again, dir)[&2];
    assert_eq!(envelope["status"], "completed", "{envelope}");
    assert_eq!(envelope["output"], "appended", "{envelope}");
    assert!(
        envelope["warnings"][0]
            .as_str()
            .unwrap()
            .contains("rebuilt from session `late-2`"),
        "{envelope}"
    );
    assert!(!again.path(&format!("{dir}/inputs/2/2")).exists());
    assert_eq!(
        again.read("side-effects.log").matches("line-2\n").count(),
        1
    );
}

#[test]
fn a_batch_killed_every_second_with_its_runs_completes_every_input_once_when_run_again() {
    const INPUTS: u64 = 300;
    let batch = batch_args("4", "chaos");
    // Each round starts the batch, lets it run a second, and kills it with all its runs
    // (SIGKILL to its process group: nothing of it can save anything), until a round
    // finds that it had ended by itself.
    let mut running = appending_batch(INPUTS, batch)
        .own_process_group()
        .status_any()
        .any_stderr()
        .spawn();
    let mut kills = 0;
    let ended = loop {
        std::thread::sleep(Duration::from_secs(1));
        let ran = running.kill_group();
        if ran.code != -1 {
            break ran;
        }
        kills += 1;
        assert!(kills < 120, "the batch did not finish after {kills} kills");
        running = ran
            .then()
            .command(batch)
            .own_process_group()
            .status_any()
            .any_stderr()
            .spawn();
    };
    assert!(
        kills >= 3,
        "the batch ended before the chaos did much ({kills} kills): give it more inputs"
    );
    assert_eq!(ended.code, 0, "{}\n{}", ended.stdout, ended.stderr);
    assert!(
        ended
            .stdout
            .contains("batch chaos · 300 inputs · 300 completed · "),
        "{}",
        ended.stdout
    );
    let all = results(&ended, ".runner/batches/chaos");
    assert_eq!(all.len() as u64, INPUTS);
    for (n, envelope) in &all {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
    }
    let log = std::fs::read_to_string(ended.path("side-effects.log")).unwrap_or_default();
    let mut appended: Vec<&str> = log.lines().collect();
    let total = appended.len();
    appended.sort();
    appended.dedup();
    assert_eq!(appended.len(), total, "a call ran twice:\n{log}");
    let interrupted = ended
        .requests()
        .iter()
        .filter(|request| {
            request
                .conversation()
                .iter()
                .any(|m| m["role"] == "tool" && m["content"].to_string().contains("interrupted"))
        })
        .count();
    eprintln!(
        "chaos: {kills} kills; {total} effects for {INPUTS} inputs; {interrupted} calls answered as interrupted"
    );
}

/// A line longer than an input may be (4 MiB) is recorded as an invalid input that names
/// the line and why, without being held; the batch goes on with the next line.
#[test]
fn a_line_too_long_to_be_an_input_is_named_and_the_batch_goes_on() {
    // One input, as long as an input cannot be: it used to be run and refused later, as
    // if the agent file were too large.
    let long = format!("{{\"text\": \"{}\"}}", "x".repeat(9 * 1024 * 1024));
    let ran = Test::new()
        .agent("inputs:\n  text: { type: string, required: true }\nprompt: \"Echo {{ text }}\"\n")
        .file(
            "inputs.jsonl",
            &format!("{{\"text\": \"a\"}}\n{long}\n{{\"text\": \"c\"}}\n"),
        )
        .route(echo)
        .command(BATCH)
        .status(2)
        .stdout_contains("3 inputs · 2 completed · 1 invalid")
        .run();
    let by_line = results(&ran, "out");
    let envelope = &by_line[&2];
    assert_eq!(envelope["status"], "invalid", "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        format!(
            "line 2 is {} bytes long, over the 4 MiB an input line may have; it was skipped unread",
            long.len() + 1
        )
    );
    assert_eq!(by_line[&3]["status"], "completed");
}

/// The job summary of `runner batch`: the counts by status in a table.
#[test]
fn a_job_summary_counts_the_inputs_by_status() {
    let inputs = "{\"n\": 1}\n{\"n\": 2}\n{\"n\": \"not a number\"}\n";
    let ran = Test::new()
        .agent(ECHO_AGENT)
        .file("inputs.jsonl", inputs)
        .route(echo)
        .command_vec(batch_with(&[
            "--batch-id",
            "b-x",
            "--summary",
            "summary.md",
        ]))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", "step-summary.md")
        .status(2)
        .any_stderr()
        .run();
    let markdown = ran.read("step-summary.md");
    assert_eq!(markdown, ran.read("summary.md"));
    let shown = support::markdown::shown(&markdown);
    assert!(
        shown.text.contains("runner batch b-x: invalid (exit 2)"),
        "{}",
        shown.text
    );
    let rows = shown.table(&["Status", "Inputs"]);
    let counts: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        counts[..3],
        [("completed", "2"), ("failed", "0"), ("invalid", "1")],
        "{markdown}"
    );
    assert!(
        shown.text.contains("results: out/results.jsonl"),
        "{}",
        shown.text
    );
}
