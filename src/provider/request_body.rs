//! A request body in pieces.
//!
//! Most of a long conversation's request is the history its provider serialised for the
//! previous request (`item_cache.rs`). Copying that into every new body made a step's CPU
//! grow with the conversation: at a thousand steps the copy was a quarter of a step. A
//! body is written instead as bytes of its own around pieces shared with the cache, and
//! hyper's client hands the pieces to the socket as they are, in one `writev`.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// Writes a body: bytes written here, with pieces put in whole between them.
#[derive(Debug, Default)]
pub(crate) struct BodyWriter {
    pieces: Vec<Bytes>,
    open: Vec<u8>,
}

impl BodyWriter {
    pub fn push(&mut self, byte: u8) {
        self.open.push(byte);
    }

    /// Puts `piece` in as it is: shared, not copied.
    pub fn share(&mut self, piece: Bytes) {
        if piece.is_empty() {
            return;
        }
        self.close_open();
        self.pieces.push(piece);
    }

    pub fn finish(mut self) -> RequestBody {
        self.close_open();
        let len = self.pieces.iter().map(Bytes::len).sum();
        RequestBody {
            pieces: self.pieces,
            len,
        }
    }

    fn close_open(&mut self) {
        if !self.open.is_empty() {
            self.pieces
                .push(Bytes::from(std::mem::take(&mut self.open)));
        }
    }
}

impl io::Write for BodyWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.open.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.open.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A written body: its pieces in order. A clone shares them.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestBody {
    pieces: Vec<Bytes>,
    len: usize,
}

impl RequestBody {
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn pieces(&self) -> &[Bytes] {
        &self.pieces
    }

    /// The body in one piece, for a client that takes it so (reqwest's): joining copies
    /// only when there is more than one piece.
    pub fn joined(&self) -> Bytes {
        match self.pieces.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            pieces => Bytes::from(pieces.concat()),
        }
    }

    /// The body as hyper's client reads it: one frame per piece.
    pub fn frames(&self) -> Frames {
        Frames {
            pieces: self.pieces.clone().into_iter(),
            left: self.len as u64,
        }
    }
}

/// [`RequestBody::frames`]: the pieces, then the end. Its exact length makes hyper send a
/// `Content-Length` rather than chunks.
#[derive(Debug)]
pub(crate) struct Frames {
    pieces: std::vec::IntoIter<Bytes>,
    left: u64,
}

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let piece = self.pieces.next();
        if let Some(piece) = &piece {
            self.left -= piece.len() as u64;
        }
        Poll::Ready(piece.map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use http_body_util::BodyExt;

    #[test]
    fn a_body_is_its_pieces_in_order() {
        let shared = Bytes::from_static(b"\"shared\"");
        let mut writer = BodyWriter::default();
        writer.write_all(b"[").unwrap();
        writer.share(shared.clone());
        writer.share(Bytes::new());
        writer.push(b']');
        let body = writer.finish();
        assert_eq!(body.len(), 10);
        assert_eq!(&body.joined()[..], b"[\"shared\"]");
        assert_eq!(
            body.pieces()[1].as_ptr(),
            shared.as_ptr(),
            "shared, not copied"
        );
    }

    #[tokio::test]
    async fn hyper_reads_every_piece_and_the_exact_length() {
        let mut writer = BodyWriter::default();
        writer.push(b'{');
        writer.share(Bytes::from_static(b"\"a\":1"));
        writer.push(b'}');
        let frames = writer.finish().frames();
        assert_eq!(frames.size_hint().exact(), Some(7));
        let read = frames.collect().await.unwrap().to_bytes();
        assert_eq!(&read[..], b"{\"a\":1}");
    }
}
