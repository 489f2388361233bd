//! The inputs file, read a line at a time: each non-blank line is one input, a JSON object
//! of input values, named by its `"id"` key or, without one, by its line number. A line
//! that cannot be an input (not JSON, not an object, a bad `id`) is an entry of its own,
//! so the batch records why and goes on.

use std::io::{self, BufRead};

use serde_json::{Map, Value};

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
            match self.reader.read_until(b'\n', &mut self.buffer) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(error) => return Some(Err(error)),
            }
            self.line += 1;
            if self.buffer.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(parse_line(self.line, &self.buffer)));
        }
    }
}

/// Counts the inputs of a file (its non-blank lines) without keeping any, for the ETA.
pub fn count_entries(reader: impl BufRead) -> io::Result<u64> {
    let mut count = 0;
    for line in reader.split(b'\n') {
        if !line?.iter().all(u8::is_ascii_whitespace) {
            count += 1;
        }
    }
    Ok(count)
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
