//! A TCP relay that counts the connections it accepts: put in front of a
//! broker, it says whether the proxy opened any connection upstream (a
//! client refused before that must leave the count unchanged).

use std::io::copy;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// The relay: its address and the connections it accepted so far.
#[derive(Debug)]
pub struct CountingRelay {
    /// Where it listens (127.0.0.1).
    pub addr: String,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Drop for CountingRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl CountingRelay {
    /// Starts relaying every connection to `target`, on a thread that
    /// stops accepting when the relay is dropped (connections already
    /// relayed end when either side closes).
    pub fn start(target: &str) -> CountingRelay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("its address").to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done, target) = (Arc::clone(&accepted), Arc::clone(&stop), target.to_owned());
        thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    // Nothing to accept: look again shortly.
                    thread::sleep(Duration::from_millis(5));
                    continue;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let _ = client.set_nonblocking(false);
                if let Ok(server) = TcpStream::connect(&target) {
                    pump(client, server);
                }
            }
        });
        CountingRelay {
            addr,
            accepted,
            stop,
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Copies both ways until either side closes.
fn pump(client: TcpStream, server: TcpStream) {
    let (Ok(mut c2), Ok(mut s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let (mut c1, mut s1) = (client, server);
    thread::spawn(move || {
        let _ = copy(&mut c1, &mut s1);
        let _ = s1.shutdown(Shutdown::Write);
    });
    thread::spawn(move || {
        let _ = copy(&mut s2, &mut c2);
        let _ = c2.shutdown(Shutdown::Write);
    });
}
