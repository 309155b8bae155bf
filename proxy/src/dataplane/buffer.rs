//! How a connection's read buffers grow, one policy per direction.
//!
//! A client's frame gets room one chunk at a time, so a length prefix alone
//! (a slowloris announcing 100 MiB) never makes the proxy allocate what has
//! not arrived. A broker's response frame gets room for all of it as soon as
//! its length prefix is in: a Fetch response of megabytes then lands in one
//! allocation, where growing chunk by chunk reallocated and copied it again
//! at every doubling (6% of the proxy's CPU while consuming, by `perf`).

use bytes::BytesMut;

/// How much is read from a socket at a time.
pub(super) const READ_CHUNK: usize = 64 * 1024;

/// Makes room for the rest of a partly read client frame, a chunk at a time.
pub(super) fn reserve_for_request(buf: &mut BytesMut) {
    if buf.capacity() - buf.len() < READ_CHUNK / 4 {
        buf.reserve(READ_CHUNK);
    }
}

/// Makes room for the whole of the broker frame at the front of `buf` when
/// its length prefix is in and within `max_frame_bytes`; otherwise (no
/// prefix yet, a whole frame already there, or a length the framing will
/// reject) a chunk at a time.
pub(super) fn reserve_for_response(buf: &mut BytesMut, max_frame_bytes: u32) {
    let declared = buf
        .get(..4)
        .map(|p| i64::from(i32::from_be_bytes([p[0], p[1], p[2], p[3]])));
    match declared {
        Some(size) if size > 0 && size <= i64::from(max_frame_bytes) => {
            let total = 4 + usize::try_from(size).unwrap_or(usize::MAX);
            if total > buf.len() + READ_CHUNK / 4 {
                if buf.capacity() < total {
                    // A fresh buffer, with only the frame's start copied:
                    // `reserve` on a buffer whose front was split off would
                    // reallocate and copy the spent front too (the previous
                    // frame, megabytes).
                    let mut fresh = BytesMut::with_capacity(total);
                    fresh.extend_from_slice(buf);
                    *buf = fresh;
                }
                return;
            }
        }
        _ => {}
    }
    reserve_for_request(buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_frame_gets_all_its_room_once_its_length_is_in() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(4_000_000i32).to_be_bytes());
        buf.extend_from_slice(&[0; 100]);
        reserve_for_response(&mut buf, 100 << 20);
        assert!(buf.capacity() >= 4_000_004);
    }

    #[test]
    fn a_spent_front_is_not_copied_along() {
        let mut buf = BytesMut::with_capacity(1 << 20);
        buf.extend_from_slice(&[7; 900_000]);
        drop(buf.split_to(899_990));
        buf[..4].copy_from_slice(&(2_000_000i32).to_be_bytes());
        reserve_for_response(&mut buf, 100 << 20);
        assert!(buf.capacity() >= 2_000_004);
        assert_eq!(buf.len(), 10);
        assert_eq!(&buf[4..], &[7; 6]);
    }

    #[test]
    fn a_length_over_the_limit_or_invalid_gets_a_chunk() {
        for size in [200i32 << 20, -1, 0] {
            let mut buf = BytesMut::new();
            buf.extend_from_slice(&size.to_be_bytes());
            reserve_for_response(&mut buf, 100 << 20);
            assert!(buf.capacity() < 1 << 20, "{size}");
        }
    }

    #[test]
    fn a_request_frame_grows_a_chunk_at_a_time() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(4_000_000i32).to_be_bytes());
        reserve_for_request(&mut buf);
        assert!(buf.capacity() < 1 << 20);
    }
}
