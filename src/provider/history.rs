//! The conversation of a state, and of the model request it moves into: its messages, each
//! with a number given when it joined the history. A message's content never changes while
//! it keeps its number (the history can only be appended to or replaced), so two histories
//! whose numbers agree hold the same messages. Two things compare numbers instead of
//! messages: the checkpoint journal, to learn that a history was only appended to (comparing
//! the messages cost more, at a thousand steps, than the rest of a save together), and each
//! provider, to reuse its last request's serialised messages (`item_cache::ItemCache`).

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::types::Message;

/// A message's number: unique in this process, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageId(u64);

impl MessageId {
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        MessageId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A run of consecutive messages of a history, known by its first and last numbers. A
/// history only grows at its end, and a number is given to one message as it is pushed, so
/// whatever history holds a message holds the same messages before it: two runs with the
/// same ends are the same messages. (Comparing the ends, held inline, rather than every
/// number of a run, behind a pointer, is what a request with a thousand messages does a
/// thousand times.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSpan {
    first: MessageId,
    last: MessageId,
}

impl MessageSpan {
    /// The span of `ids`, a run of one history's numbers; `None` for no messages.
    pub fn of(ids: &[MessageId]) -> Option<Self> {
        Some(MessageSpan {
            first: *ids.first()?,
            last: *ids.last()?,
        })
    }
}

/// Messages in order, appended or replaced whole; read as a slice.
#[derive(Debug, Clone, Default)]
pub struct History {
    messages: Vec<Message>,
    ids: Vec<MessageId>,
}

impl History {
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
        self.ids.push(MessageId::next());
    }

    pub fn ids(&self) -> &[MessageId] {
        &self.ids
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        let ids = messages.iter().map(|_| MessageId::next()).collect();
        History { messages, ids }
    }
}

impl Extend<Message> for History {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, messages: I) {
        for message in messages {
            self.push(message);
        }
    }
}

impl Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

/// Histories are equal when their messages are: the numbers are this process's bookkeeping.
impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
    }
}

impl PartialEq<Vec<Message>> for History {
    fn eq(&self, other: &Vec<Message>) -> bool {
        &self.messages == other
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.messages.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(History::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_the_messages() {
        let mut history = History::from(vec![Message::user("a")]);
        let copy = history.clone();
        history.push(Message::assistant("b"));
        assert!(history.ids().starts_with(copy.ids()));
        let mut other = copy.clone();
        other.push(Message::assistant("b"));
        assert_eq!(other, history, "the same messages");
        assert_ne!(other.ids(), history.ids(), "appended apart: other numbers");
    }
}
