//! The seven examples of the transcript reference (`seeds/transcript-format.txt`), typed
//! verbatim: `runner render` reads every one of them, as another producer of the format
//! would write it; `--strict` keeps the runner's own grammar and refuses the three that
//! stray from it (a tool result of any JSON, blank lines between blocks, error details
//! with keys of their own).

use crate::support::Test;

const STEP: &str = "<<STEP_START>>
Step 1: Analyzing the user request ✓
I will now look up the information.
<<STEP_END>>
";

const TOOL: &str = "<<TOOL_STEP_START/web_search:call_123abc>>
<<TOOL_STEP_INPUT_START>>
{\"query\": \"current weather in Paris\"}
<<TOOL_STEP_INPUT_END>>
<<TOOL_STEP_RESULT_START>>
{\"temperature\": \"15°C\", \"condition\": \"Cloudy\"}
<<TOOL_STEP_RESULT_END>>
<<TOOL_STEP_END/web_search:call_123abc>>
";

const CHECKPOINT: &str = "<<CHECKPOINT_START>>
Checkpoint: step1_completed
<<CHECKPOINT_END>>
";

const WAITING_FOR_INPUT: &str = "<<INPUT_REQUIRED_START>>
Please provide your email address.
Expected input types: text
checkpoint_name: wait_for_email
<<INPUT_REQUIRED_END>>
";

const WITH_USER_INPUT: &str = "<<INPUT_REQUIRED_START>>
Please provide your email address.
Expected input types: text

<<USER_INPUT_PROVIDED_START>>
{\"input\": \"user@example.com\", \"type\": \"text\"}
<<USER_INPUT_PROVIDED_END>>
<<INPUT_REQUIRED_END>>
";

const ERROR: &str = "<<ERROR_START>>
Error: Tool execution failed
<<ERROR_END>>

<<ERROR_JSON_START>>
{
  \"error\": \"Tool execution failed\",
  \"traceback\": \"...\",
  \"timestamp\": \"2023-10-27T10:00:00Z\"
}
<<ERROR_JSON_END>>
";

const THINKING: &str = "<<thinking>>
The user is asking for weather data. I should use the weather tool.
<</thinking>>
I will check the weather for Paris.
";

/// Renders `text` as JSON (the parsed tree) with the default, tolerant reader.
fn tree(text: &str) -> serde_json::Value {
    Test::new()
        .file("reference.txt", text)
        .command(["render", "reference.txt", "--format", "json"])
        .run()
        .json()
}

#[test]
fn render_reads_every_example_of_the_transcript_reference_verbatim() {
    let step = tree(STEP);
    assert_eq!(step["items"][0]["kind"], "step");
    assert_eq!(step["items"][0]["title"], "Analyzing the user request");
    assert_eq!(step["items"][0]["status"], "done");
    assert_eq!(
        step["items"][0]["items"][0]["text"],
        "I will now look up the information."
    );

    // Any JSON is a result: it is the data of a successful call.
    let tool = tree(TOOL)["items"][0].clone();
    assert_eq!(tool["name"], "web_search");
    assert_eq!(tool["id"], "call_123abc");
    assert_eq!(tool["input"]["query"], "current weather in Paris");
    assert_eq!(tool["result"]["success"], true);
    assert_eq!(tool["result"]["data"]["temperature"], "15°C");

    assert_eq!(tree(CHECKPOINT)["items"][0]["name"], "step1_completed");

    let waiting = tree(WAITING_FOR_INPUT)["items"][0].clone();
    assert_eq!(waiting["prompt"], "Please provide your email address.");
    assert_eq!(waiting["checkpoint_name"], "wait_for_email");
    assert_eq!(waiting["provided"], serde_json::Value::Null);

    // The blank line before the answer is spacing, not part of the request.
    let answered = tree(WITH_USER_INPUT)["items"][0].clone();
    assert_eq!(answered["input_types"], "text");
    assert_eq!(answered["provided"]["input"], "user@example.com");

    // The blank line between the two parts is spacing; keys of its own are kept.
    let error = tree(ERROR);
    assert_eq!(error["items"].as_array().map(Vec::len), Some(1), "{error}");
    let error = &error["items"][0];
    assert_eq!(error["message"], "Tool execution failed");
    assert_eq!(error["json"]["timestamp"], "2023-10-27T10:00:00Z");
    assert_eq!(error["json"]["details"]["traceback"], "...");

    let thinking = tree(THINKING);
    assert_eq!(
        thinking["items"][1]["text"],
        "I will check the weather for Paris."
    );

    // All seven in one file, as a run's message would hold them, also as Markdown.
    let all = [
        STEP,
        TOOL,
        CHECKPOINT,
        WAITING_FOR_INPUT,
        WITH_USER_INPUT,
        ERROR,
        THINKING,
    ]
    .concat();
    Test::new()
        .file("reference.txt", &all)
        .command(["render", "reference.txt"])
        .stdout_contains("web_search")
        .stdout_contains("Tool execution failed")
        .stdout_contains("user@example.com")
        .run();
}

#[test]
fn strict_render_keeps_the_runners_own_grammar() {
    for (example, line) in [(TOOL, "6:"), (WITH_USER_INPUT, "4:"), (ERROR, "4:")] {
        Test::new()
            .file("reference.txt", example)
            .command(["render", "reference.txt", "--strict"])
            .status(2)
            .stderr_contains(&format!("reference.txt:{line}"))
            .run();
    }
    for example in [STEP, CHECKPOINT, WAITING_FOR_INPUT, THINKING] {
        Test::new()
            .file("reference.txt", example)
            .command(["render", "reference.txt", "--strict"])
            .run();
    }
}

#[test]
fn a_foreign_error_block_needs_no_details_and_a_missing_last_newline_is_forgiven() {
    let tree = tree("<<ERROR_START>>\nThe search service timed out\n<<ERROR_END>>");
    let error = &tree["items"][0];
    assert_eq!(error["message"], "The search service timed out");
    assert_eq!(error["json"]["error"], "The search service timed out");
}

#[test]
fn the_tolerant_reader_still_locates_a_broken_structure() {
    Test::new()
        .file(
            "broken.txt",
            &TOOL.replace("<<TOOL_STEP_END/web_search:call_123abc>>\n", ""),
        )
        .command(["render", "broken.txt"])
        .status(2)
        .stderr_contains("broken.txt:8:1: expected `<<TOOL_STEP_END/web_search:call_123abc>>`")
        .run();
}
