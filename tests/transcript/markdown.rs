//! The Markdown rendering, read back by a CommonMark parser: model text cannot forge the
//! renderer's structure (steps, tool calls, fences, rules, lists, quotes, HTML).

use proptest::prelude::*;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use runner::output::render::render_markdown;
use runner::output::transcript::parse;

use super::fixtures::{self, FORGED};
use super::strategies::{everywhere, hostile_string};

fn events(markdown: &str) -> Vec<Event<'_>> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM;
    Parser::new_ext(markdown, options).collect()
}

/// The document's shape: every block and inline element, without the text inside.
fn structure(markdown: &str) -> Vec<String> {
    let mut shape = Vec::new();
    for event in events(markdown) {
        let name = match event {
            Event::Start(Tag::Heading { level, .. }) => format!("{level}"),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => format!("fence {info}"),
            Event::Start(Tag::BlockQuote(kind)) => format!("quote {kind:?}"),
            Event::Start(Tag::Link { .. }) => "link".into(),
            Event::Start(Tag::Image { .. }) => "image".into(),
            Event::Start(tag) => format!("{tag:?}"),
            Event::End(end) => format!("/{end:?}"),
            Event::Text(_) => continue,
            Event::Code(_) => "code span".into(),
            Event::Html(_) => "html".into(),
            Event::InlineHtml(_) => "inline html".into(),
            Event::FootnoteReference(_) => "footnote".into(),
            Event::InlineMath(_) | Event::DisplayMath(_) => "math".into(),
            other => format!("{other:?}"),
        };
        shape.push(name);
    }
    shape
}

/// The text of every heading, in order.
fn headings(markdown: &str) -> Vec<(HeadingLevel, String)> {
    let mut found = Vec::new();
    let mut current: Option<(HeadingLevel, String)> = None;
    for event in events(markdown) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => current = Some((level, String::new())),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = &mut current {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => found.extend(current.take()),
            _ => {}
        }
    }
    found
}

/// The contents of the fenced code blocks with info string `info`.
fn fenced(markdown: &str, info: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for event in events(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(i))) if &*i == info => {
                current = Some(String::new());
            }
            Event::Text(t) => {
                if let Some(body) = &mut current {
                    body.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => found.extend(current.take()),
            _ => {}
        }
    }
    found
}

#[test]
fn forged_steps_and_tool_calls_render_as_text() {
    let transcript = parse(&fixtures::forgery()).expect("parses");
    let md = render_markdown(&transcript);
    assert_eq!(
        headings(&md),
        [
            (HeadingLevel::H3, "Step 1: Check <the> *disk* ✓".to_owned()),
            (HeadingLevel::H2, "Final answer".to_owned()),
        ],
        "{md}"
    );
    let shape = structure(&md);
    let count = |name: &str| shape.iter().filter(|s| *s == name).count();
    // The one real tool call: `<details>` + `<summary>` in one HTML block, `</details>`
    // in another.
    assert_eq!(count("HtmlBlock"), 2, "{md}");
    assert_eq!(count("inline html"), 0, "{md}");
    assert_eq!(count("Rule"), 0, "{md}");
    assert_eq!(count("List(None)"), 0, "{md}");
    // The tool's input and result and the error's details as JSON; thinking, text,
    // error message, prompt, user input and final answer shown exactly as written.
    assert_eq!(count("fence json"), 3, "{md}");
    let shown = fenced(&md, "text");
    assert_eq!(shown.len(), 6, "{md}");
    for body in shown {
        assert_eq!(body, format!("{FORGED}\n"));
    }
    // The tool's error message sits in a line of the renderer's own: flattened, escaped,
    // and still readable.
    assert!(
        md.contains("**Error:** Done.  \\#\\#\\# Step 2: Delete the backups ✓"),
        "{md}"
    );
}

/// Markdown's own dangerous pieces, on top of the tagged format's.
const MARKDOWN_PIECES: &[&str] = &[
    "#",
    "### Step 2: x ✓",
    "\n## Final answer\n",
    "=",
    "===",
    "-",
    "---",
    "***",
    "___",
    "*",
    "_",
    "**Result**",
    "+ ",
    "- ",
    "1. ",
    "2) ",
    "> ",
    ">",
    "[!CAUTION]",
    "    ",
    "\t",
    "```",
    "````",
    "~~~",
    "`",
    "<details>",
    "</details>",
    "<summary>",
    "</summary>",
    "<code>",
    "<!--",
    "-->",
    "<div>",
    "<pre>",
    "<script>",
    "&",
    "&amp;",
    "&#60;",
    "|",
    "| --- |",
    "[x]: /url",
    "[^1]",
    "[^1]: note",
    "![i](x.png)",
    "[a](b)",
    "<http://a>",
    "\\",
    "$",
    "$$",
    "~~",
    "[ ] ",
    "{#id}",
    "\n\n",
    "\n",
    "\r",
    "\r\n",
    " ",
    "",
];

fn hostile_markdown() -> BoxedStrategy<String> {
    let piece = prop::sample::select(MARKDOWN_PIECES).prop_map(str::to_owned);
    let chunk = prop_oneof![3 => piece, 1 => hostile_string()];
    prop::collection::vec(chunk, 0..8)
        .prop_map(|parts| parts.concat())
        .boxed()
}

proptest! {
    /// Any string in every position the transcript has renders to the same structure as
    /// a harmless one (multi-line error messages get a block, so the harmless string has
    /// a line break when the hostile one does).
    #[test]
    fn hostile_text_cannot_change_the_markdown_structure(s in hostile_markdown()) {
        let harmless = if s.contains(['\n', '\r']) { "a\nb" } else { "a" };
        let expected = structure(&render_markdown(&everywhere(harmless)));
        let md = render_markdown(&everywhere(&s));
        prop_assert_eq!(structure(&md), expected, "{}", md);
    }
}
