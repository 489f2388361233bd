//! A checkpoint's `pending` as its writer keeps it: a mapping whose keys each carry the
//! number of the change that last set them, and whose values are kept as the JSON they are
//! written as. A journal record holds the keys that changed since the record before, and
//! with these numbers finding them costs nothing: comparing the values walked the whole
//! agent definition (a key of `pending`) at every save. Kept as JSON text, a value is
//! serialised once when it is set, not made a `Value` first and serialised again by every
//! record and snapshot that holds it (the engine's key is set at every save).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use indexmap::IndexMap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The mapping (a handful of keys, in the order they were first set), and when each key
/// last changed.
#[derive(Debug, Clone, Default)]
pub struct PendingFields {
    fields: Vec<(String, Box<RawValue>)>,
    changes: Changes,
}

/// Changes are numbered across the process, so two mappings never share a number: a
/// writer handed another mapping sees each of its keys as changed.
static CHANGES: AtomicU64 = AtomicU64::new(1);

/// When each key last changed, as a writer saw it: what a reader of its records has. A
/// mapping has a handful of keys, so a list searched in order: no hashing at each save, and
/// a writer's copy is refreshed in place (`clone_from` reuses its strings).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Changes(Vec<(String, u64)>);

impl Clone for Changes {
    fn clone(&self) -> Self {
        Changes(self.0.clone())
    }

    /// Key by key, into the strings already there (a tuple's own `clone_from` makes new ones).
    fn clone_from(&mut self, source: &Self) {
        self.0.truncate(source.0.len());
        for ((key, change), (source_key, source_change)) in self.0.iter_mut().zip(&source.0) {
            key.clone_from(source_key);
            *change = *source_change;
        }
        let kept = self.0.len();
        self.0.extend_from_slice(&source.0[kept..]);
    }
}

impl Changes {
    fn get(&self, key: &str) -> Option<u64> {
        self.0
            .iter()
            .find(|(changed, _)| changed == key)
            .map(|&(_, change)| change)
    }

    fn set(&mut self, key: &str, change: u64) {
        match self.0.iter_mut().find(|(changed, _)| changed == key) {
            Some((_, at)) => *at = change,
            None => self.0.push((key.to_string(), change)),
        }
    }
}

impl PendingFields {
    /// The keys of `value` (a mapping; anything else holds none), each a change.
    pub(crate) fn from_value(value: Value) -> Self {
        let mut fields = PendingFields::default();
        if let Value::Object(map) = value {
            for (key, value) in map {
                // A `Value` always serialises.
                let _ = fields.set(&key, &value);
            }
        }
        fields
    }

    /// Sets `key` to `value`'s JSON, a change when the JSON is another. (The values set at
    /// every save are small; the large ones are set once.)
    pub(crate) fn set(&mut self, key: &str, value: &impl Serialize) -> serde_json::Result<()> {
        let json = serde_json::value::to_raw_value(value)?;
        let slot = self.fields.iter_mut().find(|(kept, _)| kept == key);
        if slot
            .as_ref()
            .is_some_and(|(_, kept)| kept.get() == json.get())
        {
            return Ok(());
        }
        let change = CHANGES.fetch_add(1, Ordering::Relaxed);
        self.changes.set(key, change);
        match slot {
            Some((_, kept)) => *kept = json,
            None => self.fields.push((key.to_string(), json)),
        }
        Ok(())
    }

    /// The JSON `key` holds.
    pub(crate) fn get(&self, key: &str) -> Option<&RawValue> {
        self.fields
            .iter()
            .find(|(kept, _)| kept == key)
            .map(|(_, json)| &**json)
    }

    /// What `key` holds, read as a `T` (`None` when it is absent or is no `T`).
    pub(crate) fn read<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        serde_json::from_str(self.get(key)?.get()).ok()
    }

    /// The keys that changed since a writer wrote `written`, with their JSON.
    pub(crate) fn changed_since<'a>(
        &'a self,
        written: &Changes,
    ) -> impl Iterator<Item = (&'a str, &'a RawValue)> {
        self.fields
            .iter()
            .filter(|(key, _)| written.get(key) != self.changes.get(key))
            .map(|(key, json)| (key.as_str(), &**json))
    }

    /// When each key last changed: what a writer that wrote them all has.
    pub(crate) fn changes(&self) -> &Changes {
        &self.changes
    }
}

/// The keys of `pending` that changed since the record before, with their JSON: borrowed
/// from the writer's mapping when a record is written (its values can be a whole agent
/// definition), owned when one is read.
#[derive(Debug, Default)]
pub(crate) struct PendingChanges<'a>(Vec<(Cow<'a, str>, Cow<'a, RawValue>)>);

impl<'a> PendingChanges<'a> {
    /// The keys of `fields` that changed since a writer wrote `written`.
    pub(crate) fn since(fields: &'a PendingFields, written: &Changes) -> Self {
        let changed = fields.changed_since(written);
        PendingChanges(
            changed
                .map(|(key, json)| (Cow::Borrowed(key), Cow::Borrowed(json)))
                .collect(),
        )
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.0
            .iter()
            .map(|(key, json)| (key.as_ref(), json.as_ref()))
    }
}

impl Serialize for PendingChanges<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for PendingChanges<'_> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = IndexMap::<String, Box<RawValue>>::deserialize(deserializer)?;
        Ok(PendingChanges(
            read.into_iter()
                .map(|(key, json)| (Cow::Owned(key), Cow::Owned(json)))
                .collect(),
        ))
    }
}

impl Serialize for PendingFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.fields.iter().map(|(key, json)| (key, &**json)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_writers_copy_of_the_changes_is_refreshed_whole() {
        let fields = PendingFields::from_value(json!({"inputs": 1, "engine": 2}));
        let mut written = PendingFields::from_value(json!({"other": 1}))
            .changes()
            .clone();
        written.clone_from(fields.changes());
        assert_eq!(&written, fields.changes());
        let fewer = PendingFields::from_value(json!({"inputs": 1}));
        written.clone_from(fewer.changes());
        assert_eq!(&written, fewer.changes());
    }

    #[test]
    fn a_key_is_changed_until_written_and_again_when_set_to_another_value() {
        let mut fields = PendingFields::from_value(json!({"inputs": {"x": 1}, "engine": null}));
        let keys = |fields: &PendingFields, written: &Changes| -> Vec<String> {
            fields
                .changed_since(written)
                .map(|(k, _)| k.to_string())
                .collect()
        };
        assert_eq!(keys(&fields, &Changes::default()), ["inputs", "engine"]);
        let written = fields.changes().clone();
        assert!(keys(&fields, &written).is_empty());
        fields.set("engine", &Value::Null).unwrap();
        assert!(
            keys(&fields, &written).is_empty(),
            "the same value is no change"
        );
        fields.set("engine", &json!({"calls": 1})).unwrap();
        assert_eq!(keys(&fields, &written), ["engine"]);
        assert_eq!(
            serde_json::to_value(&fields).unwrap()["engine"],
            json!({"calls": 1})
        );
    }
}
