//! Kafka framing: any bytes, as a request stream and as a response stream.

use sluice_kafka::frame::{
    expects_response, request_frame_len, request_header, response_correlation_id,
    response_frame_len,
};

/// Reads `data` as request frames one after another, and as one response.
pub fn run(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some(len)) = request_frame_len(rest, 1 << 20) {
        let frame = &rest[..len];
        if let Ok(header) = request_header(frame) {
            let _ = expects_response(frame, &header);
        }
        rest = &rest[len..];
    }
    if let Ok(Some(len)) = response_frame_len(data, 1 << 20) {
        let _ = response_correlation_id(&data[..len]);
    }
}
