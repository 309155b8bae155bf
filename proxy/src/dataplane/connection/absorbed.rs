//! A connection's two directions, polled again at once when one wakes the
//! other while they are being polled, instead of through the scheduler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// Times in a row a connection is polled again at once for a wake of its
/// own; past it (tokio's cooperative budget, which wakes the task to make
/// it yield, say), it yields to the scheduler.
pub(super) const REPOLLS: usize = 4;
/// [`SelfWake`]'s states: not being polled; being polled; woken while
/// being polled.
const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;

/// A connection's two directions, polled again at once when one wakes the
/// other while they are being polled (the request side queuing a slot the
/// response side waits for, a permit given back) instead of waking the
/// task through the scheduler: a task that wakes itself is put back on the
/// run queue and another worker thread is woken (a futex wake, a futex
/// wait, a context switch) to steal it, on every request.
pub(super) struct Absorbed<'a, F> {
    fut: Pin<&'a mut F>,
    wake: Arc<SelfWake>,
}

impl<'a, F: Future> Absorbed<'a, F> {
    pub(super) fn new(fut: Pin<&'a mut F>) -> Self {
        let wake = Arc::new(SelfWake {
            state: AtomicU8::new(IDLE),
            task: std::sync::Mutex::new(None),
        });
        Absorbed { fut, wake }
    }
}

impl<F: Future> Future for Absorbed<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        {
            let mut task = this.wake.lock();
            if !task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        let waker = Waker::from(Arc::clone(&this.wake));
        let mut inner = Context::from_waker(&waker);
        for _ in 0..=REPOLLS {
            this.wake.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(out) = this.fut.as_mut().poll(&mut inner) {
                this.wake.state.store(IDLE, Ordering::Release);
                return Poll::Ready(out);
            }
            let done = this.wake.state.compare_exchange(
                POLLING,
                IDLE,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            if done.is_ok() {
                return Poll::Pending;
            }
            // Woken while polled: its event is there, look again.
        }
        this.wake.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The waker a connection's directions see: a wake while they are being
/// polled is noted (and they are polled again); any other wakes the task.
struct SelfWake {
    state: AtomicU8,
    task: std::sync::Mutex<Option<Waker>>,
}

impl SelfWake {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Waker>> {
        self.task.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Wake for SelfWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let noted =
            self.state
                .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire);
        match noted {
            Ok(_) | Err(WOKEN) => {}
            Err(_) => {
                if let Some(task) = self.lock().as_ref() {
                    task.wake_by_ref();
                }
            }
        }
    }
}
