//! The agents as an MCP server (`docs/mcp.md`): each valid agent file one MCP tool, a call
//! one run of the session layer. `runner mcp` serves them over stdio (`stdio`), and
//! `runner serve` at `/mcp` over Streamable HTTP (`http`); both through the official SDK
//! (rmcp), with this one handler, and the server's catalogue of agent files, run slots and
//! hosted runs (`runner mcp` is a server of its own with no HTTP side).
//!
//! * `handler`: the MCP methods (initialize, tools/list, tools/call).
//! * `tools`: an agent file as a tool definition; the `runner_resume` tool.
//! * `host`: where a call's run goes: one of the server's hosted runs.
//! * `call`: one call followed to its end: progress, cancellation, pauses.
//! * `pause`: what a paused run waits for, as an elicitation form and as text.
//! * `reply`: a run's result as a tool result.

mod call;
mod handler;
mod host;
pub(super) mod http;
mod pause;
mod reply;
pub mod stdio;
mod tools;

use handler::Agents;
use host::Host;

/// The largest `arguments` object a call may have, as JSON (the inputs of a run).
pub const MAX_ARGUMENTS: usize = 1024 * 1024;
