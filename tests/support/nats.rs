//! A NATS server with JetStream for the tests of `runner submit` and `runner worker`: the
//! real `nats-server` (Debian's package, installed by `.ci/run`) on 127.0.0.1, a free port,
//! its store in a temporary directory; stopped when dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tempdir;

pub struct NatsServer {
    port: u16,
    store: PathBuf,
    /// A configuration file given with `-c`, when the test needs one.
    config: Option<PathBuf>,
    child: Option<Child>,
}

impl NatsServer {
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// A server that takes messages of at most `bytes` (its `max_payload`).
    pub fn with_max_payload(bytes: usize) -> Self {
        Self::start_with(Some(format!("max_payload: {bytes}\n")))
    }

    fn start_with(config: Option<String>) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let store = tempdir("nats");
        let config = config.map(|text| {
            let path = store.with_extension("conf");
            std::fs::write(&path, text).expect("write the server's configuration");
            path
        });
        let mut server = NatsServer {
            port,
            store,
            config,
            child: None,
        };
        server.launch();
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stops the server (SIGTERM: it stops as a supervisor would stop it) and starts it
    /// again on the same port and store.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// A handle that freezes the server (SIGSTOP) and thaws it (SIGCONT), for a test that
    /// needs a write to hang at a given moment: it can be moved into the mock's route.
    pub fn freezer(&self) -> Freezer {
        Freezer {
            pid: self.child.as_ref().expect("the server runs").id() as libc::pid_t,
        }
    }

    /// Publishes `payload` on `subject` as any client allowed to publish can, speaking the
    /// NATS text protocol over a plain socket; returns JetStream's acknowledgement (the
    /// reply to the message), e.g. `{"stream":"RUNNER_JOBS","seq":3}`.
    pub fn publish(&self, subject: &str, payload: &[u8]) -> String {
        let mut socket = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to NATS");
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut lines = BufReader::new(socket.try_clone().unwrap());
        let mut line = String::new();
        lines.read_line(&mut line).expect("the server's INFO");
        let mut message = format!(
            "CONNECT {{\"verbose\":false,\"pedantic\":false}}\r\nSUB ack.raw 1\r\nPUB {subject} ack.raw {}\r\n",
            payload.len()
        )
        .into_bytes();
        message.extend_from_slice(payload);
        message.extend_from_slice(b"\r\n");
        socket.write_all(&message).unwrap();
        loop {
            line.clear();
            let read = lines.read_line(&mut line).expect("the acknowledgement");
            assert!(read > 0, "NATS closed the connection");
            if line.starts_with("PING") {
                socket.write_all(b"PONG\r\n").unwrap();
            } else if line.starts_with("-ERR") {
                panic!("NATS refused the message: {line}");
            } else if line.starts_with("MSG ack.raw") {
                line.clear();
                lines.read_line(&mut line).unwrap();
                return line.trim_end().to_string();
            }
        }
    }

    /// The state of a JetStream stream (`messages`, `first_seq`, `last_seq`, ...), asked
    /// of the server's JetStream API as any client can; `Null` while there is no such
    /// stream. `last_seq` counts every message the stream ever stored: a job or a value
    /// stored twice shows there, even once it is gone.
    pub fn stream_state(&self, stream: &str) -> serde_json::Value {
        let info = self.publish(&format!("$JS.API.STREAM.INFO.{stream}"), b"");
        let info: serde_json::Value = serde_json::from_str(&info).unwrap_or_default();
        info["state"].clone()
    }

    fn launch(&mut self) {
        let mut command = Command::new("nats-server");
        if let Some(config) = &self.config {
            command.arg("-c").arg(config);
        }
        let child = command
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(&self.store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start nats-server ({error}): install it (`apt-get install nats-server`)"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not start listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) of our own child, not yet reaped (thawed first, in case a
            // test froze it).
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGCONT);
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.store);
        if let Some(config) = &self.config {
            let _ = std::fs::remove_file(config);
        }
    }
}

/// Freezes and thaws one run of the server (`NatsServer::freezer`).
#[derive(Debug, Clone, Copy)]
pub struct Freezer {
    pid: libc::pid_t,
}

impl Freezer {
    pub fn freeze(&self) {
        // SAFETY: kill(2) of the test's own nats-server child, still running.
        unsafe { libc::kill(self.pid, libc::SIGSTOP) };
    }

    pub fn thaw(&self) {
        // SAFETY: as in `freeze`.
        unsafe { libc::kill(self.pid, libc::SIGCONT) };
    }
}
