//! The built-in tools of SPEC §2.3, driven through the `Tool` trait as the engine does.
//! Nothing here touches the internet: `http_get` talks to a server on 127.0.0.1.

#[path = "tools/builtin.rs"]
mod builtin;
#[path = "tools/common.rs"]
mod common;
#[path = "tools/confinement.rs"]
mod confinement;
#[path = "tools/files.rs"]
mod files;
#[path = "tools/http.rs"]
mod http;
#[path = "tools/shell.rs"]
mod shell;
