//! `runner render` stays bounded whatever the transcript's shape (issue #35): nesting
//! past the parser's bound is a located error (it used to overflow the stack), and the
//! rendering grows linearly with the transcript, however deep it nests.

use std::time::Duration;

use crate::support::Test;

/// A transcript of `depth` tool calls, each inside the one before.
fn nested(depth: usize) -> String {
    let mut text = String::new();
    for n in 0..depth {
        text.push_str(&format!(
            "<<TOOL_STEP_START/helper:c{n}>>\n<<TOOL_STEP_INPUT_START>>\n{{\"task\": \"look into it\"}}\n<<TOOL_STEP_INPUT_END>>\nworking on it\n"
        ));
    }
    for n in (0..depth).rev() {
        text.push_str(&format!(
            "<<TOOL_STEP_RESULT_START>>\n{{\"success\":true,\"data\":\"ok\"}}\n<<TOOL_STEP_RESULT_END>>\n<<TOOL_STEP_END/helper:c{n}>>\n"
        ));
    }
    text
}

#[test]
fn nesting_past_the_bound_is_a_located_error_not_a_crash() {
    // Each call takes five lines: line 5 * 256 + 1 opens the 257th.
    Test::new()
        .file("deep.transcript", &nested(30_000))
        .command(["render", "deep.transcript"])
        .time_limit(Duration::from_secs(120))
        .status(2)
        .stderr_contains(
            "deep.transcript:1281:1: expected at most 256 steps and tool calls open at once",
        )
        .run();
}

/// How many bytes of Markdown a byte of a transcript nested `depth` deep gives.
fn markdown_per_byte(depth: usize) -> f64 {
    let transcript = nested(depth);
    let ran = Test::new()
        .file("nested.transcript", &transcript)
        .command(["render", "nested.transcript", "--format", "markdown"])
        .time_limit(Duration::from_secs(120))
        .run();
    ran.stdout.len() as f64 / transcript.len() as f64
}

/// Each level of nesting used to quote all that is inside it once more, so the output
/// grew with the square of the depth (a 506 KB transcript gave 104 MB); a byte of a
/// transcript 250 levels deep now gives about as much as one 50 levels deep.
#[test]
fn markdown_grows_linearly_however_deep_the_transcript_nests() {
    let shallow = markdown_per_byte(50);
    let deep = markdown_per_byte(250);
    assert!(
        deep < shallow * 1.25,
        "{shallow:.1} then {deep:.1} bytes out per byte in"
    );
}
