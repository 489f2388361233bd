//! The order of one reply's tool calls (UAP §8.5–8.6): which calls each call waits for.
//!
//! Three rules give the waits. A tool's `depends_on` makes its calls wait for every call of
//! the named tools; a `sequential` tool runs alone; and, when the agent lets the model
//! order its calls (`execution.model_order`), a call's `after` argument names calls of the
//! same reply it waits for. The model's `after` is checked here: a list that names no call
//! of the reply, or that closes a cycle, is answered with a tool error instead of running,
//! so a wrong order never hangs the turn.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::provider::{ToolCall, ToolSpec};

/// The argument a call orders itself with when the model may order its calls.
pub const AFTER: &str = "after";

/// What the rules say about a reply's calls.
pub struct CallOrder {
    /// For each call, the indices of the calls it waits for.
    pub waits: Vec<Vec<usize>>,
    /// For each call, why it is not run (its `after` is wrong), if it is not.
    pub refused: Vec<Option<String>>,
    /// The calls as their tools get them: without the runner's `after` argument.
    pub calls: Vec<ToolCall>,
}

/// The rules of one agent.
pub struct OrderRules<'a> {
    /// Tool name → the tool names whose calls it waits for.
    pub depends_on: &'a HashMap<String, Vec<String>>,
    /// Whether a tool runs alone (`None`: no such tool).
    pub runs_alone: &'a dyn Fn(&str) -> bool,
    /// The tools whose calls carry the runner's `after` (empty: the model does not order).
    pub after_tools: &'a HashSet<String>,
}

/// The spec a tool is offered with: with an `after` parameter when the model orders calls,
/// unless the tool has an `after` parameter of its own (then the argument is the tool's).
pub fn offer_after(mut spec: ToolSpec) -> ToolSpec {
    if has_own_after(&spec.parameters) {
        return spec;
    }
    let Some(parameters) = spec.parameters.as_object_mut() else {
        return spec;
    };
    let properties = parameters.entry("properties").or_insert_with(|| json!({}));
    if let Some(properties) = properties.as_object_mut() {
        properties.insert(
            AFTER.into(),
            json!({
                "type": "array",
                "items": {"type": ["string", "integer"]},
                "description": "Optional. Calls of this same reply that must finish before \
                    this one starts: their call ids, or their positions in the reply (1 is the \
                    first call). Calls without it run at the same time."
            }),
        );
    }
    spec
}

/// Whether a tool's parameter schema declares an `after` of its own.
pub fn has_own_after(parameters: &Value) -> bool {
    parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| properties.contains_key(AFTER))
}

/// The waits of `calls` under `rules`.
pub fn order_calls(calls: &[ToolCall], rules: &OrderRules<'_>) -> CallOrder {
    let mut refused: Vec<Option<String>> = vec![None; calls.len()];
    let mut stripped = calls.to_vec();
    let mut waits = model_waits(calls, &mut stripped, rules.after_tools, &mut refused);
    add_dependencies(calls, rules.depends_on, &mut waits);
    refuse_cycles(calls, &mut waits, &mut refused);
    keep_sequential_order(calls, rules.runs_alone, &refused, &mut waits);
    CallOrder {
        waits,
        refused,
        calls: stripped,
    }
}

/// The waits the model asked for with `after`; each call's `after` is taken out of the
/// arguments its tool gets. A malformed list, or one naming no call of the reply, refuses
/// its call.
fn model_waits(
    calls: &[ToolCall],
    stripped: &mut [ToolCall],
    after_tools: &HashSet<String>,
    refused: &mut [Option<String>],
) -> Vec<Vec<usize>> {
    let mut waits: Vec<Vec<usize>> = vec![Vec::new(); calls.len()];
    if after_tools.is_empty() {
        return waits;
    }
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (index, call) in calls.iter().enumerate() {
        by_id.entry(call.id.as_str()).or_insert(index);
    }
    for (index, call) in stripped.iter_mut().enumerate() {
        if !after_tools.contains(&call.name) {
            continue;
        }
        let Some(after) = Arc::make_mut(&mut call.arguments)
            .as_object_mut()
            .and_then(|a| a.remove(AFTER))
        else {
            continue;
        };
        match resolve_after(&after, &by_id, calls.len()) {
            Ok(others) => waits[index] = others,
            Err(why) => refused[index] = Some(why),
        }
    }
    waits
}

/// The indices `after` names: call ids, or positions counted from 1.
fn resolve_after(
    after: &Value,
    by_id: &HashMap<&str, usize>,
    count: usize,
) -> Result<Vec<usize>, String> {
    let items = match after {
        Value::Array(items) => items.as_slice(),
        Value::Null => return Ok(Vec::new()),
        single => std::slice::from_ref(single),
    };
    let mut others = Vec::with_capacity(items.len());
    for item in items {
        let index = match item {
            Value::String(id) => by_id.get(id.as_str()).copied().ok_or_else(|| {
                format!(
                    "not run: `after` names `{id}`, which is no call of this reply; \
                     name the ids (or positions from 1) of calls made in the same reply"
                )
            })?,
            Value::Number(n) => match n.as_u64() {
                Some(position) if position >= 1 && (position as usize) <= count => {
                    position as usize - 1
                }
                _ => {
                    return Err(format!(
                        "not run: `after` names position {n}, but this reply made {count} \
                         calls; positions count from 1"
                    ));
                }
            },
            other => {
                return Err(format!(
                    "not run: `after` must list call ids or positions, not {other}"
                ));
            }
        };
        others.push(index);
    }
    Ok(others)
}

/// Every call of a tool waits for every call of the tools it `depends_on`. Two tools that
/// depend on each other keep the reply's order between their calls.
fn add_dependencies(
    calls: &[ToolCall],
    dependencies: &HashMap<String, Vec<String>>,
    waits: &mut [Vec<usize>],
) {
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, call) in calls.iter().enumerate() {
        by_name.entry(call.name.as_str()).or_default().push(index);
    }
    for (i, call) in calls.iter().enumerate() {
        for wanted in dependencies.get(&call.name).into_iter().flatten() {
            let reverse = dependencies
                .get(wanted)
                .is_some_and(|d| d.contains(&call.name));
            let others = by_name.get(wanted.as_str()).into_iter().flatten();
            for &j in others.filter(|&&j| j != i && (!reverse || j < i)) {
                if !waits[i].contains(&j) {
                    waits[i].push(j);
                }
            }
        }
    }
}

/// Calls that wait for themselves through others are refused (they would never start);
/// the rest keep their waits. A refused call waits for nothing, so what waited for it goes
/// on once it is answered.
fn refuse_cycles(calls: &[ToolCall], waits: &mut [Vec<usize>], refused: &mut [Option<String>]) {
    let cyclic: Vec<usize> = (0..calls.len())
        .filter(|&start| reaches(waits, start, start))
        .collect();
    if cyclic.is_empty() {
        return;
    }
    let ids: Vec<String> = cyclic
        .iter()
        .map(|&i| format!("`{}` ({})", calls[i].id, calls[i].name))
        .collect();
    let message = format!(
        "not run: the order of this reply's calls has a cycle: {} wait for each other \
         (through `after` or the tools' `depends_on`); call them again in an order without one",
        ids.join(", ")
    );
    for &index in &cyclic {
        refused[index].get_or_insert_with(|| message.clone());
    }
    for (index, waits) in waits.iter_mut().enumerate() {
        if refused[index].is_some() {
            waits.clear();
        }
    }
}

/// Whether `target` is reached from `start` by following waits (at least one step).
fn reaches(waits: &[Vec<usize>], start: usize, target: usize) -> bool {
    let mut seen = vec![false; waits.len()];
    let mut stack: Vec<usize> = waits[start].clone();
    while let Some(next) = stack.pop() {
        if next == target {
            return true;
        }
        if !std::mem::replace(&mut seen[next], true) {
            stack.extend(&waits[next]);
        }
    }
    false
}

/// Sequential tools keep the calls' order relative to everything else: a sequential call
/// waits for every call since the previous sequential one (and for that one), and any
/// other call waits for the last sequential call before it. "Before" is the order the
/// other waits allow, the reply's order where they leave a choice, so these waits can
/// never close a cycle. Edges stay linear in the number of calls.
fn keep_sequential_order(
    calls: &[ToolCall],
    runs_alone: &dyn Fn(&str) -> bool,
    refused: &[Option<String>],
    waits: &mut [Vec<usize>],
) {
    let order: Vec<usize> = topological(waits)
        .into_iter()
        .filter(|&i| refused[i].is_none())
        .collect();
    let mut last_sequential: Option<usize> = None;
    for (position, &i) in order.iter().enumerate() {
        let alone = runs_alone(&calls[i].name);
        let earlier: Vec<usize> = match alone {
            true => order[last_sequential.unwrap_or(0)..position].to_vec(),
            false => last_sequential.map(|p| order[p]).into_iter().collect(),
        };
        for j in earlier {
            if !waits[i].contains(&j) {
                waits[i].push(j);
            }
        }
        if alone {
            last_sequential = Some(position);
        }
    }
}

/// The calls in an order where each comes after those it waits for, the reply's order
/// where there is a choice. The waits must have no cycle.
fn topological(waits: &[Vec<usize>]) -> Vec<usize> {
    let mut blocking: Vec<usize> = waits.iter().map(Vec::len).collect();
    let mut waiting_for: Vec<Vec<usize>> = vec![Vec::new(); waits.len()];
    for (i, others) in waits.iter().enumerate() {
        for &j in others {
            waiting_for[j].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..waits.len())
        .filter(|&i| blocking[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(waits.len());
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &k in &waiting_for[i] {
            blocking[k] -= 1;
            if blocking[k] == 0 {
                ready.push(Reverse(k));
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            invalid_arguments: None,
        }
    }

    #[test]
    fn after_is_taken_out_and_a_cycle_refuses_only_its_calls() {
        let calls = vec![
            call("a", "read_file", json!({"path": "x", "after": ["b"]})),
            call("b", "read_file", json!({"path": "y", "after": [1]})),
            call("c", "write_file", json!({"path": "z", "after": ["a"]})),
        ];
        let after_tools: HashSet<String> = ["read_file", "write_file"].map(String::from).into();
        let rules = OrderRules {
            depends_on: &HashMap::new(),
            runs_alone: &|_| false,
            after_tools: &after_tools,
        };
        let order = order_calls(&calls, &rules);
        assert!(order.refused[0].is_some() && order.refused[1].is_some());
        assert!(order.refused[2].is_none());
        assert_eq!(order.waits[2], vec![0]);
        assert_eq!(*order.calls[0].arguments, json!({"path": "x"}));
    }
}
