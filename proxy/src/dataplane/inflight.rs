//! The queue of in-flight slots between a connection's two directions: the
//! request side pushes a slot for each request that gets an answer, the
//! response side takes them in order. How many there may be is bounded by
//! the slots' permits, not here.
//!
//! A tokio channel allocates a block of 32 slots when it is made, kept for
//! the life of the connection; this queue holds memory only while slots are
//! in it, so an idle connection keeps none.
//!
//! A waiting receiver's waker is kept beside the items, under the same lock
//! a look at them takes anyway: the response side waits here at every
//! request, and a `Notify` cost a second lock, a wait-list entry made and
//! dropped each time, and a look at the waker on every poll (callgrind: about
//! 420 instructions per request).

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

/// A new queue: its two ends.
pub(super) fn queue<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Mutex::new(State {
        items: VecDeque::new(),
        closed: false,
        waiting: None,
    }));
    (Sender(Arc::clone(&shared)), Receiver(shared))
}

type Shared<T> = Mutex<State<T>>;

struct State<T> {
    items: VecDeque<T>,
    /// The sender is gone: nothing more will come.
    closed: bool,
    /// The receiver waiting in [`Receiver::recv`], woken at a push that
    /// asks and when the sender goes.
    waiting: Option<Waker>,
}

impl<T> State<T> {
    fn wake(&mut self) {
        if let Some(waker) = self.waiting.take() {
            waker.wake();
        }
    }
}

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, State<T>> {
    // A panic while holding the lock leaves a queue that is still whole.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The request side's end.
pub(super) struct Sender<T>(Arc<Shared<T>>);

impl<T> Sender<T> {
    /// Queues an item behind the others; wakes a receiver waiting in
    /// [`Receiver::recv`] only when `wake`. (A slot the upstream answers
    /// need not: it is queued before its request goes upstream, and the
    /// response side, which waits for upstream bytes too, takes it when they
    /// come.)
    pub(super) fn send(&self, item: T, wake: bool) {
        let mut state = lock(&self.0);
        state.items.push_back(item);
        if wake {
            state.wake();
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.0);
        state.closed = true;
        state.wake();
    }
}

/// The response side's end.
pub(super) struct Receiver<T>(Arc<Shared<T>>);

impl<T> Receiver<T> {
    /// The next item, if one is queued now.
    pub(super) fn try_recv(&mut self) -> Option<T> {
        Self::take(&mut lock(&self.0))
    }

    fn take(state: &mut State<T>) -> Option<T> {
        let item = state.items.pop_front();
        if state.items.is_empty() {
            // Empty: its memory goes (nothing is allocated when it never grew).
            state.items = VecDeque::new();
        }
        item
    }

    /// The next item, waiting for one; `None` once the sender is gone and
    /// everything it sent was taken. Dropping the wait loses nothing.
    pub(super) async fn recv(&mut self) -> Option<T> {
        poll_fn(|cx| {
            let mut state = lock(&self.0);
            if let Some(item) = Self::take(&mut state) {
                return Poll::Ready(Some(item));
            }
            if state.closed {
                return Poll::Ready(None);
            }
            // Looked at and registered under one lock: no push is missed.
            match &mut state.waiting {
                Some(w) if w.will_wake(cx.waker()) => {}
                waiting => *waiting = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_come_in_order_then_none_once_the_sender_is_gone() {
        let (tx, mut rx) = queue();
        assert_eq!(rx.try_recv(), None::<u32>);
        let waiting = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(i) = rx.recv().await {
                got.push(i);
            }
            got
        });
        for i in 0..100 {
            tx.send(i, true);
            tokio::task::yield_now().await;
        }
        drop(tx);
        assert_eq!(waiting.await.unwrap(), (0..100).collect::<Vec<_>>());
    }

    /// Counts the wakes of a task.
    #[derive(Default)]
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn only_a_send_that_asks_wakes_a_waiting_receiver() {
        use std::future::Future;
        let (tx, mut rx) = queue();
        let wakes = Arc::new(Wakes::default());
        let waker = std::task::Waker::from(Arc::clone(&wakes));
        let mut cx = std::task::Context::from_waker(&waker);
        let count = || wakes.0.load(std::sync::atomic::Ordering::SeqCst);
        {
            let mut waiting = std::pin::pin!(rx.recv());
            assert!(waiting.as_mut().poll(&mut cx).is_pending());
            tx.send(1, false);
            assert_eq!(count(), 0, "a quiet send wakes nobody");
            tx.send(2, true);
            assert_eq!(count(), 1);
            // Woken, it takes what came first, the quiet one included.
            assert_eq!(
                waiting.as_mut().poll(&mut cx),
                std::task::Poll::Ready(Some(1))
            );
        }
        assert_eq!(rx.try_recv(), Some(2));
    }

    #[test]
    fn an_emptied_queue_holds_no_memory() {
        let (tx, mut rx) = queue();
        for i in 0..100 {
            tx.send(i, i % 2 == 0);
        }
        assert!(lock(&rx.0).items.capacity() >= 100);
        while rx.try_recv().is_some() {}
        assert_eq!(lock(&rx.0).items.capacity(), 0);
    }
}
