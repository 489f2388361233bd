//! Transcript throughput: parsing a large transcript (target ≥ 200 MB/s) and writing one,
//! both as a whole tree and through the streaming writer.
//!
//! Run: `cargo bench --bench transcript`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use runner::output::transcript::{
    Item, Step, StepStatus, ToolResult, ToolStep, Transcript, TranscriptSink, TranscriptWriter,
    parse, write_transcript,
};
use serde_json::json;

/// A run of `steps` steps shaped like real ones: reasoning, a couple of tool calls with
/// JSON in and out (one returning a file), assistant text; every tenth step runs a
/// sub-agent.
fn large_transcript(steps: u32) -> Transcript {
    let paragraph = "The user wants the failing test fixed. I will read the test file, \
        then the module under test, and compare the expected output with what the \
        function returns for an empty input (`parse(\"\")` should be `Ok(vec![])`).\n";
    let file = "fn main() {\n    let v: Vec<u8> = vec![1 << 3, 2];\n    println!(\"{v:?}\");\n}\n"
        .repeat(20);
    let mut items = Vec::new();
    for n in 1..=steps {
        let mut step_items = vec![
            Item::thinking(paragraph.repeat(3)),
            Item::Tool(ToolStep {
                name: "read_file".into(),
                id: format!("call_{n}_a"),
                input: json!({"path": format!("src/module_{n}.rs"), "max_bytes": 65536}),
                nested: Vec::new(),
                result: Some(ToolResult::ok(
                    json!({"content": file, "bytes": file.len()}),
                )),
            }),
            Item::Tool(ToolStep {
                name: "grep".into(),
                id: format!("call_{n}_b"),
                input: json!({"pattern": "fn \\w+<T>", "paths": ["src", "tests"]}),
                nested: Vec::new(),
                result: Some(ToolResult::ok(json!([
                    {"file": "src/a.rs", "line": 10, "text": "fn parse<T>(s: &str) -> T"},
                    {"file": "src/b.rs", "line": 42, "text": "fn render<T>(t: &T)"},
                ]))),
            }),
            Item::text(paragraph),
        ];
        if n % 10 == 0 {
            step_items.push(Item::Tool(ToolStep {
                name: "explorer".into(),
                id: format!("sub_{n}"),
                input: json!({"question": "where is it?"}),
                nested: vec![Item::Step(Step {
                    number: 1,
                    title: "Search".into(),
                    status: StepStatus::Done,
                    single_step: false,
                    items: vec![Item::thinking(paragraph), Item::text("Found it.")],
                })],
                result: Some(ToolResult::ok(json!("Found it."))),
            }));
        }
        items.push(Item::Step(Step {
            number: n,
            title: format!("Investigate module {n}"),
            status: StepStatus::Done,
            single_step: false,
            items: step_items,
        }));
    }
    items.push(Item::text("The test now passes."));
    Transcript { items }
}

fn bench(c: &mut Criterion) {
    let tree = large_transcript(2000);
    let text = write_transcript(&tree);
    assert_eq!(parse(&text).ok().as_ref(), Some(&tree));

    let mut group = c.benchmark_group("transcript");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Bytes(text.len() as u64));

    group.bench_function(format!("parse {} MB", text.len() >> 20), |b| {
        b.iter(|| parse(black_box(&text)))
    });
    group.bench_function("write_transcript", |b| {
        b.iter(|| write_transcript(black_box(&tree)))
    });
    group.bench_function("streaming writer", |b| {
        b.iter(|| {
            let mut w = TranscriptWriter::new(std::io::sink());
            for item in &tree.items {
                stream(&mut w, item);
            }
        })
    });
    group.finish();
}

/// Replays an item through the streaming API, as an engine would.
fn stream(w: &mut dyn TranscriptSink, item: &Item) {
    let r = match item {
        Item::Step(step) => (|| {
            w.step_start(step.number, &step.title)?;
            for inner in &step.items {
                stream(w, inner);
            }
            w.step_end(step.status)
        })(),
        Item::Thinking { text } => w.thinking(text),
        Item::Text { text } => w.final_answer(text).or_else(|_| w.text(text)),
        Item::Tool(tool) => (|| {
            w.tool_start(&tool.name, &tool.id, &tool.input)?;
            if !tool.nested.is_empty() {
                w.tool_nested(&tool.id, tool.nested.clone())?;
            }
            match &tool.result {
                Some(r) => w.tool_result(&tool.name, &tool.id, r.clone()),
                None => w.tool_end(&tool.name, &tool.id),
            }
        })(),
        _ => Ok(()),
    };
    black_box(r).ok();
}

criterion_group!(benches, bench);
criterion_main!(benches);
