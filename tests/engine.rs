//! The engine as a library (UAP §4–§6, §9): generate/stream equivalence, strategies plugged
//! in through the trait, middleware order, and the tool scheduler's ordering rules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner::engine::agent::{Agent, RunContext};
use runner::engine::agent::{AgentTool, ExecutionStrategy};
use runner::engine::budget::{Budget, RunLimits};
use runner::engine::events::{Emitter, Event, EventBus};
use runner::engine::middleware::{CallContext, Middleware};
use runner::engine::scheduler::{CallObserver, SchedulePolicy, run_calls};
use runner::engine::strategy::LoopStrategy;
use runner::engine::{AgentState, StrategyResult, Turn};
use runner::provider::{
    BoxFuture, Message, ModelResponse, ScriptedProvider, ScriptedResponse, ScriptedToolCall,
    ScriptedUsage, ToolCall,
};
use runner::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::watch;

/// A tool that sleeps, then echoes its name; records when it started and finished.
struct Sleeper {
    name: String,
    millis: u64,
    sequential: bool,
    log: Arc<Mutex<Vec<String>>>,
    parameters: Value,
}

impl Sleeper {
    fn tool(name: &str, millis: u64, log: &Arc<Mutex<Vec<String>>>) -> Arc<dyn Tool> {
        Arc::new(Sleeper {
            name: name.into(),
            millis,
            sequential: false,
            log: log.clone(),
            parameters: json!({"type": "object"}),
        })
    }
}

impl Tool for Sleeper {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "sleeps"
    }
    fn parameters(&self) -> &Value {
        &self.parameters
    }
    fn sequential(&self) -> bool {
        self.sequential
    }
    fn call<'a>(&'a self, _arguments: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("start {}", self.name));
            tokio::time::sleep(Duration::from_millis(self.millis)).await;
            self.log.lock().unwrap().push(format!("end {}", self.name));
            ToolOutput::ok(Value::String(self.name.clone()))
        })
    }
}

fn script() -> Vec<ScriptedResponse> {
    vec![
        ScriptedResponse {
            tool_calls: vec![ScriptedToolCall {
                name: "nap".into(),
                arguments: json!({}),
                id: None,
            }],
            usage: Some(ScriptedUsage {
                input_tokens: 7,
                output_tokens: 3,
            }),
            ..Default::default()
        },
        ScriptedResponse {
            text: Some("rested".into()),
            usage: Some(ScriptedUsage {
                input_tokens: 9,
                output_tokens: 2,
            }),
            ..Default::default()
        },
    ]
}

fn agent(
    log: &Arc<Mutex<Vec<String>>>,
    middleware: Vec<Arc<dyn Middleware>>,
    strategy: Arc<dyn ExecutionStrategy>,
) -> Agent {
    let provider = Arc::new(ScriptedProvider::new("script", script()));
    let mut agent = Agent::builder("tester", provider)
        .system("You test.")
        .tool(AgentTool::Plain(Sleeper::tool("nap", 1, log)))
        .strategy(strategy)
        .structured_retries(1);
    for layer in middleware {
        agent = agent.middleware(layer);
    }
    agent.build()
}

fn context(events: Arc<Mutex<Vec<Event>>>) -> RunContext {
    let sink = move |event: &Event| events.lock().unwrap().push(event.clone());
    let (_tx, cancel) = watch::channel(false);
    RunContext::new(
        Emitter::root(
            EventBus::new(vec![Arc::new(sink)]),
            "tester",
            "run".into(),
            "thread".into(),
        ),
        Arc::new(Budget::new(RunLimits::default())),
        cancel,
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The parts of a state that must match (ids are fresh on every operation).
fn comparable(state: &AgentState) -> Value {
    let mut json = state.to_json();
    json["id"] = Value::Null;
    json
}

#[test]
fn stream_and_generate_end_in_equivalent_states() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime();
    let generated = {
        let agent = agent(&log, vec![], Arc::new(LoopStrategy::default()));
        let ctx = context(Arc::new(Mutex::new(Vec::new())));
        rt.block_on(agent.generate(Some(Message::user("rest")), AgentState::initial(), &ctx))
            .unwrap()
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let streamed = {
        let agent = agent(&log, vec![], Arc::new(LoopStrategy::default()));
        let (_stop, cancel) = watch::channel(false);
        let budget = Arc::new(Budget::new(RunLimits::default()));
        rt.block_on(agent.stream(
            Some(Message::user("rest")),
            AgentState::initial(),
            budget,
            cancel,
            tx,
        ))
    };
    assert_eq!(comparable(&generated.1), comparable(&streamed.state));
    assert_eq!(generated.0.output, "rested");
    assert_eq!(streamed.output.as_deref(), Some("rested"));
    assert_eq!(generated.1.llm_calls, 2);
    assert_eq!(generated.1.tool_calls, 1);
    assert_eq!(generated.1.usage.total_tokens, 21);
    let mut kinds = Vec::new();
    while let Ok(event) = rx.try_recv() {
        kinds.push(event.kind());
    }
    assert!(
        kinds.contains(&"agent.tool.execution.completed"),
        "{kinds:?}"
    );
    // The stream is the whole run: its lifecycle from creation to completion.
    assert_eq!(kinds.first(), Some(&"agent.run.created"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"thread.run.completed"), "{kinds:?}");
    // The state survives its JSON form exactly.
    assert_eq!(
        AgentState::from_json(&generated.1.to_json()).unwrap(),
        generated.1
    );
}

struct Recording {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl Middleware for Recording {
    fn name(&self) -> &str {
        self.name
    }
    fn before<'a>(&'a self, ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("before {}", self.name));
            ctx
        })
    }
    fn after<'a>(
        &'a self,
        _ctx: &'a CallContext,
        response: ModelResponse,
    ) -> BoxFuture<'a, ModelResponse> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("after {}", self.name));
            response
        })
    }
}

#[test]
fn middleware_runs_before_in_order_and_after_in_reverse() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let chain: Vec<Arc<dyn Middleware>> = vec![
        Arc::new(Recording {
            name: "first",
            log: log.clone(),
        }),
        Arc::new(Recording {
            name: "second",
            log: log.clone(),
        }),
    ];
    let agent = agent(
        &Arc::new(Mutex::new(Vec::new())),
        chain,
        Arc::new(LoopStrategy::default()),
    );
    let ctx = context(Arc::new(Mutex::new(Vec::new())));
    runtime()
        .block_on(agent.generate(Some(Message::user("go")), AgentState::initial(), &ctx))
        .unwrap();
    let per_call = [
        "before first",
        "before second",
        "after second",
        "after first",
    ];
    let expected: Vec<&str> = per_call.iter().chain(per_call.iter()).copied().collect();
    assert_eq!(*log.lock().unwrap(), expected);
}

/// A strategy from outside the crate: answers after exactly one model call, no tools.
struct OneShot;

impl ExecutionStrategy for OneShot {
    fn name(&self) -> &str {
        "one-shot"
    }
    fn execute<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, StrategyResult> {
        Box::pin(async move {
            let options = runner::engine::step::CallOptions::default();
            let (response, state) =
                runner::engine::step::call_model(agent, state, ctx, &options, "step-1").await?;
            Ok((
                Turn {
                    output: format!("one shot: {}", response.tool_calls.len()),
                    structured: None,
                    usage: Default::default(),
                    messages: vec![],
                }
                .into(),
                state,
            ))
        })
    }
}

#[test]
fn a_custom_strategy_plugs_in_through_the_trait() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = agent(&log, vec![], Arc::new(OneShot));
    let ctx = context(Arc::new(Mutex::new(Vec::new())));
    let (turn, state) = runtime()
        .block_on(agent.generate(Some(Message::user("go")), AgentState::initial(), &ctx))
        .unwrap();
    assert_eq!(turn.output, "one shot: 1");
    assert_eq!(state.llm_calls, 1);
    assert!(log.lock().unwrap().is_empty(), "no tool ran");
}

struct Admit;

impl CallObserver for Admit {
    fn admit(&self, _call: &ToolCall) -> Result<(), runner::engine::budget::LimitHit> {
        Ok(())
    }
    fn started(&self, _call: &ToolCall) {}
    fn finished(&self, _call: &ToolCall, _output: &Arc<ToolOutput>, _duration: Duration) {}
}

/// Keeps every result it is told of.
#[derive(Default)]
struct Keep(Mutex<Vec<Arc<ToolOutput>>>);

impl CallObserver for Keep {
    fn admit(&self, _call: &ToolCall) -> Result<(), runner::engine::budget::LimitHit> {
        Ok(())
    }
    fn started(&self, _call: &ToolCall) {}
    fn finished(&self, _call: &ToolCall, output: &Arc<ToolOutput>, _duration: Duration) {
        self.0.lock().unwrap().push(Arc::clone(output));
    }
}

#[test]
fn a_calls_result_is_shared_with_what_reports_it_not_copied() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tools: HashMap<String, Arc<dyn Tool>> =
        [("fetch".to_string(), Sleeper::tool("fetch", 1, &log))]
            .into_iter()
            .collect();
    let (_tx, cancel) = watch::channel(false);
    let keep = Keep::default();
    let (results, _) = runtime().block_on(run_calls(
        &calls(&["fetch"]),
        &tools,
        &Default::default(),
        &SchedulePolicy::default(),
        &keep,
        &cancel,
    ));
    let reported = keep.0.lock().unwrap();
    assert_eq!(reported.len(), 1);
    assert!(Arc::ptr_eq(&reported[0], &results[0].output));
}

fn calls(names: &[&str]) -> Vec<ToolCall> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| ToolCall::from_raw(format!("c{i}"), n.to_string(), "{}"))
        .collect()
}

#[test]
fn depends_on_orders_calls_within_a_turn_and_results_keep_call_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tools: HashMap<String, Arc<dyn Tool>> = [
        Sleeper::tool("report", 5, &log),
        Sleeper::tool("fetch", 60, &log),
    ]
    .into_iter()
    .map(|t| (t.name().to_string(), t))
    .collect();
    let dependencies = [("report".to_string(), vec!["fetch".to_string()])]
        .into_iter()
        .collect();
    let (_tx, cancel) = watch::channel(false);
    let (results, hit) = runtime().block_on(run_calls(
        &calls(&["report", "fetch"]),
        &tools,
        &dependencies,
        &SchedulePolicy::default(),
        &Admit,
        &cancel,
    ));
    assert!(hit.is_none());
    assert_eq!(
        *log.lock().unwrap(),
        ["start fetch", "end fetch", "start report", "end report"]
    );
    let names: Vec<&str> = results.iter().map(|r| r.call.name.as_str()).collect();
    assert_eq!(names, ["report", "fetch"]);
}

#[test]
fn a_sequential_tool_runs_alone() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let alone: Arc<dyn Tool> = Arc::new(Sleeper {
        name: "alone".into(),
        millis: 30,
        sequential: true,
        log: log.clone(),
        parameters: json!({"type": "object"}),
    });
    let tools: HashMap<String, Arc<dyn Tool>> = [
        Sleeper::tool("a", 30, &log),
        alone,
        Sleeper::tool("b", 30, &log),
    ]
    .into_iter()
    .map(|t| (t.name().to_string(), t))
    .collect();
    let (_tx, cancel) = watch::channel(false);
    runtime().block_on(run_calls(
        &calls(&["a", "alone", "b"]),
        &tools,
        &Default::default(),
        &SchedulePolicy::default(),
        &Admit,
        &cancel,
    ));
    let log = log.lock().unwrap().clone();
    let start = log.iter().position(|l| l == "start alone").unwrap();
    assert_eq!(log[start + 1], "end alone", "{log:?}");
    assert_eq!(log[start - 1], "end a", "{log:?}");
}

#[test]
fn parallel_n_bounds_concurrency() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tools: HashMap<String, Arc<dyn Tool>> = ["a", "b", "c"]
        .iter()
        .map(|n| (n.to_string(), Sleeper::tool(n, 20, &log)))
        .collect();
    let (_tx, cancel) = watch::channel(false);
    let policy = SchedulePolicy {
        parallel: Some(2),
        ..Default::default()
    };
    runtime().block_on(run_calls(
        &calls(&["a", "b", "c"]),
        &tools,
        &Default::default(),
        &policy,
        &Admit,
        &cancel,
    ));
    let log = log.lock().unwrap().clone();
    let mut running: i32 = 0;
    let mut most = 0;
    for line in &log {
        running += if line.starts_with("start") { 1 } else { -1 };
        most = most.max(running);
    }
    assert_eq!(most, 2, "{log:?}");
}

#[test]
fn an_agent_file_runs_from_the_library_in_a_few_lines() {
    let kinds = Arc::new(Mutex::new(Vec::new()));
    let sink = kinds.clone();
    let outcome = runner::RunFile::new("examples/quickstart.yaml")
        .subscribe(Arc::new(move |event: &Event| {
            sink.lock().unwrap().push(event.kind())
        }))
        .run()
        .unwrap();
    assert_eq!(outcome.status, runner::RunStatus::Completed);
    assert_eq!(
        outcome.output.as_deref(),
        Some("This project is `runner`, a declarative agent runner.")
    );
    let kinds = kinds.lock().unwrap();
    assert_eq!(kinds.first(), Some(&"agent.run.created"));
    assert_eq!(kinds.last(), Some(&"thread.run.completed"));
}

#[test]
fn a_library_run_that_cannot_start_says_where_the_file_is_wrong() {
    let dir = std::env::temp_dir().join(format!("runner-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(&file, "name: bad\nmodel: scripted/x\npromt: hi\n").unwrap();
    let error = runner::RunFile::new(&file).run().unwrap_err();
    assert_eq!(error.code, "invalid_agent");
    assert!(error.message.contains("bad.yaml:3:1"), "{}", error.message);
}
