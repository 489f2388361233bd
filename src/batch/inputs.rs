//! The inputs file, read a line at a time: each non-blank line is one input, a JSON object
//! of input values, named by its `"id"` key or, without one, by its line number. A line
//! that cannot be an input (not JSON, not an object, a bad `id`) is an entry of its own,
//! so the batch records why and goes on. So is a line longer than [`MAX_LINE_BYTES`]: it
//! is skipped without being kept, so one huge line cannot exhaust memory.

use std::io::{self, BufRead};

use serde_json::{Map, Value};

/// The longest line that can be an input. Its values reach the run as a file that the
/// run reads up to 8 MiB (`spec::yaml::MAX_INPUT_BYTES`), pretty-printed, so half that.
pub const MAX_LINE_BYTES: usize = crate::spec::yaml::MAX_INPUT_BYTES / 2;

/// The key that names an input instead of its line number.
pub const ID_KEY: &str = "id";

/// One input: the values of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// 1-based line number in the inputs file: what the batch knows the input by.
    pub line: u64,
    /// Its `"id"`, when the line has one.
    pub id: Option<String>,
    /// The `"id"` as written (a string or an integer), for an agent that declares an
    /// input called `id`.
    pub id_value: Option<Value>,
    /// The other values, by input name.
    pub values: Map<String, Value>,
}

impl Input {
    /// The input's name in results and progress: its id, or its line number.
    pub fn name(&self) -> String {
        self.id.clone().unwrap_or_else(|| self.line.to_string())
    }

    /// The values the agent gets: the line's, with `id` among them only when the agent
    /// declares an input called `id`.
    pub fn vars(&self, agent_declares_id: bool) -> Map<String, Value> {
        let mut vars = self.values.clone();
        if let (true, Some(id)) = (agent_declares_id, &self.id_value) {
            vars.insert(ID_KEY.to_string(), id.clone());
        }
        vars
    }
}

/// A line that is not an input, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub line: u64,
    /// Its id when one could be read, else its line number.
    pub name: String,
    pub message: String,
}

/// What one non-blank line of the inputs file holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Input(Input),
    Bad(BadLine),
}

impl Entry {
    pub fn line(&self) -> u64 {
        match self {
            Entry::Input(input) => input.line,
            Entry::Bad(bad) => bad.line,
        }
    }
}

/// Streams the entries of an inputs file: one line in memory at a time, however long the
/// file. Blank lines are skipped (they still count for line numbers).
pub struct InputsReader<R> {
    reader: R,
    line: u64,
    buffer: Vec<u8>,
}

impl<R: BufRead> InputsReader<R> {
    pub fn new(reader: R) -> Self {
        InputsReader {
            reader,
            line: 0,
            buffer: Vec::new(),
        }
    }
}

impl<R: BufRead> Iterator for InputsReader<R> {
    type Item = io::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buffer.clear();
            let read = match read_line(&mut self.reader, &mut self.buffer, MAX_LINE_BYTES) {
                Ok(None) => return None,
                Ok(Some(read)) => read,
                Err(error) => return Some(Err(error)),
            };
            self.line += 1;
            if let Read::TooLong(length) = read {
                return Some(Ok(too_long(self.line, length)));
            }
            if self.buffer.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(parse_line(self.line, &self.buffer)));
        }
    }
}

/// How a line was read.
enum Read {
    /// Whole, in the buffer.
    Line,
    /// Longer than the bound: skipped to its end; the buffer holds its start.
    TooLong(u64),
}

/// Reads one line (its newline included) into `buffer`, keeping at most `max` bytes of
/// it; `None` at the end of the input.
fn read_line(
    reader: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<Read>> {
    let mut length: u64 = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok((length > 0).then(|| ended(length, length, max)));
        }
        let (taken, done) = match memchr::memchr(b'\n', available) {
            Some(newline) => (newline + 1, true),
            None => (available.len(), false),
        };
        let room = max.saturating_sub(buffer.len());
        buffer.extend_from_slice(&available[..taken.min(room)]);
        reader.consume(taken);
        length += taken as u64;
        if done {
            return Ok(Some(ended(length, length - 1, max)));
        }
    }
}

/// A line of `length` bytes, `content` of them before its newline.
fn ended(length: u64, content: u64, max: usize) -> Read {
    match content > max as u64 {
        true => Read::TooLong(length),
        false => Read::Line,
    }
}

/// The entry of a line longer than [`MAX_LINE_BYTES`].
fn too_long(line: u64, length: u64) -> Entry {
    Entry::Bad(BadLine {
        line,
        name: line.to_string(),
        message: format!(
            "line {line} is {length} bytes long, over the {} MiB an input line may have; it was skipped unread",
            MAX_LINE_BYTES / (1024 * 1024)
        ),
    })
}

/// Counts the inputs of a file (its non-blank lines) without keeping any, for the ETA.
pub fn count_entries(mut reader: impl BufRead) -> io::Result<u64> {
    let (mut count, mut blank) = (0, true);
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(count + u64::from(!blank));
        }
        for &byte in available {
            if byte == b'\n' {
                count += u64::from(!blank);
                blank = true;
            } else if !byte.is_ascii_whitespace() {
                blank = false;
            }
        }
        let consumed = available.len();
        reader.consume(consumed);
    }
}

fn parse_line(line: u64, bytes: &[u8]) -> Entry {
    let bad = |name: Option<String>, message: String| {
        Entry::Bad(BadLine {
            line,
            name: name.unwrap_or_else(|| line.to_string()),
            message,
        })
    };
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => return bad(None, format!("line {line} is not JSON: {error}")),
    };
    let Value::Object(mut values) = value else {
        let kind = kind_of(&value);
        return bad(
            None,
            format!("line {line} is {kind}, not a JSON object of input values"),
        );
    };
    let id_value = values.shift_remove(ID_KEY);
    let id = match &id_value {
        None => None,
        Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
        Some(Value::Number(number)) if number.is_i64() || number.is_u64() => {
            Some(number.to_string())
        }
        Some(other) => {
            let kind = kind_of(other);
            return bad(
                None,
                format!(
                    "line {line}: `{ID_KEY}` names the input and must be a non-empty string or an integer, not {kind}"
                ),
            );
        }
    };
    Entry::Input(Input {
        line,
        id,
        id_value,
        values,
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(text) if text.is_empty() => "an empty string",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(text: &str) -> Vec<Entry> {
        InputsReader::new(text.as_bytes())
            .collect::<io::Result<_>>()
            .unwrap()
    }

    #[test]
    fn each_non_blank_line_is_an_entry_numbered_by_its_line() {
        let found = entries("{\"a\": 1}\n\n  \n{\"id\": \"x\", \"a\": 2}\n{\"id\": 7}");
        let lines: Vec<u64> = found.iter().map(Entry::line).collect();
        assert_eq!(lines, [1, 4, 5]);
        let Entry::Input(second) = &found[1] else {
            panic!("{found:?}")
        };
        assert_eq!(second.name(), "x");
        assert_eq!(second.values, json!({"a": 2}).as_object().unwrap().clone());
        let Entry::Input(third) = &found[2] else {
            panic!("{found:?}")
        };
        assert_eq!(third.name(), "7");
        assert_eq!(count_entries("{}\n\n{}\n \n{}".as_bytes()).unwrap(), 3);
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_unkept() {
        let text = format!("{{\"a\": 1}}\n{}\n{{}}", "x".repeat(100));
        let mut reader = text.as_bytes();
        let mut buffer = Vec::new();
        let mut next = |buffer: &mut Vec<u8>| {
            buffer.clear();
            read_line(&mut reader, buffer, 10).unwrap()
        };
        assert!(matches!(next(&mut buffer), Some(Read::Line)));
        assert!(matches!(next(&mut buffer), Some(Read::TooLong(101))));
        assert_eq!(buffer.len(), 10);
        assert!(matches!(next(&mut buffer), Some(Read::Line)));
        assert!(next(&mut buffer).is_none());
    }

    #[test]
    fn id_reaches_the_agent_only_when_it_declares_it() {
        let Entry::Input(input) = &entries("{\"id\": \"x\", \"a\": 1}")[0] else {
            panic!()
        };
        assert_eq!(input.vars(false), *json!({"a": 1}).as_object().unwrap());
        assert_eq!(
            input.vars(true),
            *json!({"a": 1, "id": "x"}).as_object().unwrap()
        );
    }

    #[test]
    fn lines_that_are_not_inputs_say_why() {
        let found = entries("nope\n[1]\n{\"id\": true}\n{\"id\": \"\"}\n");
        let messages: Vec<String> = found
            .iter()
            .map(|entry| match entry {
                Entry::Bad(bad) => bad.message.clone(),
                Entry::Input(input) => panic!("{input:?}"),
            })
            .collect();
        assert!(
            messages[0].starts_with("line 1 is not JSON"),
            "{messages:?}"
        );
        assert_eq!(
            messages[1],
            "line 2 is an array, not a JSON object of input values"
        );
        assert!(messages[2].contains("not a boolean"), "{messages:?}");
        assert!(messages[3].contains("not an empty string"), "{messages:?}");
    }
}
