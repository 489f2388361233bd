//! A checkpoint's `pending` as its writer keeps it: a mapping whose keys each carry the
//! number of the change that last set them. A journal record holds the keys that changed
//! since the record before, and with these numbers finding them costs nothing: comparing
//! the values walked the whole agent definition (a key of `pending`) at every save.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// The mapping, and when each key last changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PendingFields {
    fields: Map<String, Value>,
    changes: Changes,
}

/// Changes are numbered across the process, so two mappings never share a number: a
/// writer handed another mapping sees each of its keys as changed.
static CHANGES: AtomicU64 = AtomicU64::new(1);

/// When each key last changed, as a writer saw it: what a reader of its records has.
pub(crate) type Changes = HashMap<String, u64>;

impl PendingFields {
    /// The keys of `value` (a mapping; anything else holds none), each a change.
    pub fn from_value(value: Value) -> Self {
        let mut fields = PendingFields::default();
        if let Value::Object(map) = value {
            for (key, value) in map {
                fields.set(&key, value);
            }
        }
        fields
    }

    /// Sets `key`, a change when the value is another. (The values set at every save are
    /// small; the large ones are set once.)
    pub fn set(&mut self, key: &str, value: Value) {
        if self.fields.get(key) == Some(&value) {
            return;
        }
        let change = CHANGES.fetch_add(1, Ordering::Relaxed);
        self.changes.insert(key.to_string(), change);
        self.fields.insert(key.to_string(), value);
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// The keys that changed since a writer wrote `written`, with their values.
    pub(crate) fn changed_since<'a>(
        &'a self,
        written: &'a Changes,
    ) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
        self.fields
            .iter()
            .filter(|(key, _)| written.get(*key) != self.changes.get(*key))
    }

    /// When each key last changed: what a writer that wrote them all has.
    pub(crate) fn changes(&self) -> &Changes {
        &self.changes
    }
}

impl Serialize for PendingFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_key_is_changed_until_written_and_again_when_set_to_another_value() {
        let mut fields = PendingFields::from_value(json!({"inputs": {"x": 1}, "engine": null}));
        let keys = |fields: &PendingFields, written: &Changes| -> Vec<String> {
            fields
                .changed_since(written)
                .map(|(k, _)| k.clone())
                .collect()
        };
        assert_eq!(keys(&fields, &Changes::new()), ["inputs", "engine"]);
        let written = fields.changes().clone();
        assert!(keys(&fields, &written).is_empty());
        fields.set("engine", Value::Null);
        assert!(
            keys(&fields, &written).is_empty(),
            "the same value is no change"
        );
        fields.set("engine", json!({"calls": 1}));
        assert_eq!(keys(&fields, &written), ["engine"]);
        assert_eq!(
            serde_json::to_value(&fields).unwrap()["engine"],
            json!({"calls": 1})
        );
    }
}
