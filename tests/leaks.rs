//! A hostile model server that echoes the API key in every place an error can quote it:
//! the key must reach none of stdout, stderr, result.json, the transcript, events.jsonl
//! or a `--record` cassette, on either wire. And `--replay` reads only what it can hold.

mod support;

use std::process::Command;

use runner::testing::mock_server::{MockResponse, Reply};
use serde_json::json;
use support::{KEY, KEY_ENV, Ran, Test};

const ANTHROPIC: &str = "name: test-agent
model: { provider: anthropic, name: m, base_url: \"$ANTHROPIC_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 } }
prompt: Go
";

/// `lead`, then filler, then the key, placed so that cutting the text at `cut` bytes
/// would keep the key's first 12 bytes.
fn across_cut(lead: &str, cut: usize) -> String {
    let filler = "x".repeat(cut - 12 - lead.len());
    format!("{lead}{filler}{KEY} and more")
}

/// Runs the agent against `response` with `--record`, expecting a failed run, and
/// checks that neither the key nor its first part shows up anywhere.
fn assert_never_leaks(agent: &str, response: MockResponse) -> Ran {
    let ran = Test::new()
        .agent(agent)
        .respond(response)
        .args(["--record", "cassette.jsonl"])
        .status(1)
        .any_stderr()
        .run();
    assert_no_key(&ran);
    ran
}

fn assert_no_key(ran: &Ran) {
    let files = [
        "run/result.json",
        "run/transcript.txt",
        "run/events.jsonl",
        "cassette.jsonl",
    ];
    let mut places = vec![
        ("stdout", ran.stdout.clone()),
        ("stderr", ran.stderr.clone()),
    ];
    for file in files {
        places.push((file, ran.read(file)));
    }
    // The key's first part catches a key cut in two as well.
    let prefix = &KEY[..8];
    for (place, text) in places {
        assert!(
            !text.contains(prefix),
            "the key leaked into {place}:\n{text}"
        );
    }
}

#[test]
fn openai_in_stream_error_object() {
    let body = format!(
        "data: {}\n\n",
        json!({"error": {"message": format!("invalid key {KEY}"), "type": "invalid_request_error"}})
    );
    assert_never_leaks("prompt: Go\n", MockResponse::sse(body));
}

#[test]
fn openai_in_stream_error_without_message_is_quoted_whole() {
    let data = across_cut(r#"{"error":{"detail_text":""#, 500);
    let body = format!("data: {data}\"}}}}\n\n");
    assert_never_leaks("prompt: Go\n", MockResponse::sse(body));
}

#[test]
fn openai_error_event_that_is_not_json() {
    let body = format!("event: error\ndata: {}\n\n", across_cut("", 500));
    assert_never_leaks("prompt: Go\n", MockResponse::sse(body));
}

#[test]
fn openai_malformed_chunk() {
    let body = format!("data: {}\n\n", across_cut(r#"{"choices": "#, 200));
    assert_never_leaks("prompt: Go\n", MockResponse::sse(body));
}

#[test]
fn openai_json_answer_with_an_error() {
    let body = json!({"error": {"message": format!("denied for {KEY}"), "type": "server_error"}});
    assert_never_leaks("prompt: Go\n", MockResponse::json(200, &body));
}

#[test]
fn openai_malformed_json_answer() {
    let body = across_cut(r#"{"choices": "#, 200);
    assert_never_leaks(
        "prompt: Go\n",
        MockResponse::raw(200, "application/json", body),
    );
}

#[test]
fn openai_http_error_json_body() {
    let body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}});
    assert_never_leaks("prompt: Go\n", MockResponse::json(401, &body));
}

#[test]
fn openai_http_error_text_body_with_the_key_across_the_cut() {
    let body = across_cut("", 500);
    assert_never_leaks("prompt: Go\n", MockResponse::raw(502, "text/plain", body));
}

#[test]
fn anthropic_error_event() {
    let body = format!(
        "event: error\ndata: {}\n\n",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": format!("busy {KEY}")}})
    );
    assert_never_leaks(ANTHROPIC, MockResponse::sse(body));
}

#[test]
fn anthropic_error_event_that_is_not_json() {
    let body = format!("event: error\ndata: {}\n\n", across_cut("", 500));
    assert_never_leaks(ANTHROPIC, MockResponse::sse(body));
}

#[test]
fn anthropic_malformed_event() {
    let body = format!(
        "event: message_start\ndata: {}\n\n",
        across_cut(r#"{"type": "#, 200)
    );
    assert_never_leaks(ANTHROPIC, MockResponse::sse(body));
}

#[test]
fn anthropic_json_answer_with_an_error() {
    let body =
        json!({"type": "error", "error": {"type": "api_error", "message": format!("no {KEY}")}});
    assert_never_leaks(ANTHROPIC, MockResponse::json(200, &body));
}

#[test]
fn anthropic_http_error_text_body_with_the_key_across_the_cut() {
    let body = across_cut("", 500);
    assert_never_leaks(ANTHROPIC, MockResponse::raw(500, "text/html", body));
}

#[test]
fn a_retried_stream_error_resets_without_the_key() {
    let partial = format!(
        "data: {}\n\ndata: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "Half an ans"}}]}),
        json!({"error": {"message": format!("overloaded {KEY}"), "type": "server_error"}})
    );
    let ran = Test::new()
        .agent(
            "name: test-agent
model: { provider: openai, name: m, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 2, initial_backoff: 1ms, max_backoff: 5ms } }
prompt: Go
",
        )
        .respond(MockResponse::sse(partial))
        .reply(Reply::text("Whole answer."))
        .args(["--record", "cassette.jsonl"])
        .stdout("Whole answer.\n")
        .run();
    let resets: Vec<_> = ran
        .events_of("thread.message.delta")
        .into_iter()
        .filter(|e| e["data"]["delta"]["reset"] == true)
        .collect();
    assert!(!resets.is_empty(), "the partial answer was reset");
    let events = ran.read("run/events.jsonl");
    assert!(
        !events.contains(KEY),
        "the key leaked into a reset:\n{events}"
    );
}

#[test]
fn replay_refuses_a_file_that_never_ends() {
    // Under a 2 GiB address space, reading /dev/zero to the end would abort.
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("ok"))
        .run();
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_runner"))
        .args([
            "exec",
            "agent.yaml",
            "--run-dir",
            "run",
            "--replay",
            "/dev/zero",
        ])
        .current_dir(&ran.dir)
        .env(KEY_ENV, KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(1 | 2)),
        "{:?}\n{stderr}",
        output.status
    );
    assert!(stderr.contains("/dev/zero"), "{stderr}");
}

#[test]
fn replay_refuses_a_cassette_of_an_unknown_version() {
    let recorded = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("Recorded answer."))
        .args(["--record", "cassette.jsonl"])
        .run();
    let cassette = recorded
        .read("cassette.jsonl")
        .replace("\"version\":1", "\"version\":99");
    recorded
        .then()
        .file("future.jsonl", &format!("\n{cassette}"))
        .args(["--replay", "future.jsonl"])
        .status(2)
        .stderr_contains("future.jsonl")
        .stderr_contains("line 2")
        .stderr_contains("version 99")
        .run();
}
