//! Markdown rendering, for reading a run in an editor or a web view.
//!
//! Steps become headings, tool calls collapsible `<details>` blocks with pretty-printed
//! JSON, errors and input requests GitHub-style alerts. A sub-agent's items are rendered
//! inside its tool call as a block quote, one `>` per level, so depth stays visible, up to
//! [`MAX_QUOTE_DEPTH`] levels: deeper items stay at that level and say their depth. Each
//! level copies what it quotes and puts `> ` before each of its lines, so an unbounded
//! number of levels made the output grow with the square of the nesting; bounded, the
//! output grows linearly with the transcript.
//!
//! Everything the model controls is shown as text, never as Markdown: a model that
//! writes `### Step 2: … ✓` or a `<details>` block must not forge a step or a tool call.
//! Two rules, picked by where the string goes:
//!
//! * Free text (thinking, text, the final answer, prompts, user input, multi-line error
//!   messages) goes into a fenced code block: [`verbatim`]. Inside a fence nothing is
//!   Markdown or HTML, and the only way out is a closing fence, which the text cannot
//!   write because the fence is longer than any backtick run in it (CommonMark §4.5).
//!   Line breaks and indentation survive, so plain text reads as written. Escaping
//!   line-leading Markdown instead would need a rule for every block construct
//!   (headings, setext underlines, rules, lists, quotes, HTML, tables, indented code,
//!   link definitions) and would still collapse the model's line breaks.
//! * Short strings inside the renderer's own lines (step titles, error messages, input
//!   kinds) have line breaks turned into spaces and the characters that mean something
//!   inside a line backslash-escaped: [`inline`]. They cannot start a block, as they
//!   never begin a line.
//!
//! Names and ids inside the `<summary>` HTML are HTML-escaped, and checkpoint names are
//! code spans. JSON is pretty-printed by serde (which escapes control characters) into
//! fences longer than any backtick run inside.

use std::borrow::Cow;

use serde_json::Value;

use crate::output::transcript::{
    ErrorBlock, InputRequired, Item, Step, StepStatus, ToolStep, Transcript, UserInput,
};

/// The most block-quote levels the rendering nests.
pub const MAX_QUOTE_DEPTH: usize = 8;

/// The transcript as a Markdown document.
pub fn render_markdown(transcript: &Transcript) -> String {
    let mut document = String::new();
    pieces(transcript, usize::MAX, |piece| {
        document.push_str(piece);
        Ok(())
    })
    .map_or(String::new(), |()| document)
}

/// The transcript as a Markdown document, written to `out` a piece of about 64 KiB at a
/// time: a large transcript is never held whole as text (growing one string to its size
/// cost a sixth of `runner render`).
pub fn write_markdown(
    transcript: &Transcript,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    pieces(transcript, 64 * 1024, |piece| {
        out.write_all(piece.as_bytes())
    })
}

/// Renders the items in order, handing the text over whenever it reaches `size` bytes.
fn pieces(
    transcript: &Transcript,
    size: usize,
    mut hand_over: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = String::with_capacity(size.min(128 * 1024));
    let answer_from = transcript
        .items
        .iter()
        .rposition(|i| matches!(i, Item::Step(_)))
        .map_or(0, |p| p + 1);
    for (i, item) in transcript.items.iter().enumerate() {
        match item {
            Item::Text { text } if i >= answer_from && answer_from > 0 => {
                out.push_str("## Final answer\n\n");
                verbatim(text, &mut out);
            }
            other => render_item(other, 0, &mut out),
        }
        if out.len() >= size {
            hand_over(&out)?;
            out.clear();
        }
    }
    hand_over(&out)
}

/// Items inside `depth` block quotes.
fn render_items(items: &[Item], depth: usize, out: &mut String) {
    for item in items {
        render_item(item, depth, out);
    }
}

fn render_item(item: &Item, depth: usize, out: &mut String) {
    match item {
        Item::Step(step) => render_step(step, depth, out),
        Item::Thinking { text } => quoted(depth, out, |inner| {
            inner.push_str("**Thinking**\n\n");
            verbatim(text, inner);
        }),
        Item::Text { text } => verbatim(text, out),
        Item::Tool(tool) => render_tool(tool, depth, out),
        Item::Checkpoint(cp) => {
            out.push_str("**Checkpoint:** ");
            out.push_str(&code_span(&cp.name));
            out.push_str("\n\n");
        }
        Item::Error(err) => render_error(err, depth, out),
        Item::InputRequired(req) => render_input_required(req, depth, out),
        Item::UserInputProvided(input) => {
            quoted(depth, out, |inner| render_user_input(input, inner))
        }
    }
}

/// What `write` renders, as a block quote one level below `depth`; past
/// [`MAX_QUOTE_DEPTH`], at the same level (written straight into `out`, so no level past
/// the bound copies it again).
fn quoted(depth: usize, out: &mut String, write: impl FnOnce(&mut String)) {
    if depth < MAX_QUOTE_DEPTH {
        let mut inner = String::new();
        write(&mut inner);
        quote_into(&inner, out);
    } else {
        write(out);
    }
}

fn render_step(step: &Step, depth: usize, out: &mut String) {
    out.push_str(&format!(
        "### Step {}: {}{}\n\n",
        step.number,
        inline(&step.title),
        match step.status {
            StepStatus::Done => " ✓",
            StepStatus::Failed => " ✗",
            StepStatus::Open => " (unfinished)",
        }
    ));
    if step.single_step {
        out.push_str("*Single step.*\n\n");
    }
    render_items(&step.items, depth, out);
}

fn render_tool(tool: &ToolStep, depth: usize, out: &mut String) {
    let status = match &tool.result {
        Some(r) if r.success => "✓",
        Some(_) => "✗",
        None => "… no result",
    };
    out.push_str(&format!(
        "<details>\n<summary>🔧 <code>{}</code> <code>{}</code> {status}</summary>\n\n",
        html_escape(&tool.name),
        html_escape(&tool.id),
    ));
    out.push_str("**Input**\n\n");
    json_fence(&tool.input, out);
    if !tool.nested.is_empty() {
        if depth < MAX_QUOTE_DEPTH {
            out.push_str("**Sub-agent**\n\n");
        } else {
            out.push_str(&format!("**Sub-agent** (nesting level {})\n\n", depth + 1));
        }
        quoted(depth, out, |inner| {
            render_items(&tool.nested, depth + 1, inner)
        });
    }
    if let Some(result) = &tool.result {
        out.push_str("**Result**\n\n");
        if let Some(error) = &result.error {
            out.push_str("**Error:** ");
            out.push_str(&inline(error));
            out.push_str("\n\n");
        }
        // Serialised as it is: turning it into a `Value` first copied every result.
        let body = serde_json::to_string_pretty(result).unwrap_or_else(|_| pretty(&result.data));
        json_block(&body, out);
    }
    out.push_str("</details>\n\n");
}

fn render_error(err: &ErrorBlock, depth: usize, out: &mut String) {
    quoted(depth, out, |inner| error_body(err, inner));
}

fn error_body(err: &ErrorBlock, inner: &mut String) {
    inner.push_str("[!CAUTION]\n");
    if err.message.contains(['\r', '\n']) {
        inner.push_str("**Error:**\n\n");
        verbatim(&err.message, inner);
    } else {
        inner.push_str("**Error:** ");
        inner.push_str(&inline(&err.message));
        inner.push_str("\n\n");
    }
    match serde_json::to_string_pretty(&err.json) {
        Ok(body) => json_block(&body, inner),
        Err(_) => verbatim(&err.json.error, inner),
    }
}

fn render_input_required(req: &InputRequired, depth: usize, out: &mut String) {
    quoted(depth, out, |inner| {
        inner.push_str(&format!(
            "[!IMPORTANT]\n**Input required** (expected: {})",
            inline(&req.input_types)
        ));
        if let Some(cp) = &req.checkpoint_name {
            inner.push_str(", checkpoint ");
            inner.push_str(&code_span(cp));
        }
        inner.push_str("\n\n");
        verbatim(&req.prompt, inner);
        if let Some(input) = &req.provided {
            render_user_input(input, inner);
        }
    });
}

fn render_user_input(input: &UserInput, out: &mut String) {
    out.push_str(&format!("**User input** ({}):\n\n", inline(&input.kind)));
    match &input.input {
        Value::String(s) => verbatim(s, out),
        other => json_fence(other, out),
    }
}

/// Free text as a fenced code block, shown exactly as written.
///
/// The fence is one backtick longer than the longest run in the text (and at least
/// three), so no line of the text can close it. CR and CRLF become LF first: CommonMark
/// ends lines at a lone CR too, and such a line would escape the `> ` that
/// [`quote_into`] puts in front of every LF-separated line.
fn verbatim(text: &str, out: &mut String) {
    // Most text has no carriage return: it is not copied to look for one.
    let text: Cow<'_, str> = if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    };
    let text = text.trim_end_matches('\n');
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    out.push_str(&fence);
    out.push_str("text\n");
    if !text.is_empty() {
        out.push_str(text);
        out.push('\n');
    }
    out.push_str(&fence);
    out.push_str("\n\n");
}

/// A short string for the middle of one of the renderer's own lines: line breaks become
/// spaces and every character with a meaning inside a line (emphasis, code spans, links
/// and images, HTML and entities, strikethrough, math, table cells, a heading's closing
/// `#`s, the backslash itself) is backslash-escaped, which CommonMark shows as the
/// character itself. A `_` between two letters or digits cannot open or close emphasis
/// (CommonMark §6.2), so identifiers like `read_file` are left as they are.
fn inline(text: &str) -> String {
    let text = one_line(text);
    let mut out = String::with_capacity(text.len());
    let (mut chars, mut before) = (text.chars().peekable(), None::<char>);
    while let Some(c) = chars.next() {
        let escape = match c {
            '_' => {
                let after = chars.peek().copied();
                !(before.is_some_and(char::is_alphanumeric)
                    && after.is_some_and(char::is_alphanumeric))
            }
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '!' | '#' | '~' | '|' | '$' => true,
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
        before = Some(c);
    }
    out
}

/// Prefixes every line of `inner` with `> ` (`>` alone for empty lines).
fn quote_into(inner: &str, out: &mut String) {
    for line in inner.trim_end_matches('\n').split('\n') {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            out.push_str("> ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push('\n');
}

fn json_fence(value: &Value, out: &mut String) {
    json_block(&pretty(value), out);
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into())
}

/// Pretty-printed JSON in a fence longer than any backtick run inside.
fn json_block(body: &str, out: &mut String) {
    let fence = "`".repeat(longest_run(body, '`').max(2) + 1);
    for part in [&fence, "json\n", body, "\n", &fence, "\n\n"] {
        out.push_str(part);
    }
}

fn code_span(text: &str) -> String {
    let text = one_line(text);
    let ticks = "`".repeat(longest_run(&text, '`') + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// The longest run of the ASCII character `c` in `text` (byte by byte: an ASCII byte is
/// never part of another character in UTF-8). `memchr` skips to each run: most text has
/// none, and this scan covers every byte of a transcript's text and JSON.
fn longest_run(text: &str, c: char) -> usize {
    debug_assert!(c.is_ascii());
    let (bytes, byte) = (text.as_bytes(), c as u8);
    let (mut best, mut at) = (0, 0);
    while let Some(found) = memchr::memchr(byte, &bytes[at..]) {
        let start = at + found;
        let run = bytes[start..].iter().take_while(|&&b| b == byte).count();
        best = best.max(run);
        at = start + run;
    }
    best
}

/// `text` with line breaks turned into spaces (borrowed when it has none, as most do).
fn one_line(text: &str) -> Cow<'_, str> {
    if text.contains(['\r', '\n']) {
        Cow::Owned(text.replace(['\r', '\n'], " "))
    } else {
        Cow::Borrowed(text)
    }
}

fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_inline_escapes() {
        assert_eq!(longest_run("a `b` ``c``` ``", '`'), 3);
        assert_eq!(longest_run("none", '`'), 0);
        assert_eq!(longest_run("``", '`'), 2);
        assert_eq!(
            inline("read_file _x_ a_ *b*\nc"),
            "read_file \\_x\\_ a\\_ \\*b\\* c"
        );
    }

    #[test]
    fn written_in_pieces_it_is_the_same_document() {
        let items = (0..5000)
            .map(|i| Item::Text {
                text: format!("line {i} with `code` and <html>"),
            })
            .collect();
        let transcript = Transcript { items };
        let mut written = Vec::new();
        write_markdown(&transcript, &mut written).unwrap();
        assert!(written.len() > 2 * 64 * 1024, "several pieces");
        assert_eq!(
            String::from_utf8(written).unwrap(),
            render_markdown(&transcript)
        );
    }
}
