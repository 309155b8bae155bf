//! A one-way signal every connection of a generation waits on: its drain,
//! its drain deadline.
//!
//! A connection's task polls both directions and the signals it waits on
//! each time anything of it wakes, so a wait is polled again and again
//! (about five times per request with one in flight). tokio-util's
//! `CancellationToken` took two uncontended locks on each of those polls (its
//! state, then its waiters' list, to compare the waker): about 260
//! instructions (callgrind), some 8% of the proxy's work per request. A
//! [`Latch`] wait keeps the waker it registered and, polled again with the
//! same one (a connection's task keeps its waker), answers from one atomic
//! load. Registering and leaving take the lock: once per connection.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Set once; wakes every wait when it is.
#[derive(Debug, Default)]
pub(crate) struct Latch {
    set: AtomicBool,
    waiting: Mutex<Waiting>,
}

/// The wakers of the waits registered, by a key each wait keeps.
#[derive(Debug, Default)]
struct Waiting {
    next: u64,
    wakers: HashMap<u64, Waker>,
}

impl Latch {
    /// Sets it and wakes every wait; again, it does nothing.
    pub(crate) fn set(&self) {
        if self.set.swap(true, Ordering::AcqRel) {
            return;
        }
        // Set before the lock: a wait that registers after this takes it
        // sees it set.
        let wakers = std::mem::take(&mut self.lock().wakers);
        for waker in wakers.into_values() {
            waker.wake();
        }
    }

    /// Whether it is set.
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Waits until it is set.
    pub(crate) fn wait(&self) -> Wait<'_> {
        Wait {
            latch: self,
            key: None,
            waker: None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A wait for a [`Latch`]; dropping it unregisters it.
#[derive(Debug)]
pub(crate) struct Wait<'a> {
    latch: &'a Latch,
    key: Option<u64>,
    /// The waker registered under `key`.
    waker: Option<Waker>,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.latch.is_set() {
            return Poll::Ready(());
        }
        if this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        let mut waiting = this.latch.lock();
        if this.latch.is_set() {
            return Poll::Ready(());
        }
        let key = *this.key.get_or_insert_with(|| {
            waiting.next += 1;
            waiting.next
        });
        let waker = cx.waker().clone();
        waiting.wakers.insert(key, waker.clone());
        this.waker = Some(waker);
        Poll::Pending
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.latch.lock().wakers.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    use super::*;

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(wait: &mut Wait<'_>, waker: &Waker) -> Poll<()> {
        Pin::new(wait).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_wait_registers_once_per_waker_and_is_woken_once_when_set() {
        let latch = Latch::default();
        let count = Arc::new(Count::default());
        let waker = Waker::from(Arc::clone(&count));
        let mut wait = latch.wait();
        for _ in 0..3 {
            assert!(poll(&mut wait, &waker).is_pending());
        }
        assert_eq!(latch.lock().wakers.len(), 1);
        // Polled with another waker, that one replaces it.
        let other = Arc::new(Count::default());
        assert!(poll(&mut wait, &Waker::from(Arc::clone(&other))).is_pending());
        assert_eq!(latch.lock().wakers.len(), 1);
        latch.set();
        latch.set();
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        assert_eq!(other.0.load(Ordering::SeqCst), 1);
        assert!(latch.is_set());
        assert!(poll(&mut wait, &waker).is_ready());
        // A wait that starts after it is set is ready at once.
        assert!(poll(&mut latch.wait(), &waker).is_ready());
    }

    #[test]
    fn a_dropped_wait_leaves_nothing_behind() {
        let latch = Latch::default();
        let waker = Waker::from(Arc::new(Count::default()));
        let mut waits: Vec<_> = (0..10).map(|_| latch.wait()).collect();
        for wait in &mut waits {
            assert!(poll(wait, &waker).is_pending());
        }
        assert_eq!(latch.lock().wakers.len(), 10);
        drop(waits);
        assert!(latch.lock().wakers.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_task_waiting_ends_when_it_is_set() {
        let latch = Arc::new(Latch::default());
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let latch = Arc::clone(&latch);
                tokio::spawn(async move { latch.wait().await })
            })
            .collect();
        tokio::task::yield_now().await;
        latch.set();
        for task in tasks {
            tokio::time::timeout(std::time::Duration::from_secs(10), task)
                .await
                .expect("woken")
                .expect("ran");
        }
    }
}
