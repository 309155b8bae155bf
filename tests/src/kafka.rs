//! A minimal synchronous Kafka client on a plain socket, for tests that need
//! control a real client library does not give: several APIs on one
//! connection, raw bytes, half frames.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// One connection.
#[derive(Debug)]
pub struct Conn {
    /// The socket.
    pub stream: TcpStream,
    next: i32,
}

impl Conn {
    /// Connects with a 10 s read timeout.
    pub fn connect(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Conn { stream, next: 1 }
    }

    /// Sends a request without waiting for its response.
    pub fn send<Req: Encodable>(&mut self, api: ApiKey, version: i16, request: &Req) -> i32 {
        let correlation_id = self.next;
        self.next += 1;
        let frame =
            sluice_kafka::encode::request(api, version, correlation_id, "sluice-test", request)
                .expect("an encodable request");
        self.stream.write_all(&frame).expect("send request");
        correlation_id
    }

    /// Sends a request and reads its response.
    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        let correlation_id = self.send(api, version, request);
        let mut len = [0u8; 4];
        self.stream
            .read_exact(&mut len)
            .expect("read response length");
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut buf).expect("read response");
        let mut buf = Bytes::from(buf);
        let h = ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
        assert_eq!(h.correlation_id, correlation_id);
        let response = Resp::decode(&mut buf, version).unwrap();
        assert!(!buf.has_remaining() || buf.len() <= 16);
        response
    }

    /// Whether the peer has closed the connection (waiting up to `timeout`).
    pub fn closed_within(&mut self, timeout: Duration) -> bool {
        self.stream.set_read_timeout(Some(timeout)).unwrap();
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }
}

/// A record batch of `count` records keyed `k0..`.
pub fn records(count: usize) -> Bytes {
    batch(count, |i| format!("v{i}").into_bytes())
}

/// A record batch of `count` records of `size` bytes each, keyed `k0..`.
pub fn sized_records(count: usize, size: usize) -> Bytes {
    batch(count, |_| vec![b'x'; size])
}

fn batch(count: usize, value: impl Fn(usize) -> Vec<u8>) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1,
            timestamp: 0,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(value(i))),
            headers: Default::default(),
            delete_horizon: false,
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("encode records");
    buf.freeze()
}
