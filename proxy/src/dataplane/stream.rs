//! Byte streams to a peer (a client or a broker) as the data plane holds
//! them: a plain TCP socket or anything (TLS) on top of one.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A byte stream to a peer, plain or TLS.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A boxed stream.
pub(crate) type BoxIo = Box<dyn Io>;

/// A connection to a peer as it was made: a plain TCP socket (through which
/// a frame's body can be spliced, never entering the proxy's memory), or a
/// stream with TLS on it.
pub(crate) enum Stream {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS (or anything else) on top of the socket.
    Wrapped(BoxIo),
}

impl Stream {
    /// The connection as a stream of bytes, whatever it is.
    pub(crate) fn boxed(self) -> BoxIo {
        match self {
            Stream::Plain(tcp) => Box::new(tcp),
            Stream::Wrapped(io) => io,
        }
    }
}
