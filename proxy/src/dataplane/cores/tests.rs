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

/// Per thread, its bootstrap and its broker connections.
fn serving(cores: &Cores) -> Vec<[usize; 2]> {
    cores
        .0
        .iter()
        .map(|c| c.serving.each_ref().map(|n| n.load(Ordering::Relaxed)))
        .collect()
}

/// Two clients, each with a bootstrap and a broker connection, as they come.
const KINDS: [Kind; 4] = [Kind::Bootstrap, Kind::Broker, Kind::Bootstrap, Kind::Broker];

#[test]
fn a_connection_goes_to_the_thread_with_fewest_of_its_kind_and_outlives_the_runtime_that_accepted_it()
 {
    let cores = Cores::new(2).unwrap();
    let tracker = TaskTracker::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = Builder::new_current_thread().enable_all().build().unwrap();
    let mut clients = Vec::new();
    for kind in KINDS {
        let client = std::net::TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let (socket, _) = listener.accept().unwrap();
        socket.set_nonblocking(true).unwrap();
        accepting.block_on(async {
            let tcp = TcpStream::from_std(socket).unwrap();
            cores.spawn(&tracker, tcp, kind, name_the_thread);
        });
        clients.push(client);
    }
    // Had a socket stayed with the reactor of the runtime that accepted
    // it, it would fail with that runtime gone.
    drop(accepting);
    let names: Vec<String> = clients.iter().map(ask).collect();
    // The two broker connections on two threads, and so the two bootstrap
    // ones (counted all together, both broker connections went to the
    // second thread).
    assert_eq!(
        names,
        [
            "sluice-conn-0",
            "sluice-conn-1",
            "sluice-conn-1",
            "sluice-conn-0"
        ]
    );
    assert_eq!(serving(&cores), [[1, 1], [1, 1]]);
    // The next broker connection goes where there are fewer of its kind.
    let one_more = Serving::new(&cores.0[0].serving[Kind::Broker as usize]);
    assert!(std::ptr::eq(cores.least_busy(Kind::Broker), &cores.0[1]));
    drop(one_more);
    drop(clients);
    tracker.close();
    let waiting = Builder::new_current_thread().enable_all().build().unwrap();
    waiting.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), tracker.wait())
            .await
            .expect("every connection ends when its client closes");
    });
    assert_eq!(serving(&cores), [[0, 0], [0, 0]]);
}

#[test]
fn without_threads_a_connection_stays_on_the_runtime_that_accepted_it() {
    start(0).unwrap();
    assert_eq!(threads(), 0);
    let runtime = Builder::new_current_thread().enable_all().build().unwrap();
    let name = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let tracker = TaskTracker::new();
        spawn(&tracker, tcp, Kind::Broker, |accepted| {
            assert!(matches!(accepted, Accepted::Here(_)), "{accepted:?}");
            name_the_thread(accepted)
        });
        client.write_all(b"?").await.unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while client.read(&mut byte).await.unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        String::from_utf8(line).unwrap()
    });
    assert_eq!(Some(name.as_str()), std::thread::current().name());
}
