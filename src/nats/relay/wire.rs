//! The relay's frames: a JSON header saying what is asked or answered, and a body of
//! bytes (an entry's value), each after its length. Lengths are bounded, so a broken peer
//! costs a clear error, not the worker's memory.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What a child asks of the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Call {
    Get {
        key: String,
    },
    /// The body is the value.
    Put {
        key: String,
    },
    Purge {
        key: String,
    },
    Hold {
        session_id: String,
    },
    Release {
        session_id: String,
    },
}

/// The worker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// A value is there: the body.
    Found,
    Missing,
    Done,
    /// Another process holds the session.
    Leased {
        holder: Option<String>,
    },
    Failed {
        what: String,
        reason: String,
    },
    /// The session is lost to this run for good: its lease expired and another process
    /// took it over. The run stops (interrupted); the other process goes on with it.
    Lost {
        what: String,
        reason: String,
    },
}

/// The largest header: a call names one key.
const MAX_HEADER: usize = 64 * 1024;
/// The largest body: more than any NATS server takes in a message (its limit is 64 MiB).
const MAX_BODY: usize = 64 * 1024 * 1024;

pub fn write_frame(to: &mut impl Write, header: &impl Serialize, body: &[u8]) -> io::Result<()> {
    let header = serde_json::to_vec(header)?;
    let mut frame = Vec::with_capacity(8 + header.len() + body.len());
    frame.extend_from_slice(&length(header.len())?.to_be_bytes());
    frame.extend_from_slice(&length(body.len())?.to_be_bytes());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(body);
    to.write_all(&frame)
}

/// The next frame; `None` when the peer closed its end between frames.
pub fn read_frame<T: DeserializeOwned>(from: &mut impl Read) -> io::Result<Option<(T, Vec<u8>)>> {
    let mut lengths = [0u8; 8];
    match from.read_exact(&mut lengths) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    }
    let [h0, h1, h2, h3, b0, b1, b2, b3] = lengths;
    let header_len = u32::from_be_bytes([h0, h1, h2, h3]) as usize;
    let body_len = u32::from_be_bytes([b0, b1, b2, b3]) as usize;
    if header_len > MAX_HEADER || body_len > MAX_BODY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {header_len} + {body_len} bytes is larger than the relay takes"),
        ));
    }
    let mut header = vec![0; header_len];
    from.read_exact(&mut header)?;
    let mut body = vec![0; body_len];
    from.read_exact(&mut body)?;
    let header = serde_json::from_slice(&header)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(Some((header, body)))
}

fn length(len: usize) -> io::Result<u32> {
    u32::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_as_written_and_a_closed_peer_is_no_frame() {
        let mut bytes = Vec::new();
        let call = Call::Put {
            key: "s.rec.1".into(),
        };
        write_frame(&mut bytes, &call, b"{\"seq\":1}").unwrap();
        let mut from = bytes.as_slice();
        let (read, body) = read_frame::<Call>(&mut from).unwrap().unwrap();
        assert_eq!((read, body.as_slice()), (call, &b"{\"seq\":1}"[..]));
        assert!(read_frame::<Call>(&mut from).unwrap().is_none());
    }

    #[test]
    fn an_oversized_or_torn_frame_is_an_error_not_an_allocation() {
        let mut huge = Vec::new();
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        huge.extend_from_slice(&0u32.to_be_bytes());
        let error = read_frame::<Call>(&mut huge.as_slice()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &Reply::Done, b"body").unwrap();
        bytes.truncate(bytes.len() - 1);
        let error = read_frame::<Reply>(&mut bytes.as_slice()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
    }
}
