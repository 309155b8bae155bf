//! Memory for frames held whole, that goes back to the operating system.
//!
//! A [`Block`] is one allocation of exactly a frame's size, charged to the
//! budget until the last reference to it (the frame, or slices a decoder
//! kept) is dropped. Blocks of [`MAP_AT`] or more are mapped straight from
//! the kernel and unmapped when freed: glibc's allocator keeps freed heap
//! memory, and raises its own mapping threshold after each large free (up
//! to 32 MiB), so a proxy that had held a few Fetch responses of megabytes
//! stayed that much bigger, idle, for as long as it ran. Blocks up to
//! [`pool::LARGEST`] come from [`pool`], which keeps a few freed regions
//! (at most 4 MiB in all) for the next frames instead of unmapping them.

use bytes::Bytes;
use memmap2::MmapMut;

use super::pool::{self, Region};
use crate::budget::Charge;

/// Blocks this big or bigger are mapped, not taken from the heap
/// (glibc's initial mapping threshold).
const MAP_AT: usize = 128 * 1024;

/// A frame's worth of memory, filled front to back.
pub(super) struct Block {
    storage: Storage,
    filled: usize,
    charge: Charge,
}

enum Storage {
    Heap(Box<[u8]>),
    Pooled(Region),
    Mapped(MmapMut),
}

impl AsRef<[u8]> for Storage {
    fn as_ref(&self) -> &[u8] {
        match self {
            Storage::Heap(b) => b,
            Storage::Pooled(r) => r.as_ref(),
            Storage::Mapped(m) => m,
        }
    }
}

impl AsMut<[u8]> for Storage {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            Storage::Heap(b) => b,
            Storage::Pooled(r) => r.as_mut(),
            Storage::Mapped(m) => m,
        }
    }
}

impl Block {
    /// An empty block of `len` bytes, paid for by `charge`.
    pub(super) fn new(len: usize, charge: Charge) -> std::io::Result<Block> {
        let storage = if len > pool::LARGEST {
            let map = MmapMut::map_anon(len)?;
            // Faulted in 2 MiB at a time rather than 4 KiB: a frame of
            // megabytes costs a few page faults, not hundreds. Advice
            // only: when the kernel declines, nothing else changes.
            let _ = map.advise(memmap2::Advice::HugePage);
            Storage::Mapped(map)
        } else if len >= MAP_AT {
            Storage::Pooled(Region::take(len)?)
        } else {
            Storage::Heap(vec![0u8; len].into_boxed_slice())
        };
        Ok(Block {
            storage,
            filled: 0,
            charge,
        })
    }

    /// Appends `bytes`; they must fit.
    pub(super) fn put(&mut self, bytes: &[u8]) {
        let end = self.filled + bytes.len();
        self.storage.as_mut()[self.filled..end].copy_from_slice(bytes);
        self.filled = end;
    }

    /// The part not filled yet, to read into.
    pub(super) fn spare(&mut self) -> &mut [u8] {
        &mut self.storage.as_mut()[self.filled..]
    }

    /// Counts `n` more bytes of [`Block::spare`] as filled.
    pub(super) fn advance(&mut self, n: usize) {
        self.filled += n;
    }

    /// Whether every byte is filled.
    pub(super) fn is_full(&self) -> bool {
        self.filled == self.storage.as_ref().len()
    }

    /// The filled block as bytes; its memory and charge go when the last
    /// reference does.
    pub(super) fn freeze(self) -> Bytes {
        let filled = self.filled;
        Bytes::from_owner(Owned {
            data: self.storage,
            _charge: self.charge,
        })
        .slice(..filled)
    }
}

/// `bytes` carrying `charge` until the last reference to them goes.
pub(super) fn charged(bytes: Bytes, charge: Charge) -> Bytes {
    Bytes::from_owner(Owned {
        data: bytes,
        _charge: charge,
    })
}

/// Memory and the charge that pays for it, freed together.
struct Owned<T> {
    data: T,
    _charge: Charge,
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Owned<T> {
    fn as_ref(&self) -> &[u8] {
        self.data.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::gauge::Gauge;

    use super::*;
    use crate::budget::Budget;

    #[tokio::test]
    async fn a_block_is_paid_for_until_its_last_slice_goes() {
        let budget = Arc::new(Budget::new(
            1 << 30,
            Gauge::default(),
            Gauge::default(),
            Counter::default(),
        ));
        for len in [100, MAP_AT, 3 << 20] {
            let mut block = Block::new(len, budget.reserve_frame(len).await).unwrap();
            block.put(&[1, 2, 3]);
            let spare = block.spare().len();
            block.spare().fill(9);
            block.advance(spare);
            assert!(block.is_full());
            let frame = block.freeze();
            assert_eq!(frame.len(), len);
            assert_eq!(&frame[..4], &[1, 2, 3, 9]);
            let kept = frame.slice(1..3);
            drop(frame);
            assert_eq!(budget.used(), len as u64);
            assert_eq!(&kept[..], &[2, 3]);
            drop(kept);
            assert_eq!(budget.used(), 0);
        }
    }
}
