//! Child processes for tests: output captured line by line, awaited by
//! content (never by sleeping), and killed by PID when the guard drops.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Lines a child printed, shared with the reader threads.
#[derive(Debug, Default)]
struct Output {
    lines: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Output {
    /// The lines, even after a panic while they were held (a failed wait
    /// panics holding them): a second panic while the test unwinds would
    /// abort it, and leave its other children running.
    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running child process. Dropping it kills the child (by its PID, which
/// only this guard knows) and waits for it.
#[derive(Debug)]
pub struct Proc {
    name: String,
    child: Child,
    stdin_pipe: Option<std::process::ChildStdin>,
    output: Arc<Output>,
}

impl Proc {
    /// Starts `cmd` with stdout and stderr captured.
    pub fn spawn(name: &str, mut cmd: Command) -> Proc {
        // stdin stays open for the child's life: a child that watches it
        // (the mock cluster does) goes away with the test even if the test
        // process is killed.
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}"));
        let stdin = child.stdin.take();
        let output = Arc::new(Output::default());
        if let Some(out) = child.stdout.take() {
            pump(out, Arc::clone(&output));
        }
        if let Some(err) = child.stderr.take() {
            pump(err, Arc::clone(&output));
        }
        Proc {
            name: name.to_owned(),
            child,
            stdin_pipe: stdin,
            output,
        }
    }

    /// The child's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until a printed line contains `needle`, and returns that line.
    /// Panics with everything printed so far if it does not come in time or
    /// the process exits first.
    pub fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> String {
        self.wait_until(
            &format!("containing {needle:?}"),
            |l| l.contains(needle),
            timeout,
        )
    }

    /// Waits until a printed line satisfies `matches` (described by `what`
    /// in the panic), and returns that line. Panics with everything printed
    /// so far if none comes in time or the process exits first.
    pub fn wait_until(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> String {
        let deadline = Instant::now() + timeout;
        let mut seen = 0;
        loop {
            {
                let lines = self.output.lines();
                if let Some(line) = lines[seen..].iter().find(|l| matches(l)) {
                    return line.clone();
                }
                seen = lines.len();
                let now = Instant::now();
                if now >= deadline {
                    panic!(
                        "{}: no line {what} within {timeout:?}:\n{}",
                        self.name,
                        lines.join("\n")
                    );
                }
                // Short waits so an exited child is noticed.
                let wait = (deadline - now).min(Duration::from_millis(200));
                drop(self.output.changed.wait_timeout(lines, wait));
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader threads finish, then look one last time.
                thread::sleep(Duration::from_millis(50));
                let lines = self.output.lines();
                if let Some(line) = lines.iter().find(|l| matches(l)) {
                    return line.clone();
                }
                panic!(
                    "{} exited ({status}) before printing a line {what}:\n{}",
                    self.name,
                    lines.join("\n")
                );
            }
        }
    }

    /// Writes a line to the child's stdin.
    pub fn send_line(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin_pipe.as_mut().expect("stdin");
        writeln!(stdin, "{line}").expect("write to the child");
        stdin.flush().expect("flush");
    }

    /// Everything printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.output.lines().clone()
    }

    /// Sends a signal to the child.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.pid());
    }

    /// Sends `signal` and waits for the exit, at most `timeout`; panics if
    /// the child is still running then.
    pub fn stop(&mut self, signal: &str, timeout: Duration) -> std::process::ExitStatus {
        self.signal(signal);
        self.wait_exit(timeout)
            .unwrap_or_else(|| panic!("{}: no exit within {timeout:?} of SIG{signal}", self.name))
    }

    /// The child's resident memory, in KiB (from `/proc`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// Waits for the child to exit, at most `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn pump(stream: impl Read + Send + 'static, output: Arc<Output>) {
    thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            output.lines().push(line);
            output.changed.notify_all();
        }
    });
}
