//! Plain HTTP to a server on this machine, set up the cheapest way.
//!
//! A local model server (llama.cpp, Ollama, vLLM) often closes the connection after each
//! reply, so every model call connects anew. reqwest's connector spends four system calls
//! more on each connection than it needs (the socket made, then switched to non-blocking
//! with two `fcntl`s; its two addresses read for a record nobody here reads), and its
//! layers (redirects, proxies) parse the URL again for every request. For a URL whose host
//! is a loopback address written as one (`http://127.0.0.1:8080`, `http://[::1]:8080`),
//! requests go through hyper's own client with this connector: one `socket` made
//! non-blocking, `TCP_NODELAY`, `connect`, and at the end one `close`. A proxy (`HTTP_PROXY`) is never used to reach
//! the machine's own address. Any other URL (a name, `localhost` included, could resolve
//! elsewhere) goes through reqwest as before.

use std::future::Future;
use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::request_body::Frames;

/// hyper's client over [`Connector`].
pub(crate) type LoopbackClient = Client<Connector, Frames>;

/// A client for loopback URLs; `pooled: false` keeps no idle connection.
pub(crate) fn client(pooled: bool) -> LoopbackClient {
    let mut builder = Client::builder(TokioExecutor::new());
    if !pooled {
        builder.pool_max_idle_per_host(0);
    }
    builder.build(Connector)
}

/// Whether `url`'s host is a loopback address written as one (`127.0.0.1`, `[::1]`): a
/// name, `localhost` included, could resolve elsewhere.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    literal.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Connects to the address a loopback URL names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Connector;

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Stream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(async move {
            // tokio makes the socket non-blocking as it creates it (`SOCK_NONBLOCK`).
            let stream = TcpStream::connect(address(&uri)?).await?;
            stream.set_nodelay(true)?;
            Ok(TokioIo::new(Stream(stream)))
        })
    }
}

/// The address of `uri`, whose host is an IP address: that address and the port (80 when
/// none is written).
fn address(uri: &Uri) -> io::Result<SocketAddr> {
    let host = uri.host().unwrap_or_default();
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let ip = literal.parse::<IpAddr>().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{host}` is not an IP address"),
        )
    })?;
    Ok(SocketAddr::new(ip, uri.port_u16().unwrap_or(80)))
}

/// A connection to a loopback address. It tells hyper nothing about itself: hyper's own
/// `TcpStream` connection reads the socket's two addresses for every connection.
pub(crate) struct Stream(TcpStream);

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    /// Nothing: hyper shuts a connection down only as it ends it, and dropping the socket
    /// then closes it, which sends the same FIN. Shutting the writing side first was one
    /// more system call for every connection a server closes after its reply.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_written_as_such_take_the_lean_path() {
        let lean = |url: &str| is_loopback(&url.parse().unwrap());
        assert!(lean("http://127.0.0.1:8080/v1"));
        assert!(lean("http://[::1]:8080/v1"));
        assert!(lean("http://127.3.2.1/v1"));
        assert!(!lean("http://localhost:8080/v1"));
        assert!(!lean("http://10.0.0.5:8080/v1"));
    }

    #[test]
    fn the_address_is_the_urls_ip_and_port_or_80() {
        let at = |uri: &str| address(&uri.parse().unwrap()).unwrap().to_string();
        assert_eq!(at("http://127.0.0.1:8080/v1"), "127.0.0.1:8080");
        assert_eq!(at("http://[::1]/v1"), "[::1]:80");
        assert!(address(&"http://localhost/".parse().unwrap()).is_err());
    }
}
