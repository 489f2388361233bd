//! `/mcp` of `runner serve`: the same tools over Streamable HTTP, behind the server's
//! token rule (the route is one of its API routes). DNS rebinding is refused the way the
//! MCP specification asks: on a loopback address only a loopback `Host` is answered
//! (a page of another site that got its name to resolve to 127.0.0.1 sends its own), and a
//! request from a browser page (`Origin`) only from this machine or an origin
//! `--allow-origin` names; off loopback, where the token guards, only the latter.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::{Agents, Host, MAX_ARGUMENTS};
use crate::serve::server::Shared;

pub type McpService = StreamableHttpService<Agents, LocalSessionManager>;

/// The service for `server`, listening on `listen`.
pub fn service(server: Shared, listen: SocketAddr, allow_origin: &[String]) -> McpService {
    let agents = Agents::new(Host(server));
    StreamableHttpService::new(
        move || Ok(agents.clone()),
        Arc::default(),
        config(listen, allow_origin),
    )
}

fn config(listen: SocketAddr, allow_origin: &[String]) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default();
    // A message holds the arguments and the JSON-RPC envelope around them.
    config.max_request_body_bytes = 2 * MAX_ARGUMENTS;
    let mut origins: Vec<String> = allow_origin.to_vec();
    let config = match listen.ip().is_loopback() {
        // The SDK's default Hosts: localhost, 127.0.0.1 and ::1, on any port; and pages
        // of this machine as origins (a rebinding page has its own site's origin).
        true => {
            origins.extend(LOOPBACK_ORIGINS.iter().map(|origin| origin.to_string()));
            config
        }
        // Off loopback the token guards every request (and the server's name is the
        // operator's to choose): any Host; origins only as `--allow-origin` names them.
        false => config.disable_allowed_hosts(),
    };
    config
        .with_allowed_origins(origins)
        .enforce_origin_validation()
}

/// The origins of pages served from this machine, any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];
