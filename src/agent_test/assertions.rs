//! Checking one assertion against what a run left behind: its result, its events and its
//! workspace. A failed check is a message that says what was expected and what was there.

use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::spec::{
    Assertion, CountCheck, FileCheck, JudgeCheck, NameOr, StructuredCheck, ToolCallCheck,
    ToolSequence,
};
use crate::engine::events::{Event, EventData};
use crate::output::result::RunResult;
use crate::provider::shorten;

/// What a run left behind, read back.
pub struct Evidence<'a> {
    pub result: &'a RunResult,
    pub events: &'a [Event],
    pub workspace: &'a Path,
}

/// Grades an answer against a judge's rubric (see [`super::judge`]).
pub type Grade<'a> = dyn Fn(&JudgeCheck) -> Result<(), String> + 'a;

/// Longest excerpt of a run's text quoted in a message.
const QUOTE: usize = 200;

/// `Ok` when the run meets `assertion`, else what is wrong.
pub fn check(assertion: &Assertion, run: &Evidence<'_>, grade: &Grade<'_>) -> Result<(), String> {
    let result = run.result;
    let output = result.output.as_deref().unwrap_or_default();
    match assertion {
        Assertion::Status(expected) => expect(result.status == *expected, || {
            format!(
                "expected status {}, got {}{}",
                expected.name(),
                result.status.name(),
                error_of(result)
            )
        }),
        Assertion::ExitCode(code) => expect(result.exit_code == *code, || {
            format!(
                "expected exit code {code}, got {}{}",
                result.exit_code,
                error_of(result)
            )
        }),
        Assertion::Limit(limit) => expect(
            result.limit.map(|l| l.name()) == Some(limit.as_str()),
            || match &result.limit {
                Some(actual) => {
                    format!("expected the limit `{limit}` to end the run, got `{actual}`")
                }
                None => format!(
                    "expected the limit `{limit}` to end the run; it ended {}",
                    result.status.name()
                ),
            },
        ),
        Assertion::Output(text) => expect(output.trim() == text.trim(), || {
            format!("expected the output {}, got {}", quote(text), quote(output))
        }),
        Assertion::OutputContains(text) => expect(output.contains(text.as_str()), || {
            format!(
                "expected the output to contain {}, got {}",
                quote(text),
                quote(output)
            )
        }),
        Assertion::OutputMatches(pattern) => expect(matches(pattern, output), || {
            format!(
                "expected the output to match /{pattern}/, got {}",
                quote(output)
            )
        }),
        Assertion::Structured(check) => structured(check, result.structured.as_ref()),
        Assertion::StructuredSchema(schema) => {
            structured_schema(schema, result.structured.as_ref())
        }
        Assertion::ToolCalled(NameOr::Name(name)) => {
            let check = ToolCallCheck {
                name: name.clone(),
                args: Default::default(),
                times: None,
                min_times: None,
                max_times: None,
            };
            tool_called(&check, run.events)
        }
        Assertion::ToolCalled(NameOr::Full(check)) => tool_called(check, run.events),
        Assertion::ToolNotCalled(name) => {
            let count = tool_calls(run.events)
                .filter(|(called, _)| called == name)
                .count();
            expect(count == 0, || {
                format!("expected no call of `{name}`, got {count}")
            })
        }
        Assertion::ToolCalls(sequence) => tool_sequence(sequence, run.events),
        Assertion::SubAgentCalled(NameOr::Name(name)) => sub_agent_called(name, None, run.events),
        Assertion::SubAgentCalled(NameOr::Full(CountCheck { name, times })) => {
            sub_agent_called(name, Some(*times), run.events)
        }
        Assertion::FileExists(path) => expect(run.workspace.join(path).exists(), || {
            format!("expected the file {path} in the workspace; there is none")
        }),
        Assertion::FileAbsent(path) => expect(!run.workspace.join(path).exists(), || {
            format!("expected no file {path} in the workspace; there is one")
        }),
        Assertion::FileContains(check) => file_contains(check, run.workspace),
        Assertion::MaxSteps(max) => at_most(("step", "steps"), result.steps, *max),
        Assertion::MaxLlmCalls(max) => {
            at_most(("model call", "model calls"), result.llm_calls, *max)
        }
        Assertion::MaxToolCalls(max) => {
            at_most(("tool call", "tool calls"), result.tool_calls, *max)
        }
        Assertion::MaxTokens(max) => at_most(("token", "tokens"), result.usage.total_tokens, *max),
        Assertion::MaxCostUsd(max) => match result.usage.cost_usd {
            Some(cost) => expect(cost <= *max, || {
                format!("expected a cost of at most ${max}, got ${cost:.6}")
            }),
            None => Err("the run has no cost: its model has no `pricing`".into()),
        },
        Assertion::NoToolErrors(false) => Ok(()),
        Assertion::NoToolErrors(true) => no_tool_errors(run.events),
        Assertion::Judge(judge) => grade(judge),
    }
}

fn expect(holds: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if holds { Ok(()) } else { Err(message()) }
}

/// `: error[code]: message` when the run has an error, for messages about how it ended.
pub fn error_of(result: &RunResult) -> String {
    match &result.error {
        Some(error) => format!(": error[{}]: {}", error.code, error.message),
        None => String::new(),
    }
}

fn quote(text: &str) -> String {
    format!("{:?}", shorten(text, QUOTE))
}

/// Patterns were checked when the file was loaded.
fn matches(pattern: &str, text: &str) -> bool {
    Regex::new(pattern).is_ok_and(|re| re.is_match(text))
}

fn at_most((one, many): (&str, &str), actual: u64, max: u64) -> Result<(), String> {
    expect(actual <= max, || {
        let max = crate::output::summary::counted(max, one, many);
        format!("expected at most {max}, got {actual}")
    })
}

fn structured(check: &StructuredCheck, value: Option<&Value>) -> Result<(), String> {
    let Some(value) = value else {
        return Err("the run has no structured answer".into());
    };
    let at = if check.pointer.is_empty() {
        "the structured answer".to_string()
    } else {
        format!("`{}`", check.pointer)
    };
    let Some(found) = crate::spec::yaml::pointer_get(value, &check.pointer) else {
        return Err(format!(
            "the structured answer has nothing at `{}`: {}",
            check.pointer,
            shorten(&value.to_string(), QUOTE)
        ));
    };
    let text = found.as_str();
    if let Some(expected) = &check.equals {
        return expect(found == expected, || {
            format!("expected {at} to be {expected}, got {found}")
        });
    }
    if let Some(part) = &check.contains {
        return expect(text.is_some_and(|t| t.contains(part.as_str())), || {
            format!("expected {at} to contain {}, got {found}", quote(part))
        });
    }
    if let Some(pattern) = &check.matches {
        return expect(text.is_some_and(|t| matches(pattern, t)), || {
            format!("expected {at} to match /{pattern}/, got {found}")
        });
    }
    Ok(())
}

fn structured_schema(
    schema: &serde_json::Map<String, Value>,
    value: Option<&Value>,
) -> Result<(), String> {
    let Some(value) = value else {
        return Err("the run has no structured answer".into());
    };
    let validator = jsonschema::validator_for(&Value::Object(schema.clone()))
        .map_err(|e| format!("not a valid JSON Schema: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| format!("{e} (at {})", e.instance_path().as_str()))
        .collect();
    expect(problems.is_empty(), || {
        format!(
            "the structured answer does not match the schema: {}",
            problems.join("; ")
        )
    })
}

/// Every tool call the models of the run made (any depth), in order: name and arguments.
fn tool_calls(events: &[Event]) -> impl Iterator<Item = (&str, &Value)> {
    events.iter().filter_map(|event| match &event.data {
        EventData::ToolCallCreated(created) => Some((
            created.tool_call.name.as_str(),
            &*created.tool_call.arguments,
        )),
        _ => None,
    })
}

fn tool_called(check: &ToolCallCheck, events: &[Event]) -> Result<(), String> {
    let patterns: Vec<(&str, Regex)> = check
        .args
        .iter()
        .filter_map(|(name, pattern)| Regex::new(pattern).ok().map(|re| (name.as_str(), re)))
        .collect();
    let matching = tool_calls(events)
        .filter(|(name, _)| *name == check.name)
        .filter(|(_, arguments)| {
            patterns.iter().all(|(name, re)| {
                arguments
                    .get(name)
                    .is_some_and(|value| re.is_match(&argument_text(value)))
            })
        })
        .count() as u64;
    let (min, max) = match (check.times, check.min_times, check.max_times) {
        (Some(times), _, _) => (times, Some(times)),
        (None, min, max) => (min.unwrap_or(if max.is_some() { 0 } else { 1 }), max),
    };
    let what = if check.args.is_empty() {
        format!("`{}`", check.name)
    } else {
        let args: Vec<String> = check
            .args
            .iter()
            .map(|(k, v)| format!("{k}=/{v}/"))
            .collect();
        format!("`{}` with {}", check.name, args.join(", "))
    };
    let within = matching >= min && max.is_none_or(|max| matching <= max);
    expect(within, || {
        let wanted = match (min, max) {
            (min, Some(max)) if min == max => format!("{min}"),
            (min, Some(max)) => format!("{min} to {max}"),
            (min, None) => format!("at least {min}"),
        };
        let made: Vec<String> = tool_calls(events)
            .map(|(name, args)| format!("{name} {args}"))
            .collect();
        format!(
            "expected {wanted} call(s) of {what}, got {matching}; the calls made: {}",
            if made.is_empty() {
                "none".to_string()
            } else {
                shorten(&made.join(", "), 400)
            }
        )
    })
}

/// An argument as a pattern sees it: text as it is, anything else as JSON.
fn argument_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn tool_sequence(sequence: &ToolSequence, events: &[Event]) -> Result<(), String> {
    let made: Vec<&str> = tool_calls(events).map(|(name, _)| name).collect();
    let shown = || format!("[{}]", made.join(", "));
    if let Some(expected) = &sequence.exactly {
        return expect(made == *expected, || {
            format!(
                "expected exactly the calls [{}], got {}",
                expected.join(", "),
                shown()
            )
        });
    }
    if let Some(expected) = &sequence.in_order {
        let mut rest = made.iter();
        let in_order = expected.iter().all(|name| rest.any(|made| made == name));
        return expect(in_order, || {
            format!(
                "expected the calls [{}] in this order, got {}",
                expected.join(", "),
                shown()
            )
        });
    }
    if let Some(expected) = &sequence.set {
        let mut called: Vec<&str> = made.clone();
        called.sort_unstable();
        called.dedup();
        let mut wanted: Vec<&str> = expected.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        wanted.dedup();
        return expect(called == wanted, || {
            format!(
                "expected calls of exactly the tools [{}], got {}",
                wanted.join(", "),
                shown()
            )
        });
    }
    Ok(())
}

fn sub_agent_called(name: &str, times: Option<u64>, events: &[Event]) -> Result<(), String> {
    let count = events
        .iter()
        .filter(|event| matches!(&event.data, EventData::SubAgentStarted(started) if started.specialist_id == name))
        .count() as u64;
    match times {
        Some(times) => expect(count == times, || {
            format!("expected {times} call(s) of the sub-agent `{name}`, got {count}")
        }),
        None => expect(count > 0, || {
            format!("expected a call of the sub-agent `{name}`; there was none")
        }),
    }
}

fn file_contains(check: &FileCheck, workspace: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(workspace.join(&check.path))
        .map_err(|e| format!("cannot read {} in the workspace: {e}", check.path))?;
    if let Some(part) = &check.text {
        return expect(text.contains(part.as_str()), || {
            format!(
                "expected {} to contain {}, got {}",
                check.path,
                quote(part),
                quote(&text)
            )
        });
    }
    if let Some(pattern) = &check.matches {
        return expect(matches(pattern, &text), || {
            format!(
                "expected {} to match /{pattern}/, got {}",
                check.path,
                quote(&text)
            )
        });
    }
    Ok(())
}

fn no_tool_errors(events: &[Event]) -> Result<(), String> {
    let failed: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.data {
            EventData::ToolCompleted(done) if !done.result.success => Some(format!(
                "{}: {}",
                done.tool_name,
                done.result.error.as_deref().unwrap_or("failed")
            )),
            _ => None,
        })
        .collect();
    expect(failed.is_empty(), || {
        format!(
            "expected no tool errors, got {}: {}",
            failed.len(),
            shorten(&failed.join("; "), 400)
        )
    })
}
