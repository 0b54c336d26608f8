//! Constant-bit-rate UDP: a source sending `packet_bytes` of payload at `rate_bps`, and a
//! sink measuring loss and one-way delay (the real-time traffic that competes with TCP in
//! the satellite studies).
//!
//! Datagram k (counting from 0) leaves at `start + ⌈(k + 1) · bits · 1e9 / rate⌉` ns: one
//! period after the previous one, the first one period after `start`, so the bits sent by
//! `start + T` never exceed `rate · T` (a first datagram at `start` itself would put one
//! datagram more than the rate into every window) and the rate is exact over any horizon
//! (no accumulated rounding).
use crate::engine::stats::LogHistogram;
use crate::engine::time::SimTime;
use crate::net::packet::{Packet, PacketKind, UDP_HEADER_BYTES};

/// A CBR source.
#[derive(Debug, Clone)]
pub struct UdpSource {
    pub flow: u32,
    rate_bps: u64,
    packet_bytes: u32,
    start: SimTime,
    next_k: u64,
    running: bool,
    pub packets_sent: u64,
}

impl UdpSource {
    pub fn new(flow: u32, rate_bps: u64, packet_bytes: u32) -> Self {
        UdpSource {
            flow,
            rate_bps,
            packet_bytes,
            start: SimTime::ZERO,
            next_k: 0,
            running: false,
            packets_sent: 0,
        }
    }

    fn due(&self, k: u64) -> SimTime {
        let bits = self.packet_bytes as u128 * 8;
        let ns = ((k as u128 + 1) * bits * 1_000_000_000).div_ceil(self.rate_bps as u128);
        self.start + crate::engine::time::SimDuration(ns as u64)
    }

    pub fn start(&mut self, now: SimTime) {
        self.start = now;
        self.running = true;
    }

    /// Payload bytes per datagram.
    pub fn packet_bytes(&self) -> u32 {
        self.packet_bytes
    }

    /// Next send time.
    pub fn deadline(&self) -> Option<SimTime> {
        self.running.then(|| self.due(self.next_k))
    }

    /// Send every datagram due by `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        while self.running && self.due(self.next_k) <= now {
            out.push(Packet {
                flow: self.flow,
                kind: PacketKind::Udp,
                seq: self.next_k,
                len: self.packet_bytes,
                wire_bytes: self.packet_bytes + UDP_HEADER_BYTES,
                ts_val: self.due(self.next_k).ns(),
                ..Default::default()
            });
            self.next_k += 1;
            self.packets_sent += 1;
        }
    }
}

/// A CBR sink.
#[derive(Debug, Clone, Default)]
pub struct UdpSink {
    pub packets_received: u64,
    pub bytes_received: u64,
    /// Datagrams lost on the way (dropped by a link).
    pub packets_dropped: u64,
    pub owd: LogHistogram,
    /// Bytes received in the current series interval.
    pub iv_bytes: u64,
}

impl UdpSink {
    pub fn on_packet(&mut self, now: SimTime, p: &Packet) {
        self.packets_received += 1;
        self.bytes_received += p.len as u64;
        self.owd.record(now.ns().saturating_sub(p.ts_val));
    }

    /// Lost datagrams over all that either arrived or were lost (in-flight ones at the end
    /// of the run are neither).
    pub fn loss_ratio(&self) -> f64 {
        let n = self.packets_received + self.packets_dropped;
        if n == 0 {
            0.0
        } else {
            self.packets_dropped as f64 / n as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_leave_exactly_at_the_configured_rate() {
        // 250 kbit/s with 1200-byte payloads: one datagram every 9600 bit / 250e3 = 38.4 ms.
        let mut s = UdpSource::new(0, 250_000, 1200);
        s.start(SimTime(0));
        let mut out = vec![];
        s.on_timer(SimTime(1_000_000_000), &mut out);
        // The n-th datagram leaves at n x 38.4 ms: 26 by 1 s (26 x 38.4 ms = 998.4 ms, the
        // 27th at 1036.8 ms), 26 x 9600 bit = 249.6 kbit <= 250 kbit.
        assert_eq!(out.len(), 26);
        assert_eq!(out[0].ts_val, 38_400_000);
        assert_eq!(out[1].ts_val, 76_800_000);
        assert_eq!(out[0].wire_bytes, 1228);
        assert_eq!(s.deadline(), Some(SimTime(27 * 38_400_000)));
    }

    #[test]
    fn no_datagram_leaves_before_one_period_has_passed() {
        // 1 Mbit/s, 1000-byte payloads: 8 ms apart. At `start` nothing is due; at 8 ms one.
        let mut s = UdpSource::new(0, 1_000_000, 1000);
        s.start(SimTime(5_000_000));
        let mut out = vec![];
        s.on_timer(SimTime(5_000_000), &mut out);
        assert!(out.is_empty());
        assert_eq!(s.deadline(), Some(SimTime(13_000_000)));
        s.on_timer(SimTime(13_000_000), &mut out);
        assert_eq!(out.len(), 1);
    }
}
