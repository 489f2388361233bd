//! The streaming writer: what reaches the file, and when.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use runner::output::transcript::{
    Item, Recorder, StepStatus, ToolResult, TranscriptSink, TranscriptWriter, WriteError, parse,
    parse_partial,
};
use serde_json::json;

/// A `Write` whose contents can be inspected while the writer still owns it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("lock").clone()).expect("utf-8")
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn completed_steps_reach_the_file_and_open_ones_do_not() -> Result<(), WriteError> {
    let file = Shared::default();
    let mut w = TranscriptWriter::new(file.clone());
    w.step_start(1, "First")?;
    w.text("one")?;
    assert_eq!(file.text(), "", "an open step is not written");
    w.step_end(StepStatus::Done)?;
    let after_step = file.text();
    assert!(after_step.starts_with("<<STEP_START>>\nStep 1: First ✓\n"));
    w.checkpoint("cp1")?;
    w.step_start(2, "Second")?;
    w.tool_start("t", "1", &json!({}))?;
    // A crash now: the file holds step 1 and the checkpoint, and parses strictly.
    let on_disk = parse(&file.text()).expect("crash-time file parses");
    assert_eq!(on_disk.items.len(), 2);
    w.tool_result("t", "1", ToolResult::ok(json!(1)))?;
    w.step_end(StepStatus::Failed)?;
    let t = parse(&file.text()).expect("parses");
    assert_eq!(t.items.len(), 3);
    Ok(())
}

#[test]
fn abort_writes_the_open_step_without_a_mark() -> Result<(), WriteError> {
    let file = Shared::default();
    let mut w = TranscriptWriter::new(file.clone());
    w.step_start(1, "Long")?;
    w.thinking("working")?;
    w.tool_start("slow", "s1", &json!({"n": 1}))?;
    w.abort()?;
    let text = file.text();
    assert!(text.contains("\nStep 1: Long\n"), "{text}");
    let t = parse(&text).expect("parses");
    let Item::Step(step) = &t.items[0] else {
        panic!("step expected")
    };
    assert_eq!(step.status, StepStatus::Open);
    let Item::Tool(tool) = &step.items[1] else {
        panic!("tool expected")
    };
    assert!(tool.result.is_none());
    assert!(!w.is_busy());
    Ok(())
}

#[test]
fn writer_output_equals_whole_tree_serialisation() {
    for (name, text) in super::fixtures::all() {
        let tree = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            runner::output::transcript::write_transcript(&tree),
            text,
            "{name}"
        );
    }
}

#[test]
fn torn_write_is_detected() {
    let text = super::fixtures::parallel_tools();
    let first_step_end = text.find("<<STEP_END>>\n").expect("step end") + "<<STEP_END>>\n".len();
    // Died while writing step 2: half of its block made it to disk.
    let second_end = text[first_step_end..].find("<<STEP_END>>").expect("second") + first_step_end;
    let torn = &text[..(first_step_end + second_end) / 2];
    let partial = parse_partial(torn);
    assert_eq!(partial.transcript.items.len(), 1);
    let tail = partial.tail.expect("torn tail flagged");
    assert_eq!(tail.line, text[..first_step_end].lines().count() + 1);
}

#[test]
fn misuse_is_reported() {
    let mut r = Recorder::new();
    assert!(matches!(
        r.step_end(StepStatus::Done),
        Err(WriteError::Misuse(_))
    ));
    assert!(r.step_start(1, "a").is_ok());
    assert!(r.step_start(2, "b").is_err(), "steps do not nest");
    assert!(
        r.tool_result("t", "nope", ToolResult::ok(json!(null)))
            .is_err()
    );
    assert!(r.tool_start("t", "1", &json!({})).is_ok());
    assert!(r.tool_start("t", "1", &json!({})).is_err(), "duplicate id");
    assert!(
        r.tool_result("other", "1", ToolResult::ok(json!(null)))
            .is_err()
    );
    assert!(r.step_end(StepStatus::Done).is_err(), "tool still pending");
    assert!(r.final_answer("x").is_err(), "step still open");
    assert!(r.tool_end("t", "1").is_ok());
    assert!(r.step_end(StepStatus::Done).is_ok());
    assert!(r.finish().is_ok());
}

#[test]
fn parallel_results_attach_by_id() -> Result<(), WriteError> {
    let mut r = Recorder::new();
    r.step_start(1, "p")?;
    r.tool_start("a", "1", &json!(1))?;
    r.tool_start("b", "2", &json!(2))?;
    r.tool_result("b", "2", ToolResult::ok(json!("B")))?;
    r.tool_result("a", "1", ToolResult::ok(json!("A")))?;
    r.step_end(StepStatus::Done)?;
    let items = r.finish()?;
    let Item::Step(step) = &items[0] else {
        panic!("step")
    };
    let names: Vec<_> = step
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Tool(t) => Some((t.name.as_str(), t.result.as_ref().map(|r| r.data.clone()))),
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        vec![("a", Some(json!("A"))), ("b", Some(json!("B")))],
        "blocks keep start order"
    );
    Ok(())
}

/// Replays a tree through the streaming API, as an engine would.
fn replay(w: &mut dyn TranscriptSink, item: &Item) -> Result<(), WriteError> {
    match item {
        Item::Step(step) => {
            w.step_start(step.number, &step.title)?;
            if step.single_step {
                w.single_step()?;
            }
            for inner in &step.items {
                replay(w, inner)?;
            }
            w.step_end(step.status)
        }
        Item::Thinking { text } => w.thinking(text),
        Item::Text { text } => w.text(text),
        Item::Tool(tool) => {
            w.tool_start(&tool.name, &tool.id, &tool.input)?;
            w.tool_nested(&tool.id, tool.nested.clone())?;
            match &tool.result {
                Some(r) => w.tool_result(&tool.name, &tool.id, r.clone()),
                None => w.tool_end(&tool.name, &tool.id),
            }
        }
        Item::Checkpoint(cp) => w.checkpoint(&cp.name),
        Item::Error(e) => w.error(&e.message, e.json.clone()),
        Item::InputRequired(r) => w.input_required(r.clone()),
        Item::UserInputProvided(u) => w.user_input_provided(u.clone()),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    /// Streaming a tree block by block writes exactly what the whole-tree writer writes.
    #[test]
    fn streaming_equals_whole_tree(t in super::strategies::transcript()) {
        let file = Shared::default();
        let mut w = TranscriptWriter::new(file.clone());
        for item in &t.items {
            replay(&mut w, item).expect("valid call sequence");
        }
        proptest::prop_assert!(!w.is_busy());
        proptest::prop_assert_eq!(file.text(), runner::output::transcript::write_transcript(&t));
    }
}

#[test]
fn final_answer_is_the_text_after_the_last_step() {
    let t = parse(&super::fixtures::input_requests()).expect("parses");
    assert_eq!(t.final_answer(), Some("Migrated; confirmation was `yes`."));
    let t = parse(&super::fixtures::errors()).expect("parses");
    assert_eq!(t.final_answer(), None);
}
