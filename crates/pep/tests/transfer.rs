//! Large transfers through the proxy (explicit mode, loopback): end-to-end SHA-256 of both
//! directions, and half-close in each direction. One test per scenario so the throughput
//! figure is not shared with another test (test binaries run one after the other).

mod common;

use std::time::{Duration, Instant};

use common::*;
use tokio::net::{TcpListener, TcpStream};

const BIG: u64 = 200 << 20;
const RAW: u64 = 1 << 30;

/// 200 MiB each way at once through the proxy; every byte arrives intact in both directions,
/// each FIN is forwarded after the last byte. Prints throughput next to a direct connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bidirectional_transfer_checksums_match() {
    let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server_addr = server.local_addr().unwrap();

    // Baseline: the same transfer without the proxy.
    let direct = transfer(&server, server_addr, 11, 12, BIG).await;

    let proxy = Proxy::start(&[
        "--upstream",
        &server_addr.to_string(),
        "--log-level",
        "info",
    ]);
    let proxied = transfer(&server, proxy.addr, 21, 22, BIG).await;
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["closed"], 1, "{s}");
    assert_eq!(s["bytes_up"], BIG, "{s}");
    assert_eq!(s["bytes_down"], BIG, "{s}");
    assert_eq!(s["buffered_bytes"], 0, "{s}");
    let peak_buffered = s["peak_buffered_bytes"].clone();

    // Raw relay rate: one direction, no hashing, so the proxy's own cost dominates.
    let raw_direct = blast(&server, server_addr, RAW).await;
    let raw_proxied = blast(&server, proxy.addr, RAW).await;

    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["closed"], 2, "{s}");
    assert_eq!(s["bytes_up"], BIG + RAW, "{s}");
    let rss_mib = proxy.rss_bytes() as f64 / (1 << 20) as f64;
    let closed = proxy.wait_log("msg=conn_closed", 1)[0].clone();
    assert_eq!(logfmt_field(&closed, "outcome"), Some("closed"), "{closed}");
    assert_eq!(logfmt_field(&closed, "bytes_up"), Some(&*BIG.to_string()));
    assert_eq!(logfmt_field(&closed, "bytes_down"), Some(&*BIG.to_string()));

    let rate = |d: Duration| mib_per_s(2 * BIG, d);
    println!(
        "200 MiB each way: direct {:.0} MiB/s, through the proxy {:.0} MiB/s (both directions \
         summed, SHA-256 at both ends included); one way without hashing ({} MiB): direct \
         {:.0} MiB/s, through the proxy {:.0} MiB/s; proxy RSS afterwards {rss_mib:.1} MiB; \
         peak buffered {peak_buffered} bytes",
        rate(direct),
        rate(proxied),
        RAW >> 20,
        mib_per_s(RAW, raw_direct),
        mib_per_s(RAW, raw_proxied),
    );
}

/// Client and server each send `total` bytes at once and read the other's to EOF; returns the
/// wall time. Panics on any mismatch.
async fn transfer(
    server: &TcpListener,
    connect_to: std::net::SocketAddr,
    client_seed: u64,
    server_seed: u64,
    total: u64,
) -> Duration {
    let t0 = Instant::now();
    let client = tokio::spawn(async move {
        let s = TcpStream::connect(connect_to).await.unwrap();
        let (mut r, mut w) = s.into_split();
        let rx = tokio::spawn(async move { recv_stream(&mut r).await.unwrap() });
        let sent = send_stream(&mut w, client_seed, total).await.unwrap();
        (sent, rx.await.unwrap())
    });
    let (s, _) = server.accept().await.unwrap();
    let (mut r, mut w) = s.into_split();
    let rx = tokio::spawn(async move { recv_stream(&mut r).await.unwrap() });
    let server_sent = send_stream(&mut w, server_seed, total).await.unwrap();
    let server_got = rx.await.unwrap();
    let (client_sent, client_got) = client.await.unwrap();
    let elapsed = t0.elapsed();
    assert_eq!(client_sent, expected_sum(client_seed, total));
    assert_eq!(server_got, client_sent, "client→server stream differs");
    assert_eq!(client_got, server_sent, "server→client stream differs");
    elapsed
}

/// Sends `total` bytes one way as fast as possible and counts them at the server; returns the
/// wall time.
async fn blast(server: &TcpListener, connect_to: std::net::SocketAddr, total: u64) -> Duration {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let t0 = Instant::now();
    let client = tokio::spawn(async move {
        let mut s = TcpStream::connect(connect_to).await.unwrap();
        let buf = vec![0xa5u8; CHUNK];
        let mut off = 0;
        while off < total {
            let n = (total - off).min(CHUNK as u64) as usize;
            s.write_all(&buf[..n]).await.unwrap();
            off += n as u64;
        }
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
    });
    let (mut s, _) = server.accept().await.unwrap();
    let mut buf = vec![0u8; CHUNK];
    let mut got = 0u64;
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    drop(s);
    client.await.unwrap();
    assert_eq!(got, total);
    t0.elapsed()
}
