//! UDP probes that measure an emulated link: a paced sender that stamps every datagram
//! with its sequence number and `CLOCK_MONOTONIC` send time, and a receiver that reports
//! the achieved rate, the one-way delay and the loss. Both ends run on the same machine
//! (in different network namespaces), so the monotonic clock is shared and one-way delays
//! are exact.
use crate::sys;
use serde::Serialize;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// IPv4 + UDP header bytes: a datagram of `payload` bytes is `payload + 28` on the link.
pub const UDP_IP_OVERHEAD: u64 = 28;
const HEADER: usize = 16;
/// One-way delays kept for the statistics (80 MB at most).
const MAX_SAMPLES: usize = 10_000_000;

/// What to send.
#[derive(Copy, Clone, Debug)]
pub struct SendSpec {
    pub to: SocketAddr,
    /// Sending rate in bit/s of IP packets (payload + 28 B).
    pub rate_bps: u64,
    pub payload_bytes: usize,
    pub duration_ns: u64,
    pub spin_ns: u64,
}

/// The sender's summary.
#[derive(Debug, Serialize)]
pub struct SendReport {
    pub sent: u64,
    pub send_errors: u64,
    pub wire_bytes: u64,
    pub duration_ns: u64,
}

/// Send datagrams at `spec.rate_bps` for `spec.duration_ns`, on an absolute schedule (a
/// late datagram does not shift the next one).
pub fn send(spec: &SendSpec) -> io::Result<SendReport> {
    if spec.payload_bytes < HEADER || spec.rate_bps == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "payload must be at least 16 bytes and the rate positive",
        ));
    }
    let bind: SocketAddr = if spec.to.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let sock = std::net::UdpSocket::bind(bind)?;
    let wire = spec.payload_bytes as u64 + UDP_IP_OVERHEAD;
    let gap_ns = (wire as u128 * 8 * 1_000_000_000 / spec.rate_bps as u128) as u64;
    let mut buf = vec![0u8; spec.payload_bytes];
    let start = sys::mono_ns();
    let (mut sent, mut errors) = (0u64, 0u64);
    loop {
        let due = start + sent * gap_ns.max(1);
        if due - start >= spec.duration_ns {
            break;
        }
        sys::sleep_until(due, spec.spin_ns);
        buf[..8].copy_from_slice(&sent.to_le_bytes());
        buf[8..16].copy_from_slice(&sys::mono_ns().to_le_bytes());
        if sock.send_to(&buf, spec.to).is_err() {
            errors += 1;
        }
        sent += 1;
    }
    Ok(SendReport {
        sent,
        send_errors: errors,
        wire_bytes: wire,
        duration_ns: sys::mono_ns() - start,
    })
}

/// The receiver's summary.
#[derive(Debug, Serialize)]
pub struct RecvReport {
    pub received: u64,
    /// Highest sequence number seen + 1 (the sender's count if the last one arrived).
    pub seq_span: u64,
    pub reordered: u64,
    pub first_arrival_ns: Option<u64>,
    pub last_arrival_ns: Option<u64>,
    /// Bits of IP packets after the first one over the first-to-last arrival time.
    pub rate_bps: Option<f64>,
    pub owd_mean_ns: Option<f64>,
    pub owd_min_ns: Option<u64>,
    pub owd_p50_ns: Option<u64>,
    pub owd_p99_ns: Option<u64>,
    pub owd_max_ns: Option<u64>,
}

/// Receive on `bind` until `idle_ns` passed without a datagram (after the first one) or
/// `max_ns` in all. Prints `ready` on stdout once bound.
pub fn recv(bind: SocketAddr, max_ns: u64, idle_ns: u64) -> io::Result<RecvReport> {
    let sock = sys::udp_socket(bind, 16 << 20)?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    println!("ready");
    let mut buf = vec![0u8; 65_536];
    let start = sys::mono_ns();
    // Exact one-way delays (a log histogram's buckets are ~2 ms wide at 250 ms).
    let mut owd: Vec<u64> = Vec::new();
    let (mut received, mut seq_span, mut reordered, mut bytes_after_first) =
        (0u64, 0u64, 0u64, 0u64);
    let (mut first, mut last) = (None::<u64>, None::<u64>);
    loop {
        let now = sys::mono_ns();
        if now - start > max_ns || last.is_some_and(|t| now - t > idle_ns) {
            break;
        }
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        let arrived = sys::mono_ns();
        if n < HEADER {
            continue;
        }
        let seq = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
        let sent = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes"));
        if seq + 1 < seq_span {
            reordered += 1;
        }
        seq_span = seq_span.max(seq + 1);
        if owd.len() < MAX_SAMPLES {
            owd.push(arrived.saturating_sub(sent));
        }
        if first.is_none() {
            first = Some(arrived);
        } else {
            bytes_after_first += n as u64 + UDP_IP_OVERHEAD;
        }
        last = Some(arrived);
        received += 1;
    }
    let rate_bps = match (first, last) {
        (Some(f), Some(l)) if l > f => Some(8.0 * bytes_after_first as f64 * 1e9 / (l - f) as f64),
        _ => None,
    };
    owd.sort_unstable();
    let quantile = |q: f64| -> Option<u64> {
        let rank = (q * owd.len() as f64).ceil() as usize;
        owd.get(rank.clamp(1, owd.len().max(1)) - 1).copied()
    };
    let mean = (!owd.is_empty()).then(|| owd.iter().sum::<u64>() as f64 / owd.len() as f64);
    Ok(RecvReport {
        received,
        seq_span,
        reordered,
        first_arrival_ns: first,
        last_arrival_ns: last,
        rate_bps,
        owd_mean_ns: mean,
        owd_min_ns: owd.first().copied(),
        owd_p50_ns: quantile(0.5),
        owd_p99_ns: quantile(0.99),
        owd_max_ns: owd.last().copied(),
    })
}
