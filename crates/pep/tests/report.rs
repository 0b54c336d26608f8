//! `--report FILE`: the proxy writes one record per connection when it exits. Checked on
//! loopback against what the test itself sent: byte counts per direction, the kernel's
//! TCP_INFO of both sockets (no retransmissions, a positive RTT), the relay ring's occupancy
//! within `--buffer`, the sample log, a connection still live at SIGTERM, and the atomic
//! write (no temporary file left behind).

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const UP_BYTES: u64 = 8 << 20;
const DOWN_BYTES: u64 = 1 << 20;
const LIVE_BYTES: u64 = 100 << 10;
const BUFFER_BYTES: u64 = 256 << 10;
/// The server reads nothing at first for this long, so the upward ring fills and stays full
/// over several samples.
const PAUSE: Duration = Duration::from_millis(600);

/// An empty directory of this test process.
fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tcplab-pep-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn column(samples: &Value, name: &str) -> Vec<u64> {
    samples[name]
        .as_array()
        .unwrap_or_else(|| panic!("no column {name}"))
        .iter()
        .map(u)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_records_bytes_buffers_and_tcp_info_of_every_connection() {
    let dir = scratch_dir("report");
    let path = dir.join("report.json");
    let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server_addr = server.local_addr().unwrap().to_string();
    // Any algorithm the kernel has, set explicitly so the report's read-back can be checked.
    let cca = available_ccas()
        .into_iter()
        .next()
        .expect("the kernel lists its congestion controls");
    let mut proxy = Proxy::start(&[
        "--upstream",
        &server_addr,
        "--buffer",
        "256KiB",
        "--cca-upstream",
        &cca,
        "--report",
        path.to_str().unwrap(),
    ]);

    // Connection 1: 8 MiB up and 1 MiB down at once, both directions closed with a FIN; the
    // server starts reading after PAUSE.
    let connect_to = proxy.addr;
    let client = tokio::spawn(async move {
        let s = TcpStream::connect(connect_to).await.unwrap();
        let (mut r, mut w) = s.into_split();
        let rx = tokio::spawn(async move { recv_stream(&mut r).await.unwrap() });
        send_stream(&mut w, 1, UP_BYTES).await.unwrap();
        rx.await.unwrap()
    });
    let (s, _) = server.accept().await.unwrap();
    let (mut r, mut w) = s.into_split();
    let rx = tokio::spawn(async move {
        tokio::time::sleep(PAUSE).await;
        recv_stream(&mut r).await.unwrap()
    });
    send_stream(&mut w, 2, DOWN_BYTES).await.unwrap();
    assert_eq!(rx.await.unwrap(), expected_sum(1, UP_BYTES));
    assert_eq!(client.await.unwrap(), expected_sum(2, DOWN_BYTES));
    proxy.wait_idle(Duration::from_secs(10));

    // Connection 2: 100 KiB up, still open when the proxy is told to stop.
    let mut live = TcpStream::connect(proxy.addr).await.unwrap();
    live.write_all(&vec![9u8; LIVE_BYTES as usize])
        .await
        .unwrap();
    let (mut live_server, _) = server.accept().await.unwrap();
    let mut got = vec![0u8; LIVE_BYTES as usize];
    live_server.read_exact(&mut got).await.unwrap();

    let status = proxy.signal_and_wait(libc::SIGTERM, Duration::from_secs(15));
    assert!(status.success(), "{status:?}");
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["report.json"], "a temporary file was left behind");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(report["buffer_limit_bytes"], BUFFER_BYTES);
    assert_eq!(report["still_active"], 0);
    let conns = report["conns"].as_array().unwrap();
    assert_eq!(conns.len(), 2, "{report}");
    let (done, live_rec) = (&conns[0], &conns[1]);

    // Byte counts: exactly what the test sent each way.
    assert_eq!(done["outcome"], "closed");
    assert_eq!(u(&done["up"]["bytes_read"]), UP_BYTES);
    assert_eq!(u(&done["up"]["bytes_written"]), UP_BYTES);
    assert_eq!(u(&done["down"]["bytes_read"]), DOWN_BYTES);
    assert_eq!(u(&done["down"]["bytes_written"]), DOWN_BYTES);

    // TCP_INFO at the end: the kernel's byte counts match. Its sequence numbers count a FIN
    // as one byte, and the SYN of the socket that connected (the server leg) as one more;
    // the accepted socket's acknowledged bytes start after its handshake. Both FINs were
    // acknowledged, so both sockets are closed. Loopback loses nothing, but it can reorder
    // a segment when the writing thread moves to the other CPU (each CPU has its own
    // backlog queue), which costs a fast retransmission now and then; the payload sent must
    // then be exactly the stream plus what was retransmitted.
    let client_info = &done["sockets"]["client"]["tcp_info"];
    let server_info = &done["sockets"]["server"]["tcp_info"];
    assert_eq!(u(&client_info["bytes_received"]), UP_BYTES + 1);
    assert_eq!(u(&server_info["bytes_acked"]), UP_BYTES + 2);
    assert_eq!(u(&server_info["bytes_received"]), DOWN_BYTES + 1);
    assert_eq!(u(&client_info["bytes_acked"]), DOWN_BYTES + 1);
    for (info, payload) in [(client_info, DOWN_BYTES), (server_info, UP_BYTES)] {
        assert_eq!(info["state"], "close", "{info}");
        assert!(u(&info["total_retrans"]) <= 4, "{info}");
        assert_eq!(
            u(&info["bytes_sent"]),
            payload + u(&info["bytes_retrans"]),
            "{info}"
        );
        assert_eq!(info["lost_pkts"], 0, "{info}");
        let (rtt, min_rtt) = (u(&info["rtt_us"]), u(&info["min_rtt_us"]));
        assert!(rtt > 0 && rtt < 1_000_000, "{info}");
        assert!(min_rtt > 0 && min_rtt < 1_000_000, "{info}");
        assert!(u(&info["snd_cwnd_bytes"]) > 0, "{info}");
    }
    assert_eq!(done["sockets"]["server"]["cca"], cca.as_str());
    assert_eq!(done["upstream"], server_addr.as_str());

    // The relay ring never held more than --buffer; the mean lies between 0 and the peak.
    for dir in ["up", "down"] {
        let peak = u(&done[dir]["peak_buffered_bytes"]);
        let mean = done[dir]["mean_buffered_bytes"].as_f64().unwrap();
        assert!(peak <= BUFFER_BYTES, "{dir}: {peak}");
        assert!(
            (0.0..=peak as f64).contains(&mean),
            "{dir}: {mean} > {peak}"
        );
    }
    // While the server did not read, the upward ring was full: at its limit in the samples
    // of the pause, and on average at least half full over a connection that lasted the
    // pause plus the few milliseconds loopback needs for 8 MiB.
    let samples = &done["samples"];
    let t = column(samples, "t_ns");
    let full = column(samples, "buffered_up_bytes")
        .iter()
        .filter(|&&b| b == BUFFER_BYTES)
        .count();
    assert!(full >= 3, "{samples}");
    assert_eq!(u(&done["up"]["peak_buffered_bytes"]), BUFFER_BYTES);
    let mean_up = done["up"]["mean_buffered_bytes"].as_f64().unwrap();
    assert!(mean_up >= BUFFER_BYTES as f64 / 2.0, "{mean_up} over {t:?}");

    // The sample log: aligned columns, time going forward, the last sample at the end.
    assert!(t.len() >= 6, "{t:?}");
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
    for name in [
        "buffered_up_bytes",
        "client_bytes_received",
        "server_bytes_acked",
        "server_total_retrans",
        "server_rtt_us",
    ] {
        assert_eq!(column(samples, name).len(), t.len(), "{name}");
    }
    assert_eq!(
        column(samples, "client_bytes_received").last(),
        Some(&(UP_BYTES + 1))
    );
    let accepted = u(&done["accepted_mono_ns"]);
    let ended = u(&done["ended_mono_ns"]);
    assert!(u(&report["started_mono_ns"]) <= accepted && accepted + t.last().unwrap() <= ended);
    assert!(ended <= u(&report["written_mono_ns"]));

    // The connection live at SIGTERM: aborted and recorded with what it had moved.
    assert_eq!(live_rec["outcome"], "shutdown");
    assert_eq!(u(&live_rec["up"]["bytes_written"]), LIVE_BYTES);
    assert_eq!(u(&live_rec["down"]["bytes_written"]), 0);
    let live_info = &live_rec["sockets"]["client"]["tcp_info"];
    assert_eq!(u(&live_info["bytes_received"]), LIVE_BYTES);
    assert_eq!(live_info["state"], "established");
    drop(live);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_into_a_missing_directory_is_a_one_line_usage_error() {
    let out = Command::new(BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--report",
            "/nonexistent-tcplab-dir/report.json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "must not print ready");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: --report = \"/nonexistent-tcplab-dir/report.json\""),
        "{err}"
    );
}
