//! `AgentState`: an immutable value (UAP §6). Every operation returns a new state with a
//! new id; strategies take a state and return one. Checkpoints are this value serialised.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::budget::Totals;
use super::clock::new_id;
use super::plan::PlanStep;
use super::trace::SubagentTrace;
use crate::provider::history::History;
use crate::provider::{ChainPosition, Message, Usage};

/// The version written into serialised states; `from_json` refuses others.
pub const STATE_VERSION: &str = "1";

/// A snapshot of an agent's execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    pub version: String,
    pub id: String,
    pub messages: History,
    pub step: u64,
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub reasoning: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<PlanStep>>,
    #[serde(default)]
    pub subagent_traces: Vec<SubagentTrace>,
    /// Tokens used so far by this agent and its sub-agents (a runner extension of UAP).
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub llm_calls: u64,
    #[serde(default)]
    pub tool_calls: u64,
    /// The handoff tools called so far, from the root: the agent at the end of this path has
    /// control, and a resume continues with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<String>,
    /// What the whole tree (sub-agents included) had spent at this state, as the budget
    /// counted it: saved with each checkpoint so a resume restores exactly that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<Totals>,
    /// Where the model's fallback chain stands: the model that answered the last call and
    /// since when (absent: the first model). Saved with each checkpoint, so a resumed
    /// session stays on a fallback until its cooldown is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_chain: Option<ChainPosition>,
}

/// Why a serialised state was refused.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("state version `{found}` is not supported (expected `{STATE_VERSION}`)")]
    Version { found: String },
    #[error("state is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    #[error("state is not valid: `{name}` is {value}, above the largest count {MAX_COUNT}")]
    Count { name: &'static str, value: u64 },
}

impl Default for AgentState {
    fn default() -> Self {
        Self::initial()
    }
}

impl AgentState {
    /// An empty state: no messages, step 0.
    pub fn initial() -> Self {
        AgentState {
            version: STATE_VERSION.to_string(),
            id: new_id(),
            messages: History::default(),
            step: 0,
            metadata: Map::new(),
            reasoning: Vec::new(),
            plan: None,
            subagent_traces: Vec::new(),
            usage: Usage::default(),
            llm_calls: 0,
            tool_calls: 0,
            handoffs: Vec::new(),
            spent: None,
            model_chain: None,
        }
    }

    /// The successor of this state: the same value with a new id. States are values: an
    /// operation consumes its input, so a caller that wants to keep (or branch from) the old
    /// state clones it first, and the common path copies nothing.
    fn next(mut self) -> Self {
        self.id = new_id();
        self
    }

    /// Appends one message.
    pub fn with_message(self, message: Message) -> Self {
        let mut next = self.next();
        next.messages.push(message);
        next
    }

    /// Appends messages.
    pub fn with_messages(self, messages: impl IntoIterator<Item = Message>) -> Self {
        let mut next = self.next();
        next.messages.extend(messages);
        next
    }

    /// Puts the results of the last turn's calls in the order the model made the calls.
    /// A resume appends what it settles (approved calls run, denials, an answer) after the
    /// results of the calls that ran before the pause; the model is owed them in its own
    /// order. Unchanged (the same history, appended to as ever) when they are in order.
    pub fn with_results_in_call_order(self) -> Self {
        let Some(turn) = self.messages.iter().rposition(
            |message| matches!(message, Message::Assistant(reply) if !reply.tool_calls.is_empty()),
        ) else {
            return self;
        };
        let Message::Assistant(reply) = &self.messages[turn] else {
            return self;
        };
        let place = |message: &Message| match message {
            Message::Tool(result) => reply
                .tool_calls
                .iter()
                .position(|call| call.id == result.tool_call_id),
            _ => None,
        };
        let places: Option<Vec<usize>> = self.messages[turn + 1..].iter().map(place).collect();
        let Some(places) = places else {
            return self;
        };
        if places.is_sorted() {
            return self;
        }
        let mut results: Vec<(usize, Message)> = places
            .into_iter()
            .zip(self.messages[turn + 1..].iter().cloned())
            .collect();
        results.sort_by_key(|(place, _)| *place);
        let mut messages = self.messages[..=turn].to_vec();
        messages.extend(results.into_iter().map(|(_, message)| message));
        self.with_context(messages)
    }

    /// Replaces the whole history (context management).
    pub fn with_context(self, messages: Vec<Message>) -> Self {
        let mut next = self.next();
        next.messages = History::from(messages);
        next
    }

    pub fn with_step(self, step: u64) -> Self {
        let mut next = self.next();
        next.step = step;
        next
    }

    /// The same state one step further.
    pub fn next_step(self) -> Self {
        let step = self.step + 1;
        self.with_step(step)
    }

    pub fn with_metadata(self, key: impl Into<String>, value: Value) -> Self {
        let mut next = self.next();
        next.metadata.insert(key.into(), value);
        next
    }

    pub fn with_reasoning(self, reasoning: impl Into<String>) -> Self {
        let mut next = self.next();
        next.reasoning.push(reasoning.into());
        next
    }

    pub fn with_plan(self, plan: Vec<PlanStep>) -> Self {
        let mut next = self.next();
        next.plan = Some(plan);
        next
    }

    pub fn with_subagent_trace(self, trace: SubagentTrace) -> Self {
        let mut next = self.next();
        next.subagent_traces.push(trace);
        next
    }

    /// Counts one model call and its usage.
    pub fn with_llm_call(self, usage: &Usage) -> Self {
        let mut next = self.next();
        next.llm_calls = next.llm_calls.saturating_add(1);
        next.usage = next.usage.plus(usage);
        next
    }

    /// Records that control went to the agent behind handoff tool `tool`.
    pub fn with_handoff(self, tool: String) -> Self {
        let mut next = self.next();
        next.handoffs.push(tool);
        next
    }

    /// Counts tool calls.
    pub fn with_tool_calls(self, count: u64) -> Self {
        let mut next = self.next();
        next.tool_calls = next.tool_calls.saturating_add(count);
        next
    }

    /// Notes what the whole tree has spent (the same state: bookkeeping, not a step).
    pub fn with_spent(mut self, spent: Totals) -> Self {
        self.spent = Some(spent);
        self
    }

    /// What the tree had spent at this state; for a state saved before `spent` existed,
    /// the root's own counts.
    pub fn spent_so_far(&self) -> Totals {
        self.spent.clone().unwrap_or(Totals {
            llm_calls: self.llm_calls,
            tool_calls: self.tool_calls,
            usage: self.usage,
            cost_usd: None,
        })
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Restores a state, checking its version first.
    pub fn from_json(json: &Value) -> Result<Self, StateError> {
        let found = json.get("version").and_then(Value::as_str).unwrap_or("");
        if found != STATE_VERSION {
            return Err(StateError::Version {
                found: found.to_string(),
            });
        }
        let state: AgentState = serde_json::from_value(json.clone())?;
        state.check_counts()?;
        Ok(state)
    }

    /// A hand-edited count too large to go on counting from is refused, never wrapped.
    fn check_counts(&self) -> Result<(), StateError> {
        let spent = self.spent_so_far();
        let counts = [
            ("step", self.step),
            ("llm_calls", self.llm_calls.max(spent.llm_calls)),
            ("tool_calls", self.tool_calls.max(spent.tool_calls)),
            (
                "usage.total_tokens",
                self.usage.total_tokens.max(spent.usage.total_tokens),
            ),
        ];
        match counts.into_iter().find(|(_, value)| *value > MAX_COUNT) {
            Some((name, value)) => Err(StateError::Count { name, value }),
            None => Ok(()),
        }
    }
}

/// The largest count a state may hold (2^53: exact in every JSON reader).
pub const MAX_COUNT: u64 = 1 << 53;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_return_new_states_and_leave_the_old_one() {
        let s0 = AgentState::initial();
        let s1 = s0.clone().with_message(Message::user("hello"));
        let s2 = s1.clone().with_messages([Message::assistant("hi")]);
        assert_eq!(s0.messages.len(), 0);
        assert_eq!(s2.messages.len(), 2);
        assert_ne!(s1.id, s2.id);
        let s3 = s2.clone().with_context(vec![Message::user("fresh")]);
        assert_eq!(s3.messages, vec![Message::user("fresh")]);
    }

    #[test]
    fn json_round_trips_exactly_and_checks_the_version() {
        let state = AgentState::initial()
            .with_message(Message::user("x"))
            .with_step(3)
            .with_metadata("team", Value::from("infra"))
            .with_reasoning("because")
            .with_llm_call(&Usage::new(10, 5));
        let json = state.to_json();
        assert_eq!(AgentState::from_json(&json).unwrap(), state);
        let mut wrong = json.clone();
        wrong["version"] = Value::from("9");
        assert!(matches!(
            AgentState::from_json(&wrong),
            Err(StateError::Version { .. })
        ));
    }
}
