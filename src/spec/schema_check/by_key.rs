//! A schema whose root is a mapping of named keys (an agent file, a test file, a project
//! file), compiled one key at a time, as a document first uses the key. Compiling the
//! whole agent schema was half of a one-step run's own instructions (callgrind), and a file
//! uses a handful of its two dozen keys.
//!
//! Each part is the whole schema with the other keys left out, so a violation is found at
//! the same schema path as by the whole schema (`/properties/tools/items/...`) and is
//! described the same way. The root's own rules (the required keys, no unknown key, a
//! mapping) are a part of their own, with every key's schema `true`.
//!
//! A schema that refers to its own root (`"$ref": "#"`: an inline sub-agent is an agent)
//! would drag the whole schema into the part. In a part, such a reference only asks for a
//! mapping, and the part names where in a document those mappings are, for the caller to
//! check each as a document of its own (by key again).

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value, json};

use super::sections::{DEFINITIONS, Sections};

/// The parts of a schema, compiled when first needed.
pub(super) struct ByKey {
    sections: Sections,
    root: Validator,
    keys: HashMap<String, OnceLock<Part>>,
}

/// One key's part.
struct Part {
    validator: Validator,
    /// Where the root's schema applies again under the key.
    roots: Vec<Vec<Step>>,
}

/// A step from a node of a document to one inside it.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    AnyItem,
    AnyKey,
}

/// What a document breaks, and where it holds documents of the same schema.
pub(super) struct Found<'v> {
    pub errors: Vec<ValidationError<'v>>,
    /// JSON pointers into the document.
    pub nested: Vec<String>,
}

/// Compiles a schema.
pub(super) type Compile = fn(&Value) -> Result<Validator, String>;

impl ByKey {
    /// `None` when the schema's root is not a mapping of named keys (`sections` is `None`),
    /// or its own rules do not compile alone: it is then compiled whole (which says what is
    /// wrong).
    pub fn new(sections: Option<Sections>, compile: Compile) -> Option<Self> {
        let sections = sections?;
        let keys = sections
            .properties
            .keys()
            .map(|key| (key.clone(), OnceLock::new()))
            .collect();
        let root = compile(&root_part(&sections)).ok()?;
        Some(ByKey {
            sections,
            root,
            keys,
        })
    }

    /// Every violation in `value`: the root's, then each key's it has.
    pub fn check<'v>(&'v self, value: &'v Value, compile: Compile) -> Found<'v> {
        let mut found = Found {
            errors: self.root.iter_errors(value).collect(),
            nested: Vec::new(),
        };
        let present = value.as_object().into_iter().flatten();
        for (key, held) in present {
            let Some(part) = self.keys.get(key) else {
                continue;
            };
            // Cut from a schema whose root compiled: failing is a bug in runner, which the
            // test that compiles every key catches.
            let part =
                part.get_or_init(|| Part::new(&self.sections, key, compile).expect("compiles"));
            found.errors.extend(part.validator.iter_errors(value));
            for steps in &part.roots {
                let at = format!("/{}", escaped(key));
                nested_at(held, &steps[1..], at, &mut found.nested);
            }
        }
        found
    }

    /// Compiles every key's part: what a test does, so none fails at its first use.
    #[cfg(test)]
    pub fn compile_every_key(&self, compile: Compile) {
        for (key, part) in &self.keys {
            let compiled = Part::new(&self.sections, key, compile)
                .unwrap_or_else(|error| panic!("the schema of `{key}`: {error}"));
            let _ = part.set(compiled);
        }
    }
}

impl Part {
    fn new(sections: &Sections, key: &str, compile: Compile) -> Result<Self, String> {
        let part = key_part(sections, key);
        let mut roots = Vec::new();
        let definitions = part.get(DEFINITIONS).and_then(Value::as_object);
        let mut start = vec![Step::Key(key.to_string())];
        roots_under(
            &part["properties"][key],
            definitions,
            &mut start,
            &mut Vec::new(),
            &mut roots,
        );
        let mut part = part;
        replace_root_references(&mut part);
        Ok(Part {
            validator: compile(&part)?,
            roots,
        })
    }
}

/// The root's rules alone: each key's schema `true`.
fn root_part(sections: &Sections) -> Value {
    let mut part = sections.root.clone();
    let anything = sections
        .properties
        .keys()
        .map(|key| (key.clone(), Value::Bool(true)));
    part.insert("properties".into(), Value::Object(anything.collect()));
    Value::Object(part)
}

/// `key`'s schema alone, with the definitions it refers to, and none of the root's own
/// rules (the root part reports those). Leaving the other definitions out matters: each
/// compile walks all it is given (the meta-schema check, the registry of references).
fn key_part(sections: &Sections, key: &str) -> Value {
    let left_out = ["required", "additionalProperties"];
    let mut part: Map<String, Value> = sections
        .root
        .iter()
        .filter(|(keyword, _)| !left_out.contains(&keyword.as_str()))
        .map(|(keyword, value)| (keyword.clone(), value.clone()))
        .collect();
    let own = sections.properties.get(key).unwrap_or(&Value::Null);
    let mut used = Map::new();
    referred(own, sections, &mut used);
    part.insert(DEFINITIONS.into(), Value::Object(used));
    let properties = Map::from_iter([(key.to_string(), own.clone())]);
    part.insert("properties".into(), Value::Object(properties));
    Value::Object(part)
}

/// The name `$ref` gives a definition.
fn definition_name(node: &Map<String, Value>) -> Option<&str> {
    let target = node.get("$ref").and_then(Value::as_str)?;
    target.strip_prefix("#/definitions/")
}

/// Whether `node` is the schema of the root again.
fn is_root_reference(node: &Map<String, Value>) -> bool {
    node.get("$ref").and_then(Value::as_str) == Some("#")
}

/// Adds to `used` the definitions `node` refers to, and theirs.
fn referred(node: &Value, sections: &Sections, used: &mut Map<String, Value>) {
    match node {
        Value::Object(object) => {
            let name = definition_name(object).filter(|name| !used.contains_key(*name));
            if let Some((name, definition)) =
                name.and_then(|name| Some((name, sections.definition(name)?)))
            {
                used.insert(name.to_string(), definition.clone());
                referred(definition, sections, used);
            }
            object
                .values()
                .for_each(|value| referred(value, sections, used));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|value| referred(value, sections, used)),
        _ => {}
    }
}

/// Adds to `found` the ways from `node`'s place (`at`) to where the root applies again.
/// `inside` names the definitions being walked, so a definition that refers to itself
/// ends the walk. `at` is one path, grown and cut back as the walk goes down and up, and
/// copied only where the root is found: the walk passes through each shared definition
/// once per way to it, and copying the path at every node was most of its cost.
fn roots_under<'s>(
    node: &'s Value,
    definitions: Option<&'s Map<String, Value>>,
    at: &mut Vec<Step>,
    inside: &mut Vec<&'s str>,
    found: &mut Vec<Vec<Step>>,
) {
    let Some(object) = node.as_object() else {
        return;
    };
    if is_root_reference(object) {
        found.push(at.clone());
        return;
    }
    let mut walk = |node: &'s Value, at: &mut Vec<Step>, inside: &mut Vec<&'s str>| {
        roots_under(node, definitions, at, inside, found)
    };
    if let Some(name) = definition_name(object)
        && !inside.contains(&name)
        && let Some(definition) = definitions.and_then(|d| d.get(name))
    {
        inside.push(name);
        walk(definition, at, inside);
        inside.pop();
    }
    for branches in ["anyOf", "oneOf", "allOf"] {
        for branch in object
            .get(branches)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(branch, at, inside);
        }
    }
    let properties = object.get("properties").and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        at.push(Step::Key(name.clone()));
        walk(property, at, inside);
        at.pop();
    }
    if let Some(items) = object.get("items").filter(|items| items.is_object()) {
        at.push(Step::AnyItem);
        walk(items, at, inside);
        at.pop();
    }
    if let Some(values) = object.get("additionalProperties").filter(|v| v.is_object()) {
        at.push(Step::AnyKey);
        walk(values, at, inside);
        at.pop();
    }
}

/// In a part, the root's schema only asks for a mapping: what the mapping holds is checked
/// as a document of its own.
fn replace_root_references(node: &mut Value) {
    match node {
        Value::Object(object) if is_root_reference(object) => {
            *node = json!({"type": "object"});
        }
        Value::Object(object) => object.values_mut().for_each(replace_root_references),
        Value::Array(items) => items.iter_mut().for_each(replace_root_references),
        _ => {}
    }
}

/// Adds to `found` the pointers of the mappings `steps` lead to from `node` (at `at`).
fn nested_at(node: &Value, steps: &[Step], at: String, found: &mut Vec<String>) {
    let Some((step, rest)) = steps.split_first() else {
        if node.is_object() && !found.contains(&at) {
            found.push(at);
        }
        return;
    };
    match (step, node) {
        (Step::Key(key), Value::Object(object)) => {
            if let Some(inner) = object.get(key) {
                nested_at(inner, rest, format!("{at}/{}", escaped(key)), found);
            }
        }
        (Step::AnyKey, Value::Object(object)) => {
            for (key, inner) in object {
                nested_at(inner, rest, format!("{at}/{}", escaped(key)), found);
            }
        }
        (Step::AnyItem, Value::Array(items)) => {
            for (index, inner) in items.iter().enumerate() {
                nested_at(inner, rest, format!("{at}/{index}"), found);
            }
        }
        _ => {}
    }
}

/// A key as a JSON pointer spells it.
fn escaped(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_names_where_the_root_applies_again() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {"$ref": "#/definitions/Tool"}},
                "name": {"type": "string"}
            },
            "definitions": {
                "Tool": {"anyOf": [
                    {"type": "string"},
                    {"type": "object", "properties": {"agent": {"allOf": [{"$ref": "#"}]}}}
                ]}
            }
        });
        let sections = Sections::parse(&schema.to_string()).unwrap();
        let part = Part::new(&sections, "tools", |schema| {
            jsonschema::options()
                .build(schema)
                .map_err(|e| e.to_string())
        })
        .unwrap();
        let steps = vec![
            Step::Key("tools".into()),
            Step::AnyItem,
            Step::Key("agent".into()),
        ];
        assert_eq!(part.roots, vec![steps]);
        let document = json!({"tools": ["a", {"agent": {"name": 1}}, {"agent": "file.yaml"}]});
        let mut found = Vec::new();
        nested_at(
            &document["tools"],
            &part.roots[0][1..],
            "/tools".into(),
            &mut found,
        );
        assert_eq!(found, vec!["/tools/1/agent".to_string()]);
    }
}
