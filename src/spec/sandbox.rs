//! The `sandbox` key: what a program the agent runs (a `shell` command, a stdio MCP
//! server) may read, write and connect to, enforced by the kernel (docs/security.md).
//! It is written at the agent level (inherited by sub-agents, which can only narrow it),
//! on a `shell` tool and on a stdio MCP server; every one that applies holds at once.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `sandbox: { fs, network, required }`. Present: the program runs confined (the
/// workspace writable, the rest of the file system read-only, secrets hidden, no network).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSpec {
    /// What the program may read and write besides the workspace (which it may write).
    #[serde(default, skip_serializing_if = "FsSpec::is_default")]
    pub fs: FsSpec,
    /// What the program may connect to: `none` (default), `loopback` (a loopback of its
    /// own), or a list of `host:port` it may connect to.
    #[serde(default)]
    pub network: NetworkSpec,
    /// true: the run fails at start when the kernel cannot enforce the sandbox (no
    /// Landlock, or too old an ABI), instead of running the program unconfined with a
    /// warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// `fs:` extra paths. `~` is the home directory; relative paths are from the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsSpec {
    /// Absent: the whole file system is readable (but the always-hidden paths). Present:
    /// only these paths, the workspace, the `write` paths and the system's program
    /// directories (`/usr`, `/bin`, `/lib*`, `/etc`, `/dev`, `/proc`, `/sys`) are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Vec<SandboxPath>>,
    /// Paths writable besides the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<SandboxPath>,
}

impl FsSpec {
    pub fn is_default(&self) -> bool {
        *self == FsSpec::default()
    }
}

/// A path of a sandbox rule: absolute, `~/...`, or relative to the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SandboxPath(#[schemars(length(min = 1))] pub String);

/// `network:`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NetworkSpec {
    /// `none` or `loopback`.
    Mode(NetworkMode),
    /// The TCP endpoints the program may connect to, e.g. [api.github.com:443]. The kernel
    /// rule is by port: any host on a listed port is reachable (docs/security.md).
    Hosts(Vec<HostPort>),
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec::Mode(NetworkMode::None)
    }
}

/// A network without hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// No network at all: a network namespace of its own with no interface up.
    None,
    /// A network namespace of its own with only `lo` up: the program can talk to servers
    /// it starts itself, not to the host's.
    Loopback,
}

/// `host:port`, e.g. `api.github.com:443` or `127.0.0.1:8080`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(with = "HostPortText")]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

/// The schema of a `host:port` text.
#[derive(JsonSchema)]
#[allow(dead_code)] // exists for its schema only
struct HostPortText(
    #[schemars(regex(
        pattern = r"^([^\s:/\[\]]+|\[[0-9A-Fa-f:.]+\]):([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$"
    ))]
    String,
);

impl TryFrom<String> for HostPort {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        let bad = |why: &str| {
            format!("`{text}` is not a `host:port` ({why}); write e.g. `api.github.com:443`")
        };
        let (host, port) = text.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty()
            || host.contains(['/', ' '])
            || (host.contains(':') && !text.starts_with('['))
        {
            return Err(bad("no valid host"));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| bad("the port is not 1 to 65535"))?;
        if port == 0 {
            return Err(bad("the port is not 1 to 65535"));
        }
        Ok(HostPort {
            host: host.to_string(),
            port,
        })
    }
}

impl From<HostPort> for String {
    fn from(value: HostPort) -> String {
        value.to_string()
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for NetworkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetworkSpec::Mode(NetworkMode::None) => f.write_str("none"),
            NetworkSpec::Mode(NetworkMode::Loopback) => f.write_str("loopback"),
            NetworkSpec::Hosts(hosts) => {
                let hosts: Vec<String> = hosts.iter().map(HostPort::to_string).collect();
                write!(f, "[{}]", hosts.join(", "))
            }
        }
    }
}

impl SandboxSpec {
    /// One line for `runner tools`: `network none; write +[...]; read [...]; required`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("network {}", self.network)];
        if !self.fs.write.is_empty() {
            parts.push(format!("write workspace + {}", join(&self.fs.write)));
        }
        if let Some(read) = &self.fs.read {
            parts.push(format!("read only workspace + {}", join(read)));
        }
        if self.required {
            parts.push("required".into());
        }
        parts.join("; ")
    }

    /// How `new` allows more than `self` (empty: it allows no more), for the widening rule.
    /// Dropping a sandbox, a wider network, a new `write` path, and reading more (no `read`
    /// list, or a new path in it) are widenings; so is dropping `required`.
    pub fn loosened_by(&self, new: Option<&SandboxSpec>, at: &str) -> Vec<String> {
        let Some(new) = new else {
            return vec![format!("removes the sandbox of {at}")];
        };
        let mut found = Vec::new();
        if network_wider(&self.network, &new.network) {
            found.push(format!(
                "widens the sandbox network of {at} from {} to {}",
                self.network, new.network
            ));
        }
        for path in new.fs.write.iter().filter(|p| !self.fs.write.contains(p)) {
            found.push(format!("lets {at} write `{}`", path.0));
        }
        match (&self.fs.read, &new.fs.read) {
            (Some(_), None) => found.push(format!("lets {at} read the whole file system")),
            (Some(old), Some(new)) => {
                for path in new.iter().filter(|p| !old.contains(p)) {
                    found.push(format!("lets {at} read `{}`", path.0));
                }
            }
            (None, _) => {}
        }
        if self.required && !new.required {
            found.push(format!(
                "lets {at} run unconfined where the kernel has no sandbox (drops `required`)"
            ));
        }
        found
    }
}

/// Whether `new` reaches something `old` does not.
fn network_wider(old: &NetworkSpec, new: &NetworkSpec) -> bool {
    use NetworkMode::{Loopback, None};
    match (old, new) {
        (NetworkSpec::Mode(None), NetworkSpec::Mode(None)) => false,
        (NetworkSpec::Mode(None), _) => true,
        (NetworkSpec::Mode(Loopback), NetworkSpec::Mode(_)) => false,
        (NetworkSpec::Mode(Loopback), NetworkSpec::Hosts(_)) => true,
        (NetworkSpec::Hosts(_), NetworkSpec::Mode(_)) => false,
        (NetworkSpec::Hosts(old), NetworkSpec::Hosts(new)) => {
            new.iter().any(|host| !old.contains(host))
        }
    }
}

fn join(paths: &[SandboxPath]) -> String {
    let paths: Vec<&str> = paths.iter().map(|p| p.0.as_str()).collect();
    format!("[{}]", paths.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> Result<HostPort, String> {
        HostPort::try_from(text.to_string())
    }

    #[test]
    fn host_port_needs_a_host_and_a_port_from_1_to_65535() {
        assert_eq!(host("api.github.com:443").unwrap().port, 443);
        assert_eq!(host("[::1]:8080").unwrap().host, "::1");
        assert_eq!(host("[::1]:8080").unwrap().to_string(), "[::1]:8080");
        for bad in [
            "nohost", ":443", "a:0", "a:65536", "a:http", "::1:80", "a/b:1",
        ] {
            assert!(host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_wider_network_is_a_widening_and_a_narrower_one_is_not() {
        let spec = |network: &str| -> SandboxSpec {
            serde_json::from_str(&format!("{{\"network\": {network}}}")).unwrap()
        };
        let none = spec("\"none\"");
        let loopback = spec("\"loopback\"");
        let one = spec("[\"a.example:443\"]");
        let two = spec("[\"a.example:443\", \"b.example:22\"]");
        assert!(none.loosened_by(Some(&loopback), "x").len() == 1);
        assert!(loopback.loosened_by(Some(&one), "x").len() == 1);
        assert!(one.loosened_by(Some(&two), "x").len() == 1);
        assert!(two.loosened_by(Some(&one), "x").is_empty());
        assert!(one.loosened_by(Some(&loopback), "x").is_empty());
        assert!(loopback.loosened_by(Some(&none), "x").is_empty());
        assert_eq!(none.loosened_by(None, "x"), ["removes the sandbox of x"]);
    }
}
