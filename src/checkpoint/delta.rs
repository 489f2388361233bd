//! What changed in a state since the last journal record: the growing lists (messages,
//! reasoning, sub-agent traces) as "keep the first N, then these", the small fields whole,
//! and the keys of `pending` whose values changed. A record is then as large as the step
//! that made it, not as the history, and replaying the records in order rebuilds each
//! saved state exactly.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::engine::AgentState;
use crate::engine::budget::Totals;
use crate::engine::plan::PlanStep;
use crate::engine::trace::SubagentTrace;
use crate::provider::{Message, Usage};

/// A list as the previous one's first `keep` items, then `items`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ListDelta<'a, T: Clone> {
    pub keep: usize,
    pub items: Cow<'a, [T]>,
}

impl<'a, T: Clone + PartialEq> ListDelta<'a, T> {
    /// From `written` (what the reader has) to `now`: an append when `written` is a prefix
    /// of `now`, else the whole list (history rewritten by context management).
    fn between(written: &[T], now: &'a [T]) -> Self {
        let keep = match now.get(..written.len()) {
            Some(prefix) if prefix == written => written.len(),
            _ => 0,
        };
        ListDelta {
            keep,
            items: Cow::Borrowed(&now[keep..]),
        }
    }
}

impl<T: Clone> ListDelta<'_, T> {
    /// Applies the delta to `list`; `Err` when it keeps more than the list has.
    fn apply(&self, list: &mut Vec<T>) -> Result<(), String> {
        if self.keep > list.len() {
            return Err(format!(
                "a record keeps {} items of a list of {}",
                self.keep,
                list.len()
            ));
        }
        list.truncate(self.keep);
        list.extend_from_slice(&self.items);
        Ok(())
    }
}

/// The state's fields other than its growing lists, whole.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateRest<'a> {
    pub version: Cow<'a, str>,
    pub id: Cow<'a, str>,
    pub step: u64,
    pub metadata: Cow<'a, Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Cow<'a, [PlanStep]>>,
    pub usage: Usage,
    pub llm_calls: u64,
    pub tool_calls: u64,
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub handoffs: Cow<'a, [String]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<Cow<'a, Totals>>,
}

/// A state, as what changed since the previous record.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateDelta<'a> {
    pub messages: ListDelta<'a, Message>,
    pub reasoning: ListDelta<'a, String>,
    pub subagent_traces: ListDelta<'a, SubagentTrace>,
    pub rest: StateRest<'a>,
}

/// What the reader of the journal has so far: the writer diffs against it.
#[derive(Debug, Default)]
pub struct Written {
    messages: Vec<Message>,
    reasoning: Vec<String>,
    traces: Vec<SubagentTrace>,
    pending: Map<String, Value>,
}

impl Written {
    /// The record of `state` and `pending` (only the keys that changed).
    pub fn delta<'a>(
        &self,
        state: &'a AgentState,
        pending: Option<&'a Value>,
    ) -> (StateDelta<'a>, Map<String, Value>) {
        let delta = StateDelta {
            messages: ListDelta::between(&self.messages, &state.messages),
            reasoning: ListDelta::between(&self.reasoning, &state.reasoning),
            subagent_traces: ListDelta::between(&self.traces, &state.subagent_traces),
            rest: StateRest::of(state),
        };
        let now = pending.and_then(Value::as_object);
        let changed = now
            .into_iter()
            .flatten()
            .filter(|(key, value)| self.pending.get(*key) != Some(*value))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        (delta, changed)
    }

    /// Takes in what a record said, as its reader will.
    pub fn apply(
        &mut self,
        delta: &StateDelta<'_>,
        pending: &Map<String, Value>,
    ) -> Result<(), String> {
        delta.messages.apply(&mut self.messages)?;
        delta.reasoning.apply(&mut self.reasoning)?;
        delta.subagent_traces.apply(&mut self.traces)?;
        for (key, value) in pending {
            self.pending.insert(key.clone(), value.clone());
        }
        Ok(())
    }

    /// Starts from a whole saved state (a snapshot).
    pub fn from_state(state: &AgentState, pending: Option<&Value>) -> Self {
        Written {
            messages: state.messages.clone(),
            reasoning: state.reasoning.clone(),
            traces: state.subagent_traces.clone(),
            pending: pending
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The state a record describes, with what was written before it.
    pub fn state(&self, rest: &StateRest<'_>) -> AgentState {
        AgentState {
            version: rest.version.to_string(),
            id: rest.id.to_string(),
            messages: self.messages.clone(),
            step: rest.step,
            metadata: rest.metadata.clone().into_owned(),
            reasoning: self.reasoning.clone(),
            plan: rest.plan.as_ref().map(|plan| plan.to_vec()),
            subagent_traces: self.traces.clone(),
            usage: rest.usage,
            llm_calls: rest.llm_calls,
            tool_calls: rest.tool_calls,
            handoffs: rest.handoffs.to_vec(),
            spent: rest.spent.as_ref().map(|spent| spent.clone().into_owned()),
        }
    }

    /// `pending` as a checkpoint holds it (`None` when nothing was ever pending).
    pub fn pending(&self) -> Option<Value> {
        (!self.pending.is_empty()).then(|| Value::Object(self.pending.clone()))
    }
}

impl<'a> StateRest<'a> {
    fn of(state: &'a AgentState) -> Self {
        StateRest {
            version: Cow::Borrowed(&state.version),
            id: Cow::Borrowed(&state.id),
            step: state.step,
            metadata: Cow::Borrowed(&state.metadata),
            plan: state.plan.as_deref().map(Cow::Borrowed),
            usage: state.usage,
            llm_calls: state.llm_calls,
            tool_calls: state.tool_calls,
            handoffs: Cow::Borrowed(&state.handoffs),
            spent: state.spent.as_ref().map(Cow::Borrowed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(written: &mut Written, reader: &mut Written, state: &AgentState) {
        let pending = json!({"inputs": {"x": 1}, "engine": state.step});
        let (delta, changed) = written.delta(state, Some(&pending));
        let text = serde_json::to_string(&delta).unwrap();
        let read: StateDelta<'_> = serde_json::from_str(&text).unwrap();
        reader.apply(&read, &changed).unwrap();
        written.apply(&delta, &changed).unwrap();
        assert_eq!(&reader.state(&read.rest), state);
        assert_eq!(reader.pending(), Some(pending));
    }

    #[test]
    fn appends_and_rewrites_replay_to_the_same_states() {
        let (mut written, mut reader) = (Written::default(), Written::default());
        let mut state = AgentState::initial().with_message(Message::user("go"));
        round_trip(&mut written, &mut reader, &state);
        state = state.with_message(Message::assistant("one")).next_step();
        let (delta, _) = written.delta(&state, None);
        assert_eq!((delta.messages.keep, delta.messages.items.len()), (1, 1));
        round_trip(&mut written, &mut reader, &state);
        // Context management rewrites the history: the record holds all of it.
        state = state.with_context(vec![Message::user("summary"), Message::assistant("one")]);
        let (delta, _) = written.delta(&state, None);
        assert_eq!((delta.messages.keep, delta.messages.items.len()), (0, 2));
        round_trip(&mut written, &mut reader, &state);
    }

    #[test]
    fn a_record_that_keeps_more_than_there_is_is_refused() {
        let delta = ListDelta::<String> {
            keep: 3,
            items: Cow::Owned(Vec::new()),
        };
        assert!(delta.apply(&mut vec!["a".to_string()]).is_err());
    }
}
