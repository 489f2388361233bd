//! One `sandbox:` of the agent file, with its paths resolved: what the programs under it
//! may read, write and connect to.

use std::path::{Component, Path, PathBuf};

use crate::spec::sandbox::{NetworkMode, NetworkSpec, SandboxPath, SandboxSpec};

/// The directories a program needs to start at all (its binary, libraries, `/etc`'s
/// configuration, `/dev/null`, `/proc/self`): readable under a `read:` list too.
pub const SYSTEM_READ: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/dev", "/proc",
];

/// What one `sandbox:` allows.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// `None`: the whole file system (but the hidden paths); else only these trees.
    pub read: Option<Vec<PathBuf>>,
    /// Writable besides the workspace.
    pub write: Vec<PathBuf>,
    pub network: Network,
}

/// What the programs may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// A network namespace of their own, no interface up.
    None,
    /// A network namespace of their own, `lo` up.
    Loopback,
    /// The host's network, TCP `connect` only to these ports (any host), no `bind`.
    Ports(Vec<u16>),
}

impl Policy {
    /// `spec` with `~` taken from `home` and relative paths from `workspace`.
    pub fn from_spec(spec: &SandboxSpec, workspace: &Path, home: Option<&Path>) -> Policy {
        let resolve = |paths: &[SandboxPath]| -> Vec<PathBuf> {
            paths
                .iter()
                .map(|p| resolve(&p.0, workspace, home))
                .collect()
        };
        let read = spec.fs.read.as_ref().map(|read| {
            let mut trees: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
            trees.push(workspace.to_path_buf());
            trees.extend(resolve(read));
            trees.extend(resolve(&spec.fs.write));
            trees
        });
        let network = match &spec.network {
            NetworkSpec::Mode(NetworkMode::None) => Network::None,
            NetworkSpec::Mode(NetworkMode::Loopback) => Network::Loopback,
            NetworkSpec::Hosts(hosts) => {
                let mut ports: Vec<u16> = hosts.iter().map(|h| h.port).collect();
                ports.sort_unstable();
                ports.dedup();
                Network::Ports(ports)
            }
        };
        Policy {
            read,
            write: resolve(&spec.fs.write),
            network,
        }
    }
}

/// `~`, `~/x`, an absolute path, or one relative to `workspace`; `.` and `..` applied.
fn resolve(text: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    let joined = match (text.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => workspace.join(text),
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_from_home_and_workspace() {
        let home = Path::new("/home/u");
        let ws = Path::new("/w");
        assert_eq!(
            resolve("~/.cache", ws, Some(home)),
            Path::new("/home/u/.cache")
        );
        assert_eq!(resolve("~", ws, Some(home)), Path::new("/home/u"));
        assert_eq!(resolve("out/../tmp", ws, Some(home)), Path::new("/w/tmp"));
        assert_eq!(resolve("/var/x", ws, Some(home)), Path::new("/var/x"));
        assert_eq!(resolve("~other", ws, Some(home)), Path::new("/w/~other"));
    }
}
