//! YAML to a JSON value, remembering where every node came from.
//!
//! Validation works on `serde_json::Value` (the JSON Schema validator and serde both speak
//! it), but diagnostics must point at the user's YAML. So the loader builds the value from
//! saphyr's event stream and records, for every node, the position of the node and of its
//! key, in a tree shaped like the value (so no JSON pointer is kept per node). Plain scalars
//! are resolved with the YAML 1.2 core schema (`yes` is a string).
//!
//! A hostile file stays bounded: its size, its nesting, and what it expands to through
//! aliases each have a limit (the constants below, documented in docs/yaml.md), and hitting
//! one is an error at the line where it happens.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::Value;

use super::yaml_builder::{Builder, position_of};

/// A 1-based line and column (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Where a node is in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeSpan {
    /// The start of the value.
    pub value: Position,
    /// The start of the mapping key the value belongs to, if any.
    pub key: Option<Position>,
    /// How a scalar was written (`None` for mappings and sequences).
    pub style: Option<ScalarStyle>,
}

/// A problem found while loading YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub position: Position,
    pub message: String,
    /// The JSON pointer of the node concerned ("" for syntax errors).
    pub pointer: String,
}

/// A loaded document: the value, the position of every node, and the source text.
#[derive(Debug, Clone)]
pub struct YamlDocument {
    pub value: Value,
    spans: SpanNode,
    source: String,
}

/// Where one node is, and where its children are: the value's shape, positions only.
#[derive(Debug, Clone)]
pub(super) struct SpanNode {
    pub(super) span: NodeSpan,
    /// A number as the user wrote it: `99999999999999999999` becomes the float `1e20` in
    /// JSON, and a message should quote what the file says.
    pub(super) written: Option<String>,
    pub(super) children: Children,
}

#[derive(Debug, Clone)]
pub(super) enum Children {
    None,
    Items(Vec<SpanNode>),
    Fields(HashMap<String, SpanNode>),
}

impl SpanNode {
    pub(super) fn leaf(span: NodeSpan) -> SpanNode {
        SpanNode {
            span,
            written: None,
            children: Children::None,
        }
    }

    /// The node at `pointer`, or its closest recorded ancestor, and whether it was exact.
    fn find(&self, pointer: &str) -> (&SpanNode, bool) {
        let mut node = self;
        for segment in pointer.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            let child = match &node.children {
                Children::Items(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                Children::Fields(fields) => fields.get(&segment),
                Children::None => None,
            };
            match child {
                Some(child) => node = child,
                None => return (node, false),
            }
        }
        (node, true)
    }
}

/// Files larger than this are refused before parsing.
pub const MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// Collections nested deeper than this are refused.
pub const MAX_DEPTH: usize = 128;

/// Nodes, counted like `MAX_EXPANDED_BYTES` counts bytes, beyond this are refused
/// ("billion laughs").
pub(super) const MAX_NODES: usize = 200_000;

/// The expanded size beyond which a document is refused: every scalar and key counts its
/// bytes plus one, every collection one, an alias what its anchor counted, and an anchor
/// once more (the copy its aliases are made from). A file without aliases stays far below
/// it: it counts about its own size, twice at most, and its size is at most
/// `MAX_INPUT_BYTES`.
pub const MAX_EXPANDED_BYTES: usize = 32 * 1024 * 1024;

impl YamlDocument {
    /// The span recorded for `pointer`, or the closest ancestor's.
    pub fn span(&self, pointer: &str) -> NodeSpan {
        self.spans.find(pointer).0.span
    }

    /// The position to report for a problem with the value at `pointer`.
    pub fn value_position(&self, pointer: &str) -> Position {
        self.span(pointer).value
    }

    /// The position to report for a problem with a key (its key if it has one).
    pub fn key_position(&self, pointer: &str) -> Position {
        let span = self.span(pointer);
        span.key.unwrap_or(span.value)
    }

    /// The number at `pointer` as written in the file (`None` for other values, and for
    /// numbers that came from an alias).
    pub fn written_number(&self, pointer: &str) -> Option<&str> {
        match self.spans.find(pointer) {
            (node, true) => node.written.as_deref(),
            _ => None,
        }
    }

    /// The position of byte `offset` inside the string scalar at `pointer`, so template
    /// errors point into the YAML file. Exact for single-line and literal (`|`) scalars,
    /// close for the other styles.
    pub fn position_in_string(&self, pointer: &str, offset: usize) -> Position {
        let span = self.span(pointer);
        let Some(Value::String(text)) = pointer_get(&self.value, pointer) else {
            return span.value;
        };
        let offset = offset.min(text.len());
        let before = &text[..text.floor_char_boundary(offset)];
        let line_index = before.matches('\n').count();
        let column_in_line = before
            .rsplit('\n')
            .next()
            .map_or(0, |last| last.chars().count());
        match span.style {
            Some(ScalarStyle::Literal) | Some(ScalarStyle::Folded) => {
                // saphyr starts a block scalar's span on its first content line.
                let first_content_line = span.value.line;
                let indent = self.block_indent(first_content_line);
                Position {
                    line: first_content_line + line_index,
                    column: indent + column_in_line + 1,
                }
            }
            Some(ScalarStyle::SingleQuoted) | Some(ScalarStyle::DoubleQuoted)
                if line_index == 0 =>
            {
                Position {
                    line: span.value.line,
                    column: span.value.column + 1 + column_in_line,
                }
            }
            _ if line_index == 0 => Position {
                line: span.value.line,
                column: span.value.column + column_in_line,
            },
            _ => Position {
                line: span.value.line + line_index,
                column: column_in_line + 1,
            },
        }
    }

    /// The indentation (in characters) of the first non-blank line at or after `line`.
    fn block_indent(&self, line: usize) -> usize {
        self.source
            .lines()
            .skip(line.saturating_sub(1))
            .find(|text| !text.trim().is_empty())
            .map_or(0, |text| text.chars().take_while(|c| *c == ' ').count())
    }
}

/// Looks up a JSON pointer (RFC 6901) in a value.
pub fn pointer_get<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        Some(value)
    } else {
        value.pointer(pointer)
    }
}

/// Appends one RFC 6901 segment to a pointer.
pub fn pointer_push(pointer: &str, segment: &str) -> String {
    let escaped = segment.replace('~', "~0").replace('/', "~1");
    format!("{pointer}/{escaped}")
}

/// Loads the first YAML document of `source`.
pub fn load_yaml(source: &str) -> Result<YamlDocument, Vec<YamlError>> {
    if source.len() > MAX_INPUT_BYTES {
        return Err(vec![too_large(source)]);
    }
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(source);
    let mut documents = 0;
    for item in &mut parser {
        let (event, span) = match item {
            Ok(pair) => pair,
            Err(error) => {
                let marker = error.marker();
                builder.errors.push(YamlError {
                    position: Position {
                        line: marker.line(),
                        column: marker.col() + 1,
                    },
                    message: format!("YAML syntax error: {}", error.info()),
                    pointer: String::new(),
                });
                return Err(builder.errors);
            }
        };
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    builder.errors.push(YamlError {
                        position: position_of(&span),
                        message: "a second YAML document: an agent file holds exactly one".into(),
                        pointer: String::new(),
                    });
                    break;
                }
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
            other => {
                if let Err(error) = builder.event(other, &span) {
                    builder.errors.push(error);
                    return Err(builder.errors);
                }
            }
        }
    }
    let (value, spans) = match builder.root.take() {
        Some(root) => root,
        None => {
            builder.errors.push(YamlError {
                position: Position { line: 1, column: 1 },
                message: "the file is empty: an agent file is a mapping with at least `name`"
                    .into(),
                pointer: String::new(),
            });
            return Err(builder.errors);
        }
    };
    if !builder.errors.is_empty() {
        return Err(builder.errors);
    }
    Ok(YamlDocument {
        value,
        spans,
        source: source.to_string(),
    })
}

/// The error for a source over `MAX_INPUT_BYTES`, at the line where it crosses the bound.
pub fn too_large(source: &str) -> YamlError {
    let (line, column) = super::template::line_column(source, MAX_INPUT_BYTES);
    YamlError {
        position: Position { line, column },
        message: format!(
            "the file is larger than {} MiB, the most runner reads of a YAML or JSON file",
            MAX_INPUT_BYTES / (1024 * 1024)
        ),
        pointer: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_values_with_core_schema_types() {
        let doc = load_yaml(
            "name: a\nn: 3\nf: 1.5\nb: true\nyes_is_text: yes\nnothing: ~\nq: '3'\nlist: [1, x]\n",
        )
        .unwrap();
        assert_eq!(
            doc.value,
            json!({"name": "a", "n": 3, "f": 1.5, "b": true, "yes_is_text": "yes",
                   "nothing": null, "q": "3", "list": [1, "x"]})
        );
    }

    #[test]
    fn records_key_and_value_positions() {
        let doc = load_yaml("name: a\ntools:\n  - builtin: shell\n    allow: git\n").unwrap();
        assert_eq!(
            doc.key_position("/tools/0/allow"),
            Position { line: 4, column: 5 }
        );
        assert_eq!(
            doc.value_position("/tools/0/allow"),
            Position {
                line: 4,
                column: 12
            }
        );
        assert_eq!(
            doc.value_position("/tools/0"),
            Position { line: 3, column: 5 }
        );
        // Unknown pointers fall back to the closest ancestor.
        assert_eq!(
            doc.value_position("/tools/0/missing"),
            Position { line: 3, column: 5 }
        );
    }

    #[test]
    fn remembers_numbers_as_written() {
        let doc = load_yaml("big: 99999999999999999999\nexp: 1e3\nlist: [0x1F]\nq: '7'\n").unwrap();
        assert_eq!(doc.value["big"], json!(1e20));
        assert_eq!(doc.written_number("/big"), Some("99999999999999999999"));
        assert_eq!(doc.written_number("/exp"), Some("1e3"));
        assert_eq!(doc.written_number("/list/0"), Some("0x1F"));
        assert_eq!(doc.written_number("/q"), None);
    }

    #[test]
    fn maps_offsets_inside_block_scalars() {
        let doc = load_yaml("name: a\nsystem: |\n  line one\n  say {{ x }}\n").unwrap();
        let text = doc.value["system"].as_str().unwrap();
        let offset = text.find("{{").unwrap();
        assert_eq!(
            doc.position_in_string("/system", offset),
            Position { line: 4, column: 7 }
        );
    }

    #[test]
    fn reports_syntax_errors_with_position() {
        let errors = load_yaml("name: a\nsystem: [unclosed\n").unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.starts_with("YAML syntax error"));
        assert!(errors[0].position.line >= 2);
    }

    #[test]
    fn reports_duplicate_keys() {
        let errors = load_yaml("name: a\nname: b\n").unwrap_err();
        assert_eq!(errors[0].position, Position { line: 2, column: 1 });
        assert_eq!(errors[0].pointer, "/name");
    }

    #[test]
    fn refuses_alias_bombs() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let errors = load_yaml(&text).unwrap_err();
        assert!(errors[0].message.contains("aliases"));
    }

    #[test]
    fn finds_keys_with_slashes_and_tildes() {
        let doc = load_yaml("name: a\nmap:\n  a/b~c: 1\n").unwrap();
        assert_eq!(
            doc.value_position("/map/a~1b~0c"),
            Position {
                line: 3,
                column: 10
            }
        );
        assert_eq!(doc.written_number("/map/a~1b~0c"), Some("1"));
    }

    #[test]
    fn counts_the_copies_nested_anchors_keep() {
        // No alias at all, but every level keeps a copy of the 1 MiB string below it.
        let mut text = String::new();
        for level in 0..40 {
            text.push_str(&format!("{}- &a{level}\n", "  ".repeat(level)));
        }
        text.push_str(&format!(
            "{}- {}\n",
            "  ".repeat(40),
            "x".repeat(1024 * 1024)
        ));
        let errors = load_yaml(&text).unwrap_err();
        assert!(
            errors[0].message.contains("32 MiB"),
            "{}",
            errors[0].message
        );
    }
}
