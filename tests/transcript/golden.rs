//! Golden tests: the tagged text and its three renderings, for representative runs.

use runner::output::render::{TextOptions, render_json, render_markdown, render_text};
use runner::output::transcript::{parse, write_transcript};

use super::fixtures;

/// Snapshots live in tests/snapshots/ as `transcript__<name>.snap`.
fn snapshot(name: &str, value: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(format!("transcript__{name}"), value));
}

fn check(name: &str, text: &str) {
    let transcript = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        write_transcript(&transcript),
        text,
        "{name}: rewrite differs"
    );
    snapshot(&format!("{name}__raw"), text);
    snapshot(&format!("{name}__markdown"), &render_markdown(&transcript));
    snapshot(
        &format!("{name}__text"),
        &render_text(&transcript, TextOptions { color: false }),
    );
    snapshot(&format!("{name}__json"), &render_json(&transcript));
}

#[test]
fn plain() {
    check("plain", &fixtures::plain());
}

#[test]
fn tools() {
    check("tools", &fixtures::tools());
}

#[test]
fn parallel_tools() {
    check("parallel_tools", &fixtures::parallel_tools());
}

#[test]
fn nested_sub_agents() {
    check("nested", &fixtures::nested());
}

#[test]
fn errors() {
    check("errors", &fixtures::errors());
}

#[test]
fn input_requests() {
    check("input_requests", &fixtures::input_requests());
}

/// Model text that forges steps, tool calls, fences and rules (see `markdown.rs`).
#[test]
fn forgery() {
    check("forgery", &fixtures::forgery());
}

#[test]
fn colored_text() {
    let transcript = parse(&fixtures::errors()).expect("parses");
    let colored = render_text(&transcript, TextOptions { color: true });
    assert!(colored.contains("\x1b[31m"), "errors are red");
    let plain = render_text(&transcript, TextOptions { color: false });
    assert!(!plain.contains('\x1b'));
    snapshot("errors__text_color", &colored.replace('\x1b', "<ESC>"));
}

#[test]
fn text_renderer_escapes_control_characters() {
    let text = fixtures::write_with(|w| w.final_answer("\x1b[2Jcleared?"));
    let transcript = parse(&text).expect("parses");
    let out = render_text(&transcript, TextOptions { color: false });
    assert!(!out.contains('\x1b'), "{out:?}");
}

#[test]
fn format_names() {
    use runner::output::render::{Format, render};
    assert_eq!("markdown".parse::<Format>(), Ok(Format::Markdown));
    assert_eq!("text".parse::<Format>(), Ok(Format::Text));
    assert_eq!("json".parse::<Format>(), Ok(Format::Json));
    assert!("html".parse::<Format>().is_err());
    let t = parse(&fixtures::plain()).expect("parses");
    assert_eq!(render(&t, Format::Json, false), render_json(&t));
    assert_eq!(render(&t, Format::Markdown, true), render_markdown(&t));
}
