//! A NATS server with JetStream for the tests of `runner submit` and `runner worker`: the
//! real `nats-server` (Debian's package, installed by `.ci/run`) on 127.0.0.1, a free port,
//! its store in a temporary directory; stopped when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tempdir;

pub struct NatsServer {
    port: u16,
    store: PathBuf,
    child: Option<Child>,
}

impl NatsServer {
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut server = NatsServer {
            port,
            store: tempdir("nats"),
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

    fn launch(&mut self) {
        let child = Command::new("nats-server")
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
