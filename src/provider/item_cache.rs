//! The serialised history of a provider's last request, kept to build the next one.
//!
//! A history grows by a message or two per call, and serialising all of it again at every
//! call made a run's CPU grow with the square of its length. The cache keeps the items'
//! JSON in one buffer, each item with the range of messages it was made from and the span
//! of their numbers. A message keeps its number only while it is unchanged, and whatever
//! history holds a message holds the same messages before it (`history.rs`), so when the
//! last cached item's messages are still where they were, every cached item is still
//! right. Only the last item is made again (a new message may join it: consecutive user
//! messages go as one), then the items of the new messages: the work of a call is what
//! the call added, and the buffer is copied into the body in one piece.

use std::ops::Range;
use std::sync::Mutex;

use serde::Serialize;
use serde::ser::{Error as _, Serializer};
use serde_json::value::RawValue;

use super::history::{History, MessageSpan};
use super::types::Message;
use crate::sync::lock;

/// A provider's last request's items, serialised.
#[derive(Debug, Default)]
pub(crate) struct ItemCache(Mutex<Serialised>);

#[derive(Debug, Default)]
struct Serialised {
    /// The items' JSON, each followed by a comma.
    json: Vec<u8>,
    /// The items, in order.
    items: Vec<Entry>,
}

/// One cached item: the messages it was made from, and where its JSON starts.
#[derive(Debug)]
struct Entry {
    messages: Range<usize>,
    span: Option<MessageSpan>,
    at: usize,
}

/// A wire's items for the messages from an index on, each with the range of messages it
/// was made from. Started where an item of the whole history starts, it must make the
/// same items as building from the first message would.
pub(crate) type Build<'a, T> = fn(&'a [Message], usize) -> Vec<(Range<usize>, T)>;

/// A history's wire items, serialised through the cache: only the items of messages the
/// cache does not hold are serialised. `first` (a system prompt, which no message numbers)
/// is serialised every time.
pub(crate) struct CachedItems<'a, T> {
    pub cache: &'a ItemCache,
    pub first: Option<T>,
    pub messages: &'a History,
    pub build: Build<'a, T>,
}

impl Serialised {
    /// Where making items must start for `history`: at the last cached item's first
    /// message while its messages are still where they were, else at the start. The
    /// entries from there on are dropped.
    fn resume(&mut self, history: &History) -> usize {
        let ids = history.ids();
        let from = match self.items.last() {
            Some(last)
                if last.span.is_some()
                    && ids.get(last.messages.clone()).and_then(MessageSpan::of) == last.span =>
            {
                last.messages.start
            }
            _ => 0,
        };
        let keep = self.items.partition_point(|e| e.messages.start < from);
        self.json
            .truncate(self.items.get(keep).map_or(self.json.len(), |e| e.at));
        self.items.truncate(keep);
        from
    }

    /// Appends `item`, made from the messages `range` of `history`.
    fn push(
        &mut self,
        history: &History,
        range: Range<usize>,
        item: &impl Serialize,
    ) -> serde_json::Result<()> {
        let at = self.json.len();
        if let Err(error) = serde_json::to_writer(&mut self.json, item) {
            // Nothing half written stays: the next request starts anew.
            (self.json, self.items) = (Vec::new(), Vec::new());
            return Err(error);
        }
        self.json.push(b',');
        let span = history.ids().get(range.clone()).and_then(MessageSpan::of);
        self.items.push(Entry {
            messages: range,
            span,
            at,
        });
        Ok(())
    }
}

impl<T: Serialize> CachedItems<'_, T> {
    /// Appends the items as a JSON array to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let mut cache = lock(&self.cache.0);
        let from = cache.resume(self.messages);
        for (range, item) in (self.build)(self.messages, from) {
            cache.push(self.messages, range, &item)?;
        }
        out.push(b'[');
        if let Some(first) = &self.first {
            serde_json::to_writer(&mut *out, first)?;
            if !cache.json.is_empty() {
                out.push(b',');
            }
        }
        if let Some((_comma, items)) = cache.json.split_last() {
            out.extend_from_slice(items);
        }
        out.push(b']');
        Ok(())
    }
}

/// Through serde (the providers' `request_body`, for tests): the same bytes, checked by
/// parsing them as a raw JSON value. Requests are written with `write_json`.
impl<T: Serialize> Serialize for CachedItems<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut json = Vec::new();
        self.write_json(&mut json).map_err(S::Error::custom)?;
        let json = String::from_utf8(json).map_err(S::Error::custom)?;
        RawValue::from_string(json)
            .map_err(S::Error::custom)?
            .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One item per message, and consecutive user messages joined into one, as the Chat
    /// Completions wire does.
    fn build(messages: &[Message], from: usize) -> Vec<(Range<usize>, String)> {
        let mut items: Vec<(Range<usize>, String)> = Vec::new();
        for (at, message) in messages.iter().enumerate().skip(from) {
            let text = serde_json::to_string(message).unwrap();
            match (items.last_mut(), message) {
                (Some((range, joined)), Message::User { .. }) if joined.contains("\"user\"") => {
                    joined.push_str(&text);
                    range.end = at + 1;
                }
                _ => items.push((at..at + 1, text)),
            }
        }
        items
    }

    fn json(cache: &ItemCache, history: &History) -> String {
        let items = CachedItems {
            cache,
            first: Some("first".to_string()),
            messages: history,
            build,
        };
        let mut out = Vec::new();
        items.write_json(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cached_items_are_the_bytes_of_items_made_anew() {
        let cache = ItemCache::default();
        let mut history = History::from(vec![Message::user("task")]);
        let fresh = |history: &History| json(&ItemCache::default(), history);
        assert_eq!(json(&cache, &history), fresh(&history));
        // A user message joins the last item: it is made again.
        history.push(Message::user("step 1"));
        assert_eq!(json(&cache, &history), fresh(&history));
        history.push(Message::assistant("one"));
        history.push(Message::user("more"));
        assert_eq!(json(&cache, &history), fresh(&history));
        // A history rewritten by context management has new numbers: nothing is reused.
        let rewritten = History::from(vec![Message::user("summary"), Message::assistant("one")]);
        assert_eq!(json(&cache, &rewritten), fresh(&rewritten));
        // Going back to an older history (another branch) is not taken for the cached one.
        assert_eq!(json(&cache, &history), fresh(&history));
    }

    #[test]
    fn only_new_messages_are_made_into_items() {
        let cache = ItemCache::default();
        let mut history = History::from(vec![Message::user("task"), Message::assistant("a")]);
        json(&cache, &history);
        history.push(Message::user("next"));
        let from = cache.0.lock().unwrap().resume(&history);
        assert_eq!(from, 1, "the last item again, then the new message");
    }
}
