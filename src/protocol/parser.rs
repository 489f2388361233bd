//! A streaming parser for tool calls written as XML in the model's text (SPEC §7).
//!
//! It consumes text as it arrives and keeps only its state and the bytes of a construct it
//! cannot decide yet (a tag name being read, a possible closing tag): every byte is looked
//! at a bounded number of times, so the cost is linear, and the result is the same however
//! the text is split into chunks. Text outside tags is kept as written; parameter values and
//! thinking have their entities and CDATA sections decoded. The first action ends the turn:
//! whatever follows it is counted and ignored.

use std::collections::HashSet;

use super::entities::decode;

/// What the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    ToolCall {
        name: String,
        params: Vec<(String, String)>,
    },
    Completion {
        result: String,
    },
}

/// A reply that breaks the protocol; the message is written for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatError {
    pub message: String,
}

/// The whole reply, parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParseOutcome {
    /// Assistant text outside any tag (unknown tags included, as written).
    pub text: String,
    pub thinking: Vec<String>,
    pub action: Option<Action>,
    /// Bytes after the first action, ignored.
    pub ignored_bytes: usize,
    pub error: Option<FormatError>,
}

/// Longest tag name looked for; a longer `<...` is plain text.
const MAX_TAG: usize = 64;
/// The action that ends the run with its result.
pub const COMPLETION: &str = "attempt_completion";
const THINKING: &str = "thinking";
const CDATA_OPEN: &str = "<![CDATA[";
const CDATA_CLOSE: &str = "]]>";

#[derive(Debug, Clone, PartialEq)]
enum Mode {
    /// Outside tags.
    Text,
    /// Read `<`, collecting a tag up to `>`.
    Tag { from: Box<Mode> },
    /// Inside `<thinking>`.
    Thinking,
    /// Inside an action, between parameters.
    Action,
    /// Inside a parameter's value.
    Value { name: String },
    /// Inside a CDATA section of a value.
    Cdata { name: String },
    /// After the first action.
    Drain,
}

/// The parser; feed it with `push`, end with `finish`.
pub struct XmlStreamParser {
    tools: HashSet<String>,
    mode: Mode,
    /// Bytes of the construct being decided (a tag, a possible `]]>`).
    pending: String,
    text: String,
    thinking: Vec<String>,
    current: String,
    action_name: Option<String>,
    params: Vec<(String, String)>,
    /// The raw (undecoded) part of the current value, and its decoded part so far.
    raw_value: String,
    value: String,
    /// Text of the action outside its parameters (raw): an `<attempt_completion>` without
    /// `<result>` has its answer there.
    loose: String,
    action: Option<Action>,
    ignored: usize,
    error: Option<FormatError>,
}

impl XmlStreamParser {
    pub fn new(tool_names: impl IntoIterator<Item = String>) -> Self {
        XmlStreamParser {
            tools: tool_names.into_iter().collect(),
            mode: Mode::Text,
            pending: String::new(),
            text: String::new(),
            thinking: Vec::new(),
            current: String::new(),
            action_name: None,
            params: Vec::new(),
            raw_value: String::new(),
            value: String::new(),
            loose: String::new(),
            action: None,
            ignored: 0,
            error: None,
        }
    }

    /// Consumes the next piece of the reply.
    pub fn push(&mut self, chunk: &str) {
        let mut rest = chunk;
        while !rest.is_empty() {
            rest = match self.mode {
                Mode::Drain => {
                    self.ignored += rest.len();
                    ""
                }
                Mode::Text | Mode::Thinking | Mode::Value { .. } | Mode::Action
                    if self.pending.is_empty() =>
                {
                    self.bulk(rest)
                }
                Mode::Cdata { .. } => self.cdata(rest),
                _ => {
                    let c = rest.chars().next().unwrap_or('\0');
                    self.step(c);
                    &rest[c.len_utf8()..]
                }
            };
        }
    }

    /// Copies everything up to the next `<` at once (the common case), then hands the `<`
    /// to the character-level state machine.
    fn bulk<'a>(&mut self, rest: &'a str) -> &'a str {
        let cut = memchr::memchr(b'<', rest.as_bytes()).unwrap_or(rest.len());
        let (plain, tail) = rest.split_at(cut);
        match &self.mode {
            Mode::Text => self.text.push_str(plain),
            Mode::Thinking => self.current.push_str(plain),
            Mode::Value { .. } => self.raw_value.push_str(plain),
            // Between parameters only whitespace belongs; other text is kept aside for a
            // completion without `<result>`, and dropped otherwise.
            Mode::Action => self.loose.push_str(plain),
            _ => {}
        }
        if tail.is_empty() {
            return tail;
        }
        let from = Box::new(self.mode.clone());
        self.mode = Mode::Tag { from };
        self.pending.push('<');
        &tail[1..]
    }

    fn cdata<'a>(&mut self, rest: &'a str) -> &'a str {
        // Look for `]]>` across chunk boundaries through `pending`.
        for (i, c) in rest.char_indices() {
            self.pending.push(c);
            if CDATA_CLOSE.starts_with(&self.pending) {
                if self.pending == CDATA_CLOSE {
                    self.pending.clear();
                    if let Mode::Cdata { name } = &self.mode {
                        self.mode = Mode::Value { name: name.clone() };
                    }
                    return &rest[i + c.len_utf8()..];
                }
            } else {
                // Not the end: everything but the longest tail that may still start `]]>`
                // is content (`]]]>` is `]` and the end).
                let keep = (1..=2.min(self.pending.len()))
                    .rev()
                    .find(|&k| CDATA_CLOSE.starts_with(&self.pending[self.pending.len() - k..]))
                    .unwrap_or(0);
                let cut = self.pending.len() - keep;
                self.value.push_str(&self.pending[..cut]);
                self.pending.drain(..cut);
            }
        }
        ""
    }

    /// Feeds one character of a tag being read.
    fn step(&mut self, c: char) {
        self.pending.push(c);
        let Mode::Tag { from } = self.mode.clone() else {
            return;
        };
        // Inside a value, a CDATA section may start.
        if matches!(*from, Mode::Value { .. }) && CDATA_OPEN.starts_with(&self.pending) {
            if self.pending == CDATA_OPEN
                && let Mode::Value { name } = *from
            {
                self.flush_raw_value();
                self.pending.clear();
                self.mode = Mode::Cdata { name };
            }
            return;
        }
        if c == '<' {
            // `<<`: the first `<` was text; the second may start a tag.
            let before = self.pending[..self.pending.len() - 1].to_string();
            self.pending = "<".to_string();
            let from_mode = *from.clone();
            let saved = std::mem::replace(&mut self.mode, from_mode);
            self.content(&before);
            self.mode = saved;
            return;
        }
        if c != '>' {
            let name_char = c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | ':');
            if !name_char || self.pending.len() > MAX_TAG || (c == '/' && self.pending.len() > 2) {
                self.not_a_tag(*from);
            }
            return;
        }
        let tag = std::mem::take(&mut self.pending);
        let inner = &tag[1..tag.len() - 1];
        let (closing, name) = match inner.strip_prefix('/') {
            Some(name) => (true, name.to_string()),
            None => (false, inner.to_string()),
        };
        self.mode = *from.clone();
        self.on_tag(&tag, closing, &name, *from);
    }

    /// The `<...` being read is not a tag: it is content of the mode it interrupted.
    fn not_a_tag(&mut self, from: Mode) {
        let pending = std::mem::take(&mut self.pending);
        self.mode = from;
        self.content(&pending);
    }

    fn content(&mut self, text: &str) {
        match &self.mode {
            Mode::Text => self.text.push_str(text),
            Mode::Thinking => self.current.push_str(text),
            Mode::Value { .. } => self.raw_value.push_str(text),
            Mode::Action => self.loose.push_str(text),
            _ => {}
        }
    }

    fn on_tag(&mut self, tag: &str, closing: bool, name: &str, from: Mode) {
        match from {
            Mode::Text if !closing && name == THINKING => self.mode = Mode::Thinking,
            Mode::Text if !closing && (name == COMPLETION || self.tools.contains(name)) => {
                self.action_name = Some(name.to_string());
                self.mode = Mode::Action;
            }
            Mode::Thinking if closing && name == THINKING => {
                let thought = decode(std::mem::take(&mut self.current).trim());
                self.thinking.push(thought);
                self.mode = Mode::Text;
            }
            Mode::Action if closing => {
                let action = self.action_name.clone().unwrap_or_default();
                if name == action {
                    self.finish_action();
                } else {
                    self.fail(format!(
                        "`</{name}>` does not close `<{action}>`: end the call with `</{action}>`"
                    ));
                }
            }
            Mode::Action => {
                self.mode = Mode::Value {
                    name: name.to_string(),
                }
            }
            Mode::Value { name: param } if closing && name == param => {
                self.flush_raw_value();
                let value = std::mem::take(&mut self.value);
                self.params.push((param, value));
                self.mode = Mode::Action;
            }
            Mode::Value { name: param } if closing && Some(name) == self.action_name.as_deref() => {
                self.fail(format!(
                    "the parameter `<{param}>` is not closed before `</{name}>`"
                ));
            }
            // Any other tag is content where it stands.
            _ => self.content(tag),
        }
    }

    fn flush_raw_value(&mut self) {
        let raw = std::mem::take(&mut self.raw_value);
        self.value.push_str(&decode(&raw));
    }

    fn finish_action(&mut self) {
        let name = self.action_name.take().unwrap_or_default();
        let params = std::mem::take(&mut self.params);
        let loose = std::mem::take(&mut self.loose);
        self.action = Some(if name == COMPLETION {
            // Without `<result>`, the body is the answer (a model that wrote
            // `<attempt_completion>yes, because ...</attempt_completion>`).
            let result = match params.into_iter().find(|(k, _)| k == "result") {
                Some((_, result)) => trim_value(&result),
                None => decode(loose.trim()),
            };
            Action::Completion { result }
        } else {
            Action::ToolCall { name, params }
        });
        self.mode = Mode::Drain;
    }

    fn fail(&mut self, message: String) {
        self.error.get_or_insert(FormatError { message });
        self.action_name = None;
        self.mode = Mode::Drain;
    }

    /// The action whose parameters are all closed but which is not closed itself yet: what
    /// a server that stopped at the action's closing tag (a stop sequence) leaves.
    pub fn open_action(&self) -> Option<&str> {
        match self.mode {
            Mode::Action if self.pending.trim().is_empty() => self.action_name.as_deref(),
            _ => None,
        }
    }

    /// Whether the reply so far ends inside a parameter's value of an action (a tag that
    /// is part of the value being read included).
    pub fn in_value(&self) -> bool {
        match &self.mode {
            Mode::Value { .. } | Mode::Cdata { .. } => true,
            Mode::Tag { from } => matches!(**from, Mode::Value { .. }),
            _ => false,
        }
    }

    /// Ends the reply.
    pub fn finish(mut self) -> ParseOutcome {
        // A tag left half-read is content of where it started.
        if let Mode::Tag { from } = self.mode.clone() {
            self.not_a_tag(*from);
        }
        match self.mode.clone() {
            Mode::Thinking => {
                let thought = decode(std::mem::take(&mut self.current).trim());
                self.thinking.push(thought);
            }
            Mode::Action | Mode::Value { .. } | Mode::Cdata { .. } => {
                let name = self.action_name.clone().unwrap_or_default();
                self.error.get_or_insert(FormatError {
                    message: format!("the `<{name}>` call is not closed: end it with `</{name}>`"),
                });
            }
            _ => {}
        }
        ParseOutcome {
            text: self.text,
            thinking: self.thinking,
            action: self.action,
            ignored_bytes: self.ignored,
            error: self.error,
        }
    }
}

/// A value written on its own lines keeps its content, not the line breaks around it.
pub fn trim_value(value: &str) -> String {
    let value = value
        .strip_prefix("\r\n")
        .or_else(|| value.strip_prefix('\n'))
        .unwrap_or(value);
    let value = value
        .strip_suffix("\r\n")
        .or_else(|| value.strip_suffix('\n'))
        .unwrap_or(value);
    value.to_string()
}

/// Parses a whole reply at once.
pub fn parse_reply(text: &str, tool_names: impl IntoIterator<Item = String>) -> ParseOutcome {
    let mut parser = XmlStreamParser::new(tool_names);
    parser.push(text);
    parser.finish()
}
