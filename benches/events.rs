//! The cost of emitting one event: building the envelope and writing it as a JSON line
//! (to a sink that discards it, so only runner's own work is measured), next to what a
//! model call costs (milliseconds to seconds).

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use runner::engine::events::{Emitter, EventBus, JsonlSink, ToolCompleted};
use runner::tools::ToolOutput;

fn emit(c: &mut Criterion) {
    let bus = EventBus::new(vec![Arc::new(JsonlSink::new(std::io::sink()))]);
    let emitter = Emitter::root(bus, "bench", "run".into(), "thread".into());
    c.bench_function("events/emit_tool_completed_to_jsonl", |b| {
        b.iter(|| {
            emitter.emit(ToolCompleted {
                step_id: "s".into(),
                tool_call_id: "call_1".into(),
                tool_name: "read_file".into(),
                result: ToolOutput::ok("fn main() {}\n").into(),
                duration_ms: 3,
            })
        })
    });
}

criterion_group!(benches, emit);
criterion_main!(benches);
