//! Replay: answers model calls from a recorded cassette, with no network and no key.
//! Requests are normalised like recorded ones (see [`super::cassette`]) and matched
//! exactly; a miss explains itself with the closest recorded request.
//!
//! A cassette is read whole before the run starts ([`cassette_lines`]: bounded, and only
//! from a regular file).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

use super::cassette::{
    CASSETTE_VERSION, Exchange, cassette_lines, io_error, is_a2a_line, is_mcp_line,
    normalize_request,
};
use super::error::{ErrorKind, ProviderError, shorten};
use super::scripted::{ScriptedResponse, ScriptedToolCall, ScriptedUsage, render};
use super::types::{ModelRequest, ModelResponse};
use super::{BoxFuture, DeltaSink, Provider};
use crate::sync::lock;

/// The exchanges of a cassette, shared by every [`Replay`] provider of a run. Each
/// recorded answer is served once, so repeated identical requests get their answers
/// in recorded order.
#[derive(Debug)]
pub struct ReplayStore {
    path: PathBuf,
    exchanges: Vec<Exchange>,
    /// The file line of each exchange, for messages.
    lines: Vec<usize>,
    used: Mutex<Vec<bool>>,
}

impl ReplayStore {
    /// Reads the model exchanges of the cassette at `path`, every one of
    /// [`CASSETTE_VERSION`].
    pub fn load(path: impl AsRef<Path>) -> Result<Arc<Self>, ProviderError> {
        let path = path.as_ref().to_path_buf();
        let mut exchanges = Vec::new();
        let mut lines = Vec::new();
        for (n, line) in cassette_lines(&path)? {
            // MCP exchanges are `crate::mcp`'s to read.
            if is_mcp_line(&line) || is_a2a_line(&line) {
                continue;
            }
            let mut ex = parse_line(&line)
                .map_err(|e| io_error(&path, &format!("replay line {n} of"), e))?;
            ex.request = normalize_request(&ex.request);
            exchanges.push(ex);
            lines.push(n);
        }
        let used = Mutex::new(vec![false; exchanges.len()]);
        Ok(Arc::new(ReplayStore {
            path,
            exchanges,
            lines,
            used,
        }))
    }

    /// Takes the first unused exchange matching `model` and the normalised request.
    fn take(&self, model: &str, req: &ModelRequest) -> Result<&Exchange, String> {
        let mut used = lock(&self.used);
        let hit = self
            .exchanges
            .iter()
            .enumerate()
            .position(|(i, ex)| !used[i] && ex.model == model && ex.request == *req);
        if let Some(i) = hit {
            used[i] = true;
            return Ok(&self.exchanges[i]);
        }
        Err(self.explain_miss(model, req, &used))
    }

    fn explain_miss(&self, model: &str, req: &ModelRequest, used: &[bool]) -> String {
        let spent = used.iter().filter(|u| **u).count();
        let mut msg = format!(
            "no recorded answer for this request to model {model} in {} ({} exchanges, {} used)",
            self.path.display(),
            self.exchanges.len(),
            spent
        );
        let now = to_value(&Exchange::key(model, req));
        let closest = self
            .exchanges
            .iter()
            .enumerate()
            .map(|(i, ex)| {
                let mut diffs = Vec::new();
                json_diff(
                    "",
                    &to_value(&Exchange::key(&ex.model, &ex.request)),
                    &now,
                    &mut diffs,
                );
                (diffs.len(), used[i], i, diffs)
            })
            .min_by_key(|(n, was_used, i, _)| (*n, *was_used, *i));
        match closest {
            Some((0, _, i, _)) => msg.push_str(&format!(
                "; it matches exchange {} (line {}), whose answer was already used: the run made this request more often than the recording",
                i + 1,
                self.lines[i]
            )),
            Some((_, _, i, diffs)) => {
                msg.push_str(&format!("; closest recorded request is exchange {} (line {}):", i + 1, self.lines[i]));
                for d in diffs.iter().take(5) {
                    msg.push_str("\n  ");
                    msg.push_str(d);
                }
                if diffs.len() > 5 {
                    msg.push_str(&format!("\n  ... and {} more differences", diffs.len() - 5));
                }
            }
            None => {}
        }
        msg
    }
}

/// One line of a cassette, refused unless its `version` is the one this runner writes;
/// a line of another version says so even when it does not parse as an exchange.
fn parse_line(line: &str) -> Result<Exchange, String> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        version: serde_json::Value,
    }
    let wrong_version = |version: &Value| {
        format!(
            "cassette version {version} is not supported (this runner reads version {CASSETTE_VERSION})"
        )
    };
    match serde_json::from_str::<Exchange>(line) {
        Ok(ex) if ex.version == CASSETTE_VERSION => Ok(ex),
        Ok(ex) => Err(wrong_version(&Value::from(ex.version))),
        Err(e) => match serde_json::from_str::<Versioned>(line) {
            Ok(v) if v.version != CASSETTE_VERSION => Err(wrong_version(&v.version)),
            _ => Err(format!("not an exchange: {e}")),
        },
    }
}

impl Exchange {
    fn key(model: &str, req: &ModelRequest) -> Value {
        serde_json::json!({"model": model, "request": req})
    }
}

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Collects "path: recorded X, now Y" lines for the leaves where `a` and `b` differ
/// (at most 50).
fn json_diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    if out.len() >= 50 || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                json_diff(
                    &format!("{path}.{k}"),
                    va,
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                json_diff(&format!("{path}.{k}"), &Value::Null, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!(
                    "{}: recorded {} items, now {}",
                    path.trim_start_matches('.'),
                    x.len(),
                    y.len()
                ));
            }
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                json_diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ => out.push(format!(
            "{}: recorded {}, now {}",
            path.trim_start_matches('.'),
            shorten(&a.to_string(), 80),
            shorten(&b.to_string(), 80)
        )),
    }
}

/// Answers from a cassette: no network, no key, deterministic.
pub struct Replay {
    store: Arc<ReplayStore>,
    provider: String,
    model: String,
    /// What the recorded provider said (the requests must be made the same way).
    schema_with_tools: bool,
}

impl Replay {
    pub fn new(
        store: Arc<ReplayStore>,
        provider: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Replay {
            store,
            provider: provider.into(),
            model: model.into(),
            schema_with_tools: true,
        }
    }

    /// Makes the requests as the provider that was recorded does (see
    /// [`Provider::schema_with_tools`]).
    pub fn with_schema_with_tools(mut self, yes: bool) -> Self {
        self.schema_with_tools = yes;
        self
    }

    fn answer(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let req = normalize_request(req);
        let ex = self.store.take(&self.model, &req).map_err(|msg| {
            ProviderError::new(ErrorKind::ReplayMiss, self.provider.clone(), msg)
                .with_hint("record the run again with --record, or check the agent file and inputs")
        })?;
        if let Some(e) = &ex.error {
            let kind = ErrorKind::parse(&e.kind).unwrap_or(ErrorKind::Server);
            let mut err = ProviderError::new(kind, ex.provider.clone(), e.message.clone());
            err.status = e.status;
            err.hint = e.hint.clone();
            return Err(err);
        }
        let Some(resp) = &ex.response else {
            return Err(ProviderError::new(
                ErrorKind::Config,
                "cassette",
                "an exchange has neither response nor error",
            ));
        };
        // Stream it the way the scripted provider does, then return the recording as is.
        let entry = ScriptedResponse {
            text: Some(resp.text.clone()),
            thinking: None,
            tool_calls: resp
                .tool_calls
                .iter()
                .map(|c| ScriptedToolCall {
                    name: c.name.clone(),
                    arguments: Value::String(c.arguments_text()),
                    id: Some(c.id.clone()),
                })
                .collect(),
            usage: Some(ScriptedUsage {
                input_tokens: resp.usage.input_tokens,
                output_tokens: resp.usage.output_tokens,
            }),
        };
        for t in &resp.thinking {
            if !t.text.is_empty() {
                sink(super::StreamDelta::Thinking {
                    text: t.text.clone(),
                });
            }
        }
        render(&entry, 0, &resp.model, sink);
        Ok(resp.clone())
    }
}

impl Provider for Replay {
    fn name(&self) -> &str {
        &self.provider
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn schema_with_tools(&self) -> bool {
        self.schema_with_tools
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move { self.answer(req, sink) })
    }
}
