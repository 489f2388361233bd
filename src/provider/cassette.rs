//! Record and replay provider exchanges (`--record FILE`, `--replay FILE`).
//!
//! A cassette is JSON Lines, one exchange per line: the normalised request and what
//! came back (the assembled response, or the error). The format is documented in
//! docs/cassette.md. [`Recording`] wraps any provider and appends each exchange, with
//! the provider's API key redacted wherever a server managed to put it; [`Replay`]
//! answers from a [`ReplayStore`] with no network and no key.
//!
//! Normalising makes a re-run match its recording although some values change on every
//! run: tool call ids become `call_1`, `call_2`... in order of appearance, UUIDs become
//! `<uuid>`, ISO-8601 timestamps `<timestamp>`, thinking signatures `<signature>`,
//! Responses reasoning item ids `<reasoning_id>` and their encrypted content `<encrypted>`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::error::{ErrorKind, ProviderError};
use super::history::History;
use super::http::Secret;
use super::redact::{MIN_SECRET_LEN, is_redactable, redact_value};
use super::types::{Message, ModelRequest, ModelResponse};
use super::{BoxFuture, DeltaSink, Provider};
use crate::sync::lock;

/// The `version` written in every exchange.
pub const CASSETTE_VERSION: u32 = 1;

/// One line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub version: u32,
    pub provider: String,
    pub model: String,
    pub request: ModelRequest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ModelResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedError {
    pub kind: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Returns `req` with its volatile values replaced (see the module docs). Idempotent.
pub fn normalize_request(req: &ModelRequest) -> ModelRequest {
    let mut ids: Vec<String> = Vec::new();
    let mut id_for = |id: &str| -> String {
        let n = match ids.iter().position(|k| k == id) {
            Some(n) => n,
            None => {
                ids.push(id.to_string());
                ids.len() - 1
            }
        };
        format!("call_{}", n + 1)
    };
    let mut out = req.clone();
    out.system = out.system.as_deref().map(normalize_text);
    let mut messages = out.messages.to_vec();
    for m in &mut messages {
        match m {
            Message::System { content } | Message::User { content } => {
                *content = normalize_text(content)
            }
            Message::Assistant(a) => {
                a.text = normalize_text(&a.text);
                for t in &mut a.thinking {
                    if t.signature.is_some() {
                        t.signature = Some("<signature>".into());
                    }
                    if t.redacted.is_some() {
                        t.redacted = Some("<redacted>".into());
                    }
                    if let Some(item) = &mut t.reasoning_item {
                        item.id = "<reasoning_id>".into();
                        if item.encrypted_content.is_some() {
                            item.encrypted_content = Some("<encrypted>".into());
                        }
                    }
                }
                for c in &mut a.tool_calls {
                    c.id = id_for(&c.id);
                }
            }
            Message::Tool(r) => {
                r.tool_call_id = id_for(&r.tool_call_id);
                r.content = normalize_text(&r.content);
            }
        }
    }
    out.messages = History::from(messages);
    out
}

fn normalize_text(s: &str) -> String {
    static UUID: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
            .expect("valid regex")
    });
    static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
            .expect("valid regex")
    });
    let s = UUID.replace_all(s, "<uuid>");
    TIMESTAMP.replace_all(&s, "<timestamp>").into_owned()
}

pub(crate) fn io_error(path: &Path, what: &str, e: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(
        ErrorKind::Config,
        "cassette",
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// The largest cassette `--replay` reads: 256 MiB.
pub const MAX_CASSETTE_BYTES: u64 = 256 * 1024 * 1024;

/// The non-blank lines of the cassette at `path`, each with its number: a regular file
/// of at most [`MAX_CASSETTE_BYTES`], so `--replay /dev/zero` is refused instead of read
/// until memory runs out.
pub fn cassette_lines(path: &Path) -> Result<Vec<(usize, String)>, ProviderError> {
    let too_big = || {
        io_error(
            path,
            "replay",
            format!(
                "a cassette may hold at most {} MiB",
                MAX_CASSETTE_BYTES >> 20
            ),
        )
    };
    // Checked before opening: opening a FIFO would wait for a writer.
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, "open", e))?;
    if !meta.is_file() {
        return Err(io_error(path, "replay", "not a regular file"));
    }
    if meta.len() > MAX_CASSETTE_BYTES {
        return Err(too_big());
    }
    let file = File::open(path).map_err(|e| io_error(path, "open", e))?;
    // The file may grow after the check: read one byte more than allowed, at most.
    let mut reader = BufReader::new(file.take(MAX_CASSETTE_BYTES + 1));
    let mut lines = Vec::new();
    let mut read = 0;
    for n in 1.. {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(len) => read += len as u64,
            Err(e) => return Err(io_error(path, "read", e)),
        }
        if read > MAX_CASSETTE_BYTES {
            return Err(too_big());
        }
        if !line.trim().is_empty() {
            lines.push((n, line));
        }
    }
    Ok(lines)
}

/// Whether a cassette line is an MCP exchange (`crate::mcp`'s, with an `mcp` key) rather
/// than a model exchange.
pub fn is_mcp_line(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Kind {
        mcp: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Kind>(line).is_ok_and(|kind| kind.mcp.is_some())
}

/// Whether a cassette line is a remote A2A agent's exchange (`crate::a2a_client::cassette`'s, with
/// an `a2a` key) rather than a model exchange.
pub fn is_a2a_line(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Kind {
        a2a: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Kind>(line).is_ok_and(|kind| kind.a2a.is_some())
}

/// Appends exchanges to a cassette file; share one per run (`Arc`) between providers.
#[derive(Debug)]
pub struct CassetteRecorder {
    path: PathBuf,
    file: Mutex<File>,
    /// Warnings already printed (each agent of a run builds its own provider).
    warned: Mutex<Vec<String>>,
}

impl CassetteRecorder {
    /// Creates (or empties) the cassette at `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<Arc<Self>, ProviderError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| io_error(&path, "create", e))?;
        Ok(Arc::new(CassetteRecorder {
            path,
            file: Mutex::new(file),
            warned: Mutex::default(),
        }))
    }

    /// Prints `warning` on stderr unless this recording printed it before.
    fn warn_once(&self, warning: &str) {
        let mut warned = lock(&self.warned);
        if !warned.iter().any(|w| w == warning) {
            eprintln!("{warning}");
            warned.push(warning.to_string());
        }
    }

    /// Appends one exchange as one line, with `key` redacted from all of it.
    pub fn append(&self, exchange: &Exchange, key: Option<&Secret>) -> Result<(), ProviderError> {
        self.append_value(exchange, key)
    }

    /// Appends `value` as one line, with every one of `secrets` redacted from its string
    /// values (never from field names, and not when shorter than
    /// [`MIN_SECRET_LEN`]: see [`super::redact`]).
    pub fn append_value<'s, T: Serialize>(
        &self,
        value: &T,
        secrets: impl IntoIterator<Item = &'s Secret>,
    ) -> Result<(), ProviderError> {
        let encode = |e| io_error(&self.path, "encode for", e);
        let mut value = serde_json::to_value(value).map_err(encode)?;
        for secret in secrets {
            redact_value(&mut value, secret);
        }
        let mut line = serde_json::to_string(&value).map_err(encode)?;
        line.push('\n');
        let mut file = lock(&self.file);
        file.write_all(line.as_bytes())
            .and_then(|_| file.flush())
            .map_err(|e| io_error(&self.path, "write", e))
    }
}

/// Records every exchange of `inner` (place it outside [`Retry`](super::Retry), so the
/// final outcome is what gets recorded).
pub struct Recording {
    inner: Arc<dyn Provider>,
    recorder: Arc<CassetteRecorder>,
    /// The key `inner` sends, kept out of the cassette.
    key: Option<Secret>,
}

impl Recording {
    /// Records `inner`'s exchanges with `key` redacted; a key too short to redact (a local
    /// server's dummy key) is said on stderr, once per recording.
    pub fn new(
        inner: Arc<dyn Provider>,
        recorder: Arc<CassetteRecorder>,
        key: Option<Secret>,
    ) -> Self {
        if let Some(secret) = &key
            && !is_redactable(secret.expose())
        {
            recorder.warn_once(&format!(
                "warning: the API key of `{}` is shorter than {MIN_SECRET_LEN} characters, so {} does not redact it (a dummy key for a local server needs no redaction)",
                inner.name(),
                recorder.path.display()
            ));
        }
        Recording {
            inner,
            recorder,
            key,
        }
    }

    async fn call(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let outcome = self.inner.stream(req, sink).await;
        let (response, error) = match &outcome {
            Ok(r) => (Some(r.clone()), None),
            Err(e) => (
                None,
                Some(RecordedError {
                    kind: e.kind.as_str().to_string(),
                    message: e.message.clone(),
                    status: e.status,
                    hint: e.hint.clone(),
                }),
            ),
        };
        let exchange = Exchange {
            version: CASSETTE_VERSION,
            provider: self.inner.name().to_string(),
            model: self.inner.model().to_string(),
            request: normalize_request(req),
            response,
            error,
        };
        self.recorder.append(&exchange, self.key.as_ref())?;
        outcome
    }
}

impl Provider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn schema_with_tools(&self) -> bool {
        self.inner.schema_with_tools()
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(self.call(req, sink))
    }
}
