//! Response rewriting, ApiVersions capping and deny responses: the first
//! bytes choose the API and version, the rest is the frame body.
#![no_main]

use bytes::{BufMut, Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use sluice_config::model::BrokerPorts;
use sluice_config::types::Port;
use sluice_kafka::deny::{DENIABLE_APIS, deny_response};
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::rewrite::{Advertised, REWRITTEN_APIS, rewrite_response, rewrites};
use sluice_kafka::versions::cap_api_versions;

fuzz_target!(|data: &[u8]| {
    let [pick, version, body @ ..] = data else { return };
    let mut frame = BytesMut::new();
    frame.put_i32(body.len() as i32);
    frame.put_slice(body);
    let frame: Bytes = frame.freeze();
    let version = i16::from(*version % 20);
    let to = Advertised::new(
        "proxy.local",
        BrokerPorts { start: Port::new(19093).unwrap(), count: 3, first_node_id: 0 },
    );
    let api = REWRITTEN_APIS[usize::from(*pick) % REWRITTEN_APIS.len()] as i16;
    let header = RequestHeader { api_key: api, api_version: version, correlation_id: 1 };
    if rewrites(api, version) {
        if let Ok(out) = rewrite_response(&frame, &header, &to) {
            // The output must itself be a response the proxy can read again.
            if let Err(e) = rewrite_response(&out.frame.to_bytes(), &header, &to) {
                panic!("the rewritten response cannot be read again: {e}");
            }
        }
    }
    let _ = cap_api_versions(&frame, version, &|k| k % 2 == 0);
    let deny = DENIABLE_APIS[usize::from(*pick) % DENIABLE_APIS.len()] as i16;
    let _ = deny_response(&frame, &RequestHeader { api_key: deny, api_version: version, correlation_id: 1 }, 44);
});
