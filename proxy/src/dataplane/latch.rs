//! A one-way signal every connection of a generation waits on: its drain,
//! its drain deadline.
//!
//! A connection's task polls both directions and the signals it waits on
//! each time anything of it wakes, so a wait is polled again and again
//! (about five times per request with one in flight). tokio-util's
//! `CancellationToken` took two uncontended locks on each of those polls (its
//! state, then its waiters' list, to compare the waker): about 870
//! instructions per request (callgrind). A [`Latch`] wait registers with a
//! `Notify` as that did, its entry in the connection's own task (no memory
//! elsewhere per connection), keeps the waker it registered with, and polled
//! again with the same one (a connection's task keeps its waker) answers from
//! one atomic load, without polling the registration again: that waker is
//! the one the `Notify` wakes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// Set once; wakes every wait when it is.
#[derive(Debug, Default)]
pub(crate) struct Latch {
    set: AtomicBool,
    notify: Notify,
}

impl Latch {
    /// Sets it and wakes every wait; again, it does nothing.
    pub(crate) fn set(&self) {
        if !self.set.swap(true, Ordering::AcqRel) {
            self.notify.notify_waiters();
        }
    }

    /// Whether it is set.
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Waits until it is set. A wait made before [`Latch::set`] is woken by
    /// it, polled or not (`Notify::notify_waiters`).
    pub(crate) fn wait(&self) -> Wait<'_> {
        Wait {
            latch: self,
            notified: self.notify.notified(),
            waker: None,
        }
    }
}

pin_project_lite::pin_project! {
    /// A wait for a [`Latch`]; dropping it unregisters it.
    pub(crate) struct Wait<'a> {
        latch: &'a Latch,
        #[pin]
        notified: Notified<'a>,
        // The waker `notified` is registered with, once it is.
        waker: Option<Waker>,
    }
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if this.latch.is_set() {
            return Poll::Ready(());
        }
        if this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        match this.notified.poll(cx) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                *this.waker = Some(cx.waker().clone());
                Poll::Pending
            }
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

    impl Count {
        fn get(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn poll(wait: Pin<&mut Wait<'_>>, waker: &Waker) -> Poll<()> {
        wait.poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_wait_polled_again_with_its_waker_is_woken_once_when_set() {
        let latch = Latch::default();
        let count = Arc::new(Count::default());
        let waker = Waker::from(Arc::clone(&count));
        let mut wait = std::pin::pin!(latch.wait());
        for _ in 0..3 {
            assert!(poll(wait.as_mut(), &waker).is_pending());
        }
        // Polled with another waker, that one is woken instead.
        let other = Arc::new(Count::default());
        assert!(poll(wait.as_mut(), &Waker::from(Arc::clone(&other))).is_pending());
        latch.set();
        latch.set();
        assert_eq!((count.get(), other.get()), (0, 1));
        assert!(latch.is_set());
        assert!(poll(wait.as_mut(), &waker).is_ready());
        // A wait that starts after it is set is ready at once.
        assert!(poll(std::pin::pin!(latch.wait()), &waker).is_ready());
    }

    #[test]
    fn a_wait_made_before_it_is_set_is_ready_unpolled_or_not() {
        let latch = Latch::default();
        let waker = Waker::from(Arc::new(Count::default()));
        let mut early = std::pin::pin!(latch.wait());
        latch.set();
        assert!(poll(early.as_mut(), &waker).is_ready());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_task_waiting_ends_when_it_is_set() {
        let latch = Arc::new(Latch::default());
        let (tx, mut rx) = tokio::sync::mpsc::channel(50);
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let (latch, tx) = (Arc::clone(&latch), tx.clone());
                tokio::spawn(async move {
                    let mut wait = std::pin::pin!(latch.wait());
                    // Registered before the latch is set: polled once.
                    assert!(futures_util::poll!(wait.as_mut()).is_pending());
                    tx.send(()).await.unwrap();
                    wait.await;
                })
            })
            .collect();
        for _ in 0..50 {
            rx.recv().await.unwrap();
        }
        latch.set();
        for task in tasks {
            tokio::time::timeout(std::time::Duration::from_secs(10), task)
                .await
                .expect("woken")
                .expect("ran");
        }
    }
}
