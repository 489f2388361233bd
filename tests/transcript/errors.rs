//! The strict parser rejects malformed input at the right `line:col`.

use runner::output::transcript::{ParseError, parse, parse_partial};

fn err(input: &str) -> ParseError {
    match parse(input) {
        Ok(t) => panic!("accepted: {input:?} as {t:?}"),
        Err(e) => e,
    }
}

fn at(input: &str) -> (usize, usize) {
    let e = err(input);
    (e.line, e.col)
}

#[test]
fn missing_step_end_at_eof() {
    let e = err("<<STEP_START>>\nStep 1: a ✓\ntext\n");
    assert_eq!((e.line, e.col), (4, 1));
    assert_eq!(
        e.to_string(),
        "4:1: expected `<<STEP_END>>` (step 1 opened at line 1), found end of input"
    );
}

#[test]
fn step_inside_step() {
    let e = err("<<STEP_START>>\nStep 1: a ✓\n<<STEP_START>>\nStep 2: b ✓\n<<STEP_END>>\n");
    assert_eq!((e.line, e.col), (3, 1));
    assert!(
        e.expected
            .contains("`<<STEP_END>>` (step 1 opened at line 1)")
    );
}

#[test]
fn mismatched_tool_end() {
    let input = "<<TOOL_STEP_START/search:c1>>\n<<TOOL_STEP_INPUT_START>>\n{}\n<<TOOL_STEP_INPUT_END>>\n<<TOOL_STEP_END/search:c2>>\n";
    let e = err(input);
    assert_eq!((e.line, e.col), (5, 1));
    assert_eq!(
        e.expected,
        "`<<TOOL_STEP_END/search:c1>>` (tool call opened at line 1)"
    );
    assert_eq!(e.found, "`<<TOOL_STEP_END/search:c2>>`");
}

#[test]
fn tool_end_must_follow_result() {
    let input = "<<TOOL_STEP_START/t:1>>\n<<TOOL_STEP_INPUT_START>>\n{}\n<<TOOL_STEP_INPUT_END>>\n<<TOOL_STEP_RESULT_START>>\n{\"success\":true}\n<<TOOL_STEP_RESULT_END>>\n<<STEP_END>>\n";
    assert_eq!(at(input), (8, 1));
}

#[test]
fn step_end_closing_a_tool() {
    let input = "<<STEP_START>>\nStep 1: a\n<<TOOL_STEP_START/t:1>>\n<<TOOL_STEP_INPUT_START>>\n{}\n<<TOOL_STEP_INPUT_END>>\n<<STEP_END>>\n";
    let e = err(input);
    assert_eq!((e.line, e.col), (7, 1));
    assert!(
        e.expected
            .starts_with("`<<TOOL_STEP_RESULT_START>>` or `<<TOOL_STEP_END/t:1>>`")
    );
}

#[test]
fn stray_end_tag_at_top_level() {
    assert_eq!(at("hello\n<<STEP_END>>\n"), (2, 1));
}

#[test]
fn unknown_tag() {
    let e = err("<<STEP_START>>\nStep 1: a ✓\n<<FOO>>\n<<STEP_END>>\n");
    assert_eq!((e.line, e.col), (3, 1));
    assert_eq!(e.found, "`<<FOO>>`");
}

#[test]
fn unescaped_introducer_in_text() {
    // `<<` in the middle of a text line can only come from a forger or a buggy writer.
    let e = err("line one\nsay <<STEP_END>> here\n");
    assert_eq!((e.line, e.col), (2, 5));
    assert!(e.expected.contains("unescaped `<<`"), "{e}");
}

#[test]
fn bad_text_escape() {
    let e = err("<<thinking>>\nab\ncd <\\x\n<</thinking>>\n");
    assert_eq!((e.line, e.col), (3, 5));
}

#[test]
fn bad_header() {
    assert_eq!(at("<<STEP_START>>\nStap 1: a ✓\n<<STEP_END>>\n"), (2, 1));
    assert_eq!(at("<<STEP_START>>\nStep x: a ✓\n<<STEP_END>>\n"), (2, 6));
    assert_eq!(at("<<STEP_START>>\nStep 12 a ✓\n<<STEP_END>>\n"), (2, 8));
    assert_eq!(
        at("<<STEP_START>>\nStep 99999999999: a\n<<STEP_END>>\n"),
        (2, 6)
    );
    // Bad escape in the title: column of the backslash, in characters.
    assert_eq!(
        at("<<STEP_START>>\nStep 1: é\\q ✓\n<<STEP_END>>\n"),
        (2, 10)
    );
    // The header is required.
    assert_eq!(at("<<STEP_START>>\n"), (2, 1));
}

#[test]
fn bad_json_position() {
    let input = "<<TOOL_STEP_START/t:1>>\n<<TOOL_STEP_INPUT_START>>\n{\"a\": tru}\n<<TOOL_STEP_INPUT_END>>\n";
    let e = err(input);
    assert_eq!(
        (e.line, e.col),
        (3, 10),
        "column of the `}}` where `e` was due"
    );
    assert!(e.expected.starts_with("valid JSON"), "{e}");
}

#[test]
fn tool_result_shape() {
    let input = "<<TOOL_STEP_START/t:1>>\n<<TOOL_STEP_INPUT_START>>\n{}\n<<TOOL_STEP_INPUT_END>>\n<<TOOL_STEP_RESULT_START>>\n{\"ok\":true}\n<<TOOL_STEP_RESULT_END>>\n<<TOOL_STEP_END/t:1>>\n";
    let e = err(input);
    assert_eq!(e.line, 6);
    assert!(e.expected.contains("unknown field `ok`"), "{e}");
}

#[test]
fn tool_start_without_colon() {
    assert_eq!(at("<<TOOL_STEP_START/nameonly>>\n"), (1, 19));
}

#[test]
fn tool_input_required() {
    assert_eq!(at("<<TOOL_STEP_START/t:1>>\n{}\n"), (2, 1));
}

#[test]
fn empty_block_needs_a_line() {
    // Empty text is written as one empty line; no line at all is malformed.
    assert_eq!(at("<<thinking>>\n<</thinking>>\n"), (2, 1));
}

#[test]
fn missing_final_newline() {
    let e = err("<<CHECKPOINT_START>>\nCheckpoint: a\n<<CHECKPOINT_END>>");
    assert_eq!((e.line, e.col), (3, 19));
    assert_eq!(e.expected, "a newline at the end of the line");
}

#[test]
fn crlf_tags_are_not_tags() {
    // A CRLF-converted file: the tag line is `<<STEP_START>>\r`, which is no tag.
    assert_eq!(
        at("<<STEP_START>>\r\nStep 1: a\r\n<<STEP_END>>\r\n"),
        (1, 1)
    );
}

#[test]
fn checkpoint_shape() {
    assert_eq!(
        at("<<CHECKPOINT_START>>\nname: a\n<<CHECKPOINT_END>>\n"),
        (2, 1)
    );
    assert_eq!(
        at("<<CHECKPOINT_START>>\nCheckpoint: a\nmore\n<<CHECKPOINT_END>>\n"),
        (3, 1)
    );
}

#[test]
fn error_needs_json() {
    assert_eq!(
        at("<<ERROR_START>>\nError: x\n<<ERROR_END>>\nafter\n"),
        (4, 1)
    );
    assert_eq!(at("<<ERROR_START>>\nOops: x\n<<ERROR_END>>\n"), (2, 1));
}

#[test]
fn input_required_shape() {
    // No `Expected input types:` line.
    assert_eq!(
        at("<<INPUT_REQUIRED_START>>\nWho?\nsomething\n<<INPUT_REQUIRED_END>>\n"),
        (3, 1)
    );
    // Only the metadata, no prompt line.
    assert_eq!(
        at("<<INPUT_REQUIRED_START>>\nExpected input types: text\n<<INPUT_REQUIRED_END>>\n"),
        (2, 1)
    );
    // The answer must be followed by the end of the request.
    assert_eq!(
        at(
            "<<INPUT_REQUIRED_START>>\nWho?\nExpected input types: text\n<<USER_INPUT_PROVIDED_START>>\n{\"input\":\"me\",\"type\":\"text\"}\n<<USER_INPUT_PROVIDED_END>>\n<<STEP_END>>\n"
        ),
        (7, 1)
    );
}

#[test]
fn partial_mode_keeps_complete_blocks() {
    let full = super::fixtures::tools();
    // Cut inside the checkpoint block that follows step 1.
    let cut = full.find("Checkpoint: ").expect("has checkpoint");
    let partial = parse_partial(&full[..cut]);
    assert_eq!(partial.transcript.items.len(), 1, "step 1 survives");
    let tail = partial.tail.expect("tail is flagged");
    let checkpoint_line = full[..cut].lines().count();
    assert_eq!(tail.line, checkpoint_line);
    assert!(parse(&full[..cut]).is_err(), "strict mode rejects the cut");
}

#[test]
fn partial_mode_on_torn_last_line() {
    let partial =
        parse_partial("<<CHECKPOINT_START>>\nCheckpoint: a\n<<CHECKPOINT_END>>\n<<STEP_STA");
    assert_eq!(partial.transcript.items.len(), 1);
    let tail = partial.tail.expect("tail");
    assert_eq!(tail.line, 4);
    assert_eq!((tail.error.line, tail.error.col), (4, 11));
}

#[test]
fn partial_mode_on_complete_input() {
    let full = super::fixtures::nested();
    let partial = parse_partial(&full);
    assert!(partial.tail.is_none());
    assert_eq!(partial.transcript, parse(&full).expect("parses"));
}
