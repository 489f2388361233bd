//! Sub-agents and handoffs end to end: the real binary against the mock model server,
//! which answers each agent by its system prompt.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::{Test, read_json};

/// Scripted answers per agent, chosen by a marker in the request's system prompt.
fn script(
    script: Vec<(&'static str, Vec<Reply>)>,
) -> impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static {
    let script: HashMap<&'static str, Vec<Reply>> = script.into_iter().collect();
    let used: Arc<Mutex<HashMap<&'static str, usize>>> = Arc::default();
    move |request: &MockRequest| {
        let system = request.system_prompt().unwrap_or_default();
        let (marker, replies) = script.iter().find(|(marker, _)| system.contains(*marker))?;
        let mut used = used.lock().unwrap();
        let n = used.entry(marker).or_insert(0);
        let reply = replies
            .get(*n)
            .cloned()
            .unwrap_or_else(|| Reply::text("(script exhausted)"));
        *n += 1;
        Some(MockResponse::reply(reply))
    }
}

/// `route` with every answer streamed slowly: calls that run side by side then overlap
/// whatever the machine's load, since none can finish before the others have started.
fn slowly(
    route: impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static,
) -> impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static {
    move |request: &MockRequest| {
        route(request).map(|response| response.chunk_delay(Duration::from_millis(60)))
    }
}

const ROOT: &str = r#"name: root
model: $MODEL
system: You are ROOT.
prompt: Study the topic.
tools:
  - name: research
    description: Researches a topic.
    parameters: { type: object, properties: { topic: { type: string } }, required: [topic] }
    agent: ./researcher.yaml
    prompt: "Research {{ topic }}"
  - name: critique
    description: Critiques a text.
    parameters: { type: object, properties: { text: { type: string } }, required: [text] }
    agent:
      name: critic
      model: { provider: openai, name: critic-model, base_url: "$OPENAI_URL", api_key_env: RUNNER_TEST_KEY }
      system: You are CRITIC.
"#;

const RESEARCHER: &str = r#"name: researcher
system: You are RESEARCHER.
tools:
  - name: dig
    description: Digs deeper.
    parameters: { type: object, properties: { q: { type: string } }, required: [q] }
    agent: { name: digger, system: You are DIGGER. }
"#;

/// The root with `extra` at the end of its file, its researcher (whose digger is inline)
/// and its inline critic.
fn tree(extra: &str) -> Test {
    Test::new()
        .agent(&format!("{ROOT}{extra}"))
        .file("researcher.yaml", RESEARCHER)
}

#[test]
fn a_three_level_tree_runs_parallel_sub_agents_with_inherited_and_own_models() {
    let ran = tree("")
        .route(slowly(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"}))
                        .with_tool_call("critique", json!({"text": "draft"})),
                    Reply::text("Root done."),
                ],
            ),
            (
                "RESEARCHER",
                vec![
                    Reply::tool_call("dig", json!({"q": "moon"})),
                    Reply::text("research result"),
                ],
            ),
            ("DIGGER", vec![Reply::text("dug")]),
            ("CRITIC", vec![Reply::text("critique result")]),
        ])))
        .args(["--output", "json"])
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["output"], "Root done.");
    assert_eq!(
        envelope["llm_calls"], 6,
        "the tree's calls are counted together"
    );

    let requests = ran.requests();
    let model_of = |marker: &str| -> Vec<String> {
        requests
            .iter()
            .filter(|r| r.system_prompt().unwrap_or_default().contains(marker))
            .map(|r| r.body["model"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        model_of("RESEARCHER"),
        ["mock-model", "mock-model"],
        "inherited"
    );
    assert_eq!(
        model_of("DIGGER"),
        ["mock-model"],
        "inherited two levels down"
    );
    assert_eq!(model_of("CRITIC"), ["critic-model"], "its own");
    let first_of = |marker: &str| {
        requests
            .iter()
            .find(|r| r.system_prompt().unwrap().contains(marker))
            .unwrap()
    };
    assert_eq!(
        first_of("RESEARCHER").last_user_text().as_deref(),
        Some("Research tides")
    );
    assert_eq!(
        first_of("CRITIC").last_user_text().as_deref(),
        Some(r#"{"text":"draft"}"#),
        "default prompt: the arguments as JSON"
    );

    let events = ran.events();
    let sub_events: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["type"]
                .as_str()
                .unwrap()
                .starts_with("agent.sub_agent.invocation")
        })
        .collect();
    assert_eq!(sub_events.len(), 6);
    // research and critique (the root's two calls of one turn) overlapped: both started
    // before either finished.
    let root_tools: Vec<(String, String)> = events
        .iter()
        .filter(|e| {
            e["agent"] == "root"
                && e["type"]
                    .as_str()
                    .unwrap()
                    .starts_with("agent.tool.execution")
        })
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["data"]["toolName"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        root_tools[0].0.ends_with("started") && root_tools[1].0.ends_with("started"),
        "{root_tools:?}"
    );

    let root_run = events[0]["runId"].as_str().unwrap().to_string();
    let depth_of = |agent: &str| -> (u64, Option<String>, String) {
        let e = events.iter().find(|e| e["agent"] == agent).unwrap();
        (
            e["depth"].as_u64().unwrap(),
            e["parentRunId"].as_str().map(String::from),
            e["runId"].as_str().unwrap().to_string(),
        )
    };
    let (root_depth, root_parent, _) = depth_of("root");
    let (research_depth, research_parent, research_run) = depth_of("researcher");
    let (digger_depth, digger_parent, _) = depth_of("digger");
    assert_eq!((root_depth, root_parent), (0, None));
    assert_eq!(
        (research_depth, research_parent.as_deref()),
        (1, Some(root_run.as_str()))
    );
    assert_eq!(
        (digger_depth, digger_parent.as_deref()),
        (2, Some(research_run.as_str()))
    );

    // Each sub-agent run left a trace in the root's state, kept in its checkpoint.
    let checkpoint = read_json(&ran.session_file("checkpoint.json"));
    let state =
        runner::engine::AgentState::from_json(&checkpoint["state"]).expect("the state restores");
    let mut traced: Vec<&str> = state
        .subagent_traces
        .iter()
        .map(|t| t.subagent_type.as_str())
        .collect();
    traced.sort();
    assert_eq!(traced, ["critic", "researcher"]);
    let research_trace = state
        .subagent_traces
        .iter()
        .find(|t| t.subagent_type == "researcher")
        .unwrap();
    assert_eq!(research_trace.prompt, "Research tides");
    assert_eq!(research_trace.result.as_deref(), Some("research result"));
    assert_eq!(research_trace.tool_executions[0].tool_name, "dig");

    // The transcript nests each sub-agent's steps inside its tool block.
    let transcript =
        runner::output::transcript::parse(&ran.transcript()).expect("the transcript parses");
    let json = serde_json::to_string(&transcript).unwrap();
    assert!(
        json.contains("dug") && json.contains("critique result"),
        "{json}"
    );
    ran.then()
        .command(["render", "run/transcript.txt", "--format", "text"])
        .stdout_contains("dig")
        .run();
}

#[test]
fn invalid_arguments_go_back_to_the_model_and_the_sub_agent_is_not_started() {
    let ran = tree("")
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"subject": "tides"})),
                    Reply::text("ok"),
                ],
            ),
            ("RESEARCHER", vec![]),
        ]))
        .args(["--output", "json"])
        .run();
    let requests = ran.requests();
    assert!(
        !requests
            .iter()
            .any(|r| r.system_prompt().unwrap_or_default().contains("RESEARCHER"))
    );
    let tool = requests[1].body["messages"].to_string();
    assert!(
        tool.contains("invalid arguments") && tool.contains("topic"),
        "{tool}"
    );
}

#[test]
fn a_call_deeper_than_max_depth_becomes_a_tool_error() {
    let ran = tree("limits: { max_depth: 1 }\n")
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("ok"),
                ],
            ),
            (
                "RESEARCHER",
                vec![
                    Reply::tool_call("dig", json!({"q": "moon"})),
                    Reply::text("could not dig"),
                ],
            ),
            ("DIGGER", vec![Reply::text("should not run")]),
        ]))
        .args(["--output", "json"])
        .run();
    let requests = ran.requests();
    assert!(
        !requests
            .iter()
            .any(|r| r.system_prompt().unwrap_or_default().contains("DIGGER"))
    );
    let second_research = requests
        .iter()
        .filter(|r| r.system_prompt().unwrap().contains("RESEARCHER"))
        .nth(1)
        .unwrap();
    assert!(
        second_research.body["messages"]
            .to_string()
            .contains("limits.max_depth")
    );
}

#[test]
fn sub_agents_spend_the_roots_budget() {
    let ran = tree("limits: { max_llm_calls: 5 }\n")
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("ok"),
                ],
            ),
            (
                "RESEARCHER",
                (0..10)
                    .map(|_| Reply::tool_call("dig", json!({"q": "more"})))
                    .collect(),
            ),
            ("DIGGER", (0..10).map(|_| Reply::text("dug")).collect()),
        ]))
        .args(["--output", "json"])
        .status(3)
        .stderr_contains("max_llm_calls")
        .run();
    assert_eq!(ran.json()["limit"], "max_llm_calls");
    let requests = ran.requests().len();
    assert!(requests <= 6, "{requests} requests");
}

#[test]
fn a_handoff_chain_continues_the_conversation_at_the_same_depth() {
    let ran = Test::new()
        .agent(
            "name: root
model: $MODEL
system: You are AGENT-A.
prompt: My invoice is wrong.
handoffs:
  - name: transfer_to_b
    description: To B.
    agent: ./b.yaml
",
        )
        .file(
            "b.yaml",
            "name: agent-b
system: You are AGENT-B.
handoffs:
  - name: transfer_to_c
    description: To C.
    agent: { name: agent-c, system: You are AGENT-C. }
",
        )
        .route(script(vec![
            (
                "AGENT-A",
                vec![Reply::tool_call(
                    "transfer_to_b",
                    json!({"reason": "billing"}),
                )],
            ),
            (
                "AGENT-B",
                vec![Reply::tool_call("transfer_to_c", json!({}))],
            ),
            ("AGENT-C", vec![Reply::text("C answers.")]),
        ]))
        .args(["--output", "json"])
        .run();
    assert_eq!(ran.json()["output"], "C answers.");
    let last = ran.requests().pop().unwrap();
    assert_eq!(
        last.body["model"], "mock-model",
        "the targets inherit the model"
    );
    assert!(
        last.body["messages"]
            .to_string()
            .contains("My invoice is wrong."),
        "same conversation"
    );
    let events = ran.events();
    let handoffs: Vec<(String, String)> = ran
        .events_of("agent.handoff")
        .iter()
        .map(|e| {
            (
                e["data"]["from"].as_str().unwrap().into(),
                e["data"]["to"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        handoffs,
        [
            ("root".to_string(), "agent-b".to_string()),
            ("agent-b".into(), "agent-c".into())
        ]
    );
    assert!(
        events.iter().all(|e| e["depth"] == 0),
        "a handoff keeps the caller's depth"
    );
    assert!(
        events
            .iter()
            .any(|e| e["agent"] == "agent-c" && e["type"] == "thread.message.completed")
    );
}

const SELF_CALLING: &str = r#"name: looper
system: You are LOOPER.
limits: { max_depth: 2 }
tools:
  - name: again
    description: Calls this agent again.
    parameters: { type: object, properties: { q: { type: string } }, required: [q] }
    agent: ./looper.yaml
"#;

#[test]
fn a_sub_agents_own_max_depth_bounds_recursion_through_it() {
    let ran = Test::new()
        .agent(
            "name: root\nmodel: $MODEL\nsystem: You are ROOT.\nprompt: Go\ntools:\n  - name: loop\n    description: Loops.\n    parameters: { type: object, properties: { q: { type: string } }, required: [q] }\n    agent: ./looper.yaml\n",
        )
        .file("looper.yaml", SELF_CALLING)
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("loop", json!({"q": "x"})),
                    Reply::text("root done"),
                ],
            ),
            (
                "LOOPER",
                (0..20)
                    .map(|_| Reply::tool_call("again", json!({"q": "x"})))
                    .chain([Reply::text("stopped")])
                    .collect(),
            ),
        ]))
        .args(["--output", "json"])
        .run();
    let depths: Vec<u64> = ran
        .events_of("agent.run.created")
        .iter()
        .map(|e| e["depth"].as_u64().unwrap())
        .collect();
    assert_eq!(
        depths.iter().max(),
        Some(&2),
        "the looper runs at depths 1 and 2, never 3: {depths:?}"
    );
    let refused = ran.events_of("agent.tool.execution.completed");
    assert!(
        refused.iter().any(|e| e["data"]["result"]["error"]
            .as_str()
            .is_some_and(|m| m.contains("deeper than limits.max_depth = 2"))),
        "the call that would go to depth 3 is a tool error"
    );
}

#[test]
fn a_sub_agents_own_limits_end_its_run_and_the_caller_goes_on() {
    let ran = tree("")
        .file(
            "researcher.yaml",
            &RESEARCHER.replace(
                "system: You are RESEARCHER.",
                "system: You are RESEARCHER.\nlimits: { max_llm_calls: 1 }",
            ),
        )
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("Root done."),
                ],
            ),
            (
                "RESEARCHER",
                vec![
                    Reply::tool_call("dig", json!({"q": "moon"})),
                    Reply::text("never asked"),
                ],
            ),
            ("DIGGER", vec![Reply::text("dug")]),
        ]))
        .args(["--output", "json"])
        .run();
    assert_eq!(ran.json()["output"], "Root done.");
    let researcher_end = ran
        .events_of("thread.run.failed")
        .into_iter()
        .find(|e| e["agent"] == "researcher")
        .expect("the researcher's run ended at its own bound");
    assert_eq!(researcher_end["data"]["status"], "limit_reached");
    assert_eq!(
        researcher_end["data"]["error"]["details"]["limit"],
        "max_llm_calls"
    );
    let researcher_calls = ran
        .requests()
        .iter()
        .filter(|r| r.system_prompt().unwrap_or_default().contains("RESEARCHER"))
        .count();
    assert_eq!(researcher_calls, 1);
}

#[test]
fn an_inherited_model_keeps_its_pricing() {
    // $1 per token: each mock call (10 in, 5 out) costs $15.
    let priced = "model: { provider: openai, name: mock-model, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 }, pricing: { input_per_mtok: 1000000, output_per_mtok: 1000000 } }";
    let ran = tree("")
        .agent(&ROOT.replace("model: $MODEL", priced))
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("Root done."),
                ],
            ),
            ("RESEARCHER", vec![Reply::text("research result")]),
        ]))
        .args(["--output", "json"])
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["llm_calls"], 3);
    assert_eq!(
        envelope["usage"]["cost_usd"], 45.0,
        "the researcher's call is priced like the root's"
    );
}

#[test]
fn a_resumed_session_goes_on_from_what_the_whole_tree_spent() {
    let ran = tree("  - builtin: ask_user\nlimits: { max_llm_calls: 3 }\n")
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::tool_call("ask_user", json!({"question": "Go on?"})),
                    Reply::text("never asked"),
                ],
            ),
            ("RESEARCHER", vec![Reply::text("research result")]),
        ]))
        .args(["--output", "json"])
        .status(4)
        .any_stderr()
        .run();
    assert_eq!(ran.json()["llm_calls"], 3, "the researcher's call counts");
    let session = ran.session();
    let resumed = ran
        .then()
        .command([
            "resume",
            &session,
            "--answer",
            "yes",
            "--run-dir",
            "run2",
            "--output",
            "json",
        ])
        .status(3)
        .stderr_contains("max_llm_calls")
        .run();
    let envelope = resumed.json();
    assert_eq!(envelope["limit"], "max_llm_calls");
    assert_eq!(envelope["llm_calls"], 3);
    assert_eq!(ran.requests().len(), 3, "the bound held across the resume");
}

#[test]
fn a_sub_agents_missing_key_stops_the_run_before_it_starts() {
    let ran = tree("")
        .file(
            "researcher.yaml",
            &RESEARCHER.replace(
                "system: You are RESEARCHER.",
                "system: You are RESEARCHER.\nmodel: { provider: openai, name: m, base_url: \"$OPENAI_URL\", api_key_env: RESEARCHER_KEY_NOT_SET }",
            ),
        )
        .env_remove("RESEARCHER_KEY_NOT_SET")
        .args(["--output", "json"])
        .status(2)
        .stderr_contains("RESEARCHER_KEY_NOT_SET")
        .stderr_contains("researcher.yaml")
        .run();
    assert_eq!(ran.json()["status"], "invalid");
    assert!(ran.requests().is_empty(), "no model call was made");
}

#[test]
fn a_sub_agents_question_pauses_the_whole_run_and_the_answer_continues_inside_it() {
    let ran = tree("")
        .file(
            "researcher.yaml",
            &RESEARCHER.replace("tools:\n", "tools:\n  - builtin: ask_user\n"),
        )
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("Root done."),
                ],
            ),
            (
                "RESEARCHER",
                vec![
                    Reply::tool_call("ask_user", json!({"question": "Which ocean?"})),
                    Reply::text("research on the Atlantic"),
                ],
            ),
        ]))
        .args(["--output", "json"])
        .status(4)
        .stderr_contains("`researcher` asks: Which ocean?")
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["status"], "input_required");
    let asked = ran.events_of("thread.run.requires_action");
    let root_ask = asked
        .iter()
        .find(|e| e["depth"] == 0)
        .expect("the root pauses");
    assert_eq!(root_ask["data"]["required_action"]["agent"], "researcher");
    assert!(
        ran.transcript().contains("researcher asks: Which ocean?"),
        "{}",
        ran.transcript()
    );

    let session = ran.session();
    let resumed = ran
        .then()
        .command([
            "resume",
            &session,
            "--answer",
            "Atlantic",
            "--run-dir",
            "run2",
            "--output",
            "json",
        ])
        .run();
    assert_eq!(resumed.json()["output"], "Root done.");
    let requests = ran.requests();
    let researcher: Vec<_> = requests
        .iter()
        .filter(|r| r.system_prompt().unwrap_or_default().contains("RESEARCHER"))
        .collect();
    assert_eq!(researcher.len(), 2, "the researcher goes on, not again");
    assert!(
        researcher[1].body["messages"]
            .to_string()
            .contains("Atlantic"),
        "the answer is the researcher's ask_user result"
    );
    let root_last = requests.last().unwrap();
    assert!(
        root_last.body["messages"]
            .to_string()
            .contains("research on the Atlantic"),
        "the researcher's answer is the root's tool result"
    );
}

#[test]
fn a_question_two_levels_down_is_answered_inside_the_agent_that_asked() {
    let ran = tree("")
        .file(
            "researcher.yaml",
            &RESEARCHER.replace(
                "agent: { name: digger, system: You are DIGGER. }",
                "agent: { name: digger, system: You are DIGGER., tools: [{ builtin: ask_user }] }",
            ),
        )
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("Root done."),
                ],
            ),
            (
                "RESEARCHER",
                vec![
                    Reply::tool_call("dig", json!({"q": "moon"})),
                    Reply::text("research result"),
                ],
            ),
            (
                "DIGGER",
                vec![
                    Reply::tool_call("ask_user", json!({"question": "How deep?"})),
                    Reply::text("dug deep"),
                ],
            ),
        ]))
        .status(4)
        .stderr_contains("`digger` asks: How deep?")
        .run();
    let session = ran.session();
    let resumed = ran
        .then()
        .command(["resume", &session, "--answer", "very", "--run-dir", "run2"])
        .stdout("Root done.\n")
        .run();
    let requests = ran.requests();
    let count = |marker: &str| {
        requests
            .iter()
            .filter(|r| r.system_prompt().unwrap_or_default().contains(marker))
            .count()
    };
    assert_eq!(
        (count("ROOT"), count("RESEARCHER"), count("DIGGER")),
        (2, 2, 2),
        "each agent goes on where it was, none starts again"
    );
    let transcript = resumed.transcript();
    assert!(transcript.contains("very"), "{transcript}");
    let provided = resumed.events_of("agent.user_input.provided");
    assert_eq!(provided.len(), 1);
    assert_eq!(provided[0]["agent"], "digger");
    assert_eq!(provided[0]["depth"], 2);
}

/// An optional parameter the model leaves out is undefined in the tool's prompt, and
/// `{% if %}` tests it as false (`is defined` works too); printing it would still fail.
#[test]
fn an_optional_parameter_left_out_is_false_in_the_prompts_if() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - name: look\n    description: Looks.\n    parameters: { type: object, properties: { question: { type: string }, paths: { type: array, items: { type: string } } }, required: [question] }\n    agent: { name: looker, system: You are LOOKER. }\n    prompt: \"{{ question }}{% if paths %} Only in {{ paths | join(', ') }}.{% endif %}\"\n",
        )
        .reply(Reply::tool_call("look", json!({"question": "Where?"})))
        .reply(Reply::text("There."))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let looker = &ran.requests()[1];
    assert!(looker.system_prompt().unwrap().contains("LOOKER"));
    let asked = looker.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .clone();
    assert_eq!(asked, "Where?");
}

/// The message the sub-agent whose system prompt has `marker` was first asked.
fn first_ask(ran: &support::Ran, marker: &str) -> Value {
    let request = ran
        .requests()
        .into_iter()
        .find(|r| r.system_prompt().unwrap_or_default().contains(marker))
        .unwrap_or_else(|| panic!("{marker} was never asked"));
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .clone()
}

/// The model's arguments never replace a template built-in in the tool's `prompt`: an
/// argument the schema does not declare is no variable, so `run` stays the run's.
#[test]
fn a_models_argument_cannot_replace_a_built_in_of_the_prompt() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - name: look\n    description: Looks.\n    parameters: { type: object, properties: { question: { type: string } }, required: [question] }\n    agent: { name: looker, system: You are LOOKER. }\n    prompt: \"{{ question }} (run {{ run.id }}, agent {{ agent.name }})\"\n",
        )
        .reply(Reply::tool_call(
            "look",
            json!({"question": "Where?", "run": {"id": "forged"}, "agent": {"name": "forged"}}),
        ))
        .reply(Reply::text("There."))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let asked = first_ask(&ran, "LOOKER");
    let run_id = ran.result()["run_id"].as_str().unwrap().to_string();
    assert_eq!(
        asked,
        format!("Where? (run {run_id}, agent test-agent)"),
        "the arguments replaced a built-in"
    );
}

/// A parameter named like a built-in is refused before anything runs: in the prompt it
/// would stand for the run's value and the model's at once.
#[test]
fn a_parameter_named_like_a_built_in_is_refused() {
    Test::new()
        .agent(
            "prompt: Go\ntools:\n  - name: look\n    description: Looks.\n    parameters: { type: object, properties: { env: { type: object } } }\n    agent: { name: looker, system: You are LOOKER. }\n    prompt: \"{{ env }}\"\n",
        )
        .command(["validate", "agent.yaml"])
        .status(2)
        .any_stderr()
        .stdout_contains("parameter `env` has the name of a template built-in")
        .run();
}

/// A sub-agent without a model of its own inherits its caller's fallbacks with the model.
#[test]
fn an_inherited_model_keeps_its_fallbacks() {
    let chain = "model: { provider: openai, name: mock-model, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 }, fallback: [{ provider: openai, name: backup, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 } }] }";
    let answer = script(vec![
        (
            "ROOT",
            vec![
                Reply::tool_call("research", json!({"topic": "tides"})),
                Reply::text("Root done."),
            ],
        ),
        ("RESEARCHER", vec![Reply::text("research result")]),
    ]);
    let ran = tree("")
        .agent(&ROOT.replace("model: $MODEL", chain))
        .route(move |request| {
            let researcher = request
                .system_prompt()
                .unwrap_or_default()
                .contains("RESEARCHER");
            if researcher && request.model() == "mock-model" {
                return Some(MockResponse::error(503, "overloaded"));
            }
            answer(request)
        })
        .args(["--output", "json"])
        .stdout_contains("Root done.")
        .run();
    let researcher: Vec<String> = ran
        .requests()
        .iter()
        .filter(|r| r.system_prompt().unwrap_or_default().contains("RESEARCHER"))
        .map(|r| r.model().to_string())
        .collect();
    assert_eq!(researcher, ["mock-model", "backup"]);
    assert_eq!(ran.json()["fallbacks"], 1);
}
