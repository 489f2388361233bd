//! Remote A2A agents' exchanges in a cassette (`--record FILE`, `--replay FILE`): one line
//! per message sent, with the agent's URL, what was sent (the text, and the task it
//! continued) and every event that came back, told apart from the model's lines by their
//! `a2a` key. Headers are never written (they carry tokens), and the header values are
//! redacted from everything else. A replayed run reaches no remote agent: each message is
//! answered from the first unused line with the same URL and text.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::a2a::StreamResponse;
use crate::provider::{CASSETTE_VERSION, CassetteRecorder, Secret, cassette_lines, is_a2a_line};
use crate::sync::lock;

/// The `a2a` key's value on a message line.
const MESSAGE: &str = "message";

/// One message sent to a remote agent and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct A2aExchange {
    /// Always `message`: says the line is an A2A exchange.
    pub a2a: String,
    pub version: u32,
    pub url: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Every event received, in order (a non-streamed answer is one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<StreamResponse>,
    /// Why the call failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl A2aExchange {
    pub fn new(url: &str, text: &str, task: Option<(&str, &str)>) -> Self {
        A2aExchange {
            a2a: MESSAGE.to_string(),
            version: CASSETTE_VERSION,
            url: url.to_string(),
            text: text.to_string(),
            task_id: task.map(|(task, _)| task.to_string()),
            context_id: task.map(|(_, context)| context.to_string()),
            events: Vec::new(),
            error: None,
        }
    }
}

/// Writes a remote agent's exchanges into the run's cassette.
pub struct A2aRecorder {
    cassette: Arc<CassetteRecorder>,
    secrets: Vec<Secret>,
}

impl A2aRecorder {
    /// `headers`: their values are redacted from every line.
    pub fn new(cassette: Arc<CassetteRecorder>, headers: &[(String, String)]) -> Self {
        let secrets = headers
            .iter()
            .map(|(_, value)| Secret::new(value.clone()))
            .collect();
        A2aRecorder { cassette, secrets }
    }

    /// A line that cannot be written is a warning: the call it records has happened.
    pub fn write(&self, exchange: &A2aExchange) {
        if let Err(error) = self.cassette.append_value(exchange, &self.secrets) {
            eprintln!("warning: remote agent {}: {error}", exchange.url);
        }
    }
}

/// The A2A exchanges of a cassette, each answered once.
#[derive(Debug)]
pub struct A2aReplay {
    path: PathBuf,
    exchanges: Vec<A2aExchange>,
    used: Mutex<Vec<bool>>,
}

impl A2aReplay {
    /// Reads the A2A lines of the cassette at `path`.
    pub fn load(path: &Path) -> Result<Arc<Self>, String> {
        let mut exchanges = Vec::new();
        for (line, text) in cassette_lines(path).map_err(|e| e.to_string())? {
            if !is_a2a_line(&text) {
                continue;
            }
            let unreadable =
                |why: String| format!("cannot replay line {line} of {}: {why}", path.display());
            let exchange: A2aExchange = serde_json::from_str(&text)
                .map_err(|e| unreadable(format!("not an A2A exchange: {e}")))?;
            if exchange.version != CASSETTE_VERSION {
                return Err(unreadable(format!(
                    "cassette version {} is not supported (this runner reads version {CASSETTE_VERSION})",
                    exchange.version
                )));
            }
            exchanges.push(exchange);
        }
        let used = Mutex::new(vec![false; exchanges.len()]);
        Ok(Arc::new(A2aReplay {
            path: path.to_path_buf(),
            exchanges,
            used,
        }))
    }

    /// The recording of the first unused message with this URL and text.
    pub fn answer(&self, url: &str, text: &str) -> Result<A2aExchange, String> {
        let mut used = lock(&self.used);
        let hit = self
            .exchanges
            .iter()
            .enumerate()
            .find(|(i, exchange)| !used[*i] && exchange.url == url && exchange.text == text);
        match hit {
            Some((i, exchange)) => {
                used[i] = true;
                Ok(exchange.clone())
            }
            None => Err(format!(
                "{} has no unused recording of this message to {url}; record the run again with --record",
                self.path.display()
            )),
        }
    }
}
