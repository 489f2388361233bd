//! What changed in a state since the last journal record: the growing lists (messages,
//! reasoning, sub-agent traces) as "keep the first N, then these", the small fields whole,
//! and the keys of `pending` whose values changed. A record is then as large as the step
//! that made it, not as the history, and replaying the records in order rebuilds each
//! saved state exactly.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::pending_fields::{Changes, PendingChanges, PendingFields};
use crate::engine::AgentState;
use crate::engine::budget::Totals;
use crate::engine::plan::PlanStep;
use crate::engine::trace::SubagentTrace;
use crate::provider::history::{History, MessageId};
use crate::provider::{ChainPosition, Message, Usage};

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
        Self::after(keep, now)
    }
}

impl<'a, T: Clone> ListDelta<'a, T> {
    /// The first `keep` items of the list kept, then the rest of `now`.
    fn after(keep: usize, now: &'a [T]) -> Self {
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_chain: Option<ChainPosition>,
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

/// What the reader of the journal has so far, as its writer keeps it to diff the next state
/// against: the messages by their count and the last one's number (comparing those is what
/// makes an append cheap to recognise), the other lists whole, and when each key of
/// `pending` last changed (`pending_fields.rs`).
#[derive(Debug, Default)]
pub struct Written {
    messages: WrittenMessages,
    lists: Lists,
    pending: Changes,
}

/// How many messages the reader has, and the last one's number. A history that holds that
/// number at that place holds the same messages before it (`provider/history.rs`), so this
/// is all it takes to know that a history only grew since: checking costs the same at any
/// length (comparing every number cost a copy and a comparison of the whole list per save).
#[derive(Debug, Default, Clone, Copy)]
struct WrittenMessages {
    count: usize,
    last: Option<MessageId>,
}

impl WrittenMessages {
    fn of(history: &History) -> Self {
        WrittenMessages {
            count: history.len(),
            last: history.ids().last().copied(),
        }
    }

    /// How many of `history`'s first messages the reader has: all it has, when `history`
    /// only grew since; else none.
    fn kept_by(&self, history: &History) -> usize {
        let Some(last) = self.count.checked_sub(1) else {
            return 0;
        };
        if history.ids().get(last).copied() == self.last {
            self.count
        } else {
            0
        }
    }
}

/// The lists other than the messages: kept whole on both sides.
#[derive(Debug, Default)]
struct Lists {
    reasoning: Vec<String>,
    traces: Vec<SubagentTrace>,
}

impl Lists {
    fn of(state: &AgentState) -> Self {
        Lists {
            reasoning: state.reasoning.clone(),
            traces: state.subagent_traces.clone(),
        }
    }

    fn apply(&mut self, delta: &StateDelta<'_>) -> Result<(), String> {
        delta.reasoning.apply(&mut self.reasoning)?;
        delta.subagent_traces.apply(&mut self.traces)
    }
}

impl Written {
    /// The record of `state` and `pending` (only the keys that changed).
    pub fn delta<'a>(
        &self,
        state: &'a AgentState,
        pending: Option<&'a PendingFields>,
    ) -> (StateDelta<'a>, PendingChanges<'a>) {
        let keep = self.messages.kept_by(&state.messages);
        let delta = StateDelta {
            messages: ListDelta::after(keep, &state.messages),
            reasoning: ListDelta::between(&self.lists.reasoning, &state.reasoning),
            subagent_traces: ListDelta::between(&self.lists.traces, &state.subagent_traces),
            rest: StateRest::of(state),
        };
        let changed = pending
            .map(|pending| PendingChanges::since(pending, &self.pending))
            .unwrap_or_default();
        (delta, changed)
    }

    /// Takes in the record of `state` and `pending` once it is written.
    pub fn wrote(
        &mut self,
        state: &AgentState,
        delta: &StateDelta<'_>,
        pending: Option<&PendingFields>,
    ) -> Result<(), String> {
        self.messages = WrittenMessages::of(&state.messages);
        if let Some(pending) = pending {
            self.pending.clone_from(pending.changes());
        }
        self.lists.apply(delta)
    }
}

/// The states a journal's records rebuild, as its reader takes them in.
#[derive(Debug, Default)]
pub struct Rebuilt {
    messages: Vec<Message>,
    lists: Lists,
    pending: Map<String, Value>,
}

impl Rebuilt {
    /// Takes in what a record said.
    pub fn apply(
        &mut self,
        delta: &StateDelta<'_>,
        pending: &PendingChanges<'_>,
    ) -> Result<(), String> {
        delta.messages.apply(&mut self.messages)?;
        self.lists.apply(delta)?;
        for (key, json) in pending.iter() {
            let value = serde_json::from_str(json.get())
                .map_err(|e| format!("`pending.{key}` is no JSON value ({e})"))?;
            self.pending.insert(key.to_string(), value);
        }
        Ok(())
    }

    /// Starts from a whole saved state (a snapshot).
    pub fn from_state(state: &AgentState, pending: Option<&Value>) -> Self {
        Rebuilt {
            messages: state.messages.to_vec(),
            lists: Lists::of(state),
            pending: pending
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The state a record describes, with what was read before it.
    pub fn state(&self, rest: &StateRest<'_>) -> AgentState {
        AgentState {
            version: rest.version.to_string(),
            id: rest.id.to_string(),
            messages: History::from(self.messages.clone()),
            step: rest.step,
            metadata: rest.metadata.clone().into_owned(),
            reasoning: self.lists.reasoning.clone(),
            plan: rest.plan.as_ref().map(|plan| plan.to_vec()),
            subagent_traces: self.lists.traces.clone(),
            usage: rest.usage,
            llm_calls: rest.llm_calls,
            tool_calls: rest.tool_calls,
            handoffs: rest.handoffs.to_vec(),
            spent: rest.spent.as_ref().map(|spent| spent.clone().into_owned()),
            model_chain: rest.model_chain,
        }
    }

    /// `pending` as a checkpoint holds it (`None` when nothing was ever pending).
    pub fn pending(&self) -> Option<Value> {
        let pending = &self.pending;
        (!pending.is_empty()).then(|| Value::Object(pending.clone()))
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
            model_chain: state.model_chain,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(written: &mut Written, reader: &mut Rebuilt, state: &AgentState) {
        let pending = json!({"inputs": {"x": 1}, "engine": state.step});
        let fields = PendingFields::from_value(pending.clone());
        let (delta, changed) = written.delta(state, Some(&fields));
        let text = serde_json::to_string(&delta).unwrap();
        let read: StateDelta<'_> = serde_json::from_str(&text).unwrap();
        reader.apply(&read, &changed).unwrap();
        written.wrote(state, &delta, Some(&fields)).unwrap();
        assert_eq!(&reader.state(&read.rest), state);
        assert_eq!(reader.pending(), Some(pending));
    }

    #[test]
    fn appends_and_rewrites_replay_to_the_same_states() {
        let (mut written, mut reader) = (Written::default(), Rebuilt::default());
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
    fn a_branch_of_an_older_state_is_not_taken_for_an_append() {
        let (mut written, mut reader) = (Written::default(), Rebuilt::default());
        let base = AgentState::initial().with_message(Message::user("go"));
        let one = base.clone().with_message(Message::assistant("one"));
        round_trip(&mut written, &mut reader, &one);
        // As long, and from the same base, but another message: written whole.
        let two = base.with_message(Message::assistant("two"));
        let (delta, _) = written.delta(&two, None);
        assert_eq!((delta.messages.keep, delta.messages.items.len()), (0, 2));
        round_trip(&mut written, &mut reader, &two);
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
