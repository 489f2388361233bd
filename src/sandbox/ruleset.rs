//! A Landlock ruleset for one [`Policy`], built in the runner (the parent): it opens the
//! paths and lists directories, which a child between `fork` and `exec` may not. The
//! child only applies it (`landlock_restrict_self`), see `sandbox::Prepared`.
//!
//! Landlock grants access to trees and cannot take a subtree back. A path that must stay
//! hidden (or unwritable) inside a granted tree is carved out by granting, instead of the
//! tree, each of its entries but the one that leads to the hidden path, and so on down to
//! it. The directories on the way get only listing (reading) or nothing (writing), and an
//! entry created there later is not covered. Symbolic links among those entries are
//! skipped: granting one would grant its target, which may be anything.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::policy::{Network, Policy};

/// How many rules one ruleset may hold: carving a hidden path out of a directory with a
/// huge number of entries is refused rather than done slowly. A workspace in a busy
/// directory (a shared `/tmp`, a test runner's scratch directory) has its siblings to
/// grant one by one, a few thousand being ordinary: about 2 µs and one kernel rule each.
const MAX_RULES: usize = 65_536;

/// Where a program runs and what in its reach stays out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confine {
    /// The working directory, writable (canonical).
    pub workspace: PathBuf,
    /// Never readable: secrets of the home directory, the runner's state.
    pub hidden: Vec<PathBuf>,
    /// Never writable (beside the hidden ones): the agent's own files.
    pub read_only: Vec<PathBuf>,
}

/// A built ruleset and the directories whose entries it grants one by one (a new entry
/// there is not covered: the ruleset is out of date once one of them changes).
pub struct Built {
    pub ruleset: OwnedFd,
    pub listed: Vec<PathBuf>,
}

/// The ruleset of `policy`, ready to be applied by a child.
pub fn build(policy: &Policy, confine: &Confine, abi: ABI) -> Result<Built, String> {
    let read = AccessFs::from_read(abi);
    // Device ioctls stay unhandled: a terminal or `/dev/null` works as without a sandbox.
    let write = AccessFs::from_write(abi) & !BitFlags::from(AccessFs::IoctlDev);
    let mut ruleset = Ruleset::default()
        .handle_access(read | write)
        .map_err(|e| e.to_string())?;
    if let Network::Ports(_) = policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| e.to_string())?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| e.to_string())?;
    }
    let mut rules = Rules::default();
    let everything = vec![PathBuf::from("/")];
    for tree in policy.read.as_ref().unwrap_or(&everything) {
        carve(
            tree,
            read,
            &confine.hidden,
            Some(AccessFs::ReadDir.into()),
            &mut rules,
        )?;
    }
    let unwritable: Vec<PathBuf> = confine
        .hidden
        .iter()
        .chain(&confine.read_only)
        .cloned()
        .collect();
    for tree in std::iter::once(&confine.workspace).chain(&policy.write) {
        carve(tree, read | write, &unwritable, None, &mut rules)?;
    }
    let mut created = ruleset.create().map_err(|e| e.to_string())?;
    for (path, access) in rules.granted {
        // A path that vanished since it was listed grants nothing.
        let Ok(fd) = PathFd::new(&path) else { continue };
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Network::Ports(ports) = &policy.network {
        for port in ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(|e| e.to_string())?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    let ruleset = fd.ok_or_else(|| "the kernel did not create the Landlock ruleset".to_string())?;
    Ok(Built {
        ruleset,
        listed: rules.listed,
    })
}

/// The paths to grant, and the directories listed to find them.
#[derive(Default)]
struct Rules {
    granted: Vec<(PathBuf, BitFlags<AccessFs>)>,
    listed: Vec<PathBuf>,
}

/// Grants `access` on `tree`, but not on the `except` paths under it (see the module's
/// note); the directories on the way to them get `on_the_way`.
fn carve(
    tree: &Path,
    access: BitFlags<AccessFs>,
    except: &[PathBuf],
    on_the_way: Option<BitFlags<AccessFs>>,
    rules: &mut Rules,
) -> Result<(), String> {
    let Ok(tree) = std::fs::canonicalize(tree) else {
        // A declared path that does not exist grants nothing.
        return Ok(());
    };
    walk(&tree, access, except, on_the_way, rules)
}

fn walk(
    dir: &Path,
    access: BitFlags<AccessFs>,
    except: &[PathBuf],
    on_the_way: Option<BitFlags<AccessFs>>,
    rules: &mut Rules,
) -> Result<(), String> {
    if except.iter().any(|hidden| hidden == dir) {
        return Ok(());
    }
    if rules.granted.len() >= MAX_RULES {
        return Err(format!(
            "more than {MAX_RULES} paths to grant around the hidden ones (last at {}): move the workspace or the hidden paths out of such large directories",
            dir.display()
        ));
    }
    if !except.iter().any(|hidden| hidden.starts_with(dir)) {
        rules.granted.push((dir.to_path_buf(), access));
        return Ok(());
    }
    if let Some(listing) = on_the_way {
        rules.granted.push((dir.to_path_buf(), listing));
    }
    rules.listed.push(dir.to_path_buf());
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let is_link = entry.file_type().is_ok_and(|kind| kind.is_symlink());
        if !is_link {
            walk(&entry.path(), access, except, on_the_way, rules)?;
        }
    }
    Ok(())
}
