//! Sub-agents and handoffs end to end: the real binary against the mock model server,
//! which answers each agent by its system prompt.

mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use runner::testing::mock_server::{MockRequest, MockResponse, MockServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Run, tempdir};

const KEY_ENV: &str = "RUNNER_TEST_KEY";

/// Scripted answers per agent, chosen by a marker in the request's system prompt.
fn route(mock: &MockServer, script: Vec<(&'static str, Vec<Reply>)>) {
    let script: HashMap<&'static str, Vec<Reply>> = script.into_iter().collect();
    let used: Arc<Mutex<HashMap<&'static str, usize>>> = Arc::default();
    mock.route(move |request: &MockRequest| {
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
    });
}

struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(mock: &MockServer, root_body: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempdir("subagents");
        let model = format!(
            "model: {{ provider: openai, name: root-model, base_url: \"{}\", api_key_env: {KEY_ENV} }}",
            mock.openai_base_url()
        );
        std::fs::write(
            dir.join("root.yaml"),
            format!("name: root\n{model}\n{root_body}"),
        )
        .unwrap();
        for (name, text) in files {
            std::fs::write(
                dir.join(name),
                text.replace("BASE_URL", &mock.openai_base_url()),
            )
            .unwrap();
        }
        Tree { dir }
    }

    fn run(&self) -> Outcome {
        Run::new(["exec", "root.yaml", "--run-dir", "run", "--output", "json"])
            .current_dir(&self.dir)
            .env(KEY_ENV, "sk-test")
            .run()
    }

    /// The run's events, each checked against schemas/events.schema.json.
    fn events(&self) -> Vec<Value> {
        support::read_events(&self.dir.join("run/events.jsonl"))
    }
}

const ROOT: &str = r#"system: You are ROOT.
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
      model: { provider: openai, name: critic-model, base_url: "BASE_URL", api_key_env: RUNNER_TEST_KEY }
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

fn root_with_base(mock: &MockServer, extra: &str) -> String {
    format!(
        "{}{extra}",
        ROOT.replace("BASE_URL", &mock.openai_base_url())
    )
}

#[test]
fn a_three_level_tree_runs_parallel_sub_agents_with_inherited_and_own_models() {
    let mock = MockServer::start();
    route(
        &mock,
        vec![
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
        ],
    );
    let tree = Tree::new(
        &mock,
        &root_with_base(&mock, ""),
        &[("researcher.yaml", RESEARCHER)],
    );
    let outcome = tree.run();
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let envelope = outcome.json();
    assert_eq!(envelope["output"], "Root done.");
    assert_eq!(
        envelope["llm_calls"], 6,
        "the tree's calls are counted together"
    );

    let model_of = |marker: &str| -> Vec<String> {
        mock.requests()
            .iter()
            .filter(|r| r.system_prompt().unwrap_or_default().contains(marker))
            .map(|r| r.body["model"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        model_of("RESEARCHER"),
        ["root-model", "root-model"],
        "inherited"
    );
    assert_eq!(
        model_of("DIGGER"),
        ["root-model"],
        "inherited two levels down"
    );
    assert_eq!(model_of("CRITIC"), ["critic-model"], "its own");
    let research = mock
        .requests()
        .into_iter()
        .find(|r| r.system_prompt().unwrap().contains("RESEARCHER"))
        .unwrap();
    assert_eq!(research.last_user_text().as_deref(), Some("Research tides"));
    let critique = mock
        .requests()
        .into_iter()
        .find(|r| r.system_prompt().unwrap().contains("CRITIC"))
        .unwrap();
    assert_eq!(
        critique.last_user_text().as_deref(),
        Some(r#"{"text":"draft"}"#),
        "default prompt: the arguments as JSON"
    );

    let events = tree.events();
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
    let session = envelope["session_id"].as_str().unwrap();
    let checkpoint: Value = serde_json::from_str(
        &std::fs::read_to_string(
            tree.dir
                .join(".runner/sessions")
                .join(session)
                .join("checkpoint.json"),
        )
        .unwrap(),
    )
    .unwrap();
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
    let text = std::fs::read_to_string(tree.dir.join("run/transcript.txt")).unwrap();
    let transcript = runner::output::transcript::parse(&text).expect("the transcript parses");
    let json = serde_json::to_string(&transcript).unwrap();
    assert!(
        json.contains("dug") && json.contains("critique result"),
        "{json}"
    );
    let rendered = Run::new([
        "render",
        tree.dir.join("run/transcript.txt").to_str().unwrap(),
        "--format",
        "text",
    ])
    .run();
    assert!(rendered.stdout.contains("dig"), "{}", rendered.stdout);
}

#[test]
fn invalid_arguments_go_back_to_the_model_and_the_sub_agent_is_not_started() {
    let mock = MockServer::start();
    route(
        &mock,
        vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"subject": "tides"})),
                    Reply::text("ok"),
                ],
            ),
            ("RESEARCHER", vec![]),
        ],
    );
    let tree = Tree::new(
        &mock,
        &root_with_base(&mock, ""),
        &[("researcher.yaml", RESEARCHER)],
    );
    assert_eq!(tree.run().code, 0);
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.system_prompt().unwrap_or_default().contains("RESEARCHER"))
    );
    let tool = mock.requests()[1].body["messages"].to_string();
    assert!(
        tool.contains("invalid arguments") && tool.contains("topic"),
        "{tool}"
    );
}

#[test]
fn a_call_deeper_than_max_depth_becomes_a_tool_error() {
    let mock = MockServer::start();
    route(
        &mock,
        vec![
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
        ],
    );
    let tree = Tree::new(
        &mock,
        &root_with_base(&mock, "limits: { max_depth: 1 }\n"),
        &[("researcher.yaml", RESEARCHER)],
    );
    assert_eq!(tree.run().code, 0);
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.system_prompt().unwrap_or_default().contains("DIGGER"))
    );
    let second_research = mock
        .requests()
        .into_iter()
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
    let mock = MockServer::start();
    let digging: Vec<Reply> = (0..10)
        .map(|_| Reply::tool_call("dig", json!({"q": "more"})))
        .collect();
    route(
        &mock,
        vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "tides"})),
                    Reply::text("ok"),
                ],
            ),
            ("RESEARCHER", digging),
            ("DIGGER", (0..10).map(|_| Reply::text("dug")).collect()),
        ],
    );
    let tree = Tree::new(
        &mock,
        &root_with_base(&mock, "limits: { max_llm_calls: 5 }\n"),
        &[("researcher.yaml", RESEARCHER)],
    );
    let outcome = tree.run();
    assert_eq!(outcome.code, 3, "{}", outcome.stdout);
    assert_eq!(outcome.json()["limit"], "max_llm_calls");
    assert!(
        mock.request_count() <= 6,
        "{} requests",
        mock.request_count()
    );
}

#[test]
fn a_handoff_chain_continues_the_conversation_at_the_same_depth() {
    let mock = MockServer::start();
    route(
        &mock,
        vec![
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
        ],
    );
    let root = r#"system: You are AGENT-A.
prompt: My invoice is wrong.
handoffs:
  - name: transfer_to_b
    description: To B.
    agent: ./b.yaml
"#;
    let b = "name: agent-b\nsystem: You are AGENT-B.\nhandoffs:\n  - name: transfer_to_c\n    description: To C.\n    agent: { name: agent-c, system: You are AGENT-C. }\n";
    let tree = Tree::new(&mock, root, &[("b.yaml", b)]);
    let outcome = tree.run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.json()["output"], "C answers.");
    let last = mock.requests().pop().unwrap();
    assert_eq!(
        last.body["model"], "root-model",
        "the targets inherit the model"
    );
    assert!(
        last.body["messages"]
            .to_string()
            .contains("My invoice is wrong."),
        "same conversation"
    );
    let events = tree.events();
    let handoffs: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "agent.handoff")
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
