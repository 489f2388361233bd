//! A request body serialised straight from borrowed data. Each wire lists its own fields
//! (typed, borrowing the [`ModelRequest`](super::types::ModelRequest)); the configured and
//! per-request `params` are then merged over them. Building a `serde_json::Value` instead
//! would copy the whole history on every call, only to serialise and drop it.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::request_body::BodyWriter;
use super::types::ToolCall;

/// `true`, for fields whose value a param may replace and whose value is checked.
pub(crate) static TRUE: Value = Value::Bool(true);

/// A body field: the wire's own typed value, or a JSON value (from `params`).
pub(crate) enum Field<'a, F> {
    Wire(F),
    Json(&'a Value),
}

/// Ordered fields, merged the way a `serde_json::Map` (with `preserve_order`) would merge
/// them, so the bytes match what a `Value` body produced: a replaced key keeps its place,
/// a new one goes last, and a removal moves the last key into the removed one's place.
pub(crate) struct Body<'a, F> {
    fields: Vec<(&'a str, Field<'a, F>)>,
}

impl<'a, F> Body<'a, F> {
    pub fn new() -> Self {
        Body {
            fields: Vec::with_capacity(8),
        }
    }

    pub fn push(&mut self, key: &'a str, field: Field<'a, F>) {
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = field,
            None => self.fields.push((key, field)),
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Some(i) = self.fields.iter().position(|(k, _)| *k == key) {
            self.fields.swap_remove(i);
        }
    }

    /// Merges `params` over the fields: `null` removes a key, any other value sets it.
    fn merge(&mut self, params: impl IntoIterator<Item = (&'a String, &'a Value)>) {
        for (k, v) in params {
            if v.is_null() {
                self.remove(k);
            } else {
                self.push(k, Field::Json(v));
            }
        }
    }

    /// Whether `key` holds the JSON value `true` (wire fields that may be `true` are
    /// pushed as [`TRUE`]).
    pub fn is_true(&self, key: &str) -> bool {
        self.fields
            .iter()
            .any(|(k, f)| *k == key && matches!(f, Field::Json(Value::Bool(true))))
    }

    /// Merges the configured, then the per-request params.
    pub fn merge_params(
        &mut self,
        configured: &'a Map<String, Value>,
        request: &'a Map<String, Value>,
    ) {
        self.merge(configured.iter().chain(request));
    }
}

/// A wire's own body field. Written as serde writes it, except the history
/// ([`CachedItems`](super::item_cache::CachedItems)), whose cached JSON is copied as it is.
pub(crate) trait WireField: Serialize {
    fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()>;
}

impl<F: WireField> Body<'_, F> {
    /// Writes the body's JSON to `out`: the bytes compact serialisation gives, with the
    /// history's cached items put in as a shared piece rather than walked item by item.
    pub fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()> {
        out.push(b'{');
        for (i, (key, field)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, key)?;
            out.push(b':');
            match field {
                Field::Wire(value) => value.write_json(out)?,
                Field::Json(value) => serde_json::to_writer(&mut *out, value)?,
            }
        }
        out.push(b'}');
        Ok(())
    }
}

impl<F: Serialize> Serialize for Body<'_, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, field) in &self.fields {
            match field {
                Field::Wire(value) => map.serialize_entry(key, value)?,
                Field::Json(value) => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// A tool call's arguments as a JSON string (Chat Completions and Responses both send
/// them so), written without an intermediate `String`. Arguments
/// that never parsed go back as `{}`: strict servers (llama.cpp) parse them to render their
/// chat template and refuse the whole request otherwise. The model sees what it wrote, and
/// why it failed, in the call's tool error.
pub(crate) struct Arguments<'a>(pub &'a ToolCall);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0.invalid_arguments {
            Some(_) => serializer.serialize_str("{}"),
            None => serializer.collect_str(&self.0.arguments),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    impl WireField for u8 {
        fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()> {
            serde_json::to_writer(out, self)
        }
    }

    fn body<'a>(params: &'a Map<String, Value>) -> String {
        let mut b: Body<'a, u8> = Body::new();
        b.push("a", Field::Wire(1));
        b.push("b", Field::Wire(2));
        b.push("c", Field::Json(&TRUE));
        b.merge(params.iter());
        let mut written = BodyWriter::default();
        b.write_json(&mut written).unwrap();
        let serialised = serde_json::to_string(&b).unwrap();
        assert_eq!(written.finish().joined(), serialised.as_bytes());
        serialised
    }

    #[test]
    fn merges_like_a_json_map() {
        let params = json!({"b": "x", "d": 4, "a": null, "e": 5});
        let Value::Object(params) = params else {
            unreachable!()
        };
        let mut expected = json!({"a": 1, "b": 2, "c": true});
        for (k, v) in &params {
            let map = expected.as_object_mut().unwrap();
            if v.is_null() {
                map.remove(k);
            } else {
                map.insert(k.clone(), v.clone());
            }
        }
        assert_eq!(body(&params), expected.to_string());
        assert_eq!(body(&params), r#"{"d":4,"b":"x","c":true,"e":5}"#);
    }

    #[test]
    fn arguments_are_the_same_text_as_arguments_text() {
        let call = ToolCall::from_raw("c".into(), "f".into(), r#"{"a": [1, "x\"y"], "b": 1.5}"#);
        let text = serde_json::to_string(&Arguments(&call)).unwrap();
        assert_eq!(text, json!(call.arguments_text()).to_string());
    }

    #[test]
    fn arguments_that_never_parsed_go_back_as_an_empty_object() {
        let bad = ToolCall::from_raw("c".into(), "f".into(), r#"{"path": "notes/proj"#);
        let text = serde_json::to_string(&Arguments(&bad)).unwrap();
        assert_eq!(text, json!("{}").to_string());
    }
}
