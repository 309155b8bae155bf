use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// Answers every byte with the name of the thread it runs on.
async fn name_the_thread(accepted: Accepted) {
    let mut tcp = accepted.register().unwrap();
    let mut byte = [0u8; 1];
    while let Ok(1) = tcp.read(&mut byte).await {
        let name = std::thread::current().name().unwrap_or_default().to_owned();
        if tcp.write_all(format!("{name}\n").as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Which thread serves `client`'s connection.
fn ask(client: &std::net::TcpStream) -> String {
    let mut writer = client;
    writer.write_all(b"?").unwrap();
    let mut line = String::new();
    BufReader::new(client).read_line(&mut line).unwrap();
    line.trim_end().to_owned()
}

fn serving(cores: &Cores) -> Vec<usize> {
    cores
        .0
        .iter()
        .map(|c| c.serving.load(Ordering::Relaxed))
        .collect()
}

#[test]
fn a_connection_goes_to_the_least_busy_thread_and_outlives_the_runtime_that_accepted_it() {
    let cores = Cores::new(2).unwrap();
    let tracker = TaskTracker::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = Builder::new_current_thread().enable_all().build().unwrap();
    let mut clients = Vec::new();
    for _ in 0..4 {
        let client = std::net::TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let (socket, _) = listener.accept().unwrap();
        socket.set_nonblocking(true).unwrap();
        accepting.block_on(async {
            let tcp = TcpStream::from_std(socket).unwrap();
            cores.spawn(&tracker, tcp, name_the_thread);
        });
        clients.push(client);
    }
    // Had a socket stayed with the reactor of the runtime that accepted
    // it, it would fail with that runtime gone.
    drop(accepting);
    let names: Vec<String> = clients.iter().map(ask).collect();
    assert_eq!(
        names,
        [
            "sluice-conn-0",
            "sluice-conn-1",
            "sluice-conn-0",
            "sluice-conn-1"
        ]
    );
    assert_eq!(serving(&cores), [2, 2]);
    // The next goes to the thread with fewer, whichever that is.
    let one_more = Serving::new(&cores.0[0].serving);
    assert!(std::ptr::eq(cores.least_busy(), &cores.0[1]));
    drop(one_more);
    drop(clients);
    tracker.close();
    let waiting = Builder::new_current_thread().enable_all().build().unwrap();
    waiting.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), tracker.wait())
            .await
            .expect("every connection ends when its client closes");
    });
    assert_eq!(serving(&cores), [0, 0]);
}

#[test]
fn without_threads_connections_stay_where_they_were_accepted() {
    start(0).unwrap();
    assert_eq!(threads(), 0);
}
