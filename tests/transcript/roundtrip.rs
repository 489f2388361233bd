//! `parse(write(x)) == x`, and nothing written can look like a tag.

use proptest::prelude::*;
use runner::output::transcript::escape::{
    ATTR_SPECIALS, PLAIN_FIELD, TITLE_SPECIALS, escape_field, escape_text, unescape_field,
    unescape_text,
};
use runner::output::transcript::{Item, Transcript, parse, parse_partial, write_transcript};

use super::strategies::{everywhere, hostile_string, transcript};

const TAGS: &[&str] = &[
    "<<STEP_START>>",
    "<<STEP_END>>",
    "<<SINGLE_STEP_FLAG>>",
    "<<thinking>>",
    "<</thinking>>",
    "<<TOOL_STEP_INPUT_START>>",
    "<<TOOL_STEP_INPUT_END>>",
    "<<TOOL_STEP_RESULT_START>>",
    "<<TOOL_STEP_RESULT_END>>",
    "<<CHECKPOINT_START>>",
    "<<CHECKPOINT_END>>",
    "<<INPUT_REQUIRED_START>>",
    "<<INPUT_REQUIRED_END>>",
    "<<USER_INPUT_PROVIDED_START>>",
    "<<USER_INPUT_PROVIDED_END>>",
    "<<ERROR_START>>",
    "<<ERROR_END>>",
    "<<ERROR_JSON_START>>",
    "<<ERROR_JSON_END>>",
];

/// Every line holding `<<` is exactly a tag line the writer emits.
fn assert_no_forged_tags(text: &str) {
    for line in text.lines() {
        if line.contains("<<") {
            let tool = (line.starts_with("<<TOOL_STEP_START/")
                || line.starts_with("<<TOOL_STEP_END/"))
                && line.ends_with(">>")
                && !line[2..].contains("<<");
            assert!(TAGS.contains(&line) || tool, "forged tag line: {line:?}");
        }
    }
}

fn assert_round_trip(t: &Transcript) {
    let text = write_transcript(t);
    assert_no_forged_tags(&text);
    match parse(&text) {
        Ok(back) => assert_eq!(&back, t, "text:\n{text}"),
        Err(e) => panic!("{e}\ntext:\n{text}"),
    }
}

#[test]
fn edge_strings_everywhere() {
    let mut cases: Vec<String> = vec![
        "",
        "\n",
        "\n\n",
        "a\n",
        "\na",
        "\r\n",
        "a\r\nb\r\n",
        "<",
        "<<",
        "<<<",
        "<\\",
        "<\\<",
        "\\",
        "\\\\<",
        "<</thinking>>",
        "<<thinking",
        "<<STEP_END",
        "STEP_END>>",
        " ✓",
        "title ✓",
        "title \\ ✓",
        "Step 1: x ✓",
        "Error: ",
        "checkpoint_name: x",
        "Expected input types: text",
        "a:b",
        "name:id>>",
        ">>",
        "\\u003c",
        "日本語 🦀 é\u{2028}",
        "\0",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    cases.extend(TAGS.iter().map(|t| (*t).to_owned()));
    cases.extend(TAGS.iter().map(|t| format!("\n{t}\n")));
    for s in &cases {
        assert_round_trip(&everywhere(s));
    }
}

#[test]
fn empty_transcript() {
    assert_eq!(write_transcript(&Transcript::default()), "");
    assert_eq!(parse("").expect("empty parses"), Transcript::default());
}

#[test]
fn adjacent_texts_read_back_joined() {
    let t = Transcript {
        items: vec![Item::text("a"), Item::text("b")],
    };
    assert!(!t.is_normalized());
    let back = parse(&write_transcript(&t)).expect("parses");
    assert_eq!(back, t.normalized());
    assert_eq!(back.items, vec![Item::text("a\nb")]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn text_escape_round_trips(s in hostile_string()) {
        let e = escape_text(&s);
        prop_assert!(!e.contains("<<"), "{e:?}");
        prop_assert_eq!(unescape_text(&e), Ok(s.clone()));
    }

    #[test]
    fn field_escape_round_trips(s in hostile_string()) {
        for specials in [PLAIN_FIELD, TITLE_SPECIALS, ATTR_SPECIALS] {
            let e = escape_field(&s, specials);
            prop_assert!(!e.contains("<<") && !e.contains(['\n', '\r']), "{e:?}");
            prop_assert_eq!(unescape_field(&e), Ok(s.clone()));
        }
    }

    #[test]
    fn arbitrary_string_in_every_position(s in hostile_string()) {
        assert_round_trip(&everywhere(&s));
    }

    #[test]
    fn arbitrary_unicode_in_every_position(s in any::<String>()) {
        assert_round_trip(&everywhere(&s));
    }

    #[test]
    fn arbitrary_trees_round_trip(t in transcript()) {
        assert_round_trip(&t);
    }

    #[test]
    fn json_rendering_round_trips(t in transcript()) {
        let json = runner::output::render::render_json(&t);
        let back: Transcript = serde_json::from_str(&json).expect("json parses");
        prop_assert_eq!(back, t);
    }

    /// A crash can cut the file anywhere: the lenient parser never fails, keeps only
    /// whole top-level blocks (in order), and flags the cut unless it fell on a boundary.
    #[test]
    fn any_prefix_parses_partially(t in transcript(), cut in any::<prop::sample::Index>()) {
        let text = write_transcript(&t);
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let partial = parse_partial(&text[..at]);
        let got = &partial.transcript.items;
        prop_assert!(got.len() <= t.items.len());
        for (i, item) in got.iter().enumerate() {
            let last = i + 1 == got.len();
            match (item, &t.items[i]) {
                // A top-level text cut exactly at a line end reads as a shorter text.
                (Item::Text { text: a }, Item::Text { text: b }) if last => {
                    prop_assert!(b.starts_with(a.as_str()) || unescape_prefix(b, a));
                }
                (a, b) => prop_assert_eq!(a, b),
            }
        }
        if at == text.len() {
            prop_assert!(partial.tail.is_none());
            prop_assert_eq!(got, &t.items);
        }
        if let Some(tail) = &partial.tail {
            prop_assert!(parse(&text[..at]).is_err());
            prop_assert!(tail.line >= 1);
        }
    }
}

/// Escaping may change how a prefix of the text reads; compare escaped forms instead.
fn unescape_prefix(full: &str, prefix: &str) -> bool {
    escape_text(full).starts_with(&escape_text(prefix))
}
