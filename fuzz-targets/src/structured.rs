//! Structure-aware: the fuzzer's bytes choose an API, a version and every
//! field of a *valid* response, built from the layout the proxy checks
//! against (`sluice_kafka::wire`). Each must be rewritten (never
//! refused), the result must be accepted again, and rewriting is idempotent:
//! a second pass changes nothing.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::rewrite::{REWRITTEN_APIS, rewrite_response, rewrites};
use sluice_kafka::versions::cap_api_versions;
use sluice_kafka::wire::arbitrary::{Entropy, response};

/// One byte a choice; zeros once the input runs out.
struct Input<'a>(&'a [u8]);

impl Entropy for Input<'_> {
    fn next(&mut self) -> u64 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                u64::from(*b)
            }
            None => 0,
        }
    }
}

fn frame(api: ApiKey, version: i16, body: &[u8]) -> Bytes {
    let mut head = BytesMut::new();
    head.put_i32(1);
    if api.response_header_version(version) >= 1 {
        head.put_u8(0);
    }
    let mut frame = BytesMut::new();
    frame.put_i32((head.len() + body.len()) as i32);
    frame.put_slice(&head);
    frame.put_slice(body);
    frame.freeze()
}

/// The first byte picks the API, the second the version, the rest every
/// field of a valid response.
pub fn run(data: &[u8]) {
    let [pick, version, rest @ ..] = data else {
        return;
    };
    let apis: Vec<ApiKey> = REWRITTEN_APIS
        .iter()
        .copied()
        .chain([ApiKey::ApiVersions])
        .collect();
    let api = apis[usize::from(*pick) % apis.len()];
    let range = api.valid_versions();
    let span = (range.max - range.min + 1) as u16;
    let version = range.min + (u16::from(*version) % span) as i16;
    let Some(body) = response(api, version, &mut Input(rest)) else {
        return;
    };
    let frame = frame(api, version, &body);
    if api == ApiKey::ApiVersions {
        let capped = cap_api_versions(&frame, version, &|k| k % 2 == 0).expect("valid ApiVersions");
        let again =
            cap_api_versions(&capped, version, &|k| k % 2 == 0).expect("capped ApiVersions");
        assert_eq!(again, capped, "capping twice changed the response");
        return;
    }
    let to = crate::advertised();
    let header = RequestHeader {
        api_key: api as i16,
        api_version: version,
        correlation_id: 1,
    };
    if !rewrites(api as i16, version) {
        return;
    }
    let out = rewrite_response(&frame, &header, &to)
        .unwrap_or_else(|e| panic!("a valid {api:?} v{version} response was refused: {e}"));
    let again =
        rewrite_response(&out.frame.to_bytes(), &header, &to).expect("a rewritten response");
    assert_eq!(
        again.frame.to_bytes(),
        out.frame.to_bytes(),
        "rewriting twice changed the response"
    );
}
