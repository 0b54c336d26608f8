//! Per-interval time series: goodput, throughput, RTT, cwnd and retransmissions per flow,
//! plus bottleneck queue and utilization.
//!
//! Where the samples go is the caller's choice (`SeriesOut`): kept in memory for the result
//! (memory grows with flows × intervals: 48 bytes per flow and interval, 24 per interval),
//! not kept at all, or handed to a `SeriesSink` in chunks of at most `CHUNK_SAMPLES`
//! flow-intervals (one interval when there are more flows than that), so a streamed run
//! holds one chunk whatever its duration. The sink does the I/O; the core has none.
//!
//! A flow split by PEPs is measured end to end: goodput at the client, the sender-side
//! figures (throughput, RTT, cwnd, retransmissions) on the connection leaving the server.
//! A CBR flow reports its received payload as goodput and its sent payload as throughput.
//!
//! Measurement only reads protocol state: every figure is the difference of a cumulative
//! counter between two samples, so recording series never changes what the endpoints do —
//! nor does where the samples go: every mode takes the same samples at the same instants.
use crate::engine::time::{SimDuration, SimTime};
use crate::net::link::Link;
use crate::sim::flow::{Flow, FlowKind};
use crate::tcp::connection::Connection;
use serde::Serialize;

/// Flow-intervals a streamed chunk holds at most (at least one interval): 65,536 × 48 bytes
/// = 3 MiB, whatever the run's duration.
pub const CHUNK_SAMPLES: usize = 1 << 16;

/// Series of one flow.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowSeries {
    pub id: u32,
    pub goodput_bps: Vec<f64>,
    pub throughput_bps: Vec<f64>,
    pub rtt_mean_ns: Vec<Option<f64>>,
    pub cwnd_bytes: Vec<u64>,
    pub retransmits: Vec<u64>,
}

/// Consecutive intervals of a run: their end times, each flow's samples (one `FlowSeries`
/// per flow, in flow order) and the bottleneck's.
#[derive(Debug, Clone, Default)]
pub struct SeriesChunk {
    pub t_ns: Vec<u64>,
    pub flows: Vec<FlowSeries>,
    pub bottleneck_queue_pkts: Vec<f64>,
    pub bottleneck_utilization: Vec<f64>,
}

impl SeriesChunk {
    fn new(n_flows: usize) -> Self {
        SeriesChunk {
            flows: (0..n_flows)
                .map(|i| FlowSeries {
                    id: i as u32,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn clear(&mut self) {
        self.t_ns.clear();
        self.bottleneck_queue_pkts.clear();
        self.bottleneck_utilization.clear();
        for f in &mut self.flows {
            f.goodput_bps.clear();
            f.throughput_bps.clear();
            f.rtt_mean_ns.clear();
            f.cwnd_bytes.clear();
            f.retransmits.clear();
        }
    }
}

/// Receives a streamed run's series, chunk by chunk, in time order. Errors are one-line
/// messages; after the first one the recorder stops the run (see `SeriesRecorder::failed`).
pub trait SeriesSink: Send {
    fn write(&mut self, chunk: &SeriesChunk) -> Result<(), String>;
    /// After the last chunk (the run ended normally).
    fn finish(&mut self) -> Result<(), String>;
}

/// Where a run's samples go.
pub enum SeriesOut {
    /// Kept in memory and returned in the result.
    Memory,
    /// Not kept (only the intervals are counted).
    Discard,
    /// Streamed in chunks.
    Sink(Box<dyn SeriesSink>),
}

/// The cumulative counters of a flow at the previous sample.
#[derive(Debug, Clone, Default)]
struct Prev {
    delivered: u64,
    sent: u64,
    retrans: u64,
    rtt_sum_ns: u128,
    rtt_samples: u64,
}

/// Collects the series as the run goes.
pub struct SeriesRecorder {
    pub interval: SimDuration,
    /// Memory mode: every interval so far; streamed: the chunk not written yet; discarded:
    /// nothing.
    pub held: SeriesChunk,
    /// Intervals closed so far (whatever the mode).
    pub intervals: u64,
    sink: Option<Box<dyn SeriesSink>>,
    keep: bool,
    error: Option<String>,
    prev: Vec<Prev>,
    prev_t: SimTime,
    prev_q_area: u128,
    prev_bytes_tx: u64,
}

impl std::fmt::Debug for SeriesRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeriesRecorder")
            .field("interval", &self.interval)
            .field("intervals", &self.intervals)
            .field("streamed", &self.sink.is_some())
            .field("keep", &self.keep)
            .finish()
    }
}

impl SeriesRecorder {
    pub fn new(n_flows: usize, interval: SimDuration, out: SeriesOut) -> Self {
        let (keep, sink) = match out {
            SeriesOut::Memory => (true, None),
            SeriesOut::Discard => (false, None),
            SeriesOut::Sink(s) => (true, Some(s)),
        };
        SeriesRecorder {
            interval,
            held: SeriesChunk::new(if keep { n_flows } else { 0 }),
            intervals: 0,
            sink,
            keep,
            error: None,
            prev: vec![Prev::default(); if keep { n_flows } else { 0 }],
            prev_t: SimTime::ZERO,
            prev_q_area: 0,
            prev_bytes_tx: 0,
        }
    }

    pub fn last_t(&self) -> SimTime {
        self.prev_t
    }

    /// Every sample is kept in `held` (`SeriesOut::Memory`).
    pub fn in_memory(&self) -> bool {
        self.keep && self.sink.is_none()
    }

    /// The sink refused a chunk: the run cannot deliver its series (the message says why).
    pub fn failed(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Close the interval ending at `now`.
    pub fn sample(
        &mut self,
        now: SimTime,
        flows: &[Flow],
        conns: &[Connection],
        bottleneck: &Link,
    ) {
        let dt = now.since(self.prev_t);
        if dt.ns() == 0 {
            return;
        }
        self.intervals += 1;
        if !self.keep {
            self.prev_t = now;
            return;
        }
        let secs = dt.as_secs_f64();
        let held = &mut self.held;
        held.t_ns.push(now.ns());
        for (i, flow) in flows.iter().enumerate() {
            let s = &mut held.flows[i];
            let p = &mut self.prev[i];
            let (now_counts, cwnd) = match &flow.kind {
                FlowKind::Tcp { conns: ids, .. } => {
                    let last = *ids.last().expect("a TCP flow has a connection") as usize;
                    let first = &conns[ids[0] as usize].sender;
                    let st = first.stats();
                    let counts = Prev {
                        delivered: conns[last].receiver.stats.bytes_delivered,
                        sent: st.bytes_sent,
                        retrans: st.retrans_segs,
                        rtt_sum_ns: st.rtt.sum(),
                        rtt_samples: st.rtt.count(),
                    };
                    (counts, first.cwnd_bytes())
                }
                FlowKind::Udp { source, sink, .. } => {
                    let counts = Prev {
                        delivered: sink.bytes_received,
                        sent: source.packets_sent * source.packet_bytes() as u64,
                        ..Prev::default()
                    };
                    (counts, 0)
                }
            };
            let Prev {
                delivered,
                sent,
                retrans,
                rtt_sum_ns,
                rtt_samples,
            } = now_counts;
            let n = rtt_samples - p.rtt_samples;
            let rtt = (n > 0).then(|| (rtt_sum_ns - p.rtt_sum_ns) as f64 / n as f64);
            s.goodput_bps
                .push((delivered - p.delivered) as f64 * 8.0 / secs);
            s.throughput_bps.push((sent - p.sent) as f64 * 8.0 / secs);
            s.retransmits.push(retrans - p.retrans);
            s.rtt_mean_ns.push(rtt);
            s.cwnd_bytes.push(cwnd);
            *p = Prev {
                delivered,
                sent,
                retrans,
                rtt_sum_ns,
                rtt_samples,
            };
        }
        let area = bottleneck.stats.q_pkts.area;
        held.bottleneck_queue_pkts
            .push((area - self.prev_q_area) as f64 / dt.ns() as f64);
        self.prev_q_area = area;
        let bytes = bottleneck.stats.bytes_tx;
        let cap_bits = bottleneck.rate_bps as f64 * secs;
        held.bottleneck_utilization
            .push(((bytes - self.prev_bytes_tx) as f64 * 8.0 / cap_bits).min(1.0));
        self.prev_bytes_tx = bytes;
        self.prev_t = now;
        if self.sink.is_some() && held.t_ns.len() * held.flows.len().max(1) >= CHUNK_SAMPLES {
            self.flush();
        }
    }

    /// Hand the held intervals to the sink (a streamed recorder).
    fn flush(&mut self) {
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        if self.error.is_none() && !self.held.t_ns.is_empty() {
            if let Err(e) = sink.write(&self.held) {
                self.error = Some(e);
            }
        }
        self.held.clear();
    }

    /// After the last sample: write what is held and close the sink. `Err` when any chunk
    /// could not be written.
    pub fn finish(&mut self) -> Result<(), String> {
        self.flush();
        if let (None, Some(sink)) = (&self.error, self.sink.as_mut()) {
            if let Err(e) = sink.finish() {
                self.error = Some(e);
            }
        }
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What a `Probe` was given: chunk sizes, every `t_ns`, whether it was finished.
    type Seen = Arc<Mutex<(Vec<usize>, Vec<u64>, bool)>>;

    /// Records what it is given.
    struct Probe {
        seen: Seen,
        fail_at: Option<usize>,
    }

    impl SeriesSink for Probe {
        fn write(&mut self, chunk: &SeriesChunk) -> Result<(), String> {
            let mut s = self.seen.lock().unwrap();
            if self.fail_at == Some(s.0.len()) {
                return Err("disk full".into());
            }
            s.0.push(chunk.t_ns.len());
            s.1.extend(&chunk.t_ns);
            Ok(())
        }
        fn finish(&mut self) -> Result<(), String> {
            self.seen.lock().unwrap().2 = true;
            Ok(())
        }
    }

    fn link() -> Link {
        use crate::engine::rng::SimRng;
        use crate::net::link::{ErrorModel, QueueLimit};
        Link::new(
            "l",
            1_000_000,
            SimDuration::from_ns(1),
            QueueLimit::Packets(10),
            ErrorModel::default(),
            SimRng::substream(1, "x"),
        )
    }

    fn probe(fail_at: Option<usize>) -> (SeriesOut, Seen) {
        let seen = Arc::new(Mutex::new((Vec::new(), Vec::new(), false)));
        let sink = Probe {
            seen: seen.clone(),
            fail_at,
        };
        (SeriesOut::Sink(Box::new(sink)), seen)
    }

    #[test]
    fn streamed_chunks_hold_at_most_chunk_samples_and_cover_every_interval() {
        let (out, seen) = probe(None);
        let mut r = SeriesRecorder::new(0, SimDuration::from_ns(10), out);
        let l = link();
        // no flows: a chunk is CHUNK_SAMPLES intervals; 2.5 chunks' worth of them
        let n = CHUNK_SAMPLES * 5 / 2;
        for i in 1..=n {
            r.sample(SimTime(10 * i as u64), &[], &[], &l);
            assert!(r.held.t_ns.len() < CHUNK_SAMPLES);
        }
        r.finish().unwrap();
        let s = seen.lock().unwrap();
        assert_eq!(s.0, vec![CHUNK_SAMPLES, CHUNK_SAMPLES, CHUNK_SAMPLES / 2]);
        assert_eq!(s.1.len(), n);
        assert_eq!(s.1[n - 1], 10 * n as u64);
        assert!(s.2, "finish closes the sink");
        assert_eq!(r.intervals, n as u64);
    }

    #[test]
    fn a_sink_error_is_kept_and_nothing_more_is_written() {
        let (out, seen) = probe(Some(1));
        let mut r = SeriesRecorder::new(0, SimDuration::from_ns(1), out);
        let l = link();
        for i in 1..=(3 * CHUNK_SAMPLES) {
            r.sample(SimTime(i as u64), &[], &[], &l);
        }
        assert_eq!(r.failed(), Some("disk full"));
        assert_eq!(r.finish(), Err("disk full".to_string()));
        let s = seen.lock().unwrap();
        assert_eq!(s.0, vec![CHUNK_SAMPLES], "only the chunk before the error");
        assert!(!s.2, "a failed sink is not finished");
    }

    #[test]
    fn discarded_series_hold_nothing_but_count_intervals() {
        let mut r = SeriesRecorder::new(3, SimDuration::from_ns(5), SeriesOut::Discard);
        let l = link();
        for i in 1..=1000u64 {
            r.sample(SimTime(5 * i), &[], &[], &l);
        }
        assert_eq!(r.intervals, 1000);
        assert!(r.held.t_ns.is_empty() && r.held.flows.is_empty());
        assert_eq!(r.last_t(), SimTime(5000));
    }
}
