//! The emulator's loop: one thread serves every link direction.
//!
//! Each TUN device is the input of one direction (what the kernel routes into device `a`
//! travels `forward` and is written into device `b`, and back). A packet is timestamped
//! when it is read, offered to its direction's `DirModel`, and parked in that direction's
//! delay line until the instant the model gave; the loop sleeps until the earliest such
//! instant (or an interval boundary, or the end of the measurement), `spin` before it on
//! the kernel's high-resolution timer and the rest busy-waiting, while `ppoll` wakes it for
//! arriving packets. Lateness never accumulates: every departure instant is absolute, taken
//! from the model, so a late wake-up delays a packet but not its successors.
//!
//! One thread rather than one per direction: on a two-core machine that also runs the TCP
//! senders and receivers, a single waiter that handles everything due when it wakes keeps
//! the emulator to one core at most, and packets of all links share one clock.
use crate::config::EmuConfig;
use crate::model::{DirModel, Verdict};
use crate::report::{DirReport, Report};
use crate::sys::{self, Poller};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use tcplab_core::engine::time::SimTime;

/// Largest packet read (a TUN without offloads delivers at most its MTU; 64 KiB is safe).
const READ_BUF_BYTES: usize = 65_536;
/// Packets read from one device before looking at the others and at departures.
const READ_BATCH: usize = 64;
/// Longest single wait, so a missed signal costs at most this much.
const MAX_WAIT_NS: u64 = 100_000_000;

/// Timing options of the loop.
#[derive(Copy, Clone, Debug)]
pub struct Timing {
    /// Busy-wait this long before each departure instead of trusting the timer (ns).
    pub spin_ns: u64,
}

/// A packet waiting in a delay line.
struct Parked {
    at: SimTime,
    buf: Vec<u8>,
}

struct Direction {
    model: DirModel,
    output: usize,
    line: VecDeque<Parked>,
}

/// All links, their devices and the measurement window.
pub struct Engine {
    ports: Vec<OwnedFd>,
    /// Direction fed by each port (port 2k is link k's `a`, 2k+1 its `b`).
    dirs: Vec<Direction>,
    free: Vec<Vec<u8>>,
    t0_ns: u64,
    measure_ns: u64,
    window: Option<(SimTime, SimTime)>,
    report: Option<Report>,
    timing: Timing,
}

impl Engine {
    /// Attach to every TUN device of `config` (in its namespace).
    pub fn open(config: &EmuConfig, timing: Timing) -> io::Result<Engine> {
        let mut ports = Vec::new();
        let mut dirs = Vec::new();
        for link in &config.links {
            ports.push(sys::open_tun(link.a.netns.as_deref(), &link.a.dev)?);
            ports.push(sys::open_tun(link.b.netns.as_deref(), &link.b.dev)?);
            let b = ports.len() - 1;
            for (suffix, cfg, output) in [
                ("forward", &link.forward, b),
                ("reverse", &link.reverse, b - 1),
            ] {
                let name = format!("{}.{suffix}", link.name);
                dirs.push(Direction {
                    model: DirModel::new(&name, cfg, config.seed, config.interval_ns),
                    output,
                    line: VecDeque::new(),
                });
            }
        }
        Ok(Engine {
            ports,
            dirs,
            free: Vec::new(),
            t0_ns: sys::mono_ns(),
            measure_ns: config.measure_ns,
            window: None,
            report: None,
            timing,
        })
    }

    /// Monotonic clock reading at the emulator's time zero.
    pub fn t0_ns(&self) -> u64 {
        self.t0_ns
    }

    #[inline]
    fn now(&self) -> SimTime {
        SimTime(sys::mono_ns().saturating_sub(self.t0_ns))
    }

    /// Start the measurement window now (also done at start-up).
    pub fn start_measurement(&mut self) {
        let now = self.now();
        for d in &mut self.dirs {
            d.model.start_measurement(now);
        }
        let end = if self.measure_ns > 0 {
            SimTime(now.ns() + self.measure_ns)
        } else {
            SimTime::MAX
        };
        self.window = Some((now, end));
        self.report = None;
    }

    /// Serve packets until SIGTERM/SIGINT; returns the measurement's report.
    pub fn run(&mut self) -> io::Result<Report> {
        if self.window.is_none() {
            self.start_measurement();
        }
        let fds: Vec<_> = self.ports.iter().map(AsRawFd::as_raw_fd).collect();
        let mut poller = Poller::new(&fds);
        let mut scratch = vec![0u8; READ_BUF_BYTES];
        while !sys::STOP.load(Ordering::SeqCst) {
            if sys::START_MEASUREMENT.swap(false, Ordering::SeqCst) {
                self.start_measurement();
            }
            self.deliver_due();
            let now = self.now();
            self.close_intervals(now);
            let deadline = self.next_deadline();
            let wait = deadline.ns().saturating_sub(now.ns());
            let timeout = if wait > self.timing.spin_ns {
                (wait - self.timing.spin_ns).min(MAX_WAIT_NS)
            } else {
                0 // spinning towards the deadline: only look for packets
            };
            poller.wait(timeout);
            for port in 0..self.ports.len() {
                if poller.readable(port) {
                    self.read_port(port, &mut scratch)?;
                }
            }
        }
        let now = self.now();
        self.close_intervals(now);
        Ok(match self.report.take() {
            Some(report) => report,
            None => self.build_report(now),
        })
    }

    fn next_deadline(&self) -> SimTime {
        let mut next = SimTime(self.now().ns() + MAX_WAIT_NS);
        for d in &self.dirs {
            if let Some(p) = d.line.front() {
                next = next.min(p.at);
            }
        }
        if self.report.is_none() {
            if let Some((_, end)) = self.window {
                next = next.min(end);
            }
            for d in &self.dirs {
                next = next.min(d.model.next_sample());
            }
        }
        next
    }

    /// Series intervals and the end of the measurement window.
    fn close_intervals(&mut self, now: SimTime) {
        if self.report.is_some() {
            return;
        }
        let end = self.window.map_or(SimTime::MAX, |w| w.1);
        let upto = now.min(end);
        for d in &mut self.dirs {
            d.model.sample_until(upto);
        }
        if now >= end {
            self.report = Some(self.build_report(end));
        }
    }

    fn read_port(&mut self, port: usize, scratch: &mut [u8]) -> io::Result<()> {
        for _ in 0..READ_BATCH {
            let Some(n) = sys::read_packet(self.ports[port].as_raw_fd(), scratch)? else {
                return Ok(());
            };
            let now = self.now();
            let pkt = &scratch[..n];
            let dir = &mut self.dirs[port];
            match dir.model.offer(now, n as u32, ecn_capable(pkt)) {
                Verdict::Deliver { at, ce } => {
                    let mut buf = self.free.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(pkt);
                    if ce {
                        mark_ce(&mut buf);
                    }
                    dir.line.push_back(Parked { at, buf });
                }
                Verdict::Dropped(_) => {}
            }
        }
        Ok(())
    }

    /// Write every parked packet whose instant has come (the loop spins up to the next one).
    fn deliver_due(&mut self) {
        let measuring = self.report.is_none();
        for i in 0..self.dirs.len() {
            while let Some(head) = self.dirs[i].line.front() {
                let at = head.at;
                if at > self.now() {
                    break;
                }
                let t0_ns = self.t0_ns;
                let dir = &mut self.dirs[i];
                let parked = dir.line.pop_front().expect("head exists");
                let fd = self.ports[dir.output].as_raw_fd();
                if sys::write_packet(fd, &parked.buf).is_err() {
                    dir.model.counters.write_errors += 1;
                }
                if measuring {
                    let late = sys::mono_ns().saturating_sub(t0_ns + at.ns());
                    dir.model.counters.lateness.record(late);
                }
                self.free.push(parked.buf);
            }
        }
    }

    fn build_report(&mut self, end: SimTime) -> Report {
        let start = self.window.map_or(SimTime::ZERO, |w| w.0);
        let measured_ns = end.saturating_since(start).ns();
        let dirs = self
            .dirs
            .iter_mut()
            .map(|d| {
                d.model.finish(end);
                d.model.counters.in_flight_at_end = d.line.len() as u64;
                DirReport::new(&d.model, measured_ns)
            })
            .collect();
        Report {
            t0_mono_ns: self.t0_ns,
            measure_start_mono_ns: self.t0_ns + start.ns(),
            measured_ns,
            links: dirs,
        }
    }
}

/// The packet's ECN field says ECT(0) or ECT(1) (IPv4 TOS or IPv6 traffic class).
pub fn ecn_capable(pkt: &[u8]) -> bool {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 20 => matches!(pkt[1] & 0x03, 1 | 2),
        Some(6) if pkt.len() >= 40 => matches!((pkt[1] >> 4) & 0x03, 1 | 2),
        _ => false,
    }
}

/// Set the ECN field to CE (11), fixing the IPv4 header checksum.
pub fn mark_ce(pkt: &mut [u8]) {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 20 => {
            pkt[1] |= 0x03;
            let ihl = ((pkt[0] & 0x0f) as usize * 4).clamp(20, pkt.len());
            pkt[10] = 0;
            pkt[11] = 0;
            let sum = ipv4_checksum(&pkt[..ihl]);
            pkt[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        Some(6) if pkt.len() >= 40 => pkt[1] |= 0x30,
        _ => {}
    }
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real IPv4 header (20 B) with ECT(0) and a correct checksum.
    fn ipv4_ect0() -> Vec<u8> {
        let mut h = vec![
            0x45, 0x02, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 1, 0, 2, 10, 2,
            0, 2,
        ];
        let sum = ipv4_checksum(&h);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        h
    }

    #[test]
    fn ect_packets_are_recognized() {
        let mut h = ipv4_ect0();
        assert!(ecn_capable(&h));
        h[1] = 0;
        assert!(!ecn_capable(&h));
    }

    #[test]
    fn ce_mark_keeps_the_ipv4_checksum_valid() {
        let mut h = ipv4_ect0();
        mark_ce(&mut h);
        assert_eq!(h[1] & 0x03, 0x03);
        // A header with its checksum in place sums to 0xffff (checksum of it is 0).
        assert_eq!(ipv4_checksum(&h), 0);
    }

    #[test]
    fn ipv6_ce_mark_sets_the_traffic_class_ecn_bits() {
        let mut h = vec![0u8; 40];
        h[0] = 0x60;
        h[1] = 0x10; // ECT(1)
        assert!(ecn_capable(&h));
        mark_ce(&mut h);
        assert_eq!((h[1] >> 4) & 0x03, 0x03);
    }
}
