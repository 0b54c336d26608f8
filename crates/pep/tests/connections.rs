//! Connection lifecycle through the proxy: half-close both ways, 200 concurrent connections,
//! the connection limit, per-leg congestion control, upstream failures, startup errors and
//! SIGTERM/SIGINT.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The client half-closes after 1 MiB; the server reads the FIN, then sends 32 MiB back over
/// the still-open direction. Then the mirror image: the server half-closes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_close_propagates_while_other_direction_keeps_flowing() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = Proxy::start(&["--upstream", &l.local_addr().unwrap().to_string()]);

    // Client FIN first.
    let c = TcpStream::connect(proxy.addr).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    let (mut cr, mut cw) = c.into_split();
    let (mut sr, mut sw) = s.into_split();
    let sent_up = send_stream(&mut cw, 1, 1 << 20).await.unwrap();
    let got_up = recv_stream(&mut sr).await.unwrap(); // returns at the forwarded FIN
    assert_eq!(got_up, sent_up);
    let down = tokio::spawn(async move { recv_stream(&mut cr).await.unwrap() });
    let sent_down = send_stream(&mut sw, 2, 32 << 20).await.unwrap();
    assert_eq!(down.await.unwrap(), sent_down);

    // Server FIN first; the client keeps sending afterwards.
    let c = TcpStream::connect(proxy.addr).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    let (mut cr, mut cw) = c.into_split();
    let (mut sr, mut sw) = s.into_split();
    let sent_down = send_stream(&mut sw, 3, 1 << 20).await.unwrap();
    assert_eq!(recv_stream(&mut cr).await.unwrap(), sent_down);
    let up = tokio::spawn(async move { recv_stream(&mut sr).await.unwrap() });
    let sent_up = send_stream(&mut cw, 4, 32 << 20).await.unwrap();
    assert_eq!(up.await.unwrap(), sent_up);

    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["closed"], 2, "{s}");
    assert_eq!(s["reset_by_client"], 0, "{s}");
    assert_eq!(s["reset_by_server"], 0, "{s}");
}

/// 200 connections at once, 512 KiB each way (echo); all complete intact, the active count
/// returns to 0 and the proxy's descriptors return to their idle number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_connections_all_complete() {
    const N: u64 = 200;
    const SIZE: u64 = 512 << 10;
    let echo = echo_server().await;
    let proxy = Proxy::start(&["--upstream", &echo.to_string(), "--log-level", "warn"]);
    let fds_idle = proxy.open_fds();

    let t0 = std::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..N {
        let addr = proxy.addr;
        tasks.push(tokio::spawn(async move {
            let s = TcpStream::connect(addr).await.unwrap();
            let (mut r, mut w) = s.into_split();
            let rx = tokio::spawn(async move { recv_stream(&mut r).await.unwrap() });
            let sent = send_stream(&mut w, 1000 + i, SIZE).await.unwrap();
            (sent, rx.await.unwrap())
        }));
    }
    // Sample the active count while they run.
    let mut peak_active = 0u64;
    let mut ok = 0;
    for t in tasks {
        let (sent, got) = t.await.unwrap();
        assert_eq!(sent, got, "echo through the proxy differs");
        ok += 1;
        if ok % 50 == 1 {
            peak_active = peak_active.max(proxy.stats()["active"].as_u64().unwrap());
        }
    }
    let elapsed = t0.elapsed();
    let s = proxy.wait_idle(Duration::from_secs(10));
    assert_eq!(ok, N);
    assert_eq!(s["closed"], N, "{s}");
    assert_eq!(s["accepted"], N, "{s}");
    assert_eq!(s["refused"], 0, "{s}");
    assert_eq!(s["bytes_up"], N * SIZE, "{s}");
    assert_eq!(s["bytes_down"], N * SIZE, "{s}");
    assert_eq!(s["buffered_bytes"], 0, "{s}");
    assert_eq!(s["conns"].as_array().unwrap().len(), 0, "{s}");
    let fds_after = proxy.open_fds();
    assert_eq!(
        fds_after, fds_idle,
        "descriptors leaked: {fds_idle} idle, {fds_after} after"
    );
    println!(
        "{N} concurrent connections x {} KiB each way: {:.2} s, peak active seen {peak_active}, \
         proxy fds idle {fds_idle} / after {fds_after}, peak buffered {} bytes",
        SIZE >> 10,
        elapsed.as_secs_f64(),
        s["peak_buffered_bytes"],
    );
}

/// Connection `n + 1` beyond `--max-conns n` is reset at once and counted; capacity comes back
/// when connections close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_conns_resets_excess_connections_and_counts_them() {
    let echo = echo_server().await;
    let proxy = Proxy::start(&["--upstream", &echo.to_string(), "--max-conns", "5"]);

    async fn ping(s: &mut TcpStream) -> std::io::Result<()> {
        s.write_all(b"ping").await?;
        let mut b = [0u8; 4];
        s.read_exact(&mut b).await?;
        assert_eq!(&b, b"ping");
        Ok(())
    }

    let mut held = Vec::new();
    for _ in 0..5 {
        let mut s = TcpStream::connect(proxy.addr).await.unwrap();
        ping(&mut s).await.unwrap();
        held.push(s);
    }
    for _ in 0..3 {
        // The kernel completes the handshake; the proxy then resets the socket (so fast that
        // the connect itself may already report it).
        let mut s = match TcpStream::connect(proxy.addr).await {
            Ok(s) => s,
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
                continue;
            }
        };
        let mut b = [0u8; 1];
        let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b))
            .await
            .expect("refused connection was not closed");
        match r {
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
            Ok(n) => panic!("expected a reset, read {n} bytes"),
        }
    }
    let s = proxy.stats();
    assert_eq!(s["refused"], 3, "{s}");
    assert_eq!(s["active"], 5, "{s}");
    drop(held);
    proxy.wait_idle(Duration::from_secs(5));
    let mut s = TcpStream::connect(proxy.addr).await.unwrap();
    ping(&mut s).await.unwrap();
    drop(s);
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["refused"], 3, "{s}");
    assert_eq!(s["closed"], 6, "{s}");
}

/// The first two congestion controls of `want` that this kernel offers and that differ from
/// the system default (so the check cannot pass by accident).
fn two_non_default_ccas() -> Option<(String, String)> {
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap_or_default()
        .trim()
        .to_string();
    let avail: Vec<String> = available_ccas()
        .into_iter()
        .filter(|c| *c != default)
        .collect();
    match avail.as_slice() {
        [a, b, ..] => Some((a.clone(), b.clone())),
        _ => None,
    }
}

/// `ss -tin FILTER`: the info line under the one matching socket, or None without `ss`.
fn ss_info(filter: &str) -> Option<String> {
    let out = Command::new("ss")
        .args(["-tinH", "state", "established"])
        .args(filter.split_whitespace())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `--cca-upstream`/`--cca-downstream` land on the right legs: read back with getsockopt by
/// the proxy (stats) and, independently, from the kernel's socket dump (`ss -ti`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_leg_congestion_control_is_applied_and_read_back() {
    let Some((up, down)) = two_non_default_ccas() else {
        println!("SKIPPED: need two congestion controls besides the default");
        return;
    };
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server_port = l.local_addr().unwrap().port();
    let proxy = Proxy::start(&[
        "--upstream",
        &l.local_addr().unwrap().to_string(),
        "--cca-upstream",
        &up,
        "--cca-downstream",
        &down,
    ]);
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    let (mut s, _) = l.accept().await.unwrap();
    c.write_all(b"hello").await.unwrap();
    let mut b = [0u8; 5];
    s.read_exact(&mut b).await.unwrap();

    let st = proxy.stats();
    let conns = st["conns"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "{st}");
    assert_eq!(conns[0]["cca_upstream"], up.as_str(), "{st}");
    assert_eq!(conns[0]["cca_downstream"], down.as_str(), "{st}");

    // The kernel's own view: the proxy's accepted socket has sport = listen port; its
    // upstream socket has dport = the server's port (the test's sockets are the reverse).
    match (
        ss_info(&format!("( sport = :{} )", proxy.addr.port())),
        ss_info(&format!("( dport = :{server_port} )")),
    ) {
        (Some(downstream), Some(upstream)) => {
            let has = |dump: &str, name: &str| dump.split_whitespace().any(|t| t == name);
            assert!(has(&downstream, &down), "client leg: {downstream}");
            assert!(!has(&downstream, &up), "client leg: {downstream}");
            assert!(has(&upstream, &up), "server leg: {upstream}");
            assert!(!has(&upstream, &down), "server leg: {upstream}");
        }
        _ => println!("note: `ss` not available; checked the proxy's getsockopt read-back only"),
    }
    drop((c, s));
    proxy.wait_idle(Duration::from_secs(5));
    let line = proxy.wait_log("msg=conn_closed", 1)[0].clone();
    assert_eq!(logfmt_field(&line, "cca_upstream"), Some(up.as_str()));
    assert_eq!(logfmt_field(&line, "cca_downstream"), Some(down.as_str()));
}

/// An unknown congestion control is a one-line startup error listing the available ones.
#[test]
fn unknown_congestion_control_fails_at_startup_with_the_list() {
    let out = Command::new(BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--cca-downstream",
            "cubik",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "must not print ready");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: --cca-downstream = \"cubik\""),
        "{err}"
    );
    assert!(err.contains("tcp_available_congestion_control"), "{err}");
    for name in available_ccas() {
        assert!(err.contains(&name), "{err}");
    }
}

/// Usage mistakes are one line and exit code 2.
#[test]
fn usage_errors_are_one_line_with_exit_code_2() {
    for args in [
        vec!["--listen", "127.0.0.1:0"],
        vec!["--upstream", "127.0.0.1:9"],
        vec![
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--transparent",
        ],
        vec![
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--buffer",
            "lots",
        ],
        vec![
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--log-level",
            "loud",
        ],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}

/// A refused upstream connect resets the client and is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_connect_failure_resets_the_client() {
    // A port with nothing listening: bind, note, close.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let proxy = Proxy::start(&["--upstream", &dead.to_string()]);
    // The reset can come before the connect has even returned (on loopback the refused
    // upstream connect takes microseconds): then the connect reports it.
    let err = match TcpStream::connect(proxy.addr).await {
        Err(e) => e,
        Ok(mut c) => {
            let mut b = [0u8; 1];
            let r = tokio::time::timeout(Duration::from_secs(5), c.read(&mut b))
                .await
                .unwrap();
            r.unwrap_err()
        }
    };
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["upstream_failed"], 1, "{s}");
}

/// SIGTERM with a transfer in flight: the proxy stops accepting, resets its connections and
/// exits 0. SIGINT does the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sigint_stop_cleanly_with_exit_code_0() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut proxy = Proxy::start(&["--upstream", &l.local_addr().unwrap().to_string()]);
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        let (mut s, _) = l.accept().await.unwrap();
        c.write_all(&[7u8; 100_000]).await.unwrap();
        let mut b = vec![0u8; 100_000];
        s.read_exact(&mut b).await.unwrap();

        let addr = proxy.addr;
        let status = tokio::task::spawn_blocking(move || {
            let st = proxy.signal_and_wait(sig, Duration::from_secs(5));
            (st, proxy)
        })
        .await
        .unwrap();
        let (status, proxy) = status;
        assert_eq!(status.code(), Some(0), "signal {sig}");
        // Both legs were cut: each side sees a reset (or at least the end of the stream).
        let mut one = [0u8; 1];
        let cr = tokio::time::timeout(Duration::from_secs(2), c.read(&mut one))
            .await
            .unwrap();
        assert!(cr.is_err() || cr.unwrap() == 0);
        let sr = tokio::time::timeout(Duration::from_secs(2), s.read(&mut one))
            .await
            .unwrap();
        assert!(sr.is_err() || sr.unwrap() == 0);
        assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
        let exit = proxy.wait_log("msg=exit", 1)[0].clone();
        assert_eq!(
            logfmt_field(&exit, "aborted_at_shutdown"),
            Some("1"),
            "{exit}"
        );
        assert_eq!(logfmt_field(&exit, "still_active"), Some("0"), "{exit}");
    }
}

/// A server whose accept queue is full drops SYNs, so connects to it hang: the proxy gives up
/// after `--connect-timeout` (resetting the client), and a client that resets while the
/// connect is pending is noticed at once (the connect is abandoned, not waited out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_upstream_connect_times_out_or_follows_a_client_reset() {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    sock.listen(0).unwrap();
    let full = sock.local_addr().unwrap().as_socket().unwrap();
    // Fill the accept queue (never accepted).
    let _queued = std::net::TcpStream::connect(full).unwrap();
    let proxy = Proxy::start(&["--upstream", &full.to_string(), "--connect-timeout", "1.5"]);

    // A client that gives up (RST) while the upstream connect is pending.
    let c = TcpStream::connect(proxy.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    set_rst_on_close(&c);
    drop(c);
    let t0 = std::time::Instant::now();
    let mut s = proxy.stats();
    while s["reset_by_client"] != 1 && t0.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        s = proxy.stats();
    }
    assert_eq!(s["reset_by_client"], 1, "{s}");
    assert_eq!(s["active"], 0, "{s}");

    // A client that waits: reset after the connect timeout.
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    let t0 = std::time::Instant::now();
    let mut b = [0u8; 1];
    let r = tokio::time::timeout(Duration::from_secs(5), c.read(&mut b))
        .await
        .unwrap();
    let waited = t0.elapsed();
    assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::ConnectionReset);
    assert!(waited >= Duration::from_millis(1400), "{waited:?}");
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["upstream_failed"], 1, "{s}");
    let line = proxy.wait_log("outcome=upstream_failed", 1)[0].clone();
    assert!(line.contains("timed out"), "{line}");
}

/// Explicit mode over IPv6 loopback (skipped when the machine has no `::1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_explicit_mode_relays_intact() {
    let Ok(l) = TcpListener::bind("[::1]:0").await else {
        println!("SKIPPED ipv6_explicit_mode_relays_intact: no IPv6 loopback");
        return;
    };
    let up = l.local_addr().unwrap().to_string();
    let proxy = Proxy::spawn(
        &[],
        &[
            "--listen",
            "[::1]:0",
            "--upstream",
            &up,
            "--stats",
            "[::1]:0",
        ],
    );
    let c = TcpStream::connect(proxy.addr).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    let (mut cr, mut cw) = c.into_split();
    let (mut sr, mut sw) = s.into_split();
    let up_task = tokio::spawn(async move { send_stream(&mut cw, 5, 8 << 20).await.unwrap() });
    let got_up = recv_stream(&mut sr).await.unwrap();
    let sent_down = send_stream(&mut sw, 6, 8 << 20).await.unwrap();
    assert_eq!(got_up, up_task.await.unwrap());
    assert_eq!(recv_stream(&mut cr).await.unwrap(), sent_down);
    let s = proxy.wait_idle(Duration::from_secs(5));
    assert_eq!(s["closed"], 1, "{s}");
}
