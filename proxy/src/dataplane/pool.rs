//! Warm memory for frames held whole. Mapping a fresh region for every
//! held frame and unmapping it after made the kernel clear and fault in
//! every page of every frame: with a consumer reading through the proxy,
//! page clearing and faults were about a quarter of the proxy's CPU
//! (`perf`: `clear_page_erms`, `exc_page_fault`, `unmap_page_range`; tansu
//! answers a catching-up consumer with Fetch responses of 3-4 MB). So
//! freed regions up to [`LARGEST`] are kept, at most [`KEEP`] bytes in all
//! for the whole process, and the next frame that fits takes one: its
//! pages are already there. A region unused for [`IDLE`] is unmapped (a
//! thread of its own runs while any is kept, so that no runtime's end can
//! leave regions no one trims), so an idle proxy holds none of it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::time::Instant;

use memmap2::{MmapMut, MmapOptions};

/// Most bytes kept mapped for reuse, for the whole process.
const KEEP: usize = 16 << 20;
/// Largest region kept; larger frames are mapped and unmapped each time.
pub(super) const LARGEST: usize = 8 << 20;
/// Regions are mapped in steps of this, so that frames of similar sizes
/// fit the same region.
const STEP: usize = 64 << 10;
/// A kept region unused this long is unmapped.
const IDLE: Duration = Duration::from_secs(1);

/// Regions freed and kept (with when), and their total size.
static KEPT: Mutex<(Vec<(MmapMut, Instant)>, usize)> = Mutex::new((Vec::new(), 0));
/// Whether the task that unmaps idle regions runs.
static TRIMMING: AtomicBool = AtomicBool::new(false);

/// A mapped region of at least `len` bytes, every page present.
pub(super) struct Region {
    map: Option<MmapMut>,
    len: usize,
}

impl Region {
    /// A kept region that fits `len` (and is at most twice as big), or a
    /// new one mapped with every page present.
    pub(super) fn take(len: usize) -> std::io::Result<Region> {
        let kept = {
            let mut kept = KEPT
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let fit = kept
                .0
                .iter()
                .enumerate()
                .filter(|(_, (m, _))| m.len() >= len && m.len() <= len.saturating_mul(2))
                .min_by_key(|(_, (m, _))| m.len())
                .map(|(i, _)| i);
            fit.map(|i| {
                let (map, _) = kept.0.swap_remove(i);
                kept.1 -= map.len();
                map
            })
        };
        let map = match kept {
            Some(map) => map,
            // Every page is written at once: mapped in one call rather than
            // faulted in a page at a time as the frame arrives.
            None => MmapOptions::new()
                .len(len.div_ceil(STEP) * STEP)
                .populate()
                .map_anon()?,
        };
        Ok(Region {
            map: Some(map),
            len,
        })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let Some(map) = self.map.take() else { return };
        if map.len() > LARGEST {
            return;
        }
        let mut kept = KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.1 + map.len() <= KEEP {
            kept.1 += map.len();
            kept.0.push((map, Instant::now()));
            if !TRIMMING.swap(true, Ordering::AcqRel) {
                let spawned = std::thread::Builder::new()
                    .name("sluice-trim".into())
                    .spawn(trim);
                if spawned.is_err() {
                    // Kept until taken; the next region kept tries again.
                    TRIMMING.store(false, Ordering::Release);
                }
            }
        }
    }
}

/// Unmaps regions unused for [`IDLE`], until none is kept.
fn trim() {
    loop {
        std::thread::sleep(IDLE);
        let mut kept = KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let (list, total) = &mut *kept;
        list.retain(|(map, at)| {
            let keep = now.duration_since(*at) < IDLE;
            if !keep {
                *total -= map.len();
            }
            keep
        });
        if list.is_empty() {
            // Under the lock: a region kept after this starts a new thread.
            TRIMMING.store(false, Ordering::Release);
            return;
        }
    }
}

impl AsRef<[u8]> for Region {
    fn as_ref(&self) -> &[u8] {
        self.map.as_ref().map_or(&[], |m| &m[..self.len])
    }
}

impl AsMut<[u8]> for Region {
    fn as_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        self.map.as_mut().map_or(&mut [], |m| &mut m[..len])
    }
}

/// Bytes kept for reuse now.
#[cfg(test)]
pub(super) fn kept() -> usize {
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .1
}

/// Whether the region mapped at `at` is kept.
#[cfg(test)]
fn kept_at(at: *const u8) -> bool {
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .0
        .iter()
        .any(|(map, _)| map.as_ptr() == at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_region_is_taken_again_and_what_is_kept_is_bounded() {
        let a = Region::take(200_000).unwrap();
        let at = a.as_ref().as_ptr();
        assert_eq!(a.as_ref().len(), 200_000);
        drop(a);
        assert!(kept() >= 200_000);
        // A frame of a similar size takes the same pages.
        let b = Region::take(190_000).unwrap();
        assert_eq!(b.as_ref().as_ptr(), at);
        assert_eq!(b.as_ref().len(), 190_000);
        drop(b);
        // Far more regions freed than may be kept: the rest are unmapped.
        let many: Vec<Region> = (0..8).map(|_| Region::take(LARGEST).unwrap()).collect();
        drop(many);
        assert!(kept() <= KEEP);
    }

    #[test]
    fn kept_regions_are_unmapped_once_idle() {
        // Real time, and this region only: other tests keep regions too.
        let region = Region::take(300_000).unwrap();
        let at = region.as_ref().as_ptr();
        let dropped = std::time::Instant::now();
        drop(region);
        assert!(kept_at(at));
        // Unmapped between IDLE and 2 * IDLE after, by the trimming thread.
        while kept_at(at) {
            assert!(dropped.elapsed() < IDLE * 4, "still kept");
            std::thread::sleep(IDLE / 20);
        }
        assert!(dropped.elapsed() >= IDLE);
    }
}
