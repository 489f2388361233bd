//! Many machines: `runner submit`, `runner worker` and `runner batch status|results` against
//! a real `nats-server` with JetStream on 127.0.0.1 and the mock model. Each worker runs in
//! a directory of its own (its machine); only NATS is shared. The agent appends a line to
//! `side-effects.log` through `shell`, then answers: a line written twice would be a side
//! effect repeated.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::{NatsServer, Ran, Running, Test, wait_until};

const AGENT: &str = "inputs:\n  n: { type: integer, required: true }\nprompt: \"Append {{ n }}\"\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n";

/// Appends its argument to the workspace's `side-effects.log` (an absolute path: each
/// worker runs the script from its own directory), then takes `pause` seconds.
fn append_script(test: &Test, pause: &str) -> String {
    let log = test.path("side-effects.log");
    format!(
        "#!/bin/sh\necho \"$1\" >> {}\nsleep {pause}\n",
        log.display()
    )
}

/// The model: append the input's line once, then answer (with usage, for the budget).
fn append_once(request: &MockRequest) -> Option<MockResponse> {
    let answered = request
        .conversation()
        .iter()
        .any(|message| message["role"] == "tool");
    let reply = match answered {
        true => Reply::text("appended"),
        false => {
            let prompt = request.last_user_text()?;
            let n = prompt.trim_start_matches("Append ");
            Reply::tool_call("shell", json!({"command": format!("./append.sh line-{n}")}))
        }
    };
    Some(MockResponse::reply(reply.with_usage(40, 10)))
}

fn inputs(count: u64) -> String {
    (1..=count)
        .map(|n| json!({"n": n}).to_string() + "\n")
        .collect()
}

/// A workspace with the agent, `count` inputs, and `workers` worker directories, each
/// with its copy of the script.
fn workspace(count: u64, workers: &[&str], pause: &str) -> Test {
    let mut test = Test::new()
        .agent(AGENT)
        .file("inputs.jsonl", &inputs(count))
        .route(append_once);
    let script = append_script(&test, pause);
    for worker in workers {
        test = test.executable(&format!("{worker}/append.sh"), &script);
    }
    test
}

fn submit(test: Test, nats: &NatsServer, batch: &str, more: &[&str]) -> Ran {
    let url = nats.url();
    let mut args = vec![
        "submit",
        "agent.yaml",
        "--inputs",
        "inputs.jsonl",
        "--nats",
        &url,
        "--batch-id",
        batch,
    ];
    args.extend(more);
    test.command_vec(args.iter().map(|a| a.to_string()).collect())
        .stdout(&format!("{batch}\n"))
        .any_stderr()
        .run()
}

/// A worker running in directory `dir` until killed.
fn worker(ran: &Ran, nats: &NatsServer, dir: &str, timing: &str) -> Running {
    ran.then()
        .cwd(dir)
        .command([
            "worker",
            "--nats",
            &nats.url(),
            "--ack-wait",
            timing,
            "--lease-ttl",
            timing,
        ])
        .status_any()
        .any_stderr()
        .spawn()
}

/// `runner batch status ID`'s line.
fn status(ran: &Ran, nats: &NatsServer, batch: &str) -> String {
    ran.then()
        .command(["batch", "status", batch, "--nats", &nats.url()])
        .run()
        .stdout
}

/// Waits until every input of the batch has its envelope; returns them by line.
fn finished(ran: &Ran, nats: &NatsServer, batch: &str, count: u64) -> BTreeMap<u64, Value> {
    let done = format!("{count} inputs · {count} done");
    let mut deadline = 0;
    while !status(ran, nats, batch).contains(&done) {
        deadline += 1;
        assert!(
            deadline < 240,
            "the batch did not finish: {}",
            status(ran, nats, batch)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let results = ran
        .then()
        .command(["batch", "results", batch, "--nats", &nats.url()])
        .run();
    results
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("each line is JSON"))
        .map(|envelope| (envelope["input"]["line"].as_u64().unwrap(), envelope))
        .collect()
}

/// Each line of `side-effects.log` once, `count` of them.
fn each_side_effect_once(ran: &Ran, count: u64) {
    let log = ran.read("side-effects.log");
    let mut lines: Vec<&str> = log.lines().collect();
    let total = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), total, "a call ran twice:\n{log}");
    assert_eq!(total as u64, count, "{log}");
}

#[test]
fn three_workers_share_a_batch_and_the_job_of_a_killed_worker_completes_once() {
    const INPUTS: u64 = 12;
    let nats = NatsServer::start();
    let submitted = submit(
        workspace(INPUTS, &["w1", "w2", "w3"], "1"),
        &nats,
        "three",
        &[],
    );
    let first = worker(&submitted, &nats, "w1", "2s");
    // w1 is in the middle of a job: its call appended the line and is still running.
    let jobs = submitted.path("w1/.runner/worker/jobs/three");
    let in_flight = || -> Option<u64> {
        let log = std::fs::read_to_string(submitted.path("side-effects.log")).ok()?;
        std::fs::read_dir(&jobs).ok()?.flatten().find_map(|entry| {
            let line: u64 = entry.file_name().to_str()?.parse().ok()?;
            let running = !entry.path().join("1/result.json").exists();
            (running && log.lines().any(|l| l == format!("line-{line}"))).then_some(line)
        })
    };
    wait_until("w1 runs a call", || in_flight().is_some());
    let line = in_flight().unwrap();
    let others = [
        worker(&submitted, &nats, "w2", "2s"),
        worker(&submitted, &nats, "w3", "2s"),
    ];
    let killed = first.kill();
    assert!(
        !killed
            .path(&format!(
                "w1/.runner/worker/jobs/three/{line}/1/result.json"
            ))
            .exists()
    );

    let results = finished(&submitted, &nats, "three", INPUTS);
    assert_eq!(
        results.keys().copied().collect::<Vec<_>>(),
        (1..=INPUTS).collect::<Vec<_>>()
    );
    for (n, envelope) in &results {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
        assert_eq!(envelope["session_id"], format!("three-{n}"));
    }
    each_side_effect_once(&submitted, INPUTS);
    // The killed worker's job went on elsewhere from its session: its call, in flight when
    // the worker died, was reported to the model as interrupted instead of run again.
    let resumed_elsewhere = ["w2", "w3"].iter().any(|w| {
        submitted
            .path(&format!("{w}/.runner/worker/jobs/three/{line}"))
            .is_dir()
    });
    assert!(
        resumed_elsewhere,
        "line {line} was not picked up by another worker"
    );
    let told = submitted.requests().iter().any(|request| {
        request.last_user_text().as_deref() == Some(&format!("Append {line}"))
            && request
                .conversation()
                .iter()
                .any(|m| m["role"] == "tool" && m["content"].to_string().contains("interrupted"))
    });
    assert!(
        told,
        "the model was not told that line {line}'s call was interrupted"
    );
    for worker in others {
        worker.kill();
    }
}

#[test]
fn a_nats_restart_mid_batch_loses_nothing() {
    const INPUTS: u64 = 16;
    let mut nats = NatsServer::start();
    let submitted = submit(
        workspace(INPUTS, &["w1", "w2"], "0.2"),
        &nats,
        "restart",
        &[],
    );
    let workers = [
        worker(&submitted, &nats, "w1", "5s"),
        worker(&submitted, &nats, "w2", "5s"),
    ];
    let log = submitted.path("side-effects.log");
    wait_until("three calls ran", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.lines().count() >= 3)
    });
    nats.restart();
    let results = finished(&submitted, &nats, "restart", INPUTS);
    assert_eq!(results.len() as u64, INPUTS);
    for (n, envelope) in &results {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
    }
    each_side_effect_once(&submitted, INPUTS);
    for worker in workers {
        worker.kill();
    }
}

#[test]
fn a_batch_budget_stops_new_jobs_and_bad_lines_get_their_own_envelopes() {
    let nats = NatsServer::start();
    let lines =
        "{\"n\": 1}\nnot json\n{\"n\": 2}\n{\"m\": 3}\n{\"n\": 3}\n{\"n\": 4}\n{\"n\": 5}\n";
    let test = workspace(0, &["w1"], "0").file("inputs.jsonl", lines);
    // Each job spends 100 tokens (two calls of 50): the third reaches 250.
    let submitted = submit(test, &nats, "budget", &["--max-tokens", "250"]);
    let one = worker(&submitted, &nats, "w1", "5s");
    let results = finished(&submitted, &nats, "budget", 7);
    let status = |line: u64| results[&line]["status"].as_str().unwrap().to_string();
    assert_eq!(status(2), "invalid");
    assert!(
        results[&2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 2"),
        "{}",
        results[&2]
    );
    assert_eq!(status(4), "invalid");
    assert!(
        results[&4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown input `m`"),
        "{}",
        results[&4]
    );
    let completed = [1, 3, 5, 6, 7]
        .iter()
        .filter(|l| status(**l) == "completed")
        .count();
    let stopped: Vec<&Value> = results
        .values()
        .filter(|e| e["error"]["code"] == "batch_budget")
        .collect();
    assert_eq!(completed, 3, "{results:?}");
    assert_eq!(stopped.len(), 2, "{results:?}");
    assert!(stopped.iter().all(|e| e["status"] == "limit_reached"));
    each_side_effect_once(&submitted, 3);
    // Waiting for it ends as a local batch would: the most severe status (invalid, 2).
    submitted
        .then()
        .command(["batch", "status", "budget", "--nats", &nats.url(), "--wait"])
        .status(2)
        .stdout_contains(
            "7 inputs · 7 done · 3 completed · 2 invalid · 2 limit reached · 300 tokens",
        )
        .run();
    // The same batch id again is refused.
    submitted
        .then()
        .command(["submit", "agent.yaml", "--inputs", "inputs.jsonl", "--nats", &nats.url(), "--batch-id", "budget"])
        .status(2)
        .stderr_contains("error: batch `budget` was submitted already: follow it with `runner batch status budget --nats")
        .run();
    one.kill();
}

#[test]
fn a_session_kept_in_nats_is_held_by_one_process_and_taken_over_when_its_lease_expires() {
    let nats = NatsServer::start();
    let url = nats.url();
    // A worker first, to make the lease bucket with a short time to live.
    let test = workspace(0, &[], "30").executable(
        "append.sh",
        "#!/bin/sh\necho \"$1\" >> side-effects.log\nsleep 30\n",
    );
    let made = test
        .command(["worker", "--nats", &url, "--lease-ttl", "1s"])
        .status_any()
        .any_stderr()
        .spawn();
    std::thread::sleep(Duration::from_millis(500));
    let ran = made.kill();
    let exec = ran
        .then()
        .command([
            "exec",
            "agent.yaml",
            "--var",
            "n=1",
            "--session",
            "s1",
            "--nats",
            &url,
        ])
        .status_any()
        .any_stderr()
        .spawn();
    wait_until("the call runs", || ran.path("side-effects.log").exists());
    // Another process is refused while the session is held.
    let resume = ["resume", "s1", "--nats", &url].map(String::from).to_vec();
    ran.then()
        .command_vec(resume.clone())
        .status(2)
        .stderr_contains("session `s1` is held by another runner process (runner on ")
        .run();
    // Its holder dies without letting go: the lease expires, and the session goes on
    // elsewhere, its call in flight reported as interrupted, not run again.
    exec.kill();
    std::thread::sleep(Duration::from_millis(3000));
    let resumed = ran
        .then()
        .command_vec(resume)
        .stdout("appended\n")
        .any_stderr()
        .run();
    assert_eq!(resumed.read("side-effects.log"), "line-1\n");
    let last = resumed.requests().last().cloned().unwrap();
    assert!(
        last.conversation()
            .iter()
            .any(|m| m["content"].to_string().contains("interrupted"))
    );
}

#[test]
fn a_workers_job_reaches_its_session_through_the_worker_and_its_tools_get_no_way_in() {
    let nats = NatsServer::start();
    // The tool notes what it was given: its open descriptors, and the command line of the
    // run that started it.
    let probe = "#!/bin/sh\nls -l /proc/$$/fd > fds.txt\np=$PPID\nwhile [ \"$p\" -gt 1 ]; do\n  c=$(tr '\\0' ' ' < /proc/$p/cmdline)\n  case \"$c\" in *\" exec \"*) echo \"$c\" > run.txt; break;; esac\n  p=$(cut -d' ' -f4 /proc/$p/stat)\ndone\n";
    let test = Test::new()
        .agent(
            "inputs:\n  n: { type: integer, required: true }\nprompt: \"Probe {{ n }}\"\ntools:\n  - builtin: shell\n    allow: [./probe.sh]\n",
        )
        .file("inputs.jsonl", &inputs(1))
        .executable("w1/probe.sh", probe)
        .route(|request| {
            let probed = request.conversation().iter().any(|m| m["role"] == "tool");
            Some(MockResponse::reply(match probed {
                true => Reply::text("probed"),
                false => Reply::tool_call("shell", json!({"command": "./probe.sh"})),
            }))
        });
    let submitted = submit(test, &nats, "probe", &[]);
    let one = worker(&submitted, &nats, "w1", "5s");
    let results = finished(&submitted, &nats, "probe", 1);
    assert_eq!(results[&1]["status"], "completed", "{}", results[&1]);
    let run = submitted.read("w1/run.txt");
    assert!(run.contains("--sessions-fd"), "{run}");
    assert!(!run.contains("--nats"), "the run connected itself: {run}");
    let fds = submitted.read("w1/fds.txt");
    assert!(
        !fds.contains("socket:"),
        "a tool was given a socket:\n{fds}"
    );
    // The session is in NATS, completed, as a run with its own connection leaves it.
    submitted
        .then()
        .command(["resume", "probe-1", "--nats", &nats.url()])
        .status(2)
        .stderr_contains("session `probe-1` is completed")
        .run();
    one.kill();
}

#[test]
fn a_job_whose_session_completed_before_its_envelope_was_stored_gets_the_sessions_envelope() {
    let nats = NatsServer::start();
    let url = nats.url();
    // The session the batch's line 1 will use exists already, completed, and no envelope
    // is stored: as if its worker died between the two (or the job was published twice).
    let test = workspace(1, &["w1"], "0")
        .executable("append.sh", "#!/bin/sh\necho \"$1\" >> before.log\n");
    let ran = test
        .command([
            "exec",
            "agent.yaml",
            "--var",
            "n=1",
            "--session",
            "dup-1",
            "--nats",
            &url,
        ])
        .stdout("appended\n")
        .any_stderr()
        .run();
    let submitted = submit(ran.then(), &nats, "dup", &[]);
    let one = worker(&submitted, &nats, "w1", "5s");
    let results = finished(&submitted, &nats, "dup", 1);
    // Its first run, a new session, was refused; then, rather than a resume (which a
    // completed session refuses), the envelope is the session's: nothing ran again.
    let first = submitted.read("w1/.runner/worker/jobs/dup/1/1/stderr.log");
    assert!(first.contains("session `dup-1` already exists"), "{first}");
    let envelope = &results[&1];
    assert_eq!(envelope["status"], "completed", "{envelope}");
    assert_eq!(envelope["output"], "appended", "{envelope}");
    assert_eq!(envelope["steps"], 2, "{envelope}");
    assert_eq!(envelope["usage"]["total_tokens"], 100, "{envelope}");
    assert!(
        envelope["warnings"][0]
            .as_str()
            .unwrap()
            .contains("rebuilt from session `dup-1`"),
        "{envelope}"
    );
    assert!(!submitted.path("w1/.runner/worker/jobs/dup/1/2").exists());
    assert_eq!(submitted.read("before.log"), "line-1\n");
    assert!(
        !submitted.path("side-effects.log").exists(),
        "the call ran again"
    );
    one.kill();
}

// ---- Batches under chaos (#46): whatever is killed when, every input ends with its
// envelope, and no effect runs twice.

#[test]
fn a_run_cut_off_by_its_workers_death_is_resumed_at_the_next_delivery_not_failed() {
    let nats = NatsServer::start();
    let freezer = nats.freezer();
    let frozen = Arc::new(AtomicBool::new(false));
    let test = Test::new()
        .agent(AGENT)
        .file("inputs.jsonl", &inputs(1))
        .route({
            let frozen = frozen.clone();
            move |request| {
                // The model's first answer reaches the run with the server frozen: the
                // save before its call hangs in the worker, the run waiting on its relay.
                if !frozen.swap(true, Ordering::SeqCst) {
                    freezer.freeze();
                }
                append_once(request)
            }
        });
    let script = append_script(&test, "0");
    let submitted = submit(test.executable("w1/append.sh", &script), &nats, "cut", &[]);
    let first = worker(&submitted, &nats, "w1", "2s");
    wait_until("the model answered", || frozen.load(Ordering::SeqCst));
    std::thread::sleep(Duration::from_millis(500));
    // The worker dies mid-save: its run loses its relay to the session store.
    first.kill();
    let left = submitted.path("w1/.runner/worker/jobs/cut/1/1/result.json");
    wait_until("the orphaned run ends", || left.exists());
    freezer.thaw();
    let orphan = support::read_json(&left);
    // Cut off, it is interrupted, never failed. On a loaded machine the saves before the
    // freeze can all have gone through and only the final one hangs: the run then ends
    // completed with that save's warning, and the delivery below still decides.
    assert!(
        orphan["status"] == "interrupted"
            || (orphan["status"] == "completed"
                && orphan["warnings"][0]
                    .as_str()
                    .is_some_and(|w| w.starts_with("the final checkpoint was not saved"))),
        "{orphan}"
    );

    // The job's next delivery (the worker restarted on the same directory) resumes it.
    let again = worker(&submitted, &nats, "w1", "2s");
    let results = finished(&submitted, &nats, "cut", 1);
    assert_eq!(results[&1]["status"], "completed", "{}", results[&1]);
    if orphan["status"] == "interrupted" {
        assert!(submitted.path("w1/.runner/worker/jobs/cut/1/2").is_dir());
    }
    each_side_effect_once(&submitted, 1);
    again.kill();
}

/// A worker of two slots for the chaos tests: jobs of a dead worker go elsewhere after 2 s.
fn chaos_worker(ran: &Ran, url: &str, dir: &str) -> Running {
    ran.then()
        .cwd(dir)
        .command([
            "worker",
            "--nats",
            url,
            "-j",
            "2",
            "--ack-wait",
            "2s",
            "--lease-ttl",
            "2s",
        ])
        .status_any()
        .any_stderr()
        .spawn()
}

/// `runner batch status ID` once; empty while the server is away.
fn status_now(ran: &Ran, url: &str, batch: &str) -> String {
    ran.then()
        .command(["batch", "status", batch, "--nats", url])
        .status_any()
        .any_stderr()
        .run()
        .stdout
}

/// Every line of `side-effects.log` is one of the `count` inputs', none twice; returns
/// how many inputs' effects ran (a call killed before its program started has none).
fn each_side_effect_at_most_once(ran: &Ran, count: u64) -> usize {
    let log = std::fs::read_to_string(ran.path("side-effects.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    let total = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), total, "a call ran twice:\n{log}");
    let known = |line: &&str| {
        line.strip_prefix("line-")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| (1..=count).contains(&n))
    };
    assert!(lines.iter().all(known), "{log}");
    total
}

/// How many model requests were told a call was interrupted (the at-most-once window: a
/// kill between a call's start record and its end).
fn calls_answered_interrupted(ran: &Ran) -> usize {
    ran.requests()
        .iter()
        .filter(|request| {
            request
                .conversation()
                .iter()
                .any(|m| m["role"] == "tool" && m["content"].to_string().contains("interrupted"))
        })
        .count()
}

#[test]
fn a_batch_survives_a_worker_killed_every_second_and_a_nats_restart() {
    const INPUTS: u64 = 300;
    let mut nats = NatsServer::start();
    let url = nats.url();
    let dirs = ["w1", "w2"];
    let submitted = submit(workspace(INPUTS, &dirs, "0"), &nats, "chaos", &[]);
    // Waiting for the batch is one command that ends by itself, whatever happens meanwhile.
    let waiting = submitted
        .then()
        .command(["batch", "status", "chaos", "--nats", &url, "--wait"])
        .stdout_contains("batch chaos · 300 inputs · 300 done · 300 completed")
        .any_stderr()
        .spawn();
    let mut workers: Vec<Option<Running>> = dirs
        .iter()
        .map(|dir| Some(chaos_worker(&submitted, &url, dir)))
        .collect();
    let mut kills = 0;
    while !status_now(&submitted, &url, "chaos").contains("300 inputs · 300 done") {
        assert!(kills < 150, "the batch did not finish after {kills} kills");
        std::thread::sleep(Duration::from_secs(1));
        // Every second a worker dies (SIGKILL: its runs die with it) and is started again.
        let which = kills % dirs.len();
        if let Some(worker) = workers[which].take() {
            worker.kill();
        }
        workers[which] = Some(chaos_worker(&submitted, &url, dirs[which]));
        kills += 1;
        if kills == 1 {
            nats.restart();
        }
    }
    assert!(
        kills >= 3,
        "the batch ended before the chaos did much ({kills} kills): give it more inputs"
    );
    let results = finished(&submitted, &nats, "chaos", INPUTS);
    assert_eq!(results.len() as u64, INPUTS);
    for (n, envelope) in &results {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
    }
    waiting.wait();
    let effects = each_side_effect_at_most_once(&submitted, INPUTS);
    eprintln!(
        "chaos: {kills} kills, 1 NATS restart; {effects} effects for {INPUTS} inputs; {} calls answered as interrupted",
        calls_answered_interrupted(&submitted)
    );
    for worker in workers.into_iter().flatten() {
        worker.kill();
    }
}

#[test]
fn a_worker_that_cannot_write_its_directory_hands_its_jobs_to_another() {
    const INPUTS: u64 = 3;
    let nats = NatsServer::start();
    // w1's directory for job runs is a file: every write there fails, as on a full disk.
    let test = workspace(INPUTS, &["w1", "w2"], "0").file("w1/.runner/worker/jobs", "");
    let submitted = submit(test, &nats, "disk", &[]);
    let broken = worker(&submitted, &nats, "w1", "5s");
    let stderr_says = |ran: &Ran| {
        ran.stderr
            .contains("this worker cannot write its directory")
    };
    wait_until("w1 took a job", || {
        submitted
            .path("w1/.runner/worker/bundles")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
    });
    let healthy = worker(&submitted, &nats, "w2", "5s");
    let results = finished(&submitted, &nats, "disk", INPUTS);
    for (n, envelope) in &results {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
    }
    each_side_effect_once(&submitted, INPUTS);
    let broken = broken.kill();
    assert!(stderr_says(&broken), "{}", broken.stderr);
    healthy.kill();
}

/// What a publisher with no `runner` at all can put on the server: a value in a bucket,
/// as JSON.
fn forge(nats: &NatsServer, subject: &str, value: &Value) {
    let ack = nats.publish(subject, value.to_string().as_bytes());
    assert!(ack.contains("\"seq\""), "not stored: {ack}");
}

/// A publisher writes jobs and batches by hand: a bundle whose agent is `../` or an absolute
/// path (a file of the worker's disk), and a job whose batch id is an absolute path (a
/// directory outside the worker's). The worker refuses each, runs nothing of them, writes
/// nowhere, and goes on with the batch `runner submit` published.
#[test]
fn a_forged_job_or_bundle_cannot_leave_the_workers_directory() {
    let nats = NatsServer::start();
    let test = workspace(0, &["w1"], "0").file(
        "w1/evil.yaml",
        "name: evil\nmodel: $MODEL\ninputs:\n  n: { type: integer }\nprompt: EVIL\n",
    );
    // A first submit makes the stream and the buckets.
    let made = submit(test, &nats, "setup", &[]);
    let outside = made.path("outside");
    let evil = made.path("w1/evil.yaml");
    let batch = |id: &str, bundle: &str| json!({"version": 1, "batch_id": id, "agent_name": "test-agent", "bundle": bundle, "created": "2026-11-27T00:00:00Z"});
    let job = |id: &str| json!({"version": 1, "batch_id": id, "line": 1, "values": {"n": 1}});
    let mut bundle = runner::nats::bundle::Bundle::of(&made.path("agent.yaml")).unwrap();
    let (good, good_sha) = bundle.encode();
    assert!(
        nats.publish(&format!("$KV.runner_bundles.{good_sha}"), &good)
            .contains("\"seq\"")
    );
    for (id, agent) in [
        ("upward", "../../../../evil.yaml".to_string()),
        ("absolute", evil.display().to_string()),
    ] {
        bundle.agent = agent;
        let (bytes, sha) = bundle.encode();
        assert!(
            nats.publish(&format!("$KV.runner_bundles.{sha}"), &bytes)
                .contains("\"seq\"")
        );
        forge(&nats, &format!("$KV.runner_batches.{id}"), &batch(id, &sha));
        forge(&nats, &format!("runner.jobs.{id}"), &job(id));
    }
    let outside_id = outside.display().to_string();
    forge(
        &nats,
        &format!("$KV.runner_batches.{outside_id}"),
        &batch(&outside_id, &good_sha),
    );
    forge(&nats, "runner.jobs.outside", &job(&outside_id));

    let after = made.then().file("inputs.jsonl", &inputs(1));
    let submitted = submit(after, &nats, "after", &[]);
    let one = worker(&submitted, &nats, "w1", "5s");
    let results = finished(&submitted, &nats, "after", 1);
    assert_eq!(results[&1]["status"], "completed", "{}", results[&1]);
    let stopped = one.kill();
    let wrote_outside = outside.exists();
    let ran_evil = submitted
        .requests()
        .iter()
        .any(|r| r.last_user_text().as_deref() == Some("EVIL"));
    assert!(!ran_evil, "the worker ran a file of its own disk");
    assert!(!wrote_outside, "the worker wrote outside its directory");
    // The forged batches' jobs are recorded as invalid inputs, not handed back forever.
    for refusal in [
        "is refused: its batch_id",
        "upward line 1: refused: bundle ",
        "absolute line 1: refused: bundle ",
        "upward line 1: invalid in ",
        "the agent: bundle file \"../../../../evil.yaml\" is not a path inside the bundle",
    ] {
        assert!(
            stopped.stderr.contains(refusal),
            "{refusal}:\n{}",
            stopped.stderr
        );
    }
}

/// A line whose job is more than the server takes in a message is recorded as an invalid
/// input, as a bad line is; the other lines are published, and the batch ends.
#[test]
fn a_line_over_the_servers_message_limit_is_an_invalid_input_and_the_batch_ends() {
    let nats = NatsServer::with_max_payload(16 * 1024);
    let agent = "inputs:\n  n: { type: integer, required: true }\n  note: { type: string }\nprompt: \"Append {{ n }}\"\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n";
    let big = "x".repeat(32 * 1024);
    let lines = format!("{{\"n\": 1}}\n{{\"n\": 2, \"note\": \"{big}\"}}\n{{\"n\": 3}}\n");
    let test = workspace(0, &["w1"], "0")
        .agent(agent)
        .file("inputs.jsonl", &lines);
    let submitted = submit(test, &nats, "big", &[]);
    assert!(
        submitted
            .stderr
            .contains("2 jobs, 1 invalid lines recorded"),
        "{}",
        submitted.stderr
    );
    let one = worker(&submitted, &nats, "w1", "5s");
    submitted
        .then()
        .command(["batch", "status", "big", "--nats", &nats.url(), "--wait"])
        .status(2)
        .stdout_contains("3 inputs · 3 done · 2 completed · 1 invalid")
        // A line every half second while it waits, as many as the machine's speed makes.
        .any_stderr()
        .run();
    let results = finished(&submitted, &nats, "big", 3);
    let message = results[&2]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("line 2: its job is")
            && message.contains("more than the NATS server takes"),
        "{message}"
    );
    each_side_effect_once(&submitted, 2);
    one.kill();
}

/// The stream a bucket's values are kept in (`runner_results` → `KV_runner_results`).
fn bucket_stream(bucket: &str) -> String {
    format!("KV_{bucket}")
}

/// `runner submit` killed (SIGKILL) midway through a batch, then run again with the same
/// arguments, completes it: every job is published once, every input completes, each
/// effect runs once, and a `batch status --wait` begun meanwhile ends by itself.
#[test]
fn a_submit_killed_midway_completes_the_batch_when_run_again() {
    const INPUTS: u64 = 40;
    const FIRST: u64 = 20;
    let nats = NatsServer::start();
    let url = nats.url();
    let test = Test::new().agent(AGENT).route(append_once);
    let script = append_script(&test, "0");
    let test = test.executable("w1/append.sh", &script);
    // The inputs come down a pipe whose writer (this test) gives the first 20 lines and
    // then waits: the submit is midway, whatever the machine's speed.
    let fifo = test.path("inputs.jsonl");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    // Read and write: opening it does not wait for the reader, and the lines stay in the
    // pipe until the submit reads them.
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    std::io::Write::write_all(&mut pipe, inputs(FIRST).as_bytes()).unwrap();
    let args: Vec<String> = [
        "submit",
        "agent.yaml",
        "--inputs",
        "inputs.jsonl",
        "--nats",
        &url,
        "--batch-id",
        "midway",
    ]
    .map(String::from)
    .to_vec();
    let first = test
        .command_vec(args.clone())
        .status_any()
        .any_stderr()
        .spawn();
    let stored = || nats.stream_state("RUNNER_JOBS")["last_seq"].as_u64();
    wait_until("the first 20 jobs are in the stream", || {
        stored() == Some(FIRST)
    });
    let killed = first.kill();
    assert_eq!(killed.stdout, "", "the first submit finished");
    drop(pipe);
    std::fs::remove_file(&fifo).unwrap();
    std::fs::write(&fifo, inputs(INPUTS)).unwrap();

    // Meanwhile the batch says it is not all submitted, and a wait for it waits.
    assert!(
        status_now(&killed, &url, "midway").contains("still being submitted"),
        "{}",
        status_now(&killed, &url, "midway")
    );
    let waiting = killed
        .then()
        .command(["batch", "status", "midway", "--nats", &url, "--wait"])
        .stdout_contains("batch midway · 40 inputs · 40 done · 40 completed")
        .any_stderr()
        .spawn();
    // A worker runs the jobs already there, so some are acknowledged (gone from the
    // stream) before the submit runs again.
    let one = worker(&killed, &nats, "w1", "5s");
    let log = killed.path("side-effects.log");
    wait_until("ten jobs ran", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.lines().count() >= 10)
    });
    let again = killed
        .then()
        .command_vec(args)
        .stdout("midway\n")
        .stderr_contains("submitted batch midway: 40 jobs, 0 invalid lines recorded")
        .run();

    let results = finished(&again, &nats, "midway", INPUTS);
    assert_eq!(
        results.keys().copied().collect::<Vec<_>>(),
        (1..=INPUTS).collect::<Vec<_>>()
    );
    for (n, envelope) in &results {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
    }
    waiting.wait();
    each_side_effect_once(&again, INPUTS);
    // Each job was stored once in the stream, and each envelope once in its bucket.
    let jobs = nats.stream_state("RUNNER_JOBS");
    assert_eq!(jobs["last_seq"], INPUTS, "{jobs}");
    assert_eq!(jobs["messages"], 0, "{jobs}");
    let envelopes = nats.stream_state(&bucket_stream("runner_results"));
    assert_eq!(envelopes["last_seq"], INPUTS, "{envelopes}");
    one.kill();
}

/// Freezes (SIGSTOP) or thaws (SIGCONT) a running command, as a machine that stalls (a
/// long GC pause, a VM migrated, a laptop put to sleep) and then wakes up.
fn signal(running: &Running, signal: libc::c_int) {
    // SAFETY: kill(2) of the test's own child, not yet reaped.
    unsafe { libc::kill(running.pid() as libc::pid_t, signal) };
}

/// Two workers given the same job at once: worker 1 stalls (frozen) past its lease and
/// its ack wait while its run's call is still running; JetStream gives the job to worker
/// 2, which takes the session once the lease has expired and completes it, the call in
/// flight reported to the model as interrupted. When worker 1 wakes up and its call ends,
/// its run's writes are refused: it stops `interrupted` and overwrites nothing. The call
/// ran once, the envelope was stored once, and it is worker 2's.
#[test]
fn a_worker_that_stalls_past_its_lease_while_another_takes_its_job_changes_nothing() {
    let nats = NatsServer::start();
    let test = Test::new()
        .agent(AGENT)
        .file("inputs.jsonl", &inputs(1))
        .route(append_once);
    // The call appends its line, then waits until the test lets it go (30 s at most).
    let script = format!(
        "#!/bin/sh\necho \"$1\" >> {}\ni=0\nwhile [ ! -e {} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n",
        test.path("side-effects.log").display(),
        test.path("release").display()
    );
    let test = test
        .executable("w1/append.sh", &script)
        .executable("w2/append.sh", &script);
    let submitted = submit(test, &nats, "twice", &[]);
    let first = worker(&submitted, &nats, "w1", "2s");
    let log = submitted.path("side-effects.log");
    wait_until("w1's call runs", || log.exists());
    signal(&first, libc::SIGSTOP);
    // Past w1's ack wait the job goes to w2, which waits for w1's lease to expire.
    let second = worker(&submitted, &nats, "w2", "2s");
    let results = finished(&submitted, &nats, "twice", 1);
    let envelope = results[&1].clone();
    assert_eq!(envelope["status"], "completed", "{envelope}");
    assert_eq!(
        calls_answered_interrupted(&submitted),
        1,
        "w2 did not go on from w1's call in flight"
    );

    let sessions = || nats.stream_state(&bucket_stream("runner_sessions"))["last_seq"].clone();
    let written = sessions();
    assert!(written.as_u64().is_some_and(|n| n > 0), "{written}");

    // w1's call ends, then w1 wakes up: its run's next checkpoint is refused.
    std::fs::write(submitted.path("release"), "").unwrap();
    signal(&first, libc::SIGCONT);
    let left = submitted.path("w1/.runner/worker/jobs/twice/1/1/result.json");
    wait_until("w1's run ends", || left.exists());
    let orphan = support::read_json(&left);
    assert_eq!(orphan["status"], "interrupted", "{orphan}");
    assert!(
        orphan.to_string().contains("no longer holds the session"),
        "{orphan}"
    );
    assert_ne!(orphan["run_id"], envelope["run_id"]);
    assert_eq!(sessions(), written, "w1 wrote to the session after w2");

    let stopped = first.kill();
    second.kill();
    let results = finished(&stopped, &nats, "twice", 1);
    assert_eq!(results[&1], envelope, "the stored envelope changed");
    let stored = nats.stream_state(&bucket_stream("runner_results"));
    assert_eq!(
        stored["last_seq"], 1,
        "the envelope was stored twice: {stored}"
    );
    assert_eq!(stopped.read("side-effects.log"), "line-1\n");
    // The session is w2's, completed: w1 wrote nothing after it.
    stopped
        .then()
        .command(["resume", "twice-1", "--nats", &nats.url()])
        .status(2)
        .stderr_contains("session `twice-1` is completed")
        .run();
}

/// A job whose agent names a project model, submitted with `--model` naming another, runs
/// on a worker with no copy of the project: the bundle carries the project file with the
/// agent files.
#[test]
fn a_named_model_travels_with_the_bundle() {
    let nats = NatsServer::start();
    let model = |name: &str| {
        format!(
            "{{ provider: openai, name: {name}, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY }}"
        )
    };
    let project = format!(
        "models:\n  smart: {}\n  fast: {}\n",
        model("smart-model"),
        model("fast-model")
    );
    let agent = format!("name: test-agent\nmodel: smart\n{AGENT}");
    let test = workspace(2, &["w1"], "0")
        .file("runner.yaml", &project)
        .file("agent.yaml", &agent)
        // The worker's machine: its own repository, without the project file.
        .file("w1/.git/HEAD", "ref: refs/heads/main\n");
    let submitted = submit(test, &nats, "named", &["--model", "fast"]);
    let one = worker(&submitted, &nats, "w1", "5s");
    let results = finished(&submitted, &nats, "named", 2);
    for (n, envelope) in &results {
        assert_eq!(envelope["status"], "completed", "line {n}: {envelope}");
    }
    let asked: Vec<String> = one
        .requests()
        .iter()
        .map(|r| r.model().to_string())
        .collect();
    assert!(asked.iter().all(|m| m == "fast-model"), "{asked:?}");
    one.kill();
}
