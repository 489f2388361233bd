//! The kernel sandbox of the programs an agent runs (`shell` commands, stdio MCP servers):
//! Landlock for the file system and TCP ports, a network namespace for `network: none`
//! and `loopback`. What it guarantees and what not: docs/security.md.
//!
//! * [`policy`]: one `sandbox:` of the file, paths resolved.
//! * [`ruleset`]: its Landlock ruleset, built in the runner.
//! * [`netns`]: the network namespace, made in the child.
//! * [`resolve`]: the resolver check of `host:port` rules, at start.
//!
//! Every `sandbox:` that applies to a program (the agent's, its callers', the tool's) is a
//! layer of its own: the kernel enforces all of them at once, so a sub-agent or a tool can
//! narrow what its caller allowed but never widen it. The runner builds the rulesets before
//! it forks; the child, between `fork` and `exec`, only makes raw system calls
//! ([`Prepared::enter`]).

pub mod abi;
pub mod netns;
pub mod policy;
pub mod resolve;
pub mod ruleset;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::spec::sandbox::{HostPort, NetworkSpec, SandboxSpec};
use crate::sync::lock;

use netns::NetSetup;
use policy::{Network, Policy};
pub use ruleset::Confine;

/// Secrets under the home directory no sandboxed program may read.
pub const HIDDEN_IN_HOME: [&str; 3] = [".ssh", ".aws", ".config/gcloud"];

/// The sandbox of one program: every `sandbox:` that applies to it.
#[derive(Debug)]
pub struct Sandbox {
    layers: Vec<Policy>,
    required: bool,
    /// Every `host:port` rule of every layer, for the resolver check.
    hosts: Vec<HostPort>,
    /// The rulesets last built, reused while they are up to date: building them lists
    /// directories and opens every path they grant (milliseconds), applying them is cheap.
    built: Mutex<Option<Cached>>,
}

/// Rulesets built for one [`Confine`], and the directories they were listed from, with
/// their modification times then: an entry added or removed there changes its time. (An
/// entry the listing missed but the time includes is only ever denied: a ruleset grants
/// what it names, never more.)
#[derive(Debug)]
struct Cached {
    confine: Confine,
    version: i32,
    listed: Vec<(PathBuf, Option<SystemTime>)>,
    rulesets: Arc<Vec<OwnedFd>>,
}

impl Cached {
    fn fits(&self, confine: &Confine, version: i32) -> bool {
        self.confine == *confine
            && self.version == version
            && (self.listed.iter()).all(|(dir, modified)| modified_time(dir) == *modified)
    }
}

fn modified_time(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir).and_then(|m| m.modified()).ok()
}

/// Whether the kernel can enforce a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Yes, with this Landlock ABI.
    Enforced(i32),
    /// No, and why: the program runs unconfined (unless the sandbox is `required`).
    Unavailable(String),
}

impl Sandbox {
    /// The sandbox of `specs` (outermost first), paths resolved from `workspace` and the
    /// home directory; `None` when no spec applies.
    pub fn new(specs: &[&SandboxSpec], workspace: &Path) -> Option<Sandbox> {
        if specs.is_empty() {
            return None;
        }
        let home = home();
        let layers = specs
            .iter()
            .map(|spec| Policy::from_spec(spec, workspace, home.as_deref()))
            .collect();
        let hosts = specs
            .iter()
            .flat_map(|spec| match &spec.network {
                NetworkSpec::Hosts(hosts) => hosts.clone(),
                NetworkSpec::Mode(_) => Vec::new(),
            })
            .collect();
        Some(Sandbox {
            layers,
            required: specs.iter().any(|spec| spec.required),
            hosts,
            built: Mutex::new(None),
        })
    }

    /// Whether the kernel can enforce it: Landlock ABI 1 for the file system, 4 when a
    /// layer lists `host:port`.
    pub fn support(&self) -> Support {
        let needed = if self
            .layers
            .iter()
            .any(|l| matches!(l.network, Network::Ports(_)))
        {
            4
        } else {
            1
        };
        match abi::kernel_abi() {
            Ok(version) if version >= needed => Support::Enforced(version),
            Ok(version) => Support::Unavailable(format!(
                "the kernel's Landlock ABI is {version}; this sandbox needs {needed} (TCP port rules need 4, Linux 6.7)"
            )),
            Err(why) => Support::Unavailable(why),
        }
    }

    /// At the start of a run: an error when the sandbox is `required` and the kernel
    /// cannot enforce it, or a `host:port` rule's host does not resolve to an address the
    /// rule can stand for ([`resolve::check_hosts`]).
    pub fn check_at_start(&self) -> Result<(), String> {
        self.check_required()?;
        resolve::check_hosts(&self.hosts)
    }

    fn check_required(&self) -> Result<(), String> {
        match self.support() {
            Support::Unavailable(why) if self.required => Err(format!(
                "the sandbox is `required: true` but cannot be enforced: {why}; run on a kernel with Landlock (Linux 5.13 or later, `landlock` in the `lsm=` list) or drop `required`"
            )),
            _ => Ok(()),
        }
    }

    /// Builds what the child applies, for a program working in `confine.workspace`;
    /// `Ok(None)`: the kernel cannot enforce it (see [`Sandbox::support`]).
    pub fn prepare(&self, confine: &Confine) -> Result<Option<Prepared>, String> {
        let Support::Enforced(version) = self.support() else {
            return Ok(None);
        };
        let rulesets = self.rulesets(confine, version)?;
        let isolated = |network: &Network| !matches!(network, Network::Ports(_));
        let net = if self.layers.iter().any(|l| l.network == Network::None) {
            NetSetup::isolated(false)
        } else if self.layers.iter().any(|l| isolated(&l.network)) {
            NetSetup::isolated(true)
        } else {
            NetSetup::host()
        };
        Ok(Some(Prepared { rulesets, net }))
    }
}

impl Sandbox {
    /// The rulesets for `confine`: the ones last built when they are still up to date
    /// (a ruleset fd can restrict any number of processes), else new ones.
    fn rulesets(&self, confine: &Confine, version: i32) -> Result<Arc<Vec<OwnedFd>>, String> {
        let mut built = lock(&self.built);
        if let Some(cached) = built.as_ref().filter(|c| c.fits(confine, version)) {
            return Ok(cached.rulesets.clone());
        }
        let abi = abi::crate_abi(version);
        let mut rulesets = Vec::new();
        let mut listed = Vec::new();
        for layer in &self.layers {
            let layer = ruleset::build(layer, confine, abi)
                .map_err(|e| format!("cannot build the sandbox: {e}"))?;
            rulesets.push(layer.ruleset);
            listed.extend(layer.listed.into_iter().map(|dir| {
                let modified = modified_time(&dir);
                (dir, modified)
            }));
        }
        let rulesets = Arc::new(rulesets);
        *built = Some(Cached {
            confine: confine.clone(),
            version,
            listed,
            rulesets: rulesets.clone(),
        });
        Ok(rulesets)
    }
}

/// What a child applies to itself before `exec`.
#[derive(Debug)]
pub struct Prepared {
    rulesets: Arc<Vec<OwnedFd>>,
    net: NetSetup,
}

impl Prepared {
    /// Enters the network namespace, then restricts the process by every ruleset, for
    /// good: the program and everything it starts stay under them.
    ///
    /// # Safety
    /// Only between `fork` and `exec`: raw system calls, no allocation.
    pub unsafe fn enter(&self) -> io::Result<()> {
        // SAFETY: raw system calls; see the function's note.
        unsafe {
            self.net.enter()?;
            // Required by Landlock without CAP_SYS_ADMIN; it also keeps a setuid program
            // from gaining what the sandbox takes away.
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            for ruleset in self.rulesets.iter() {
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// Why `sandbox` is not enforced, told once per process on stderr as a warning (the
/// program then runs unconfined, its result saying so).
pub fn unavailable(sandbox: &Sandbox) -> String {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    let why = match sandbox.support() {
        Support::Unavailable(why) => why,
        Support::Enforced(_) => String::new(),
    };
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("warning: the sandbox is not enforced, programs run unconfined: {why}");
    }
    why
}

/// The paths no sandboxed program may read: [`HIDDEN_IN_HOME`] under the home directory,
/// and `state` (the runner's `.runner/`, run and sessions directories).
pub fn hidden_paths(state: &[PathBuf]) -> Vec<PathBuf> {
    let home = home();
    let secrets = home
        .iter()
        .flat_map(|home| HIDDEN_IN_HOME.iter().map(move |name| home.join(name)));
    secrets
        .chain(state.iter().cloned())
        .map(|p| canonical(&p))
        .collect()
}

/// The home directory: `$HOME`.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

/// `path` with symlinks resolved; for a path that does not exist (yet), its deepest
/// existing ancestor resolved and the rest appended.
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(resolved) = std::fs::canonicalize(path) {
        return resolved;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
            canonical(parent).join(name)
        }
        _ => path.to_path_buf(),
    }
}
