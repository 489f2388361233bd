//! The loader's builder: it turns saphyr's events into the JSON value and the tree of
//! spans beside it, resolving plain scalars and aliases, and counts what the document
//! expands to against the bounds of `yaml.rs` (nodes, bytes, depth), so a hostile file is
//! refused at the line where it crosses one.

use std::collections::HashMap;

use saphyr_parser::{Event, Span};
use serde_json::{Map, Value};

use super::yaml::{
    Children, MAX_DEPTH, MAX_EXPANDED_BYTES, MAX_NODES, NodeSpan, Position, SpanNode, YamlError,
    pointer_push,
};
use super::yaml_scalar::resolve_scalar;

pub(super) fn position_of(span: &Span) -> Position {
    Position {
        line: span.start.line(),
        column: span.start.col() + 1,
    }
}

/// What a node, with everything under it, counts against the bounds.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    nodes: usize,
    bytes: usize,
}

/// A collection being built: its value, its children's spans, and what it has counted.
struct Frame {
    body: Body,
    span: NodeSpan,
    anchor: usize,
    /// The builder's running total when the collection started.
    start: Cost,
}

enum Body {
    Sequence {
        items: Vec<Value>,
        spans: Vec<SpanNode>,
    },
    Mapping {
        map: Map<String, Value>,
        spans: HashMap<String, SpanNode>,
        pending_key: Option<(String, Position)>,
    },
}

#[derive(Default)]
pub(super) struct Builder {
    stack: Vec<Frame>,
    pub(super) root: Option<(Value, SpanNode)>,
    /// Anchored values with what they count, for aliases.
    anchors: HashMap<usize, (Value, Cost)>,
    pub(super) errors: Vec<YamlError>,
    /// What the document expands to so far.
    total: Cost,
    /// What the anchors' copies (kept for aliases) hold: memory too, so counted too.
    copies: Cost,
}

impl Builder {
    /// The JSON pointer of the next value, built from the stack (only errors need it).
    fn next_pointer(&self) -> String {
        let mut pointer = String::new();
        for frame in &self.stack {
            match &frame.body {
                Body::Sequence { items, .. } => {
                    pointer = pointer_push(&pointer, &items.len().to_string());
                }
                Body::Mapping {
                    pending_key: Some((key, _)),
                    ..
                } => pointer = pointer_push(&pointer, key),
                Body::Mapping { .. } => {}
            }
        }
        pointer
    }

    /// The position of the key the next value belongs to, if any.
    fn next_key(&self) -> Option<Position> {
        match self.stack.last().map(|frame| &frame.body) {
            Some(Body::Mapping {
                pending_key: Some((_, position)),
                ..
            }) => Some(*position),
            _ => None,
        }
    }

    /// Whether the mapping being built has `key` already.
    fn holds_key(&self, key: &str) -> bool {
        matches!(
            self.stack.last().map(|frame| &frame.body),
            Some(Body::Mapping { map, .. }) if map.contains_key(key)
        )
    }

    fn expecting_key(&self) -> bool {
        matches!(
            self.stack.last().map(|frame| &frame.body),
            Some(Body::Mapping {
                pending_key: None,
                ..
            })
        )
    }

    /// Counts `cost` against the bounds; past one, the error is at `position`.
    fn count(&mut self, cost: Cost, position: Position) -> Result<(), YamlError> {
        self.total.nodes += cost.nodes;
        self.total.bytes += cost.bytes;
        self.check_bounds(position)
    }

    /// Keeps a copy of an anchored value for its aliases, counting the copy.
    fn anchor(
        &mut self,
        anchor: usize,
        value: &Value,
        cost: Cost,
        position: Position,
    ) -> Result<(), YamlError> {
        self.copies.nodes += cost.nodes;
        self.copies.bytes += cost.bytes;
        self.check_bounds(position)?;
        self.anchors.insert(anchor, (value.clone(), cost));
        Ok(())
    }

    fn check_bounds(&self, position: Position) -> Result<(), YamlError> {
        let message = if self.total.nodes + self.copies.nodes > MAX_NODES {
            format!("the document expands to more than {MAX_NODES} nodes (aliases); refusing it")
        } else if self.total.bytes + self.copies.bytes > MAX_EXPANDED_BYTES {
            format!(
                "the document expands to more than {} MiB (aliases count what they repeat); \
                 refusing it",
                MAX_EXPANDED_BYTES / (1024 * 1024)
            )
        } else {
            return Ok(());
        };
        Err(YamlError {
            position,
            message,
            pointer: self.next_pointer(),
        })
    }

    pub(super) fn event(&mut self, event: Event<'_>, span: &Span) -> Result<(), YamlError> {
        let position = position_of(span);
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let cost = Cost {
                    nodes: 1,
                    bytes: text.len() + 1,
                };
                self.count(cost, position)?;
                if self.expecting_key() {
                    let key = text.to_string();
                    // The pointer is built only for the error: building it for every key
                    // cost more than the rest of loading.
                    if self.holds_key(&key) {
                        self.errors.push(YamlError {
                            position,
                            message: format!("duplicate key `{key}` in this mapping"),
                            pointer: pointer_push(&self.next_pointer(), &key),
                        });
                    }
                    if let Some(Frame {
                        body: Body::Mapping { pending_key, .. },
                        ..
                    }) = self.stack.last_mut()
                    {
                        *pending_key = Some((key, position));
                    }
                    return Ok(());
                }
                let tag_suffix = tag.as_ref().map(|tag| tag.suffix.clone());
                let value =
                    resolve_scalar(&text, style, tag_suffix.as_deref()).map_err(|message| {
                        YamlError {
                            position,
                            message,
                            pointer: self.next_pointer(),
                        }
                    })?;
                if anchor > 0 {
                    self.anchor(anchor, &value, cost, position)?;
                }
                let mut node = SpanNode::leaf(NodeSpan {
                    value: position,
                    key: self.next_key(),
                    style: Some(style),
                });
                if value.is_number() {
                    node.written = Some(text.to_string());
                }
                self.attach(value, node);
            }
            Event::Alias(anchor) => {
                if self.expecting_key() {
                    return Err(YamlError {
                        position,
                        message: "an alias cannot be a mapping key here".into(),
                        pointer: self.next_pointer(),
                    });
                }
                let Some(&(_, cost)) = self.anchors.get(&anchor) else {
                    return Err(YamlError {
                        position,
                        message: "alias to an unknown anchor".into(),
                        pointer: self.next_pointer(),
                    });
                };
                // Counted before it is copied, so a bomb is refused before it takes memory.
                self.count(cost, position)?;
                let value = self.anchors[&anchor].0.clone();
                let node = SpanNode::leaf(NodeSpan {
                    value: position,
                    key: self.next_key(),
                    style: None,
                });
                self.attach(value, node);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.count(Cost { nodes: 1, bytes: 1 }, position)?;
                if self.expecting_key() {
                    return Err(YamlError {
                        position,
                        message: "complex mapping keys are not supported: keys must be plain text"
                            .into(),
                        pointer: self.next_pointer(),
                    });
                }
                if self.stack.len() >= MAX_DEPTH {
                    return Err(YamlError {
                        position,
                        message: format!(
                            "the document nests deeper than {MAX_DEPTH} levels; refusing it"
                        ),
                        pointer: self.next_pointer(),
                    });
                }
                let body = if matches!(event, Event::SequenceStart(..)) {
                    Body::Sequence {
                        items: Vec::new(),
                        spans: Vec::new(),
                    }
                } else {
                    Body::Mapping {
                        map: Map::new(),
                        spans: HashMap::new(),
                        pending_key: None,
                    }
                };
                let frame = Frame {
                    body,
                    span: NodeSpan {
                        value: position,
                        key: self.next_key(),
                        style: None,
                    },
                    anchor,
                    start: Cost {
                        nodes: self.total.nodes - 1,
                        bytes: self.total.bytes - 1,
                    },
                };
                self.stack.push(frame);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return Ok(());
                };
                let (value, children) = match frame.body {
                    Body::Sequence { items, spans } => {
                        (Value::Array(items), Children::Items(spans))
                    }
                    Body::Mapping { map, spans, .. } => {
                        (Value::Object(map), Children::Fields(spans))
                    }
                };
                if frame.anchor > 0 {
                    let cost = Cost {
                        nodes: self.total.nodes - frame.start.nodes,
                        bytes: self.total.bytes - frame.start.bytes,
                    };
                    self.anchor(frame.anchor, &value, cost, frame.span.value)?;
                }
                let node = SpanNode {
                    span: frame.span,
                    written: None,
                    children,
                };
                self.attach(value, node);
            }
            _ => {}
        }
        Ok(())
    }

    /// Puts a finished value, and its spans, where the next value goes.
    fn attach(&mut self, value: Value, node: SpanNode) {
        match self.stack.last_mut().map(|frame| &mut frame.body) {
            None => self.root = Some((value, node)),
            Some(Body::Sequence { items, spans }) => {
                items.push(value);
                spans.push(node);
            }
            Some(Body::Mapping {
                map,
                spans,
                pending_key,
            }) => {
                if let Some((key, _)) = pending_key.take() {
                    spans.insert(key.clone(), node);
                    map.insert(key, value);
                }
            }
        }
    }
}
