//! CI without a CI system: the GitHub Action's scripts (`.github/actions/`) run as its steps
//! would, with fake `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` and `GITHUB_PATH` files and the
//! built `runner` on PATH; `install.sh` against a local directory of fake release assets
//! (file:// URLs), its checksum refusal and its `cargo install` fallback; shellcheck over
//! every script.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::{root, tempdir};

/// A fake job: the files GitHub gives a step, a `bin` directory on PATH (with the built
/// runner in it, or not), and the Action's state directory.
struct Job {
    dir: PathBuf,
}

impl Job {
    fn new() -> Job {
        let dir = tempdir("ci-job");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        for file in ["output", "summary.md", "path"] {
            std::fs::write(dir.join(file), "").unwrap();
        }
        Job { dir }
    }

    /// The built runner on the job's PATH.
    fn with_runner(self) -> Job {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_runner"), self.dir.join("bin/runner"))
            .unwrap();
        self
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Runs `.github/actions/NAME` as the Action's step does, with `env` on top.
    fn step(&self, name: &str, env: &[(&str, &str)]) -> Output {
        let script = root().join(".github/actions").join(name);
        self.command("bash")
            .arg(script)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", self.path("output"))
            .env("GITHUB_STEP_SUMMARY", self.path("summary.md"))
            .env("GITHUB_PATH", self.path("path"))
            .env("RUNNER_ACTION_STATE", self.path("state"))
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    /// A command in the job's directory with nothing of the test's environment but a
    /// PATH of the job's `bin` and the system's programs.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.dir)
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.path("bin").display()),
            )
            .env("HOME", &self.dir)
            .env("NO_COLOR", "1");
        command
    }

    /// The step outputs written so far (`name=value`, and `name<<DELIMITER` blocks).
    fn outputs(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(self.path("output")).unwrap();
        let mut outputs = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if let Some((name, delimiter)) = line.split_once("<<") {
                let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
                outputs.insert(name.to_string(), value.join("\n"));
            } else if let Some((name, value)) = line.split_once('=') {
                outputs.insert(name.to_string(), value.to_string());
            }
        }
        outputs
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// An agent of a scripted model whose answer has lines, markup and a pipe; it needs its
/// `topic` input.
const AGENT: &str = "name: ci-agent
model:
  provider: scripted
  name: ci-script
  script:
    - text: \"Noted: <b>bold</b> | cell\\nsecond line\"
inputs:
  topic: { type: string, required: true }
prompt: \"Say something about {{ topic }}.\"
";

#[test]
fn the_action_runs_an_agent_and_gives_its_outputs_and_summary() {
    let job = Job::new().with_runner();
    job.write("agents/ci.yaml", AGENT);

    let install = job.step("install.sh", &[("INPUT_VERSION", "installed")]);
    succeeded(&install);
    assert!(
        text(&install.stdout).starts_with("runner "),
        "{}",
        text(&install.stdout)
    );

    let run = job.step(
        "run.sh",
        &[
            ("INPUT_AGENT", "agents/ci.yaml"),
            ("INPUT_VARS", "# the topic\n  topic=pipelines  \n\n"),
            ("INPUT_ARGS", "--progress none --session ci-1"),
        ],
    );
    succeeded(&run);
    succeeded(&job.step("outputs.sh", &[]));
    succeeded(&job.step(
        "summary.sh",
        &[("INPUT_UPLOAD", "true"), ("INPUT_ARTIFACT", "agent-run")],
    ));

    let outputs = job.outputs();
    assert_eq!(outputs["method"], "installed");
    assert_eq!(outputs["status"], "completed");
    assert_eq!(outputs["exit-code"], "0");
    assert_eq!(outputs["output"], "Noted: <b>bold</b> | cell\nsecond line");
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&outputs["result-file"]).unwrap()).unwrap();
    assert_eq!(result["session_id"], "ci-1");
    // The `vars` line reached the prompt.
    let events = std::fs::read_to_string(Path::new(&outputs["run-dir"]).join("events.jsonl"));
    assert!(events.unwrap().contains("Say something about pipelines."));

    // runner wrote the run's summary (it saw GITHUB_ACTIONS=true), the script the artifact.
    let summary = std::fs::read_to_string(job.path("summary.md")).unwrap();
    let shown = support::markdown::shown(&summary);
    assert!(
        shown.text.contains("runner: ci-agent completed (exit 0)"),
        "{summary}"
    );
    assert!(
        shown
            .text
            .contains("Noted: <b>bold</b> | cell\nsecond line"),
        "{summary}"
    );
    assert!(
        shown
            .text
            .contains("The run directory is kept as the artifact agent-run."),
        "{summary}"
    );
}

#[test]
fn a_run_that_does_not_complete_is_its_exit_code_and_status_not_a_failed_step() {
    let job = Job::new().with_runner();
    job.write("agents/ci.yaml", AGENT);
    // The required input is missing: runner refuses the run, exit 2.
    succeeded(&job.step("run.sh", &[("INPUT_AGENT", "agents/ci.yaml")]));
    succeeded(&job.step("outputs.sh", &[]));
    let outputs = job.outputs();
    assert_eq!(outputs["status"], "invalid");
    assert_eq!(outputs["exit-code"], "2");
    assert_eq!(outputs["output"], "");

    // runner missing altogether: no envelope, and the summary says so.
    let job = Job::new();
    job.write("agents/ci.yaml", AGENT);
    succeeded(&job.step("run.sh", &[("INPUT_AGENT", "agents/ci.yaml")]));
    succeeded(&job.step("outputs.sh", &[]));
    succeeded(&job.step("summary.sh", &[]));
    assert_eq!(job.outputs()["status"], "unknown");
    assert_eq!(job.outputs()["exit-code"], "127");
    let summary = std::fs::read_to_string(job.path("summary.md")).unwrap();
    assert!(
        summary.contains("runner printed no result envelope (exit code: 127)"),
        "{summary}"
    );

    // A line of `vars` that is not NAME=VALUE stops the step before runner runs.
    let job = Job::new().with_runner();
    let run = job.step(
        "run.sh",
        &[("INPUT_AGENT", "agents/ci.yaml"), ("INPUT_VARS", "topic")],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(
        text(&run.stderr).contains("::error title=runner action::vars: `topic` is not NAME=VALUE")
    );
}

/// A directory of fake release assets: for each target, a tarball holding a `runner`
/// script that prints `runner VERSION (TARGET)`, and SHA256SUMS over them all.
fn release(job: &Job, version: &str, targets: &[&str]) -> PathBuf {
    let dir = job.path("release");
    std::fs::create_dir_all(&dir).unwrap();
    let mut sums = String::new();
    for target in targets {
        let staging = job.path(&format!("staging/{target}"));
        std::fs::create_dir_all(&staging).unwrap();
        let binary = staging.join("runner");
        std::fs::write(
            &binary,
            format!("#!/bin/sh\necho 'runner {version} ({target})'\n"),
        )
        .unwrap();
        let asset = format!("runner-{target}.tar.gz");
        let status = Command::new("tar")
            .arg("-czf")
            .arg(dir.join(&asset))
            .arg("-C")
            .arg(&staging)
            .arg("runner")
            .status()
            .unwrap();
        assert!(status.success());
        let sum = Command::new("sha256sum")
            .arg(dir.join(&asset))
            .output()
            .unwrap();
        let hash = text(&sum.stdout).split(' ').next().unwrap().to_string();
        sums.push_str(&format!("{hash}  {asset}\n"));
    }
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
    dir
}

fn install(job: &Job, env: &[(&str, &str)]) -> Output {
    job.command("sh")
        .arg(root().join("install.sh"))
        .env("RUNNER_INSTALL_DIR", job.path("installed"))
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// This machine's target, as install.sh names it.
fn this_target() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        other => panic!("no release is built for {other}"),
    };
    format!("{arch}-unknown-linux-musl")
}

#[test]
fn install_sh_installs_the_binary_for_this_platform_once_its_checksum_matches() {
    let job = Job::new();
    let targets = [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin",
    ];
    let assets = release(&job, "9.9.9", &targets);
    let base = format!("file://{}", assets.display());
    let installed = install(&job, &[("RUNNER_BASE_URL", &base)]);
    succeeded(&installed);
    let target = this_target();
    assert!(
        text(&installed.stderr).contains(&format!("({target}, SHA-256 checked)")),
        "{}",
        text(&installed.stderr)
    );
    let ran = job
        .command(job.path("installed/runner").to_str().unwrap())
        .output()
        .unwrap();
    assert_eq!(text(&ran.stdout), format!("runner 9.9.9 ({target})\n"));

    // The Action's install step: the release of its own tag, its directory on GITHUB_PATH.
    let step = job.step(
        "install.sh",
        &[
            ("ACTION_REF", "v9.9.9"),
            ("ACTION_REPOSITORY", "acme/runner"),
            ("RUNNER_BASE_URL", &base),
        ],
    );
    succeeded(&step);
    assert_eq!(job.outputs()["method"], "release");
    let path = std::fs::read_to_string(job.path("path")).unwrap();
    assert_eq!(path.trim(), job.path("state/bin").display().to_string());
    assert_eq!(text(&step.stdout), format!("runner 9.9.9 ({target})\n"));
}

#[test]
fn install_sh_refuses_a_binary_whose_checksum_does_not_match() {
    let job = Job::new();
    let target = this_target();
    let assets = release(&job, "9.9.9", &[&target]);
    // The asset is replaced after its checksum was taken (a tampered or broken download).
    let asset = assets.join(format!("runner-{target}.tar.gz"));
    let mut bytes = std::fs::read(&asset).unwrap();
    bytes.push(0);
    std::fs::write(&asset, bytes).unwrap();
    let base = format!("file://{}", assets.display());
    let refused = install(&job, &[("RUNNER_BASE_URL", &base)]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "error: checksum mismatch for runner-{target}.tar.gz"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("refusing to install it"), "{stderr}");
    assert!(!job.path("installed/runner").exists());

    // No SHA256SUMS: nothing to check against, nothing installed.
    std::fs::remove_file(assets.join("SHA256SUMS")).unwrap();
    let refused = install(&job, &[("RUNNER_BASE_URL", &base)]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("refusing to install an unchecked binary"));
    assert!(!job.path("installed/runner").exists());
}

#[test]
fn install_sh_builds_from_source_when_no_asset_fits_and_says_so() {
    let job = Job::new();
    let assets = release(&job, "9.9.9", &["x86_64-apple-darwin"]);
    let base = format!("file://{}", assets.display());
    let env = [
        ("RUNNER_BASE_URL", base.as_str()),
        ("RUNNER_TARGET", "riscv64gc-unknown-linux-gnu"),
        ("RUNNER_VERSION", "v9.9.9"),
        ("RUNNER_REPO", "acme/runner"),
    ];
    // Without cargo: a clear error, nothing installed.
    let failed = install(&job, &env);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains("no release asset runner-riscv64gc-unknown-linux-gnu.tar.gz at"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cargo is not installed either: install Rust (https://rustup.rs)"),
        "{stderr}"
    );

    // A cargo that records what it was asked and "builds" a runner where asked.
    job.write(
        "bin/cargo",
        "#!/bin/sh\necho \"$@\" > \"$HOME/cargo-args\"\nwhile [ \"$1\" != --root ]; do shift; done\nmkdir -p \"$2/bin\"\nprintf '#!/bin/sh\\necho built\\n' > \"$2/bin/runner\"\n",
    );
    let chmod = Command::new("chmod")
        .arg("+x")
        .arg(job.path("bin/cargo"))
        .status()
        .unwrap();
    assert!(chmod.success());
    let built = install(&job, &env);
    succeeded(&built);
    let args = std::fs::read_to_string(job.path("cargo-args")).unwrap();
    assert!(args.starts_with("install --locked --root "), "{args}");
    assert!(
        args.ends_with("--git https://github.com/acme/runner --tag v9.9.9 runner\n"),
        "{args}"
    );
    assert!(
        text(&built.stderr)
            .contains("building v9.9.9 of acme/runner from source with cargo install")
    );
    let ran = job
        .command(job.path("installed/runner").to_str().unwrap())
        .output()
        .unwrap();
    assert_eq!(text(&ran.stdout), "built\n");
}

/// Every shell script passes shellcheck (Debian's `shellcheck`; the check says why it
/// skips where it is not installed).
#[test]
fn every_shell_script_is_shellcheck_clean() {
    let available = Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !available {
        eprintln!("skipped: shellcheck (Debian's shellcheck package) is not installed");
        return;
    }
    let mut scripts = vec![root().join("install.sh")];
    for entry in std::fs::read_dir(root().join(".github/actions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sh") {
            scripts.push(path);
        }
    }
    let checked = Command::new("shellcheck").args(&scripts).output().unwrap();
    assert!(checked.status.success(), "{}", text(&checked.stdout));
}

/// The targets `.github/workflows/release.yml` builds (its `- target:` lines).
fn released_targets() -> Vec<String> {
    let workflow = std::fs::read_to_string(root().join(".github/workflows/release.yml")).unwrap();
    workflow
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- target: "))
        .map(str::to_string)
        .collect()
}

/// install.sh and the release workflow agree: on each system and architecture the release
/// is for (as `uname` names them), install.sh picks an asset the release builds, the right
/// one, and every asset built is picked on some machine.
#[test]
fn install_sh_finds_a_released_binary_on_every_platform_the_release_builds() {
    let targets = released_targets();
    let names: Vec<&str> = targets.iter().map(String::as_str).collect();
    let job = Job::new();
    let assets = release(&job, "9.9.9", &names);
    let base = format!("file://{}", assets.display());
    job.write(
        "bin/uname",
        "#!/bin/sh\ncase \"$1\" in -s) echo \"$FAKE_OS\" ;; -m) echo \"$FAKE_ARCH\" ;; esac\n",
    );
    let chmod = Command::new("chmod")
        .arg("+x")
        .arg(job.path("bin/uname"))
        .status()
        .unwrap();
    assert!(chmod.success());
    let machines = [
        ("Linux", "x86_64", "x86_64-unknown-linux-musl"),
        ("Linux", "aarch64", "aarch64-unknown-linux-musl"),
        ("Darwin", "x86_64", "x86_64-apple-darwin"),
        ("Darwin", "arm64", "aarch64-apple-darwin"),
    ];
    let mut picked = Vec::new();
    for (os, arch, expected) in machines {
        let installed = install(
            &job,
            &[
                ("RUNNER_BASE_URL", &base),
                ("FAKE_OS", os),
                ("FAKE_ARCH", arch),
            ],
        );
        succeeded(&installed);
        let ran = job
            .command(job.path("installed/runner").to_str().unwrap())
            .output()
            .unwrap();
        assert_eq!(
            text(&ran.stdout),
            format!("runner 9.9.9 ({expected})\n"),
            "{os} {arch}"
        );
        picked.push(expected.to_string());
    }
    picked.sort();
    let mut built = targets.clone();
    built.sort();
    assert_eq!(picked, built);
}

/// Serves the files of `dir` over HTTP on a loopback port (GET only; 404 for a missing
/// file) from a thread that lives as long as the test; each connection has a timeout.
fn serve_files(dir: PathBuf) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let timeout = Some(std::time::Duration::from_secs(5));
            let _ = stream.set_read_timeout(timeout);
            let mut request = String::new();
            if BufReader::new(&stream).read_line(&mut request).is_err() {
                continue;
            }
            let path = request
                .split(' ')
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/');
            let file = dir.join(path);
            let reply = match (path.contains(".."), std::fs::read(&file)) {
                (false, Ok(body)) => [
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes(),
                    body,
                ]
                .concat(),
                _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&reply);
        }
    });
    format!("http://{address}")
}

/// Over HTTP as from GitHub: the binary installed, and an asset the release lacks (a 404)
/// is the `cargo install` fallback with the reason.
#[test]
fn install_sh_over_http_installs_and_falls_back_on_a_404() {
    let job = Job::new();
    let target = this_target();
    let assets = release(&job, "9.9.9", &[&target]);
    let base = serve_files(assets);
    let installed = install(&job, &[("RUNNER_BASE_URL", &base)]);
    succeeded(&installed);
    let ran = job
        .command(job.path("installed/runner").to_str().unwrap())
        .output()
        .unwrap();
    assert_eq!(text(&ran.stdout), format!("runner 9.9.9 ({target})\n"));

    let missing = install(
        &job,
        &[
            ("RUNNER_BASE_URL", &base),
            ("RUNNER_TARGET", "aarch64-apple-darwin"),
        ],
    );
    assert_eq!(missing.status.code(), Some(1));
    let stderr = text(&missing.stderr);
    assert!(stderr.contains(&format!("no release asset runner-aarch64-apple-darwin.tar.gz at {base} (curl: (22) The requested URL returned error: 404")), "{stderr}");
    assert!(stderr.contains("cargo is not installed either"), "{stderr}");
}
