//! One TCP connection: its sender (the Linux-like one or an ns-2 agent) and receiver, the
//! timer slots of both endpoints, and how a connection is built from a flow's
//! configuration. A user flow has one connection end to end, or one per leg when
//! split-TCP PEPs cut the path.
use crate::cc::{self, FlowInit};
use crate::engine::rng::SimRng;
use crate::engine::time::SimTime;
use crate::net::packet::Packet;
use crate::scenario::{AppConfig, ConfigError, TcpConfig};
use crate::tcp::linux::sender::{Sender, SenderConfig, SenderStats};
use crate::tcp::ns2::{self, Ns2Sender};
use crate::tcp::rcvbuf::{RcvBufPolicy, TCP_RMEM_MAX_BYTES};
use crate::tcp::receiver::{EcnEcho, Receiver, ReceiverConfig};
use std::collections::BTreeMap;

/// Which endpoint of a TCP connection a timer or a packet belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// Timer slots of a connection endpoint. Each slot has at most one live deadline; stale
/// heap entries are recognised and ignored when they fire (lazy cancellation).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimerSlot {
    /// Sender: RTO, TLP or RACK reorder timer (Linux multiplexes them on one slot too).
    Retransmit,
    /// Sender: pacing release time.
    Pacing,
    /// Receiver: delayed or compressed ACK.
    Ack,
    /// Either side: handshake retransmission.
    Handshake,
}

/// The data sender of a connection: the Linux-like sender, or one of ns-2's agents
/// (selected by (cca, stack), see `cc::registry::ns2_agent`). Enum dispatch: the Linux path
/// stays inline.
pub enum AnySender {
    Linux(Sender),
    Ns2(Ns2Sender),
}

impl AnySender {
    /// A relay hands over more data (relay senders are always Linux senders).
    #[inline]
    pub fn supply(&mut self, now: SimTime, bytes: u64, out: &mut Vec<Packet>) {
        match self {
            AnySender::Linux(s) => s.supply(now, bytes, out),
            AnySender::Ns2(s) => s.supply(now, bytes, out),
        }
    }

    /// The connection is established (a file server got the request).
    pub fn established(&self) -> bool {
        match self {
            AnySender::Linux(s) => s.state == crate::tcp::linux::sender::ConnState::Established,
            AnySender::Ns2(_) => true,
        }
    }

    #[inline]
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self {
            AnySender::Linux(s) => s.start(now, out),
            AnySender::Ns2(s) => s.start(now, out),
        }
    }

    #[inline]
    pub fn on_packet(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        match self {
            AnySender::Linux(s) => s.on_packet(now, p, out),
            AnySender::Ns2(s) => s.on_packet(now, p, out),
        }
    }

    #[inline]
    pub fn on_timer(&mut self, now: SimTime, slot: TimerSlot, out: &mut Vec<Packet>) {
        match self {
            AnySender::Linux(s) => s.on_timer(now, slot, out),
            AnySender::Ns2(s) => s.on_timer(now, slot, out),
        }
    }

    #[inline]
    pub fn timer_deadline(&self, slot: TimerSlot) -> Option<SimTime> {
        match self {
            AnySender::Linux(s) => s.timer_deadline(slot),
            AnySender::Ns2(s) => s.timer_deadline(slot),
        }
    }

    /// Counters of the sender.
    pub fn stats(&self) -> &SenderStats {
        match self {
            AnySender::Linux(s) => &s.stats,
            AnySender::Ns2(s) => &s.stats,
        }
    }

    pub fn cwnd_bytes(&self) -> u64 {
        match self {
            AnySender::Linux(s) => s.cwnd_bytes(),
            AnySender::Ns2(s) => s.cwnd_bytes(),
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        match self {
            AnySender::Linux(s) => s.ssthresh_bytes(),
            AnySender::Ns2(s) => s.ssthresh_bytes(),
        }
    }

    /// Payload bytes per full segment.
    pub fn mss(&self) -> u32 {
        match self {
            AnySender::Linux(s) => s.cfg.tcp.mss_bytes,
            AnySender::Ns2(s) => s.mss(),
        }
    }

    /// First unacknowledged byte.
    pub fn snd_una(&self) -> u64 {
        match self {
            AnySender::Linux(s) => s.snd_una,
            AnySender::Ns2(s) => s.snd_una(),
        }
    }

    /// One past the highest byte sent.
    pub fn snd_nxt(&self) -> u64 {
        match self {
            AnySender::Linux(s) => s.snd_nxt,
            AnySender::Ns2(s) => s.snd_nxt(),
        }
    }

    /// All of the application's data has been acknowledged.
    pub fn finished(&self) -> bool {
        match self {
            AnySender::Linux(s) => s.finished(),
            AnySender::Ns2(s) => s.finished(),
        }
    }

    /// When the FIN on the last byte of a file was acknowledged (ns-2 agents send none).
    pub fn fin_acked_at(&self) -> Option<SimTime> {
        match self {
            AnySender::Linux(s) => s.fin_acked_at,
            AnySender::Ns2(_) => None,
        }
    }

    /// The Linux sender, if this connection runs one.
    pub fn linux(&self) -> Option<&Sender> {
        match self {
            AnySender::Linux(s) => Some(s),
            AnySender::Ns2(_) => None,
        }
    }

    /// The ns-2 agent, if this connection runs one.
    pub fn ns2(&self) -> Option<&Ns2Sender> {
        match self {
            AnySender::Linux(_) => None,
            AnySender::Ns2(s) => Some(s),
        }
    }
}

/// The options a connection runs with, as its two ends negotiated them in the handshake
/// (what a packet trace shows).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// Payload bytes per full segment.
    pub mss_bytes: u32,
    pub timestamps: bool,
    pub sack: bool,
    pub ecn: bool,
    pub window_scaling: bool,
}

/// One TCP connection — a whole flow end to end, or one leg of it between split-TCP PEPs
/// — with both endpoints and the earliest pending heap event per timer slot.
pub struct Connection {
    pub cca: String,
    pub start: SimTime,
    pub app: AppConfig,
    pub sender: AnySender,
    pub receiver: Receiver,
    /// The user flow this connection belongs to, and its position on it (0 = at the server).
    pub flow: u32,
    pub leg: u8,
    /// ACKs are rewritten to ns-2 `TCPSink` sizes (`tcp::ns2::sink`).
    pub(crate) ns2_sink: bool,
    pub negotiated: Negotiated,
    pub(crate) scheduled: [[Option<SimTime>; 4]; 2],
}

impl Connection {
    fn new(
        spec: &ConnSpec<'_>,
        negotiated: Negotiated,
        sender: AnySender,
        receiver: Receiver,
    ) -> Connection {
        Connection {
            negotiated,
            cca: spec.cca.to_string(),
            start: spec.start,
            app: spec.app,
            // ns-2's agents talk to ns-2's sink, whose ACKs the receiver's are rewritten to.
            ns2_sink: matches!(sender, AnySender::Ns2(_)),
            sender,
            receiver,
            flow: spec.flow as u32,
            leg: spec.leg as u8,
            scheduled: [[None; 4]; 2],
        }
    }
}

/// What one connection is made of.
pub struct ConnSpec<'a> {
    /// Index of the user flow (for error messages and random substream names).
    pub flow: usize,
    pub leg: usize,
    /// Error-message prefix of its configuration (`flows[0]` or `flows[0].pep`).
    pub field: String,
    pub cca: &'a str,
    pub cca_params: &'a BTreeMap<String, f64>,
    pub tcp: &'a TcpConfig,
    pub app: AppConfig,
    pub start: SimTime,
    /// The sender is fed by a relay (it sits at a PEP).
    pub relay_sender: bool,
    /// The receiver sits at a PEP with this relay buffer.
    pub relay_limit: Option<u64>,
    /// Prefix of its random substreams' names (`None`: the user flow's, by `flow` and `leg`).
    pub streams: Option<String>,
}

impl ConnSpec<'_> {
    /// Random substream names: leg 0 keeps the names a one-leg flow always had, so adding
    /// PEP support changed no existing result.
    fn stream(&self, what: &str) -> String {
        if let Some(prefix) = &self.streams {
            format!("{prefix}/{what}")
        } else if self.leg == 0 {
            format!("flow/{}/{what}", self.flow)
        } else {
            format!("flow/{}/leg{}/{what}", self.flow, self.leg)
        }
    }
}

/// Build a connection.
pub fn build(seed: u64, spec: &ConnSpec<'_>) -> Result<Connection, ConfigError> {
    let t = spec.tcp;
    let rwnd = if t.window_scaling {
        t.rwnd_bytes
    } else {
        t.rwnd_bytes.min(65_535)
    };
    if let Some(kind) = cc::registry::ns2_agent(spec.cca, t.stack) {
        return ns2_conn(seed, spec, kind, rwnd);
    }
    let info = cc::info(spec.cca);
    let sack = info.and_then(|ci| ci.sack).unwrap_or(t.sack);
    let cc_needs_ecn = info.is_some_and(|ci| ci.ecn);
    let ecn = t.ecn || cc_needs_ecn;
    let init = FlowInit {
        mss: t.mss_bytes,
        initial_window: t.initial_window_pkts,
    };
    let mut rng = SimRng::substream(seed, &spec.stream("cca"));
    let cc = cc::build(spec.cca, spec.cca_params, &init, &mut rng)
        .map_err(|e| ConfigError(format!("{}.{}", spec.field, e.0)))?;
    let scfg = SenderConfig {
        tcp: TcpConfig {
            sack,
            dsack: t.dsack && sack,
            rack: t.rack && sack,
            tlp: t.tlp && sack,
            fack: t.fack && sack,
            ecn,
            ..t.clone()
        },
        app: spec.app,
        relay: spec.relay_sender,
        ecn_always_ect: cc_needs_ecn,
    };
    let rcfg = ReceiverConfig {
        mss: t.mss_bytes,
        sack,
        dsack: t.dsack && sack,
        timestamps: t.timestamps,
        delayed_ack: t.delayed_ack,
        rwnd_bytes: rwnd,
        // Linux's default tcp_rmem[2] autotunes; any other rwnd is the SO_RCVBUF that
        // `tcplab emulate` gives an end host's socket, which turns autotuning off. A PEP's
        // relay sets no SO_RCVBUF: its sockets autotune up to rwnd (its tcp_rmem[2]).
        rcvbuf: if rwnd == TCP_RMEM_MAX_BYTES || spec.relay_limit.is_some() {
            RcvBufPolicy::Autotune
        } else {
            RcvBufPolicy::Locked
        },
        window_scaling: t.window_scaling,
        app: spec.app,
        ecn: match (ecn, cc_needs_ecn) {
            (false, _) => EcnEcho::Off,
            (true, false) => EcnEcho::Classic,
            (true, true) => EcnEcho::Dctcp,
        },
    };
    let id = spec.flow as u32;
    let mut sender = Sender::new(id, scfg, cc);
    let mut receiver = Receiver::new(id, rcfg);
    receiver.relay_limit = spec.relay_limit;
    if t.random_ts_offset {
        // Linux draws a 32-bit offset in timestamp ticks (1 ms).
        let mut ts_rng = SimRng::substream(seed, &spec.stream("tsoffset"));
        sender.ts_offset = ts_rng.below(1 << 32) * 1_000_000;
        receiver.ts_offset = ts_rng.below(1 << 32) * 1_000_000;
    }
    let negotiated = Negotiated {
        mss_bytes: t.mss_bytes,
        timestamps: t.timestamps,
        sack,
        ecn,
        window_scaling: t.window_scaling,
    };
    Ok(Connection::new(
        spec,
        negotiated,
        AnySender::Linux(sender),
        receiver,
    ))
}

/// A connection running an ns-2 agent, with a receiver that behaves as ns-2's `TCPSink`
/// (`TCPSink/Sack1` for sack/fack): every packet ACKed at once (unless the scenario asks for
/// delayed ACKs), SACK only for the SACK agents, no D-SACK, the sender's timestamp always
/// echoed (ns-2 sinks do), ECN off.
fn ns2_conn(
    seed: u64,
    spec: &ConnSpec<'_>,
    kind: ns2::Ns2Kind,
    rwnd: u64,
) -> Result<Connection, ConfigError> {
    let t = spec.tcp;
    let mut rng = SimRng::substream(seed, &spec.stream("ns2"));
    let tcp = ns2::FlowTcp {
        mss: t.mss_bytes,
        initial_window: t.initial_window_pkts,
        rwnd_bytes: rwnd,
        timestamps: t.timestamps,
        app: spec.app,
        relay: spec.relay_sender,
        peer_window: spec.relay_limit.is_some(),
    };
    let id = spec.flow as u32;
    let agent = ns2::build(kind, id, spec.cca_params, &tcp, rng.next_f64())
        .map_err(|e| ConfigError(format!("{}.{}", spec.field, e.0)))?;
    let rcfg = ReceiverConfig {
        mss: t.mss_bytes,
        sack: kind.uses_sack(),
        dsack: false,
        timestamps: true,
        delayed_ack: t.delayed_ack,
        rwnd_bytes: rwnd,
        rcvbuf: RcvBufPolicy::Fixed,
        window_scaling: t.window_scaling,
        app: spec.app,
        ecn: EcnEcho::Off,
    };
    let mut receiver = Receiver::new(id, rcfg);
    receiver.relay_limit = spec.relay_limit;
    let negotiated = Negotiated {
        mss_bytes: t.mss_bytes,
        timestamps: t.timestamps,
        sack: kind.uses_sack(),
        ecn: false,
        window_scaling: t.window_scaling,
    };
    Ok(Connection::new(
        spec,
        negotiated,
        AnySender::Ns2(agent),
        receiver,
    ))
}
