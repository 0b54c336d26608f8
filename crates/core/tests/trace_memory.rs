//! Tracing streams: a 600 s, 50 Mbit/s GEO run captured at both ends of its bottleneck,
//! with its event log, writes gigabytes while the process's peak memory stays that of the
//! untraced run. The outputs are symbolic links to /dev/null, so the test measures the
//! tracer and not the disk. Alone in its own test binary: the peak resident set (VmHWM) is
//! the process's, and no other test may run beside it.
mod common;
use common::*;
use tcplab_core::api;

/// The process's peak resident set so far, in KiB (Linux `/proc/self/status` VmHWM).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM line");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_traced_600_s_50_mbit_run_streams_to_disk_in_bounded_memory() {
    // The 50/20 Mbit/s GEO benchmark path: 2·BDP queue, PER 1e-5, CUBIC.
    let q = (2.0_f64 * 50e6 * 0.5004 / 12000.0).ceil() as u64;
    let spec = Spec {
        rtt_ms: 500.4,
        rate_bps: 50_000_000,
        return_rate_bps: 20_000_000,
        per: 1e-5,
        queue_pkts: q,
        duration_s: 600,
        cca: "cubic",
        ..Default::default()
    };
    let plain = api::run(spec.build()).unwrap();
    let untraced_kib = peak_rss_kib();
    let dir = std::env::temp_dir().join(format!("tcplab-trace-mem-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "bottleneck.sender-side.pcapng",
        "bottleneck.receiver-side.pcapng",
        "events.bin",
    ] {
        std::os::unix::fs::symlink("/dev/null", dir.join(name)).unwrap();
    }
    let trace = trace_spec(&dir, true);
    let (traced, report) = api::run_traced(spec.build(), &trace).unwrap();
    let traced_kib = peak_rss_kib();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        serde_json::to_string(&traced).unwrap()
    );
    let written: u64 = report.captures.iter().map(|c| c.bytes).sum();
    let packets: u64 = report.captures.iter().map(|c| c.packets).sum();
    // ~2.3 M data segments and their ACKs, seen at both ends: millions of frames, ~100 B
    // each on disk.
    assert!(packets > 5_000_000, "{packets} frames");
    assert!(written > 500_000_000, "{written} bytes");
    // Kept in memory: the per-connection header state and, per file, what waits for the
    // file's thread (at most four batches of packets or buffers) and its 1 MiB buffer.
    let grew = traced_kib.saturating_sub(untraced_kib);
    eprintln!(
        "peak RSS {untraced_kib} KiB untraced, {traced_kib} KiB traced: {packets} frames, \
         {written} bytes written"
    );
    assert!(
        grew < 16 * 1024,
        "peak RSS grew by {grew} KiB ({untraced_kib} -> {traced_kib}) for {written} bytes written"
    );
}
