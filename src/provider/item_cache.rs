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
//! the call added. The buffer goes into the body as a shared piece (`request_body.rs`), not
//! a copy, and comes back for the next call once the request no longer holds it.

use std::ops::Range;
use std::sync::Mutex;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Serialize;
use serde::ser::{Error as _, Serializer};
use serde_json::value::RawValue;

use super::history::{History, MessageSpan};
use super::request_body::BodyWriter;
use super::types::Message;
use crate::sync::lock;

/// A provider's last request's items, serialised.
#[derive(Debug, Default)]
pub(crate) struct ItemCache(Mutex<Serialised>);

#[derive(Debug, Default)]
struct Serialised {
    /// The items' JSON, each followed by a comma. Between calls it is frozen, shared with
    /// the last request's body.
    json: Bytes,
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
    /// The items' JSON to append to: the buffer the last body shared, taken back without a
    /// copy once that body is gone (it is copied while a request still holds it).
    fn take_json(&mut self) -> BytesMut {
        std::mem::take(&mut self.json)
            .try_into_mut()
            .unwrap_or_else(|shared| BytesMut::from(&shared[..]))
    }

    /// Where making items must start for `history`: at the last cached item's first
    /// message while its messages are still where they were, else at the start. The
    /// entries from there on are dropped.
    fn resume(&mut self, json: &mut BytesMut, history: &History) -> usize {
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
        json.truncate(self.items.get(keep).map_or(json.len(), |e| e.at));
        self.items.truncate(keep);
        from
    }

    /// Appends `item`, made from the messages `range` of `history`.
    fn push(
        &mut self,
        json: &mut BytesMut,
        history: &History,
        range: Range<usize>,
        item: &impl Serialize,
    ) -> serde_json::Result<()> {
        let at = json.len();
        if let Err(error) = serde_json::to_writer(json.writer(), item) {
            // Nothing half written stays: the next request starts anew.
            (*json, self.items) = (BytesMut::new(), Vec::new());
            return Err(error);
        }
        json.put_u8(b',');
        let span = history.ids().get(range.clone()).and_then(MessageSpan::of);
        self.items.push(Entry {
            messages: range,
            span,
            at,
        });
        Ok(())
    }

    /// Brings the items up to date with `history`: only the items of messages not held
    /// are made.
    fn update<'a, T: Serialize>(
        &mut self,
        history: &'a History,
        build: Build<'a, T>,
    ) -> serde_json::Result<()> {
        let mut json = self.take_json();
        let from = self.resume(&mut json, history);
        let made = build(history, from)
            .into_iter()
            .try_for_each(|(range, item)| self.push(&mut json, history, range, &item));
        self.json = json.freeze();
        made
    }
}

impl<T: Serialize> CachedItems<'_, T> {
    /// Writes the items as a JSON array to `out`, the cached ones as a shared piece.
    pub fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()> {
        let mut cache = lock(&self.cache.0);
        cache.update(self.messages, self.build)?;
        out.push(b'[');
        if let Some(first) = &self.first {
            serde_json::to_writer(&mut *out, first)?;
            if !cache.json.is_empty() {
                out.push(b',');
            }
        }
        // Without the last item's comma.
        let items = cache.json.len().saturating_sub(1);
        out.share(cache.json.slice(..items));
        out.push(b']');
        Ok(())
    }
}

/// Through serde (the providers' `request_body`, for tests): the same bytes, checked by
/// parsing them as a raw JSON value. Requests are written with `write_json`.
impl<T: Serialize> Serialize for CachedItems<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = BodyWriter::default();
        self.write_json(&mut out).map_err(S::Error::custom)?;
        let json = String::from_utf8(out.finish().joined().to_vec()).map_err(S::Error::custom)?;
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
        let mut out = BodyWriter::default();
        items.write_json(&mut out).unwrap();
        String::from_utf8(out.finish().joined().to_vec()).unwrap()
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
        let mut serialised = cache.0.lock().unwrap();
        let mut json = serialised.take_json();
        let from = serialised.resume(&mut json, &history);
        assert_eq!(from, 1, "the last item again, then the new message");
    }

    #[test]
    fn the_items_go_into_the_body_shared_and_come_back_once_it_is_gone() {
        let cache = ItemCache::default();
        let history = History::from(vec![Message::user("task"), Message::assistant("a")]);
        let write = || {
            let items = CachedItems {
                cache: &cache,
                first: None::<String>,
                messages: &history,
                build,
            };
            let mut out = BodyWriter::default();
            items.write_json(&mut out).unwrap();
            out.finish()
        };
        let cached_at = || cache.0.lock().unwrap().json.as_ptr();
        let body = write();
        assert_eq!(body.pieces()[1].as_ptr(), cached_at(), "shared, not copied");
        {
            let mut serialised = cache.0.lock().unwrap();
            let taken = serialised.take_json();
            assert_ne!(
                taken.as_ptr(),
                body.pieces()[1].as_ptr(),
                "copied while held"
            );
            serialised.json = taken.freeze();
        }
        drop((body, write()));
        let at = cached_at();
        assert_eq!(
            cache.0.lock().unwrap().take_json().as_ptr(),
            at,
            "taken back as it is"
        );
    }
}
