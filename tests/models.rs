//! Models that fail over (#41), end to end: the real binary against the mock model server,
//! two models on it told apart by the name a request asks for.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::json;
use support::{KEY_ENV, Ran, Test};

/// An agent on `big` (two attempts, $1 per million input tokens) that falls back to
/// `small` (one attempt, $10), with `cooldown`, and `tools`.
fn chain_agent(cooldown: &str, tools: &str) -> String {
    format!(
        "name: test-agent
model:
  provider: openai
  name: big
  base_url: \"$OPENAI_URL\"
  api_key_env: {KEY_ENV}
  retry: {{ max_attempts: 2, initial_backoff: 1ms }}
  pricing: {{ input_per_mtok: 1, output_per_mtok: 0 }}
  cooldown: {cooldown}
  fallback:
    - provider: openai
      name: small
      base_url: \"$OPENAI_URL\"
      api_key_env: {KEY_ENV}
      retry: {{ max_attempts: 1 }}
      pricing: {{ input_per_mtok: 10, output_per_mtok: 0 }}
prompt: Go
tools:
{tools}"
    )
}

fn models_asked(ran: &Ran) -> Vec<String> {
    ran.requests()
        .iter()
        .map(|r| r.model().to_string())
        .collect()
}

fn moves(ran: &Ran) -> Vec<(String, String)> {
    ran.events_of("agent.llm.fallback")
        .iter()
        .map(|e| {
            let data = &e["data"];
            (
                data["from"].as_str().unwrap().to_string(),
                data["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `big` answers 429 to its first `storm` requests, then `reply`; `small` answers from
/// `small_replies` in order.
fn storm(
    storm: usize,
    big_reply: Reply,
    small_replies: Vec<Reply>,
) -> impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static {
    let big_seen = Arc::new(AtomicUsize::new(0));
    let small_seen = Arc::new(AtomicUsize::new(0));
    move |request: &MockRequest| match request.model() {
        "big" if big_seen.fetch_add(1, Ordering::SeqCst) < storm => {
            Some(MockResponse::error(429, "rate limited, slow down").retry_after("0"))
        }
        "big" => Some(MockResponse::reply(big_reply.clone())),
        _ => {
            let n = small_seen.fetch_add(1, Ordering::SeqCst);
            small_replies.get(n).cloned().map(MockResponse::reply)
        }
    }
}

/// A 429 storm on the first model: its retries are spent, the call goes to the fallback,
/// and once the cooldown is over (here at once) the next call goes to the first model again.
/// Each move is an event and a progress line; the result counts the calls per model and
/// costs each at its own model's prices.
#[test]
fn a_429_storm_fails_over_and_the_first_model_comes_back_after_the_cooldown() {
    let ran = Test::new()
        .agent(&chain_agent("0s", "  - builtin: list_dir\n"))
        .route(storm(
            2,
            Reply::text("Back on the big model.").with_usage(1000, 0),
            vec![Reply::tool_call("list_dir", json!({})).with_usage(1000, 0)],
        ))
        .args(["--progress", "plain"])
        .stdout("Back on the big model.\n")
        .stderr_contains("⇄ openai/big → openai/small: ")
        .stderr_contains("⇄ openai/small → openai/big: the cooldown of 0s is over")
        .run();
    assert_eq!(models_asked(&ran), ["big", "big", "small", "big"]);
    assert_eq!(
        moves(&ran),
        [
            ("openai/big".into(), "openai/small".into()),
            ("openai/small".into(), "openai/big".into())
        ]
    );
    let why = &ran.events_of("agent.llm.fallback")[0]["data"]["reason"];
    assert!(why.as_str().unwrap().contains("HTTP 429"), "{why}");
    let result = ran.result();
    assert_eq!(result["fallbacks"], 2);
    assert_eq!(result["retries"], 1);
    assert_eq!(result["models"], json!({"big": 1, "small": 1}));
    // 1000 tokens at $1 and 1000 at $10 per million.
    let cost = result["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.011).abs() < 1e-9, "{cost}");
}

/// Until the cooldown is over, the calls after a switch go straight to the fallback, and a
/// resumed session goes on there: the checkpoint keeps the chain's position.
#[test]
fn calls_stay_on_the_fallback_during_the_cooldown_and_a_resumed_session_too() {
    let paused = Test::new()
        .agent(&chain_agent(
            "1h",
            "  - builtin: list_dir\n  - builtin: ask_user\n",
        ))
        .route(storm(
            usize::MAX,
            Reply::text("never"),
            vec![
                Reply::tool_call("list_dir", json!({})),
                Reply::tool_call("ask_user", json!({"question": "Which file?"})),
                Reply::text("Done on the small model."),
            ],
        ))
        .status(4)
        .any_stderr()
        .run();
    assert_eq!(models_asked(&paused), ["big", "big", "small", "small"]);
    assert_eq!(moves(&paused).len(), 1);
    let session = paused.session();
    let resumed = paused
        .then()
        .command(["resume", &session, "--answer", "a.txt", "--run-dir", "run2"])
        .stdout("Done on the small model.\n")
        .run();
    let asked = models_asked(&resumed);
    assert_eq!(asked.last().unwrap(), "small");
    assert_eq!(asked.iter().filter(|m| *m == "big").count(), 2);
    assert!(moves(&resumed).is_empty());
}

/// A bad request would fail the same way on every model: it does not fail over, and the
/// error says so.
#[test]
fn a_bad_request_does_not_fail_over_and_says_why() {
    let ran = Test::new()
        .agent(&chain_agent("1m", "  - builtin: list_dir\n"))
        .route(|request| {
            (request.model() == "big").then(|| MockResponse::error(400, "unsupported parameter"))
        })
        .status(1)
        .stderr_contains("not passed to the fallback openai/small: a bad_request error")
        .run();
    assert_eq!(models_asked(&ran), ["big"]);
}

/// Every model of the chain is built at start: a fallback whose key is missing stops the
/// run before any request, at the fallback's line.
#[test]
fn a_fallback_without_its_key_stops_the_run_at_its_line() {
    let agent = chain_agent("1m", "  - builtin: list_dir\n").replacen(
        &format!("      api_key_env: {KEY_ENV}"),
        "      api_key_env: RUNNER_TEST_MISSING_KEY",
        1,
    );
    let ran = Test::new()
        .agent(&agent)
        .env_remove("RUNNER_TEST_MISSING_KEY")
        .status(2)
        .stderr_contains("agent.yaml:11:7: error[model]: fallback 0 (openai/small): ")
        .stderr_contains("RUNNER_TEST_MISSING_KEY is not set")
        .stderr_contains("(at /model/fallback/0)")
        .run();
    assert!(ran.requests().is_empty());
}

/// A fallback is one model, not a chain of its own: `validate` says where.
#[test]
fn a_fallback_with_fallbacks_of_its_own_is_refused_by_validate() {
    let agent = chain_agent("1m", "  - builtin: list_dir\n").replace(
        "      pricing: { input_per_mtok: 10, output_per_mtok: 0 }\n",
        "      pricing: { input_per_mtok: 10, output_per_mtok: 0 }\n      fallback: [openai/gpt-4o-mini]\n",
    );
    Test::new()
        .agent(&agent)
        .command(["validate", "agent.yaml"])
        .status(2)
        .stdout_contains(
            "agent.yaml:17:7: error[model]: a fallback model has no `fallback` of its own \
             (at /model/fallback/0/fallback)",
        )
        .any_stderr()
        .run();
}

/// A server that asks for a longer wait (`Retry-After`) than the call may take is not waited
/// for: the call goes to the fallback at once.
#[test]
fn a_retry_after_past_the_call_timeout_goes_to_the_fallback_at_once() {
    let agent = chain_agent("1m", "  - builtin: list_dir\n").replacen(
        "  cooldown: 1m\n",
        "  cooldown: 1m\n  timeout: 5s\n",
        1,
    );
    let ran = Test::new()
        .agent(&agent)
        .route(|request| match request.model() {
            "big" => Some(MockResponse::error(429, "quota").retry_after("120")),
            _ => Some(MockResponse::reply(Reply::text("From the small model."))),
        })
        .stdout("From the small model.\n")
        .run();
    assert_eq!(models_asked(&ran), ["big", "small"]);
    let why = &ran.events_of("agent.llm.fallback")[0]["data"]["reason"];
    assert!(
        why.as_str()
            .unwrap()
            .contains("asked to wait 120s (Retry-After)"),
        "{why}"
    );
}

// Context that never overflows.

const SUMMARY_MARK: &str = "Summary of the earlier conversation";

fn is_summary_call(request: &MockRequest) -> bool {
    request
        .system_prompt()
        .is_some_and(|s| s.contains("You summarise conversations"))
}

fn compacted(request: &MockRequest) -> bool {
    request.body.to_string().contains(SUMMARY_MARK)
}

/// A model that calls `list_dir` twice, then refuses the request as too long until the
/// history holds a summary, then calls `ask_user`, then answers.
fn refuses_until_compacted(
    request: &MockRequest,
    seen: &AtomicUsize,
    then: &Reply,
) -> Option<MockResponse> {
    if is_summary_call(request) {
        return Some(MockResponse::text(
            "The user asked for the listing twice; both ran.",
        ));
    }
    if seen.fetch_add(1, Ordering::SeqCst) < 2 {
        return Some(MockResponse::reply(Reply::tool_call("list_dir", json!({}))));
    }
    if !compacted(request) {
        return Some(MockResponse::context_length_exceeded(request.wire()));
    }
    Some(MockResponse::reply(then.clone()))
}

/// A provider's context-length error compacts the history once (the agent's model
/// summarises the older messages) and the call is made again; the compaction is an event
/// and a transcript block, and a resumed session goes on from the compacted history.
#[test]
fn a_context_length_error_compacts_the_history_and_a_resume_keeps_it() {
    let seen = Arc::new(AtomicUsize::new(0));
    let ask = Reply::tool_call("ask_user", json!({"question": "Which file?"}));
    let paused = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: list_dir\n  - builtin: ask_user\n")
        .route(move |request| {
            // The answer to `ask_user` comes back as the tool's result.
            let last = request.conversation().last();
            if last.is_some_and(|m| m["role"] == "tool" && m["content"] == "a.txt") {
                return Some(MockResponse::text("Read a.txt."));
            }
            refuses_until_compacted(request, &seen, &ask)
        })
        .status(4)
        .any_stderr()
        .run();
    let events = paused.events_of("agent.context.compacted");
    assert_eq!(events.len(), 1);
    let data = &events[0]["data"];
    assert_eq!(data["strategy"], "summarize");
    assert_eq!(data["reason"], "provider");
    assert_eq!(
        data["summary"],
        "The user asked for the listing twice; both ran."
    );
    assert!(data["tokensAfter"].as_u64() < data["tokensBefore"].as_u64());
    assert!(
        paused
            .transcript()
            .contains("Checkpoint: context compacted (summarize, provider): about "),
        "{}",
        paused.transcript()
    );
    let session = paused.session();
    let resumed = paused
        .then()
        .command(["resume", &session, "--answer", "a.txt", "--run-dir", "run2"])
        .stdout("Read a.txt.\n")
        .run();
    let last = resumed.requests().last().unwrap().clone();
    assert!(compacted(&last), "{}", last.body);
    // The prompt is in the summary, not in the history any more.
    let first = &last.conversation()[0];
    assert!(first.to_string().contains(SUMMARY_MARK), "{first}");
    let rendered = resumed.then().command(["render", "run"]).run();
    assert!(
        rendered.stdout.contains("context compacted"),
        "{}",
        rendered.stdout
    );
}

/// Each wire's own context-length error is recognised: OpenAI's Chat Completions and
/// Responses API, Anthropic's, llama.cpp's.
#[test]
fn every_wires_context_length_error_compacts() {
    let models = [
        "$MODEL",
        "{ provider: openai_responses, name: m, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 } }",
        "{ provider: anthropic, name: m, base_url: \"$ANTHROPIC_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 } }",
    ];
    for (model, llamacpp) in models
        .iter()
        .map(|m| (m, false))
        .chain([(&models[0], true)])
    {
        let seen = Arc::new(AtomicUsize::new(0));
        let done = Reply::text("Done.");
        let ran = Test::new()
            .agent(&format!(
                "name: test-agent\nmodel: {model}\nprompt: Go\ntools:\n  - builtin: list_dir\n"
            ))
            .route(move |request| {
                let answer = refuses_until_compacted(request, &seen, &done)?;
                Some(match (llamacpp, request.wire()) {
                    (true, _)
                        if !compacted(request)
                            && !is_summary_call(request)
                            && seen.load(Ordering::SeqCst) > 2 =>
                    {
                        MockResponse::context_length_exceeded(
                            runner::testing::mock_server::Wire::Unknown,
                        )
                    }
                    _ => answer,
                })
            })
            .stdout("Done.\n")
            .run();
        assert_eq!(
            ran.events_of("agent.context.compacted").len(),
            1,
            "{model} (llama.cpp: {llamacpp})"
        );
    }
}

/// A long conversation with a small window: each request is kept under the window by
/// compactions before it is sent, never by a refusal, and the run completes.
#[test]
fn three_hundred_steps_in_a_small_window_complete_with_compactions() {
    const WINDOW: usize = 3000;
    let steps = Arc::new(AtomicUsize::new(0));
    let ran = Test::new()
        .agent(&format!(
            "name: test-agent
model: {{ provider: openai, name: mock-model, base_url: \"$OPENAI_URL\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }}, context_window: {WINDOW} }}
prompt: List the directory 300 times.
tools:
  - builtin: list_dir
"
        ))
        .file("notes.txt", "some notes\n")
        .route(move |request| {
            if is_summary_call(request) {
                return Some(MockResponse::text("Listed the directory many times so far."));
            }
            if request.body.to_string().len() > WINDOW * 3 {
                return Some(MockResponse::context_length_exceeded(request.wire()));
            }
            Some(match steps.fetch_add(1, Ordering::SeqCst) {
                n if n < 300 => MockResponse::reply(Reply::tool_call("list_dir", json!({}))),
                _ => MockResponse::text("Listed it 300 times."),
            })
        })
        .stdout("Listed it 300 times.\n")
        .run();
    let compactions = ran.events_of("agent.context.compacted");
    assert!(compactions.len() >= 3, "{} compactions", compactions.len());
    assert!(
        compactions
            .iter()
            .all(|e| e["data"]["reason"] == "threshold")
    );
    assert_eq!(ran.result()["tool_calls"], 300);
    let transcript = ran.transcript();
    let blocks = transcript
        .matches("Checkpoint: context compacted (summarize, threshold)")
        .count();
    assert_eq!(blocks, compactions.len());
}

/// `n` characters of hex, as a hash or encoded data is: deterministic, without repeats a
/// tokenizer could merge.
fn hex(n: usize) -> String {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from_digit((x % 16) as u32, 16).unwrap()
        })
        .collect()
}

/// The tokens an OpenAI model counts in a request body, as a provider would: runs of hex
/// make 1.76 bytes a token (what `o200k_base` and `cl100k_base` measured, see
/// docs/benchmarks.md), the rest 3 bytes a token (JSON measured 3.15).
fn openai_tokens(body: &str) -> usize {
    let mut tokens = 0.0;
    for (index, run) in body.split(|c: char| !c.is_ascii_hexdigit()).enumerate() {
        let separator = usize::from(index > 0);
        tokens += match run.len() {
            n if n >= 32 => n as f64 / 1.76,
            n => n as f64 / 3.0,
        } + separator as f64 / 3.0;
    }
    tokens as usize
}

/// Tool results full of hex (hashes, encoded data) make almost twice the tokens of prose
/// for OpenAI's tokenizers: the estimate counts them so, and the history of an OpenAI
/// model near its window is compacted before each request, never after a refusal (a flat
/// 3 bytes a token sent a request the provider refused).
#[test]
fn dense_tool_results_are_compacted_before_an_openai_model_refuses_them() {
    const WINDOW: usize = 4000;
    let refusals = Arc::new(AtomicUsize::new(0));
    let refused = refusals.clone();
    let steps = AtomicUsize::new(0);
    let ran = Test::new()
        .agent(&format!(
            "name: test-agent
model: {{ provider: openai, name: gpt-4o-mini, base_url: \"$OPENAI_URL\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }}, context_window: {WINDOW} }}
context: {{ strategy: truncate }}
prompt: Read the blob six times.
tools:
  - builtin: read_file
"
        ))
        .file("blob.txt", &hex(2000))
        .route(move |request| {
            if openai_tokens(&request.body.to_string()) > WINDOW {
                refused.fetch_add(1, Ordering::SeqCst);
                return Some(MockResponse::context_length_exceeded(request.wire()));
            }
            Some(match steps.fetch_add(1, Ordering::SeqCst) {
                n if n < 6 => MockResponse::reply(Reply::tool_call(
                    "read_file",
                    json!({"path": "blob.txt"}),
                )),
                _ => MockResponse::text("Read it six times."),
            })
        })
        .stdout("Read it six times.\n")
        .run();
    assert_eq!(refusals.load(Ordering::SeqCst), 0, "no request was refused");
    let compactions = ran.events_of("agent.context.compacted");
    assert!(!compactions.is_empty());
    assert!(
        compactions
            .iter()
            .all(|e| e["data"]["reason"] == "threshold"),
        "{compactions:?}"
    );
    assert_eq!(ran.result()["tool_calls"], 6);
}

/// A model that calls `list_dir` `calls` times, then answers `Done.`; summary calls get a
/// short summary.
fn lister(calls: usize) -> impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static {
    let steps = AtomicUsize::new(0);
    move |request: &MockRequest| {
        if is_summary_call(request) {
            return Some(MockResponse::text("Listed the directory."));
        }
        Some(match steps.fetch_add(1, Ordering::SeqCst) {
            n if n < calls => MockResponse::reply(Reply::tool_call("list_dir", json!({}))),
            _ => MockResponse::text("Done."),
        })
    }
}

fn small_window_agent(context: &str) -> String {
    format!(
        "name: test-agent
model: {{ provider: openai, name: mock-model, base_url: \"$OPENAI_URL\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }}, context_window: 1500 }}
context: {context}
prompt: List the directory.
tools:
  - builtin: list_dir
"
    )
}

/// `truncate` drops the older messages but the first (the task) without a summary call;
/// `fail` ends the run with `context_overflow`, saying what to change.
#[test]
fn truncate_drops_old_messages_and_fail_fails() {
    let ran = Test::new()
        .agent(&small_window_agent(
            "{ strategy: truncate, threshold: 0.5 }",
        ))
        .route(lister(40))
        .stdout("Done.\n")
        .run();
    let compactions = ran.events_of("agent.context.compacted");
    assert!(!compactions.is_empty());
    assert!(
        compactions
            .iter()
            .all(|e| e["data"]["strategy"] == "truncate" && e["data"].get("summary").is_none())
    );
    let requests = ran.requests();
    assert!(requests.iter().all(|r| !is_summary_call(r)));
    let last = requests.last().unwrap();
    assert_eq!(last.conversation()[0]["content"], "List the directory.");
    assert!(
        last.conversation().len() < 40,
        "{}",
        last.conversation().len()
    );

    let failed = Test::new()
        .agent(&small_window_agent("{ strategy: fail }"))
        .route(lister(40))
        .args(["--output", "json"])
        .status(1)
        .any_stderr()
        .run();
    let error = &failed.json()["error"];
    assert_eq!(error["code"], "context_overflow");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("of the model's window of 1500 tokens"),
        "{error}"
    );
}

/// A request the model refuses as too long goes first to a fallback with a larger window,
/// if the chain has one, rather than being compacted.
#[test]
fn a_context_length_error_goes_to_a_fallback_with_a_larger_window_first() {
    let agent = chain_agent("1h", "  - builtin: list_dir\n")
        .replacen(
            "  cooldown: 1h\n",
            "  cooldown: 1h\n  context_window: 100000\n",
            1,
        )
        .replacen(
            "      retry: { max_attempts: 1 }\n",
            "      retry: { max_attempts: 1 }\n      context_window: 1000000\n",
            1,
        );
    let ran = Test::new()
        .agent(&agent)
        .route(|request| match request.model() {
            "big" => Some(MockResponse::context_length_exceeded(request.wire())),
            _ => Some(MockResponse::text("The larger window took it.")),
        })
        .stdout("The larger window took it.\n")
        .run();
    assert_eq!(models_asked(&ran), ["big", "small"]);
    assert_eq!(moves(&ran).len(), 1);
    assert!(ran.events_of("agent.context.compacted").is_empty());
}

/// A project file declaring `smart` (the mock's `big`) and `fast` (its `small`), in a
/// repository (`.git`) so the search for it stops there.
fn project_file(smart_extra: &str) -> String {
    format!(
        "models:
  smart:
    provider: openai
    name: big
    base_url: \"$OPENAI_URL\"
    api_key_env: {KEY_ENV}
{smart_extra}  fast:
    provider: openai
    name: small
    base_url: \"$OPENAI_URL\"
    api_key_env: {KEY_ENV}
"
    )
}

/// A repository with the project file at its root and the agent file in `agents/`.
fn in_repository(project: &str, agent: &str) -> Test {
    Test::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file("runner.yaml", project)
        .file("agents/agent.yaml", agent)
}

/// `model: smart` resolves through the project file found above the agent file, for the
/// agent and for an inline sub-agent that names `fast`.
#[test]
fn a_named_model_resolves_through_the_project_file_and_runs() {
    let agent = "name: test-agent
model: smart
prompt: Go
tools:
  - name: helper
    description: Helps.
    parameters: { type: object, properties: { task: { type: string } }, required: [task] }
    agent: { name: helper, model: fast, prompt: Help }
";
    let ran = in_repository(&project_file(""), agent)
        .command(["exec", "agents/agent.yaml", "--run-dir", "run"])
        .route(|request| match request.model() {
            "big" if request.body.to_string().contains("Helped.") => {
                Some(MockResponse::reply(Reply::text("Done.")))
            }
            "big" => Some(MockResponse::reply(Reply::tool_call(
                "helper",
                json!({"task": "help"}),
            ))),
            _ => Some(MockResponse::reply(Reply::text("Helped."))),
        })
        .stdout("Done.\n")
        .run();
    assert_eq!(models_asked(&ran), ["big", "small", "big"]);
}

/// A typo in a name is found by `validate` at the agent file's line, with the closest name.
#[test]
fn a_misspelt_model_name_is_located_in_the_agent_file_with_did_you_mean() {
    let agent = "name: test-agent
model: smrt
prompt: Go
middleware:
  - summarize: { threshold: 1000, model: fsat }
";
    in_repository(&project_file(""), agent)
        .command(["validate", "agents/agent.yaml"])
        .status(2)
        .stdout_contains("agents/agent.yaml:2:8: error[model]: no model `smrt` in the project file")
        .stdout_contains("did you mean `smart`?")
        .stdout_contains(
            "agents/agent.yaml:5:42: error[model]: no model `fsat` in the project file",
        )
        .stdout_contains("did you mean `fast`?")
        .any_stderr()
        .run();
}

/// A mistake in the project file is reported at its own line in that file; a file that
/// names no model does not read it.
#[test]
fn a_bad_project_file_is_located_at_its_own_line() {
    let project = project_file("    temprature: 0.2\n");
    in_repository(&project, "name: test-agent\nmodel: smart\nprompt: Go\n")
        .command(["validate", "agents/agent.yaml"])
        .status(2)
        .stdout_contains("runner.yaml:7:5: error[unknown-key]")
        .stdout_contains("temprature")
        .any_stderr()
        .run()
        .then()
        .file(
            "agents/other.yaml",
            "name: other\nmodel: $MODEL\nprompt: Go\n",
        )
        .command(["validate", "agents/other.yaml"])
        .any_stderr()
        .run();
}

/// A name with no project file says where the runner looked and what to do.
#[test]
fn a_name_without_a_project_file_says_where_it_looked() {
    Test::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .agent("name: test-agent\nmodel: smart\nprompt: Go\n")
        .command(["validate", "agent.yaml"])
        .status(2)
        .stdout_contains(
            "agent.yaml:2:8: error[model]: `smart` is not `provider/name`, and no project file \
             names it: no runner.yaml in ",
        )
        .stdout_contains("RUNNER_CONFIG is not set")
        .any_stderr()
        .run();
}

/// `--model smart` puts the project's model in place of the file's.
#[test]
fn the_command_line_takes_a_project_model_by_name() {
    let ran = in_repository(
        &project_file(""),
        "name: test-agent\nmodel: $MODEL\nprompt: Go\n",
    )
    .command([
        "exec",
        "agents/agent.yaml",
        "--run-dir",
        "run",
        "--model",
        "fast",
    ])
    .reply(Reply::text("Fast."))
    .stdout("Fast.\n")
    .run();
    assert_eq!(models_asked(&ran), ["small"]);
}

/// `--model` with an unknown name fails before any request, with the closest name.
#[test]
fn the_command_line_refuses_an_unknown_project_model() {
    let ran = in_repository(
        &project_file(""),
        "name: test-agent\nmodel: $MODEL\nprompt: Go\n",
    )
    .command([
        "exec",
        "agents/agent.yaml",
        "--run-dir",
        "run",
        "--model",
        "fats",
    ])
    .status(2)
    .stderr_contains("--model: no model `fats` in the project file")
    .stderr_contains("did you mean `fast`?")
    .run();
    assert!(ran.requests().is_empty());
}

/// A fallback written as a name, in the agent file's model, is the project's model.
#[test]
fn a_fallback_by_name_fails_over_to_the_project_model() {
    let agent = format!(
        "name: test-agent
model:
  provider: openai
  name: big
  base_url: \"$OPENAI_URL\"
  api_key_env: {KEY_ENV}
  retry: {{ max_attempts: 1 }}
  fallback: [fast]
prompt: Go
"
    );
    let ran = in_repository(&project_file(""), &agent)
        .command(["exec", "agents/agent.yaml", "--run-dir", "run"])
        .route(storm(1, Reply::text("Big."), vec![Reply::text("Small.")]))
        .stdout("Small.\n")
        .run();
    assert_eq!(models_asked(&ran), ["big", "small"]);
    assert_eq!(moves(&ran), [("openai/big".into(), "openai/small".into())]);
}

/// `RUNNER_CONFIG` names the project file wherever it is.
#[test]
fn runner_config_names_the_project_file() {
    let test = Test::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file("config/models.yaml", &project_file(""))
        .agent("name: test-agent\nmodel: smart\nprompt: Go\n");
    let config = test.path("config/models.yaml");
    let ran = test
        .env("RUNNER_CONFIG", config.to_str().unwrap())
        .reply(Reply::text("Smart."))
        .stdout("Smart.\n")
        .run();
    assert_eq!(models_asked(&ran), ["big"]);
}

/// A saved change of the project file is reloaded like a change of the agent file: the
/// next request goes to the model it now names.
#[test]
fn a_saved_project_file_is_reloaded_like_the_agent_file() {
    let running = in_repository(
        &project_file(""),
        "name: test-agent\nmodel: smart\nprompt: Go\ntools:\n  - builtin: list_dir\n",
    )
    .command(["exec", "agents/agent.yaml", "--run-dir", "run", "--watch"])
    .respond(
        MockResponse::reply(Reply::tool_call("list_dir", json!({})))
            .chunk_delay(std::time::Duration::from_millis(150)),
    )
    .reply(Reply::text("Renamed."))
    .stdout("Renamed.\n")
    .spawn();
    support::wait_until("the first request", || running.requests_made() >= 1);
    running.save(
        "runner.yaml",
        &project_file("").replacen("name: big", "name: bigger", 1),
    );
    let ran = running.wait();
    assert_eq!(models_asked(&ran), ["big", "bigger"]);
    let reloaded = ran.events_of("agent.definition.reloaded");
    assert_eq!(reloaded[0]["data"]["changes"], json!(["model"]));
}

/// A saved project file that gives a named model another key variable would send another
/// key with the conversation: refused like a widening of the agent file, the run going on
/// with the model it had; started with `--allow-widening`, the same save is taken.
#[test]
fn a_project_file_that_changes_a_models_key_variable_is_a_widening() {
    let run = |extra: &[&str]| {
        let mut args = vec!["exec", "agents/agent.yaml", "--run-dir", "run", "--watch"];
        args.extend_from_slice(extra);
        let running = in_repository(
            &project_file(""),
            "name: test-agent\nmodel: smart\nprompt: Go\ntools:\n  - builtin: list_dir\n",
        )
        .command_vec(args.into_iter().map(String::from).collect())
        .env("OTHER_KEY", "sk-other-not-a-real-key-5678")
        .respond(
            MockResponse::reply(Reply::tool_call("list_dir", json!({})))
                .chunk_delay(std::time::Duration::from_millis(150)),
        )
        .reply(Reply::text("Done."))
        .stdout("Done.\n")
        .any_stderr()
        .spawn();
        support::wait_until("the first request", || running.requests_made() >= 1);
        let moved = project_file("").replacen(
            &format!("api_key_env: {KEY_ENV}"),
            "api_key_env: OTHER_KEY",
            1,
        );
        running.save("runner.yaml", &moved);
        running.wait()
    };
    let keys = |ran: &Ran| -> Vec<String> {
        ran.requests()
            .iter()
            .map(|r| r.header("authorization").unwrap_or_default().to_string())
            .collect()
    };
    let refused = run(&[]);
    let why = refused.events_of("agent.definition.reload_failed");
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].to_string().contains("with the key in `OTHER_KEY`"),
        "{why:?}"
    );
    assert!(refused.events_of("agent.definition.reloaded").is_empty());
    assert_eq!(keys(&refused), vec![format!("Bearer {}", support::KEY); 2]);
    let taken = run(&["--allow-widening"]);
    assert_eq!(taken.events_of("agent.definition.reloaded").len(), 1);
    assert_eq!(
        keys(&taken),
        [
            format!("Bearer {}", support::KEY),
            "Bearer sk-other-not-a-real-key-5678".to_string()
        ]
    );
}

/// A session paused on a question keeps the endpoints it started with: a resume after the
/// project file moved the agent's named fallback to another server is refused, naming
/// it; with `--allow-widening` it goes on.
#[test]
fn a_resume_refuses_a_fallback_moved_to_another_endpoint() {
    let agent = format!(
        "name: test-agent
model:
  provider: openai
  name: big
  base_url: \"$OPENAI_URL\"
  api_key_env: {KEY_ENV}
  retry: {{ max_attempts: 1 }}
  fallback: [fast]
prompt: Go
tools:
  - builtin: ask_user
"
    );
    let ran = in_repository(&project_file(""), &agent)
        .command(["exec", "agents/agent.yaml", "--run-dir", "run"])
        .reply(Reply::tool_call("ask_user", json!({"question": "Go on?"})))
        .status(4)
        .any_stderr()
        .run();
    let elsewhere = "http://127.0.0.1:9/v1";
    let moved = project_file("").replace(
        "    name: small\n    base_url: \"$OPENAI_URL\"",
        &format!("    name: small\n    base_url: \"{elsewhere}\""),
    );
    assert!(moved.contains(elsewhere));
    let session = ran.session();
    let _ = ran.then().file("runner.yaml", &moved);
    let resume = |run_dir: &str, widen: bool| {
        let mut args = vec!["resume", &session, "--answer", "yes", "--run-dir", run_dir];
        if widen {
            args.push("--allow-widening");
        }
        ran.then()
            .command_vec(args.into_iter().map(String::from).collect())
    };
    let refused = resume("run2", false)
        .args(["--output", "json"])
        .status(2)
        .stderr_contains(&format!(
            "sends the conversation to `{elsewhere}` with the key in `{KEY_ENV}`"
        ))
        .run();
    assert_eq!(refused.json()["error"]["code"], "widened_definition");
    assert_eq!(ran.requests().len(), 1, "no model call after the refusal");
    resume("run3", true)
        .reply(Reply::text("Resumed."))
        .stdout("Resumed.\n")
        .run();
}

/// The project file is part of the definition: the model's file tools cannot rewrite it
/// to point a name at another endpoint, even under `--watch`.
#[test]
fn the_model_cannot_rewrite_the_project_file() {
    let hijacked = project_file("").replace("name: big", "name: attacker");
    let ran = in_repository(
        &project_file(""),
        "name: test-agent\nmodel: smart\nprompt: Go\ntools:\n  - builtin: write_file\n",
    )
    .command(["exec", "agents/agent.yaml", "--run-dir", "run", "--watch"])
    .reply(Reply::tool_call(
        "write_file",
        json!({"path": "runner.yaml", "content": hijacked}),
    ))
    .reply(Reply::text("done"))
    .stdout("done\n")
    .run();
    let results = ran.events_of("agent.tool.execution.completed");
    let refused = results[0]["data"]["result"]["error"].as_str().unwrap();
    assert!(refused.contains("agent definition file"), "{refused}");
    assert!(!ran.read("runner.yaml").contains("attacker"));
    assert_eq!(models_asked(&ran), ["big", "big"]);
}

/// `runner validate .` checks the project file it meets as the project file, not as an
/// agent file, and the agent files beside it through it.
#[test]
fn validating_a_directory_checks_runner_yaml_as_the_project_file() {
    in_repository(
        &project_file(""),
        "name: test-agent\nmodel: smart\nprompt: Go\n",
    )
    .command(["validate", "."])
    .any_stderr()
    .run()
    .then()
    .file("runner.yaml", &project_file("    temprature: 0.2\n"))
    .command(["validate", "."])
    .status(2)
    .stdout_contains("runner.yaml:7:5: error[unknown-key]")
    .any_stderr()
    .run();
}

/// `RUNNER_CONFIG` naming a file that is not there is said, with what to do.
#[test]
fn runner_config_naming_no_file_says_so() {
    Test::new()
        .agent("name: test-agent\nmodel: smart\nprompt: Go\n")
        .env("RUNNER_CONFIG", "missing/runner.yaml")
        .command(["validate", "agent.yaml"])
        .status(2)
        .stdout_contains("missing/runner.yaml:0:0: error[io]: cannot read the project file: ")
        .stdout_contains("RUNNER_CONFIG names it: point it at the project file, or unset it")
        .any_stderr()
        .run();
}

/// A name used as a fallback must be one model: one with a chain of its own is refused
/// where it is named, in the agent file and in the project file.
#[test]
fn a_named_fallback_with_a_chain_of_its_own_is_refused_where_it_is_named() {
    let project =
        project_file("").replace("    name: small\n", "    name: small\n    cooldown: 10s\n");
    let agent =
        "name: test-agent\nmodel:\n  provider: openai\n  name: x\n  fallback: [fast]\nprompt: Go\n";
    let hint = "list every fallback, in order, in the first model's `fallback`";
    in_repository(&project, agent)
        .command(["validate", "agents/agent.yaml"])
        .status(2)
        .stdout_contains(
            "agents/agent.yaml:5:14: error[model]: `fast` is named as a fallback but has a \
             `cooldown` of its own (at /model/fallback/0)",
        )
        .stdout_contains(hint)
        .any_stderr()
        .run()
        .then()
        .file(
            "runner.yaml",
            &project.replacen("  fast:\n", "    fallback: [fast]\n  fast:\n", 1),
        )
        .command(["validate", "agents/agent.yaml"])
        .status(2)
        .stdout_contains(
            "runner.yaml:7:16: error[model]: `fast` is named as a fallback but has a `cooldown` \
             of its own (at /models/smart/fallback/0)",
        )
        .stdout_contains(hint)
        .any_stderr()
        .run();
}
