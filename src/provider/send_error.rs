//! Why a request got no answer, whichever client sent it (reqwest's, or hyper's for a
//! loopback URL: `loopback.rs`), told the same way.

use std::error::Error;
use std::fmt;

use super::error::ProviderError;

/// A request that got no answer.
pub(crate) enum SendError {
    /// The request could not be made (a client that does not build, a URL hyper refuses):
    /// reported as it is.
    Config(ProviderError),
    Reqwest(reqwest::Error),
    Loopback(hyper_util::client::legacy::Error),
}

/// What a transport error says of itself, for the message a user sees.
pub(crate) struct Failure<'a> {
    /// Not even connected.
    pub connect: bool,
    pub timeout: bool,
    /// The connection broke while the answer was being read.
    pub body: bool,
    /// The first error of the chain that says why (refused, reset, TLS, ...).
    pub cause: Option<&'a (dyn Error + 'static)>,
}

impl<'a> Failure<'a> {
    pub fn of_reqwest(error: &'a reqwest::Error) -> Self {
        Failure {
            connect: error.is_connect(),
            timeout: error.is_timeout(),
            body: error.is_body() || error.is_decode(),
            cause: error.source(),
        }
    }

    /// The causes, outermost first.
    pub fn causes(&self) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
        fn next<'e>(cause: &&'e (dyn Error + 'static)) -> Option<&'e (dyn Error + 'static)> {
            (*cause).source()
        }
        std::iter::successors(self.cause, next)
    }
}

impl SendError {
    /// The failure of a request that was sent (not for [`SendError::Config`]).
    pub fn failure(&self) -> Failure<'_> {
        match self {
            SendError::Reqwest(error) => Failure::of_reqwest(error),
            SendError::Loopback(error) => Failure {
                connect: error.is_connect(),
                timeout: false,
                body: false,
                // Its own words first, as reqwest's chain starts with the same error.
                cause: Some(error),
            },
            SendError::Config(_) => Failure {
                connect: false,
                timeout: false,
                body: false,
                cause: None,
            },
        }
    }

    /// Whether the request failed because its connection was closed before any byte of
    /// an answer came: reset, broken pipe, or hyper's "connection closed before message
    /// completed" (not a type this crate can name, so known by its text). Not a failure
    /// to connect, which a new connection would not cure.
    pub fn closed_before_answer(&self) -> bool {
        use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
        let failure = self.failure();
        if failure.connect || failure.timeout || matches!(self, SendError::Config(_)) {
            return false;
        }
        failure.causes().any(|cause| {
            let io = cause.downcast_ref::<std::io::Error>();
            io.is_some_and(|io| {
                matches!(
                    io.kind(),
                    ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
                )
            }) || cause.to_string() == "connection closed before message completed"
        })
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Config(error) => error.fmt(f),
            SendError::Reqwest(error) => error.fmt(f),
            SendError::Loopback(error) => error.fmt(f),
        }
    }
}
