//! Backpressure: with a slow reader the proxy stops reading from the fast sender once its
//! buffer toward the reader is full, so its buffered bytes stay ≤ 2 × `--buffer`, the sender
//! stalls, and when the reader speeds up every byte still arrives.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BUFFER: u64 = 256 << 10;
const TOTAL: u64 = 256 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_reader_bounds_proxy_buffer_and_loses_nothing() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = Proxy::start(&[
        "--upstream",
        &l.local_addr().unwrap().to_string(),
        "--buffer",
        &BUFFER.to_string(),
    ]);
    let rss_before = proxy.rss_bytes();

    // Fast sender: writes TOTAL bytes as fast as the proxy lets it, counting progress.
    let written = Arc::new(AtomicU64::new(0));
    let sender = {
        let written = written.clone();
        let addr = proxy.addr;
        tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            let mut sum = Summer::new();
            let mut buf = vec![0u8; 64 << 10];
            let mut off = 0u64;
            while off < TOTAL {
                fill(9, off, &mut buf);
                sum.update(&buf);
                c.write_all(&buf).await.unwrap();
                off += buf.len() as u64;
                written.store(off, Relaxed);
            }
            c.shutdown().await.unwrap();
            sum.finish()
        })
    };

    // Slow reader: 16 KiB every 10 ms (~1.6 MB/s) for 3 s while stats are sampled.
    let (mut s, _) = l.accept().await.unwrap();
    let mut sum = Summer::new();
    let mut buf = vec![0u8; 16 << 10];
    let slow_until = Instant::now() + Duration::from_secs(3);
    let mut max_conn_buffered = 0u64;
    let mut max_total_buffered = 0u64;
    let mut last_sample = Instant::now();
    let mut written_at_2s = None;
    let t0 = Instant::now();
    while Instant::now() < slow_until {
        let n = s.read(&mut buf).await.unwrap();
        sum.update(&buf[..n]);
        tokio::time::sleep(Duration::from_millis(10)).await;
        if last_sample.elapsed() >= Duration::from_millis(100) {
            last_sample = Instant::now();
            let st = proxy.stats();
            max_total_buffered = max_total_buffered.max(st["buffered_bytes"].as_u64().unwrap());
            for c in st["conns"].as_array().unwrap() {
                let b = c["buffered_up"].as_u64().unwrap() + c["buffered_down"].as_u64().unwrap();
                max_conn_buffered = max_conn_buffered.max(b);
            }
            if written_at_2s.is_none() && t0.elapsed() >= Duration::from_secs(2) {
                written_at_2s = Some((written.load(Relaxed), sum.bytes()));
            }
        }
    }
    let slow_read = sum.bytes();
    let written_slow = written.load(Relaxed);
    let st = proxy.stats();
    let peak_dir = st["peak_direction_buffered_bytes"].as_u64().unwrap();
    let peak_total = st["peak_buffered_bytes"].as_u64().unwrap();
    let rss_slow = proxy.rss_bytes();

    // Fast reader: drain everything.
    let got = {
        let mut big = vec![0u8; CHUNK];
        loop {
            let n = s.read(&mut big).await.unwrap();
            if n == 0 {
                break;
            }
            sum.update(&big[..n]);
        }
        sum.finish()
    };
    let sent = sender.await.unwrap();
    assert_eq!(got, sent, "stream differs after backpressure");
    assert_eq!(got.bytes, TOTAL);

    let (w2, r2) = written_at_2s.expect("sampled at 2 s");
    println!(
        "buffer {} KiB: slow phase read {:.1} MiB while the sender could write {:.1} MiB of {} \
         MiB (at 2 s: written {:.1} MiB, read {:.1} MiB); proxy peak per direction {} KiB, \
         peak total {} KiB, max sampled per connection {} KiB; proxy RSS {:.1} -> {:.1} MiB",
        BUFFER >> 10,
        slow_read as f64 / 1048576.0,
        written_slow as f64 / 1048576.0,
        TOTAL >> 20,
        w2 as f64 / 1048576.0,
        r2 as f64 / 1048576.0,
        peak_dir >> 10,
        peak_total >> 10,
        max_conn_buffered >> 10,
        rss_before as f64 / 1048576.0,
        rss_slow as f64 / 1048576.0,
    );
    assert!(
        peak_dir <= BUFFER,
        "one direction held {peak_dir} > {BUFFER}"
    );
    assert!(
        peak_total <= 2 * BUFFER,
        "proxy held {peak_total} > 2 x {BUFFER}"
    );
    assert!(max_conn_buffered <= 2 * BUFFER);
    assert!(max_total_buffered <= 2 * BUFFER);
    // The sender was throttled: far from done, and what it wrote beyond what the reader took
    // sits in bounded kernel socket buffers plus the proxy's BUFFER.
    assert!(
        written_slow < TOTAL / 2,
        "sender was not throttled: {written_slow}"
    );
    assert!(
        written_slow - slow_read < 96 << 20,
        "in flight {} bytes",
        written_slow - slow_read
    );
    assert!(
        rss_slow < rss_before + (16 << 20),
        "proxy RSS grew from {rss_before} to {rss_slow}"
    );
    s.shutdown().await.unwrap();
    drop(s);
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["closed"], 1, "{s}");
    assert_eq!(s["buffered_bytes"], 0, "{s}");
}
