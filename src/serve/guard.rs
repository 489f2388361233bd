//! What keeps a slow or idle client from holding the server (slowloris): at most
//! `--max-connections` connections are open at once (the next one waits in the kernel's
//! backlog until one closes), and each must send a request's head (its line and headers)
//! within the header timeout of starting it, and start a new one within the idle timeout of
//! the last answer it was written. A client that does not is disconnected. A request's body
//! and a long answer (an event stream) are not timed: the body is bounded in size, and an
//! event stream writes at least a comment every 15 seconds.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep, sleep};

/// How long a connection may stay open with no request after its last answer (or its
/// accept), and how long a request's head may take from its first byte.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
}

/// The TCP listener, with the connections it hands out counted and timed.
pub struct Guarded {
    listener: TcpListener,
    open: Arc<Semaphore>,
    timeouts: Timeouts,
}

impl Guarded {
    pub fn new(listener: TcpListener, max_connections: usize, timeouts: Timeouts) -> Self {
        Guarded {
            listener,
            open: Arc::new(Semaphore::new(max_connections)),
            timeouts,
        }
    }
}

impl Listener for Guarded {
    type Io = Connection;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Connection, std::net::SocketAddr) {
        // A slot first: past the cap, a client waits in the backlog instead of being held.
        let permit = self
            .open
            .clone()
            .acquire_owned()
            .await
            .expect("the connections' semaphore is never closed");
        let (stream, address) = Listener::accept(&mut self.listener).await;
        // Without TCP_NODELAY an answer written in pieces (an SSE response's head, then its
        // events) waits for the client's delayed ACK: 40 ms per `/mcp` call on Linux.
        let _ = stream.set_nodelay(true);
        (Connection::new(stream, permit, self.timeouts), address)
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// Where a connection is in its exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Accepted, or answered: waiting for a request (the idle timeout).
    Idle,
    /// Reading a request's head (the header timeout); `matched`: how much of the blank
    /// line that ends it was seen.
    Head { matched: usize },
    /// The head is read: its body, then its answer (not timed).
    Served,
}

/// One accepted connection: its slot of the cap, and its deadline.
pub struct Connection {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    timeouts: Timeouts,
    phase: Phase,
    deadline: Pin<Box<Sleep>>,
}

const END_OF_HEAD: &[u8] = b"\r\n\r\n";

impl Connection {
    fn new(stream: TcpStream, slot: OwnedSemaphorePermit, timeouts: Timeouts) -> Self {
        Connection {
            stream,
            _slot: slot,
            timeouts,
            phase: Phase::Idle,
            deadline: Box::pin(sleep(timeouts.idle)),
        }
    }

    /// Follows the head through the bytes just read: it starts with the first byte after
    /// an answer, and ends at its blank line.
    fn saw(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match self.phase {
                Phase::Served => return,
                Phase::Idle => {
                    self.phase = Phase::Head { matched: 0 };
                    let until = Instant::now() + self.timeouts.header;
                    self.deadline.as_mut().reset(until);
                    self.step(byte);
                }
                Phase::Head { .. } => self.step(byte),
            }
        }
    }

    fn step(&mut self, byte: u8) {
        let Phase::Head { matched } = self.phase else {
            return;
        };
        let matched = if byte == END_OF_HEAD[matched] {
            matched + 1
        } else {
            usize::from(byte == END_OF_HEAD[0])
        };
        self.phase = match matched == END_OF_HEAD.len() {
            true => Phase::Served,
            false => Phase::Head { matched },
        };
    }

    /// An answer written: the connection is idle again, for the idle timeout (an event
    /// stream's every write renews it).
    fn wrote(&mut self) {
        if self.phase == Phase::Served || self.phase == Phase::Idle {
            self.phase = Phase::Idle;
            let until = Instant::now() + self.timeouts.idle;
            self.deadline.as_mut().reset(until);
        }
    }

    fn timed(&self) -> bool {
        self.phase != Phase::Served
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.saw(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                if this.timed() && this.deadline.as_mut().poll(cx).is_ready() {
                    let what = match this.phase {
                        Phase::Idle => "no request came in time",
                        _ => "the request's head did not come in time",
                    };
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, what)));
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.stream).poll_write(cx, bytes);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.wrote();
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.wrote();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
