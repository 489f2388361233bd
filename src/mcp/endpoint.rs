//! Where an MCP server is and how to reach it, with the agent file's templates rendered.
//! Two entries with the same endpoint share one server for the whole run.

use std::fmt;

use crate::spec::sandbox::SandboxSpec;
use crate::spec::tools::McpServer;

/// A server's address: the process to start, or the URL to post to.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// Started as a child process and spoken to over stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Rendered `env` entries, set on top of the (scrubbed) inherited environment.
        env: Vec<(String, String)>,
        /// Every `sandbox:` over the server (the agents', the entry's), outermost first.
        sandbox: Vec<SandboxSpec>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// Rendered `headers`, sent with every request.
        headers: Vec<(String, String)>,
    },
}

impl Endpoint {
    /// How messages name the server: the command line or the URL, never the rendered
    /// `env` or `headers` values (they carry tokens).
    pub fn label(&self) -> String {
        match self {
            Endpoint::Stdio { command, args, .. } => command_line(command, args),
            Endpoint::Http { url, .. } => url.clone(),
        }
    }

    /// The rendered `env` (stdio) or `headers` (HTTP) entries.
    pub fn settings(&self) -> &[(String, String)] {
        match self {
            Endpoint::Stdio { env, .. } => env,
            Endpoint::Http { headers, .. } => headers,
        }
    }

    /// The label of an entry's server, before its templates are rendered.
    pub fn label_of(server: &McpServer) -> String {
        match server {
            McpServer::Stdio(stdio) => command_line(&stdio.command, &stdio.args),
            McpServer::Http(http) => http.url.clone(),
        }
    }
}

fn command_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

// Debug output would otherwise print rendered tokens.
impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({})", self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_debug_never_show_header_or_env_values() {
        let http = Endpoint::Http {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
        };
        let stdio = Endpoint::Stdio {
            command: "node".into(),
            args: vec!["server.js".into(), "stdio".into()],
            env: vec![("GITHUB_TOKEN".into(), "s3cret".into())],
            sandbox: Vec::new(),
        };
        assert_eq!(http.label(), "http://127.0.0.1:1/mcp");
        assert_eq!(stdio.label(), "node server.js stdio");
        assert!(!format!("{http:?}{stdio:?}").contains("s3cret"));
    }
}
