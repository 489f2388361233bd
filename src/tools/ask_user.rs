//! `ask_user` (SPEC §6): asks the person running the agent. On a terminal the question is
//! asked there; otherwise the answer comes from `--answers FILE`; failing both, the tool
//! reports that input is required and the engine pauses the run (exit 4, resumable).

use std::collections::HashMap;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{ArgsValidator, BoxFuture, Tool, ToolContext, ToolOutput};
use crate::sync::lock;

/// A question for the person, with the id the model gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub question: String,
    /// The stable id the model gave, if any.
    pub id: Option<String>,
}

/// Where answers come from.
pub trait AnswerSource: Send + Sync {
    /// The answer to `question` (with the optional `id` the model gave), if there is one.
    fn answer(&self, question: &str, id: Option<&str>) -> Option<String>;
}

/// Answers from `--answers FILE`: a YAML mapping from question id or text to answer, or a
/// list used in order.
pub struct AnswersFile {
    by_key: HashMap<String, String>,
    in_order: Mutex<std::collections::VecDeque<String>>,
}

impl AnswersFile {
    /// Builds the source from the file's value; errors say what shape was expected.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match value {
            Value::Object(map) => Ok(AnswersFile {
                by_key: map.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
                in_order: Mutex::default(),
            }),
            Value::Array(items) => Ok(AnswersFile {
                by_key: HashMap::new(),
                in_order: Mutex::new(items.iter().map(text).collect()),
            }),
            _ => {
                Err("expected a mapping (question id or text → answer) or a list of answers".into())
            }
        }
    }
}

impl AnswerSource for AnswersFile {
    fn answer(&self, question: &str, id: Option<&str>) -> Option<String> {
        if let Some(answer) = id
            .and_then(|id| self.by_key.get(id))
            .or_else(|| self.by_key.get(question))
        {
            return Some(answer.clone());
        }
        lock(&self.in_order).pop_front()
    }
}

/// Asks on the terminal: the question on stderr, the answer one line from stdin.
pub struct Terminal;

impl Terminal {
    /// Whether both ends are a person's terminal.
    pub fn available() -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }
}

impl AnswerSource for Terminal {
    fn answer(&self, question: &str, _id: Option<&str>) -> Option<String> {
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "\n? {question}\n> ");
        let _ = stderr.flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok()?;
        Some(line.trim_end_matches(['\n', '\r']).to_string())
    }
}

/// The `ask_user` tool.
pub struct AskUserTool {
    sources: Vec<Arc<dyn AnswerSource>>,
    parameters: Value,
    validator: ArgsValidator,
}

impl AskUserTool {
    /// Asks the sources in order (terminal first when there is one, then the answers file).
    pub fn new(sources: Vec<Arc<dyn AnswerSource>>) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question for the user."},
                "id": {"type": "string", "description": "A stable id for the question, so answers can be given in advance."}
            },
            "required": ["question"],
            "additionalProperties": false
        });
        let validator = ArgsValidator::of_built_in(&parameters)
            .expect("the ask_user schema is a valid JSON Schema");
        AskUserTool {
            sources,
            parameters,
            validator,
        }
    }
}

impl AskUserTool {
    /// Asks the sources in order.
    pub fn ask(&self, arguments: &Value) -> Asked {
        if let Err(invalid) = self.validator.check(arguments) {
            return Asked::Invalid(invalid);
        }
        let question = arguments["question"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let id = arguments
            .get("id")
            .and_then(Value::as_str)
            .map(String::from);
        for source in &self.sources {
            if let Some(answer) = source.answer(&question, id.as_deref()) {
                let question = Question { question, id };
                return Asked::Answered { question, answer };
            }
        }
        Asked::Waiting(Question { question, id })
    }
}

/// What asking found.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// The arguments were not a question: the tool error for the model.
    Invalid(ToolOutput),
    /// A source (the terminal, an answers file) answered.
    Answered { question: Question, answer: String },
    /// Nobody could answer: the run pauses on this question.
    Waiting(Question),
}

impl Asked {
    /// The call's result for the model.
    pub fn output(&self) -> ToolOutput {
        match self {
            Asked::Invalid(output) => output.clone(),
            Asked::Answered { answer, .. } => ToolOutput::ok(Value::String(answer.clone())),
            Asked::Waiting(_) => ToolOutput::error(
                "no answer is available yet: the run pauses until the user answers",
            ),
        }
    }
}

impl Tool for AskUserTool {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        "Asks the user a question and returns their answer. Use it when you need information only the user has."
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// One question at a time.
    fn sequential(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, arguments: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { self.ask(&arguments).output() })
    }
}
