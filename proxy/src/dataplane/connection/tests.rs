//! The connection's own machinery: a self-woken connection is polled again
//! at once, and an idle direction's first read takes a whole frame.

use std::sync::atomic::AtomicUsize;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Wake, Waker};

use super::absorbed::{Absorbed, REPOLLS};
use crate::budget::Budget;
use crate::dataplane::buffer::FrameBuf;

/// A task's waker that counts its wakes.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Pending, after waking its own task, `wakes` times; then ready.
struct WakesItself {
    wakes: usize,
    polls: usize,
}

impl Future for WakesItself {
    type Output = usize;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls += 1;
        if self.polls > self.wakes {
            return Poll::Ready(self.polls);
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn poll_once<F: Future>(fut: Pin<&mut F>, task: &Arc<Counting>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::clone(task));
    let mut absorbed = Absorbed::new(fut);
    Pin::new(&mut absorbed).poll(&mut Context::from_waker(&waker))
}

#[test]
fn a_wake_of_its_own_while_polled_polls_again_without_the_scheduler() {
    let task = Arc::new(Counting::default());
    let fut = WakesItself { wakes: 1, polls: 0 };
    tokio::pin!(fut);
    // Ready within the one poll the task got, and the task not woken.
    assert_eq!(poll_once(fut, &task), Poll::Ready(2));
    assert_eq!(task.0.load(Ordering::SeqCst), 0);
}

#[test]
fn a_future_that_keeps_waking_itself_yields_to_the_scheduler() {
    let task = Arc::new(Counting::default());
    let fut = WakesItself {
        wakes: usize::MAX,
        polls: 0,
    };
    tokio::pin!(fut);
    assert_eq!(poll_once(fut.as_mut(), &task), Poll::Pending);
    assert_eq!(fut.polls, REPOLLS + 1);
    assert_eq!(task.0.load(Ordering::SeqCst), 1, "woken once, to yield");
}

#[tokio::test]
async fn an_idle_socket_direction_reads_a_whole_frame_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    client.write_all(&[7; 1000]).await.unwrap();
    let (mut rd, _wr) = server.split();
    let budget = Arc::new(Budget::new(
        1 << 20,
        Gauge::default(),
        Gauge::default(),
        Counter::default(),
    ));
    let mut buf = FrameBuf::new(budget, Counter::default(), Counter::default());
    let n = buf.read_idle(&mut rd).await.unwrap();
    buf.adopt(n).await;
    // One read took all that had arrived, not a probe's worth.
    assert_eq!(buf.unread().len(), 1000);
}
