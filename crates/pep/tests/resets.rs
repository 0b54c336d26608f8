//! Reset propagation: an abortive close (SO_LINGER 0 → RST) on one side reaches the other side
//! as a reset, never as a clean FIN, and 1000 such cycles leak no descriptor and no memory.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MSG: usize = 16 << 10;

/// What the server side saw after the client's reset.
#[derive(Default)]
struct Seen {
    reset: AtomicU64,
    clean_eof: AtomicU64,
    other: AtomicU64,
}

/// Server: read MSG bytes, acknowledge with one byte, then wait for the end of the stream and
/// classify it.
async fn reset_observing_server(seen: Arc<Seen>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; MSG];
                if s.read_exact(&mut buf).await.is_err() || s.write_all(b"k").await.is_err() {
                    seen.other.fetch_add(1, Relaxed);
                    return;
                }
                let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
                match r {
                    Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                        seen.reset.fetch_add(1, Relaxed)
                    }
                    Ok(Ok(0)) => seen.clean_eof.fetch_add(1, Relaxed),
                    _ => seen.other.fetch_add(1, Relaxed),
                };
            });
        }
    });
    addr
}

/// One cycle: connect, send MSG, wait for the server's ack (the relay is fully up), reset.
async fn client_reset_cycle(proxy: std::net::SocketAddr) {
    let mut c = TcpStream::connect(proxy).await.unwrap();
    c.write_all(&[0x5a; MSG]).await.unwrap();
    let mut k = [0u8; 1];
    c.read_exact(&mut k).await.unwrap();
    set_rst_on_close(&c);
    drop(c);
}

async fn run_cycles(proxy: std::net::SocketAddr, cycles: usize, parallel: usize) {
    let mut done = 0;
    while done < cycles {
        let batch = parallel.min(cycles - done);
        let tasks: Vec<_> = (0..batch)
            .map(|_| tokio::spawn(client_reset_cycle(proxy)))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        done += batch;
    }
}

async fn wait_for(seen: &Seen, n: u64) {
    for _ in 0..500 {
        if seen.reset.load(Relaxed) + seen.clean_eof.load(Relaxed) + seen.other.load(Relaxed) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// 1000 + 1000 client resets: each reaches the server as ECONNRESET, the proxy counts them,
/// its descriptors after the last cycle equal those after a 100-cycle warm-up, and its RSS
/// does not grow with the connections: a leak would grow it in both rounds of 1000, while
/// the allocator's own wandering (a few hundred KiB either way, at times over 1 MiB) hardly
/// ever does so twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_resets_propagate_and_2000_cycles_leak_nothing() {
    const WARMUP: usize = 100;
    const CYCLES: usize = 1000;
    let seen = Arc::new(Seen::default());
    let server = reset_observing_server(seen.clone()).await;
    let proxy = Proxy::start(&["--upstream", &server.to_string(), "--log-level", "warn"]);
    let fds_start = proxy.open_fds();
    let rss_start = proxy.rss_bytes();

    run_cycles(proxy.addr, WARMUP, 20).await;
    wait_for(&seen, WARMUP as u64).await;
    proxy.wait_idle(Duration::from_secs(5));
    let fds_warm = proxy.open_fds();
    let rss_warm = proxy.rss_bytes();

    let t0 = std::time::Instant::now();
    let mut rss = vec![rss_warm];
    let mut s = serde_json::Value::Null;
    for round in 1..=2 {
        run_cycles(proxy.addr, CYCLES, 20).await;
        wait_for(&seen, (WARMUP + round * CYCLES) as u64).await;
        s = proxy.wait_idle(Duration::from_secs(5));
        rss.push(proxy.rss_bytes());
    }
    let elapsed = t0.elapsed();
    let fds_end = proxy.open_fds();
    let rss_end = rss[2];

    let total = (WARMUP + 2 * CYCLES) as u64;
    assert_eq!(seen.reset.load(Relaxed), total, "servers that saw a reset");
    assert_eq!(
        seen.clean_eof.load(Relaxed),
        0,
        "a reset must not become a FIN"
    );
    assert_eq!(seen.other.load(Relaxed), 0);
    assert_eq!(s["reset_by_client"], total, "{s}");
    assert_eq!(s["accepted"], total, "{s}");
    assert_eq!(s["buffered_bytes"], 0, "{s}");
    assert_eq!(
        fds_end, fds_warm,
        "descriptors: {fds_warm} after warm-up, {fds_end} after"
    );
    assert_eq!(
        fds_end, fds_start,
        "descriptors: {fds_start} at start, {fds_end} after"
    );
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let growth = [rss[1] as i64 - rss[0] as i64, rss[2] as i64 - rss[1] as i64];
    println!(
        "{} reset cycles in {:.2} s: proxy RSS start {:.2} MiB, after warm-up {:.2} MiB, \
         after {CYCLES} more {:.2} MiB, after {CYCLES} more {:.2} MiB (growth {} / {} KiB); \
         fds {fds_start}/{fds_warm}/{fds_end}",
        2 * CYCLES,
        elapsed.as_secs_f64(),
        mib(rss_start),
        mib(rss_warm),
        mib(rss[1]),
        mib(rss_end),
        growth[0] / 1024,
        growth[1] / 1024,
    );
    // Under 1 MiB per 1000 connections in one round at least: a leak of more than 1 KiB per
    // connection fails.
    assert!(
        growth.iter().min().is_some_and(|&g| g < 1 << 20),
        "RSS grew by {} and {} bytes over two rounds of {CYCLES} connection cycles",
        growth[0],
        growth[1]
    );
}

/// A server reset reaches the client as a reset; 100 cycles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_resets_propagate_to_the_client() {
    const CYCLES: u64 = 100;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; MSG];
                if s.read_exact(&mut buf).await.is_ok() {
                    set_rst_on_close(&s);
                }
            });
        }
    });
    let proxy = Proxy::start(&["--upstream", &server.to_string(), "--log-level", "warn"]);
    let fds_start = proxy.open_fds();
    let mut resets = 0;
    for _ in 0..CYCLES {
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        c.write_all(&[1u8; MSG]).await.unwrap();
        let mut b = [0u8; 16];
        match tokio::time::timeout(Duration::from_secs(5), c.read(&mut b))
            .await
            .expect("no reset within 5 s")
        {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => resets += 1,
            other => panic!("expected a reset, got {other:?}"),
        }
    }
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(resets, CYCLES);
    assert_eq!(s["reset_by_server"], CYCLES, "{s}");
    assert_eq!(proxy.open_fds(), fds_start);
}

/// A reset that arrives after the client's FIN, while the relay only waits on the server,
/// is still noticed (the socket's error is watched) and propagated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_after_half_close_is_propagated() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = Proxy::start(&["--upstream", &l.local_addr().unwrap().to_string()]);
    let c = TcpStream::connect(proxy.addr).await.unwrap();
    let (mut s, _) = l.accept().await.unwrap();
    // Client sends its FIN; the server sees it but keeps its own direction open.
    let (mut cr, mut cw) = c.into_split();
    cw.write_all(b"bye").await.unwrap();
    cw.shutdown().await.unwrap();
    let mut b = Vec::new();
    s.read_to_end(&mut b).await.unwrap();
    assert_eq!(b, b"bye");
    // The server keeps talking; the client reads it, then aborts.
    s.write_all(b"more").await.unwrap();
    let mut m = [0u8; 4];
    cr.read_exact(&mut m).await.unwrap();
    let c = cr.reunite(cw).unwrap();
    set_rst_on_close(&c);
    drop(c);
    // Nothing flows toward the client now, so the proxy can learn of the reset only from the
    // client socket's error state (it must not wait for the server to send).
    let mut st = proxy.stats();
    for _ in 0..250 {
        if st["reset_by_client"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        st = proxy.stats();
    }
    assert_eq!(st["reset_by_client"], 1, "{st}");
    // The server leg was reset as well. Its FIN arrived earlier, so reads keep returning 0;
    // a write is how a server finds out, and it fails at once.
    let r = s.write_all(b"x").await;
    assert!(
        matches!(
            r.as_ref().map_err(|e| e.kind()),
            Err(std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset)
        ),
        "{r:?}"
    );
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["reset_by_client"], 1, "{s}");
}
