//! Typed messages in and out of bytes, safely: every decode is preceded by
//! the wire-layout walk (see [`wire`](super::wire)), and a response is
//! encoded straight into one frame sized in advance.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::Encodable;

use super::wire::{self, Checked};

/// Most bytes tolerated after a decoded message. Some peers add a byte or
/// two the schema does not have (librdkafka's mock broker does, for Metadata
/// v13); those are kept and sent on after the re-encoded body. More than this
/// is not a message the proxy understands.
pub const MAX_TRAILING_BYTES: usize = 16;

/// Decodes a message body, leaving at most [`MAX_TRAILING_BYTES`] in `buf`
/// for the caller to pass on. The body is checked against its layout first,
/// so that no declared length makes the crate reserve memory the message
/// does not back (see [`wire`](super::wire)). The one decoder of the data
/// plane's rewrites and of the proxy's own client: what one tolerates, the
/// other does.
pub fn decode<T: Checked>(buf: &mut Bytes, version: i16) -> Result<T, String> {
    wire::check(T::SCHEMA, version, buf).map_err(|e| e.to_string())?;
    let value = T::decode(buf, version).map_err(|e| e.to_string())?;
    if buf.len() > MAX_TRAILING_BYTES {
        return Err(format!("{} bytes left over after the message", buf.len()));
    }
    Ok(value)
}

pub(crate) fn encode<T: Encodable>(value: &T, version: i16) -> Result<BytesMut, String> {
    let mut body = BytesMut::new();
    value
        .encode(&mut body, version)
        .map_err(|e| e.to_string())?;
    Ok(body)
}

/// Encodes a rewritten response straight into one frame sized in advance:
/// length prefix, the header, the body, and the bytes left after the body.
/// (A Fetch response of megabytes is then copied once, not grown by
/// doubling and copied again behind its header.)
pub(crate) struct Framer<'a> {
    pub(crate) header: &'a ResponseHeader,
    pub(crate) header_version: i16,
}

impl Framer<'_> {
    pub(crate) fn frame<T: Encodable>(
        &self,
        body: &T,
        version: i16,
        tail: &[u8],
    ) -> Result<Bytes, String> {
        let head = self
            .header
            .compute_size(self.header_version)
            .map_err(|e| e.to_string())?;
        let size = body.compute_size(version).map_err(|e| e.to_string())?;
        let total = head + size + tail.len();
        let prefix = i32::try_from(total).map_err(|_| "response too large".to_owned())?;
        let mut frame = BytesMut::with_capacity(4 + total);
        frame.put_i32(prefix);
        self.header
            .encode(&mut frame, self.header_version)
            .map_err(|e| e.to_string())?;
        body.encode(&mut frame, version)
            .map_err(|e| e.to_string())?;
        frame.put_slice(tail);
        if frame.len() != 4 + total {
            return Err(format!(
                "encoded {} bytes where {} were computed",
                frame.len() - 4,
                total
            ));
        }
        Ok(frame.freeze())
    }
}

/// A response frame: length prefix, header, body.
pub(crate) fn with_header(
    header: &ResponseHeader,
    header_version: i16,
    body: &[u8],
) -> Result<Bytes, String> {
    let mut head = BytesMut::new();
    header
        .encode(&mut head, header_version)
        .map_err(|e| e.to_string())?;
    let size =
        i32::try_from(head.len() + body.len()).map_err(|_| "response too large".to_owned())?;
    let mut frame = BytesMut::with_capacity(4 + head.len() + body.len());
    frame.put_i32(size);
    frame.put_slice(&head);
    frame.put_slice(body);
    Ok(frame.freeze())
}
