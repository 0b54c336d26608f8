//! Shared test fixtures: the proxy as a child process (exactly as `tcplab emulate` runs it),
//! its stats endpoint and /proc accounting, deterministic test streams and SHA-256 digests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

pub const BIN: &str = env!("CARGO_BIN_EXE_tcplab-pep");

/// A running `tcplab-pep`, killed on drop if still alive.
pub struct Proxy {
    child: Child,
    pub pid: u32,
    pub addr: SocketAddr,
    pub stats_addr: Option<SocketAddr>,
    log: Arc<Mutex<Vec<String>>>,
}

/// Value of `key=` in a logfmt line.
pub fn logfmt_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!(" {key}=");
    let start = line.find(&pat)? + pat.len();
    let rest = &line[start..];
    Some(rest.split(' ').next().unwrap_or(rest))
}

impl Proxy {
    /// Starts the proxy on 127.0.0.1 (any port) with a stats endpoint, plus `args`.
    pub fn start(args: &[&str]) -> Proxy {
        let mut full = vec!["--listen", "127.0.0.1:0", "--stats", "127.0.0.1:0"];
        full.extend_from_slice(args);
        Proxy::spawn(&[], &full)
    }

    /// Runs `prefix... BIN args...` (e.g. `ip netns exec NS`) and waits for `ready`.
    pub fn spawn(prefix: &[&str], args: &[&str]) -> Proxy {
        let mut cmd = if prefix.is_empty() {
            Command::new(BIN)
        } else {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]).arg(BIN);
            c
        };
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn tcplab-pep");
        let pid = child.id();
        let log = Arc::new(Mutex::new(Vec::new()));
        {
            let log = log.clone();
            let stderr = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if std::env::var_os("PEP_TEST_LOG").is_some() {
                        eprintln!("[pep] {line}");
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(l)) = lines.next() {
                let _ = tx.send(l);
            }
            for _ in lines {}
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) => assert_eq!(l, "ready", "first stdout line"),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(100));
                panic!(
                    "tcplab-pep did not print ready; stderr:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        }
        let mut p = Proxy {
            child,
            pid,
            addr: "0.0.0.0:0".parse().unwrap(),
            stats_addr: None,
            log,
        };
        // `ready` follows the `listening` line on stderr; the reader thread may lag a little.
        let want_stats = args.contains(&"--stats");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            for line in p.log_lines() {
                if line.contains(" msg=listening ") {
                    p.addr = logfmt_field(&line, "addr").unwrap().parse().unwrap();
                }
                if line.contains(" msg=stats_listening ") {
                    p.stats_addr = Some(logfmt_field(&line, "addr").unwrap().parse().unwrap());
                }
            }
            if p.addr.port() != 0 && (!want_stats || p.stats_addr.is_some()) {
                break;
            }
            assert!(Instant::now() < deadline, "no listening line in the log");
            std::thread::sleep(Duration::from_millis(5));
        }
        p
    }

    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The log lines containing `needle`, once there are at least `count` of them: the
    /// proxy counts an event before it logs it, and a thread reads its stderr, so a line can
    /// trail the stats that announce it (panics after 5 s).
    pub fn wait_log(&self, needle: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let found: Vec<String> = self
                .log_lines()
                .into_iter()
                .filter(|l| l.contains(needle))
                .collect();
            if found.len() >= count {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no {count} log lines with {needle:?}: {:?}",
                self.log_lines()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// One JSON snapshot from `--stats`.
    pub fn stats(&self) -> Value {
        stats_from(self.stats_addr.expect("started with --stats"))
    }

    /// Polls stats until `active` is 0 (panics after `timeout`).
    pub fn wait_idle(&self, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.stats();
            if s["active"] == 0 {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "proxy still has connections: {s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resident set size of the proxy process (from /proc/PID/statm), bytes.
    pub fn rss_bytes(&self) -> u64 {
        proc_rss_bytes(self.pid)
    }

    /// Open descriptors of the proxy process (entries of /proc/PID/fd).
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .unwrap()
            .count()
    }

    /// Sends `sig` and waits for the exit (panics after `timeout`).
    pub fn signal_and_wait(&mut self, sig: i32, timeout: Duration) -> ExitStatus {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(self.pid as i32, sig) };
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "proxy did not exit after signal {sig}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One JSON line from a stats endpoint.
pub fn stats_from(addr: SocketAddr) -> Value {
    let mut s =
        StdTcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("stats connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut line = String::new();
    s.read_to_string(&mut line).expect("stats read");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("stats JSON {line:?}: {e}"))
}

pub fn proc_rss_bytes(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// SplitMix64: the deterministic byte stream of the tests.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buf` with stream `seed` from byte `offset` on (offset a multiple of 8).
pub fn fill(seed: u64, offset: u64, buf: &mut [u8]) {
    assert_eq!(offset % 8, 0);
    let base = seed.wrapping_mul(0x1000_0000_01B3) ^ (offset / 8);
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let w = splitmix(base.wrapping_add(i as u64)).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// Digest and length of the bytes one side sent or received.
#[derive(Clone, PartialEq, Eq)]
pub struct StreamSum {
    pub bytes: u64,
    pub sha256: [u8; 32],
}

impl std::fmt::Debug for StreamSum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex: String = self.sha256[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        write!(f, "{} bytes sha256 {hex}...", self.bytes)
    }
}

/// Incremental SHA-256 of a stream.
pub struct Summer {
    h: Sha256,
    bytes: u64,
}

impl Summer {
    pub fn new() -> Summer {
        Summer {
            h: Sha256::new(),
            bytes: 0,
        }
    }
    pub fn update(&mut self, b: &[u8]) {
        self.h.update(b);
        self.bytes += b.len() as u64;
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn finish(self) -> StreamSum {
        StreamSum {
            bytes: self.bytes,
            sha256: self.h.finalize().into(),
        }
    }
}

impl Default for Summer {
    fn default() -> Self {
        Summer::new()
    }
}

pub const CHUNK: usize = 256 << 10;

/// Writes `total` bytes of stream `seed` to `w`, then shuts its write side (FIN).
pub async fn send_stream<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    seed: u64,
    total: u64,
) -> std::io::Result<StreamSum> {
    use tokio::io::AsyncWriteExt;
    let mut sum = Summer::new();
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < total {
        let n = (total - off).min(CHUNK as u64) as usize;
        fill(seed, off, &mut buf[..n]);
        sum.update(&buf[..n]);
        w.write_all(&buf[..n]).await?;
        off += n as u64;
    }
    w.shutdown().await?;
    Ok(sum.finish())
}

/// Reads `r` to EOF and digests what came.
pub async fn recv_stream<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> std::io::Result<StreamSum> {
    use tokio::io::AsyncReadExt;
    let mut sum = Summer::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return Ok(sum.finish());
        }
        sum.update(&buf[..n]);
    }
}

/// Digest of `total` bytes of stream `seed` (what an intact receiver must see).
pub fn expected_sum(seed: u64, total: u64) -> StreamSum {
    let mut sum = Summer::new();
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < total {
        let n = (total - off).min(CHUNK as u64) as usize;
        fill(seed, off, &mut buf[..n]);
        sum.update(&buf[..n]);
        off += n as u64;
    }
    sum.finish()
}

/// Sets SO_LINGER 0 so dropping the socket sends an RST.
pub fn set_rst_on_close(s: &tokio::net::TcpStream) {
    socket2::SockRef::from(s)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
}

/// The congestion controls this kernel offers.
pub fn available_ccas() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Mebibytes per second.
pub fn mib_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1 << 20) as f64 / d.as_secs_f64()
}

/// Echo server: each connection gets its bytes back; its FIN is answered with a FIN.
pub async fn echo_server() -> std::net::SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else { return };
            tokio::spawn(async move {
                let (mut r, mut w) = s.into_split();
                if tokio::io::copy(&mut r, &mut w).await.is_ok() {
                    let _ = tokio::io::AsyncWriteExt::shutdown(&mut w).await;
                }
            });
        }
    });
    addr
}
