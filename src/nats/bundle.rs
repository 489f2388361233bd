//! A job's agent files, carried to the workers through NATS so they need no shared
//! filesystem: the agent file and every file it pulls in (`reload::agent_files`: sub-agent
//! and handoff files, template includes, imported `.mcp.json` files, the project file)
//! plus the programs its hooks run by a relative path, kept with their paths relative to
//! the directory that holds them all. A bundle is stored under its SHA-256 (`runner_bundles`), so a batch of a
//! thousand jobs stores its files once, and a worker writes each bundle once, to
//! `.runner/bundles/<sha256>/`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::reload::agent_files;
use crate::spec::yaml::load_yaml;

/// The bundle format's version.
const BUNDLE_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub version: u32,
    /// The agent file's path among `files`.
    pub agent: String,
    /// Each file by its relative path.
    pub files: BTreeMap<String, BundledFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundledFile {
    /// The bytes, in base64.
    pub data: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executable: bool,
}

impl Bundle {
    /// The bundle of the agent file at `agent`.
    pub fn of(agent: &Path) -> Result<Self, String> {
        let mut paths = agent_files(agent);
        paths.extend(hook_programs(&paths));
        paths.sort();
        paths.dedup();
        let paths: Vec<PathBuf> = paths.into_iter().filter(|p| p.is_file()).collect();
        let root = common_dir(&paths);
        let relative = |path: &Path| {
            path.strip_prefix(&root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| path.to_string_lossy().into_owned())
        };
        let mut files = BTreeMap::new();
        for path in &paths {
            let bytes =
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mode = std::fs::metadata(path)
                .map(|m| m.permissions().mode())
                .unwrap_or(0);
            let file = BundledFile {
                data: STANDARD.encode(bytes),
                executable: mode & 0o111 != 0,
            };
            files.insert(relative(path), file);
        }
        let agent = relative(&crate::spec::validate::normalize(agent));
        Ok(Bundle {
            version: BUNDLE_VERSION,
            agent,
            files,
        })
    }

    /// The bytes stored, and their content address (SHA-256, hex).
    pub fn encode(&self) -> (Vec<u8>, String) {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&bytes);
        let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
        (bytes, hex)
    }

    /// Reads stored bytes, checking they are the bundle `id` names.
    pub fn decode(bytes: &[u8], id: &str) -> Result<Self, String> {
        let bundle: Bundle =
            serde_json::from_slice(bytes).map_err(|e| format!("bundle {id}: {e}"))?;
        if bundle.encode().1 != id {
            return Err(format!("bundle {id}: its bytes do not have that SHA-256"));
        }
        if bundle.version != BUNDLE_VERSION {
            return Err(format!(
                "bundle {id}: version {} is not supported",
                bundle.version
            ));
        }
        // The agent file is one of the bundle's files: never a file of the worker's disk.
        safe_join(Path::new(""), &bundle.agent)
            .map_err(|e| format!("bundle {id}: the agent: {e}"))?;
        for relative in bundle.files.keys() {
            safe_join(Path::new(""), relative).map_err(|e| format!("bundle {id}: {e}"))?;
        }
        if !bundle.files.contains_key(&bundle.agent) {
            return Err(format!(
                "bundle {id}: the agent {:?} is not one of its files",
                bundle.agent
            ));
        }
        Ok(bundle)
    }

    /// Writes the files under `dir` (through a temporary directory renamed into place, so
    /// a worker that dies midway leaves no half bundle); nothing when `dir` exists.
    pub fn write_to(&self, dir: &Path) -> Result<(), String> {
        if dir.is_dir() {
            return Ok(());
        }
        let temporary = dir.with_extension(format!("partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&temporary);
        for (relative, file) in &self.files {
            let path = safe_join(&temporary, relative)?;
            let bytes = STANDARD
                .decode(&file.data)
                .map_err(|e| format!("bundle file {relative}: {e}"))?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::write(&path, bytes)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            let mode = if file.executable { 0o755 } else { 0o644 };
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode));
        }
        match std::fs::rename(&temporary, dir) {
            Ok(()) => Ok(()),
            // Another job of this worker wrote it meanwhile.
            Err(_) if dir.is_dir() => {
                let _ = std::fs::remove_dir_all(&temporary);
                Ok(())
            }
            Err(e) => Err(format!("cannot write {}: {e}", dir.display())),
        }
    }
}

/// `relative` under `root`, refused when it would leave it (a bundle is data from the
/// stream: it must not write elsewhere).
fn safe_join(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let path = Path::new(relative);
    let inside = path
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    match inside {
        true => Ok(root.join(path)),
        false => Err(format!(
            "bundle file {relative:?} is not a path inside the bundle"
        )),
    }
}

/// The programs the agent files' hooks run by a relative path (`./check.sh`), which a
/// worker needs next to the files.
fn hook_programs(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut programs = Vec::new();
    for file in files {
        let Some(document) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| load_yaml(&t).ok())
        else {
            continue;
        };
        let Some(Value::Object(hooks)) = document.value.get("hooks") else {
            continue;
        };
        let dir = crate::compile::file_dir(file);
        let programs_of = hooks.values().filter_map(Value::as_array).flatten();
        for program in programs_of.filter_map(|hook| hook.get("command")?.get(0)?.as_str()) {
            if program.contains('/') && !Path::new(program).is_absolute() {
                programs.push(crate::spec::validate::normalize(&dir.join(program)));
            }
        }
    }
    programs
}

/// The deepest directory holding every path.
fn common_dir(paths: &[PathBuf]) -> PathBuf {
    let mut common: Option<PathBuf> = None;
    for path in paths {
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        common = Some(match common {
            None => dir,
            Some(so_far) => so_far
                .ancestors()
                .find(|a| dir.starts_with(a))
                .unwrap_or(Path::new("/"))
                .to_path_buf(),
        });
    }
    common.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_keeps_paths_relative_to_the_directory_holding_its_files() {
        let dir = std::env::temp_dir().join(format!("runner-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("agents/sub")).unwrap();
        std::fs::write(dir.join("agents/main.yaml"), "name: main\ntools:\n  - agent: sub/helper.yaml\nhooks:\n  run_end:\n    - command: [\"../hooks/end.sh\"]\n").unwrap();
        std::fs::write(dir.join("agents/sub/helper.yaml"), "name: helper\n").unwrap();
        std::fs::create_dir_all(dir.join("hooks")).unwrap();
        std::fs::write(dir.join("hooks/end.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            dir.join("hooks/end.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let bundle = Bundle::of(&dir.join("agents/main.yaml")).unwrap();
        assert_eq!(bundle.agent, "agents/main.yaml");
        let names: Vec<&str> = bundle.files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["agents/main.yaml", "agents/sub/helper.yaml", "hooks/end.sh"]
        );
        assert!(bundle.files["hooks/end.sh"].executable);
        let (bytes, id) = bundle.encode();
        assert_eq!(Bundle::decode(&bytes, &id).unwrap(), bundle);
        assert!(Bundle::decode(&bytes, "0000").is_err());
        let out = dir.join("out");
        bundle.write_to(&out).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("agents/sub/helper.yaml")).unwrap(),
            "name: helper\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bundle_never_writes_outside_its_directory() {
        assert!(safe_join(Path::new("/x"), "../etc/passwd").is_err());
        assert!(safe_join(Path::new("/x"), "/etc/passwd").is_err());
        assert!(safe_join(Path::new("/x"), "a/b.yaml").is_ok());
    }

    #[test]
    fn a_bundles_agent_is_one_of_its_files() {
        let file = BundledFile {
            data: STANDARD.encode("name: a\n"),
            executable: false,
        };
        let bundle = |agent: &str| Bundle {
            version: BUNDLE_VERSION,
            agent: agent.into(),
            files: BTreeMap::from([("a.yaml".to_string(), file.clone())]),
        };
        for (agent, ok) in [
            ("a.yaml", true),
            ("../a.yaml", false),
            ("/etc/a.yaml", false),
            ("b.yaml", false),
        ] {
            let (bytes, id) = bundle(agent).encode();
            assert_eq!(Bundle::decode(&bytes, &id).is_ok(), ok, "{agent}");
        }
    }
}
