//! Per-interval time series: goodput, throughput, RTT, cwnd and retransmissions per flow,
//! plus bottleneck queue and utilization. Memory grows with the number of intervals only.
//!
//! A flow split by PEPs is measured end to end: goodput at the client, the sender-side
//! figures (throughput, RTT, cwnd, retransmissions) on the connection leaving the server.
//! A CBR flow reports its received payload as goodput and its sent payload as throughput.
//!
//! Measurement only reads protocol state: every figure is the difference of a cumulative
//! counter between two samples, so recording series never changes what the endpoints do.
use crate::engine::time::{SimDuration, SimTime};
use crate::net::link::Link;
use crate::sim::flow::{Flow, FlowKind};
use crate::tcp::connection::Connection;
use serde::Serialize;

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
#[derive(Debug, Clone)]
pub struct SeriesRecorder {
    pub interval: SimDuration,
    pub t_ns: Vec<u64>,
    pub flows: Vec<FlowSeries>,
    pub bottleneck_queue_pkts: Vec<f64>,
    pub bottleneck_utilization: Vec<f64>,
    prev: Vec<Prev>,
    prev_t: SimTime,
    prev_q_area: u128,
    prev_bytes_tx: u64,
}

impl SeriesRecorder {
    pub fn new(n_flows: usize, interval: SimDuration) -> Self {
        SeriesRecorder {
            interval,
            t_ns: Vec::new(),
            flows: (0..n_flows)
                .map(|i| FlowSeries {
                    id: i as u32,
                    ..Default::default()
                })
                .collect(),
            bottleneck_queue_pkts: Vec::new(),
            bottleneck_utilization: Vec::new(),
            prev: vec![Prev::default(); n_flows],
            prev_t: SimTime::ZERO,
            prev_q_area: 0,
            prev_bytes_tx: 0,
        }
    }

    pub fn last_t(&self) -> SimTime {
        self.prev_t
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
        let secs = dt.as_secs_f64();
        self.t_ns.push(now.ns());
        for (i, flow) in flows.iter().enumerate() {
            let s = &mut self.flows[i];
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
        self.bottleneck_queue_pkts
            .push((area - self.prev_q_area) as f64 / dt.ns() as f64);
        self.prev_q_area = area;
        let bytes = bottleneck.stats.bytes_tx;
        let cap_bits = bottleneck.rate_bps as f64 * secs;
        self.bottleneck_utilization
            .push(((bytes - self.prev_bytes_tx) as f64 * 8.0 / cap_bits).min(1.0));
        self.prev_bytes_tx = bytes;
        self.prev_t = now;
    }
}
