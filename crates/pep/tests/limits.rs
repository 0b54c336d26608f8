//! The proxy under load it must bound: `--max-conns` connections at a soft `RLIMIT_NOFILE`
//! of 1,024 (raised at startup, or refused when the hard limit cannot hold them), exit within
//! 2 s of SIGTERM with connections in flight, and `--report` records streamed to disk as
//! connections end (memory flat with the connections served). Real processes on loopback,
//! the limits set with `prlimit(1)`.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Connections held open at once: 1,400 sockets in the proxy, beyond a soft limit of 1,024.
const HELD: usize = 700;

/// This test process holds both ends of every connection (client and echo server): give it
/// the descriptors for that, whatever its own soft limit.
fn raise_own_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointers to an rlimit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(16_384);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

/// The soft and hard "Max open files" of a process, from /proc/PID/limits.
fn nofile_of(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let mut nums = line
        .split_whitespace()
        .filter_map(|w| w.parse::<u64>().ok());
    (nums.next().unwrap(), nums.next().unwrap())
}

/// At a soft limit of 1,024 (hard: this process's) and the default `--max-conns` of 1,024, the proxy
/// raises its soft limit to 2 x 1,024 + 64 and relays 700 connections held open at once
/// without a reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_nofile_limit_is_raised_so_held_connections_are_not_reset() {
    raise_own_nofile();
    let echo = echo_server().await;
    let upstream = echo.to_string();
    let (_, hard) = nofile_of(std::process::id());
    assert!(
        hard >= 2 * 1024 + 64,
        "this machine's hard limit {hard} is below the need"
    );
    let nofile = format!("--nofile=1024:{hard}");
    let proxy = Proxy::spawn(
        &["prlimit", &nofile, "--"],
        &[
            "--listen",
            "127.0.0.1:0",
            "--stats",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
            "--log-level",
            "warn",
        ],
    );
    assert_eq!(nofile_of(proxy.pid), (2 * 1024 + 64, hard));

    let mut held = Vec::with_capacity(HELD);
    let mut failed = 0;
    for i in 0..HELD {
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        let ping = [i as u8; 64];
        let mut back = [0u8; 64];
        let ok = c.write_all(&ping).await.is_ok()
            && tokio::time::timeout(Duration::from_secs(10), c.read_exact(&mut back))
                .await
                .is_ok_and(|r| r.is_ok())
            && back == ping;
        failed += usize::from(!ok);
        held.push(c);
    }
    let s = proxy.stats();
    assert_eq!(failed, 0, "{failed} of {HELD} connections failed: {s}");
    assert_eq!(s["active"], HELD as u64, "{s}");
    drop(held);
    let s = proxy.wait_idle(Duration::from_secs(20));
    assert_eq!(s["accepted"], HELD as u64, "{s}");
    assert_eq!(s["reset_by_client"], 0, "{s}");
    assert_eq!(s["reset_by_server"], 0, "{s}");
    assert_eq!(s["upstream_failed"], 0, "{s}");
    assert_eq!(s["refused"], 0, "{s}");
    println!("{HELD} connections held at soft limit 1024: 0 failed, 0 reset");
}

/// A hard limit below what `--max-conns` needs: refused at startup in one line (exit 2),
/// naming the largest `--max-conns` that fits.
#[test]
fn hard_nofile_limit_too_low_is_refused_in_one_line() {
    let out = Command::new("prlimit")
        .args(["--nofile=256:256", "--", BIN])
        .args(["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "error: --max-conns = 1024: needs 2112 file descriptors (2 per connection + 64), but \
         the hard limit RLIMIT_NOFILE is 256; allowed: --max-conns at most 96, or a higher \
         hard limit (ulimit -Hn, LimitNOFILE=)\n"
    );
    // what it names fits: (256 - 64) / 2 = 96 connections start
    let mut ok = Command::new("prlimit")
        .args(["--nofile=256:256", "--", BIN])
        .args(["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"])
        .args(["--max-conns", "96"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = [0u8; 6];
    std::io::Read::read_exact(ok.stdout.as_mut().unwrap(), &mut first).unwrap();
    assert_eq!(&first, b"ready\n");
    ok.kill().unwrap();
    ok.wait().unwrap();
}

fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tcplab-pep-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// 100 connections mid-transfer (each with a full relay buffer: the server does not read)
/// and `--report`: SIGTERM ends the process within 2 s, the report written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_within_two_seconds_with_connections_in_flight() {
    let dir = scratch_dir("sigterm");
    let report = dir.join("report.json");
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = l.local_addr().unwrap().to_string();
    let mut proxy = Proxy::start(&[
        "--upstream",
        &upstream,
        "--report",
        report.to_str().unwrap(),
        "--buffer",
        "64KiB",
    ]);
    let mut conns = Vec::new();
    for _ in 0..100 {
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        // more than the socket buffers and the ring hold: the writer stays blocked
        let writer = tokio::spawn(async move {
            let block = vec![1u8; 1 << 20];
            loop {
                if c.write_all(&block).await.is_err() {
                    return;
                }
            }
        });
        conns.push((writer, s));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t0 = Instant::now();
    let (status, took) = tokio::task::spawn_blocking(move || {
        let st = proxy.signal_and_wait(libc::SIGTERM, Duration::from_secs(10));
        (st, t0.elapsed())
    })
    .await
    .unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(doc["conns"].as_array().unwrap().len(), 100);
    assert!(!dir.join("report.json.records").exists());
    println!("SIGTERM with 100 connections in flight: exit after {took:?}");
    for (w, _) in conns {
        w.abort();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records reach `FILE.records` as connections end (before the proxy exits), and the
/// proxy's memory stays flat while connections are served 1,500 at a time: it grows by less
/// than half the bytes of the records written meanwhile (keeping them would cost more than
/// their serialized size).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_records_are_streamed_to_disk_as_connections_end() {
    let dir = scratch_dir("stream");
    let report = dir.join("report.json");
    let spool = dir.join("report.json.records");
    let echo = echo_server().await;
    let upstream = echo.to_string();
    let mut proxy = Proxy::start(&[
        "--upstream",
        &upstream,
        "--report",
        report.to_str().unwrap(),
        "--log-level",
        "warn",
    ]);
    async fn serve(addr: std::net::SocketAddr, n: usize) {
        let mut tasks = Vec::new();
        for i in 0..n {
            tasks.push(tokio::spawn(async move {
                let s = TcpStream::connect(addr).await.unwrap();
                let (mut r, mut w) = s.into_split();
                let rx = tokio::spawn(async move { recv_stream(&mut r).await.unwrap() });
                let sent = send_stream(&mut w, i as u64, 16 << 10).await.unwrap();
                assert_eq!(rx.await.unwrap(), sent);
            }));
            if tasks.len() == 50 {
                for t in tasks.drain(..) {
                    t.await.unwrap();
                }
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
    }
    let lines = |p: &PathBuf| std::fs::read_to_string(p).unwrap().lines().count();
    serve(proxy.addr, 300).await;
    proxy.wait_idle(Duration::from_secs(20));
    assert_eq!(
        lines(&spool),
        300,
        "records not on disk while the proxy runs"
    );
    // A first 1,500 bring the allocator's arenas and the runtime to their working size. Then
    // four rounds of 1,500 are measured: keeping the records would grow the memory in every
    // round by about their size, while the allocator's own growth (a new arena for a thread,
    // +2.8 MiB seen once in CI) happens in one round; so all rounds but one must stay under
    // half the bytes written in them.
    serve(proxy.addr, 1500).await;
    proxy.wait_idle(Duration::from_secs(30));
    assert_eq!(lines(&spool), 1800);
    let mut over = Vec::new();
    for round in 0..4 {
        let rss_before = proxy.rss_bytes();
        let spool_before = std::fs::metadata(&spool).unwrap().len();
        serve(proxy.addr, 1500).await;
        proxy.wait_idle(Duration::from_secs(30));
        assert_eq!(lines(&spool), 3300 + 1500 * round);
        let written = std::fs::metadata(&spool).unwrap().len() - spool_before;
        let grown = proxy.rss_bytes().saturating_sub(rss_before);
        println!(
            "1500 connections with --report: RSS +{} KiB, records written {} KiB",
            grown >> 10,
            written >> 10
        );
        if grown >= written / 2 {
            over.push((grown, written));
        }
    }
    assert!(
        over.len() <= 1,
        "RSS grew by at least half the records written in {} of 4 rounds: {over:?}",
        over.len()
    );
    let status = proxy.signal_and_wait(libc::SIGTERM, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(doc["conns"].as_array().unwrap().len(), 7800);
    assert!(!spool.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
