//! Response rewriting, ApiVersions capping and deny responses: the first
//! bytes choose the API and version, the rest is the frame body. A Fetch
//! body of a version the data plane walks (v16 up to the newest the proxy
//! reads) is also walked as it would stream (`streamed`), in pieces of a
//! size the input chooses, and its tail rewritten into the reserve. A Fetch
//! body of any version also gets a split Fetch's refused topics put first
//! in its topics (`policy::Prepended`), as the proxy does while it streams.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchRequest, fetch_request};
use sluice_kafka::deny::{DENIABLE_APIS, deny_response};
use sluice_kafka::encode;
use sluice_kafka::frame::{RequestHeader, request_header};
use sluice_kafka::policy::{Policed, Prepended, TopicIds, Uuid, police};
use sluice_kafka::rewrite::{Advertised, REWRITTEN_APIS, rewrite_response, rewrite_tail, rewrites};
use sluice_kafka::streamed::{Part, Walk, walks};
use sluice_kafka::versions::cap_api_versions;

/// The first byte picks the API, the second the version, the rest is the
/// frame body.
pub fn run(data: &[u8]) {
    let [pick, version, body @ ..] = data else {
        return;
    };
    let mut frame = BytesMut::new();
    frame.put_i32(body.len() as i32);
    frame.put_slice(body);
    let frame: Bytes = frame.freeze();
    let version = i16::from(*version % 20);
    let to = crate::advertised();
    let api = REWRITTEN_APIS[usize::from(*pick) % REWRITTEN_APIS.len()] as i16;
    let header = RequestHeader {
        api_key: api,
        api_version: version,
        correlation_id: 1,
    };
    // The output must itself be a response the proxy can read again.
    if rewrites(api, version)
        && let Ok(out) = rewrite_response(&frame, &header, &to)
        && let Err(e) = rewrite_response(&out.frame.to_bytes(), &header, &to)
    {
        panic!("the rewritten response cannot be read again: {e}");
    }
    // The versions the data plane walks (a version past what the proxy can
    // read is never walked: its rewrite could not read it again).
    if api == 1 && walks(version) {
        streamed(&frame, version, &to, usize::from(*pick) + 1, &header);
    }
    if api == 1 && version >= 4 {
        prepended(&frame, version, &to, &header);
    }
    let _ = cap_api_versions(&frame, version, &|k| k % 2 == 0);
    let deny = DENIABLE_APIS[usize::from(*pick) % DENIABLE_APIS.len()] as i16;
    let _ = deny_response(
        &frame,
        &RequestHeader {
            api_key: deny,
            api_version: version,
            correlation_id: 1,
        },
        44,
    );
}

/// Walks `frame` as the data plane streams it, `feed` bytes arriving at a
/// time; when the walk and the tail's rewrite succeed, the frame the client
/// gets must be one the proxy reads again.
fn streamed(frame: &Bytes, version: i16, to: &Advertised, feed: usize, header: &RequestHeader) {
    let mut walk = Walk::fetch(version);
    let (mut at, mut have) = (0, feed.min(frame.len()));
    let mut out = BytesMut::new();
    let reserve = to.tail_reserve();
    out.put_i32((frame.len() - 4 + reserve) as i32);
    loop {
        match walk.next(&frame[at..have]) {
            Err(_) => return,
            Ok(Some(Part::Checked(n))) => {
                out.put_slice(&frame[at.max(4)..at + n]);
                at += n;
            }
            Ok(Some(Part::Records(n))) => {
                if n > frame.len() - at {
                    return;
                }
                out.put_slice(&frame[at..at + n]);
                at += n;
                have = have.max(at);
            }
            Ok(Some(Part::Tail)) => break,
            Ok(None) if have == frame.len() => return,
            Ok(None) => have = (have + feed).min(frame.len()),
        }
    }
    let Ok(tail) = rewrite_tail(&frame.slice(at..), version, to, reserve) else {
        return;
    };
    out.put_slice(&tail.bytes);
    assert_eq!(out.len(), frame.len() + reserve, "the size announced first");
    if let Err(e) = rewrite_response(&out.freeze(), header, to) {
        panic!("the streamed response cannot be read again: {e}");
    }
}

/// A split Fetch's refused topics: "no" (id 2) of a Fetch of "ok" and "no".
fn refused(version: i16) -> Option<Prepended> {
    let mut request = FetchRequest::default();
    for (name, id) in [("ok", 1), ("no", 2)] {
        let mut topic = fetch_request::FetchTopic::default();
        topic.topic = kafka_protocol::protocol::StrBytes::from_static_str(name).into();
        topic.topic_id = Uuid::from_u128(id);
        topic.partitions = vec![fetch_request::FetchPartition::default()];
        request.topics.push(topic);
    }
    let frame = encode::request(ApiKey::Fetch, version, 1, "fuzz", &request).ok()?;
    let ids = TopicIds::default();
    ids.learn(&[
        (Uuid::from_u128(1), "ok".into()),
        (Uuid::from_u128(2), "no".into()),
    ]);
    let header = request_header(&frame).ok()?;
    match police(&frame, &header, &ids, &mut |t| t == "ok").ok()? {
        Policed::Split { merge, .. } => merge.prepended().cloned(),
        _ => None,
    }
}

/// The refused topics put in `frame`: a prefix of the frame finds the
/// topics' count where the whole frame does, or not yet; a response the
/// proxy reads (v16+) is still one once they are in.
fn prepended(frame: &Bytes, version: i16, to: &Advertised, header: &RequestHeader) {
    let Some(refused) = refused(version) else {
        return;
    };
    let whole = refused.find(frame);
    for cut in 0..frame.len().min(64) {
        if let Ok(Some(found)) = refused.find(&frame[..cut]) {
            assert_eq!(whole.as_ref().ok().copied().flatten(), Some(found));
        }
    }
    let Ok(out) = refused.insert(frame) else {
        return;
    };
    if version >= 16
        && rewrite_response(frame, header, to).is_ok()
        && let Err(e) = rewrite_response(&out, header, to)
    {
        panic!("the response with the refused topics cannot be read: {e}");
    }
}
