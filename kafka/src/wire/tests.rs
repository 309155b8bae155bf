//! The layouts against the crate itself: random messages are built from each
//! layout, at every version, and must decode in kafka-protocol and encode
//! back to the same bytes. A field missing from a layout, in the wrong place,
//! of the wrong type or under the wrong versions breaks that round trip.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::arbitrary::{Seeded as Rng, message};
use super::check;
use super::schemas::ALL;

/// Decodes with the crate; returns the bytes consumed and the re-encoding.
pub(super) type Roundtrip = fn(&[u8], i16) -> Result<(usize, Vec<u8>), String>;

pub(super) fn roundtrip<T: Decodable + Encodable>(
    bytes: &[u8],
    version: i16,
) -> Result<(usize, Vec<u8>), String> {
    let mut buf = Bytes::copy_from_slice(bytes);
    let value = T::decode(&mut buf, version).map_err(|e| e.to_string())?;
    let mut out = BytesMut::new();
    value.encode(&mut out, version).map_err(|e| e.to_string())?;
    Ok((bytes.len() - buf.len(), out.to_vec()))
}

#[test]
fn every_layout_matches_the_crate_at_every_version() {
    let mut checked = 0;
    for (schema, roundtrip) in ALL {
        for version in schema.versions.0..=schema.versions.1 {
            for seed in 1..=64u64 {
                let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let mut bytes = Vec::new();
                message(schema, version, &mut rng, &mut bytes);
                let at = format!("{} v{version} seed {seed}", schema.name);
                assert_eq!(check(schema, version, &bytes), Ok(bytes.len()), "{at}");
                let (used, again) =
                    roundtrip(&bytes, version).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(used, bytes.len(), "{at}: the crate read a different length");
                assert_eq!(again, bytes, "{at}: the crate wrote different bytes");
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "only {checked} messages checked");
}

#[test]
fn every_truncation_is_refused() {
    for (schema, _) in ALL {
        let version = schema.versions.1;
        let mut bytes = Vec::new();
        message(schema, version, &mut Rng(42), &mut bytes);
        for end in 0..bytes.len() {
            assert!(
                check(schema, version, &bytes[..end]).is_err(),
                "{} v{version} cut at {end} of {}",
                schema.name,
                bytes.len()
            );
        }
    }
}

#[test]
fn a_declared_length_needs_the_bytes_behind_it() {
    use super::schemas::METADATA_RESPONSE;
    // The fuzzer's finding: Metadata v0, 0x54545454 brokers, six bytes left.
    let finding = [0x54, 0x54, 0x54, 0x54, 0, 0, 0, 0, 0, 0];
    let e = check(&METADATA_RESPONSE, 0, &finding).unwrap_err();
    assert_eq!(
        e.to_string(),
        "MetadataResponse.brokers: an array of 1414812756 elements, 6 bytes left"
    );
    // Compact (v9+): the count is a varint.
    let compact = [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0];
    let e = check(&METADATA_RESPONSE, 12, &compact).unwrap_err();
    assert!(
        e.to_string().contains("an array of 4294967294 elements"),
        "{e}"
    );
}

#[test]
fn nested_errors_name_their_path() {
    use super::schemas::METADATA_RESPONSE;
    // v1: no brokers, controller id, one topic whose partitions claim 2^30.
    let mut bytes = vec![0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1];
    bytes.extend_from_slice(&[0, 0, 0, 1, b't', 0]); // error, name, internal
    bytes.extend_from_slice(&0x4000_0000u32.to_be_bytes());
    let e = check(&METADATA_RESPONSE, 1, &bytes).unwrap_err();
    assert_eq!(
        e.to_string(),
        "MetadataResponse.topics.partitions: element 0: an array of 1073741824 elements, \
         0 bytes left"
    );
}

#[test]
fn versions_the_crate_refuses_are_refused() {
    use super::schemas::METADATA_RESPONSE;
    let e = check(&METADATA_RESPONSE, 14, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "MetadataResponse: version 14 is not supported"
    );
}

#[test]
fn every_message_the_proxy_decodes_has_a_layout() {
    use crate::deny::DENIABLE_APIS;
    use crate::rewrite::REWRITTEN_APIS;
    use kafka_protocol::messages::ApiKey;
    for api in REWRITTEN_APIS.iter().chain([&ApiKey::ApiVersions]) {
        assert!(super::schemas::response(*api).is_some(), "{api:?} response");
    }
    for api in DENIABLE_APIS.iter() {
        assert!(super::schemas::request(*api).is_some(), "{api:?} request");
    }
}

/// Found by the `rewrite` fuzz target: an unknown tag above `i32::MAX` was
/// counted but not written back, so the rewritten response was malformed.
#[test]
fn tags_beyond_i32_are_refused() {
    use super::schemas::FIND_COORDINATOR_RESPONSE;
    // v4: throttle, no coordinators, one tag 2^31 of no bytes.
    let bytes = [0, 0, 0, 0, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x08, 0];
    let e = check(&FIND_COORDINATOR_RESPONSE, 4, &bytes).unwrap_err();
    assert_eq!(
        e.to_string(),
        "FindCoordinatorResponse: tag 2147483648 is out of range"
    );
    let fine = [0, 0, 0, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x07, 0];
    assert_eq!(check(&FIND_COORDINATOR_RESPONSE, 4, &fine), Ok(fine.len()));
}

/// A message cut short in a field of a fixed size names that field.
#[test]
fn a_short_run_of_fixed_fields_names_its_field() {
    use super::schemas::PRODUCE_RESPONSE;
    // v8: one topic "t", one partition: index, error code, then three of
    // the eight bytes of its base offset.
    let mut bytes = vec![0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1];
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 1, 2, 3]);
    let e = check(&PRODUCE_RESPONSE, 8, &bytes).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ProduceResponse.responses.partition_responses.base_offset: element 0: element 0: \
         8 bytes needed, 3 left"
    );
}
