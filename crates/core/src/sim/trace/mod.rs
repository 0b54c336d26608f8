//! Observation of a run: pcapng packet captures and the senders' event log.
//!
//! A `Tracer` is handed to the simulation before it runs (`Simulation::set_tracer`); the
//! event loop calls it at three points only, each behind one `Option` check, so a run
//! without one does no extra work:
//!
//! - a packet offered to a link (`ingress`), before the link's queue, loss or AQM decide
//!   anything — what `tcpdump` on the router in front of the link would see leaving;
//! - a packet reaching a link's far end (`egress`) — what the router behind it receives;
//! - a data sender that acted (`after_sender`), for the event log (`events`).
//!
//! Capture points are the two ends of a path segment (the dumbbell's `bottleneck`, or a
//! `[path]` segment by name): the *sender side* (the node towards the data sender, where
//! data enters the segment and ACKs leave it) and the *receiver side* (towards the data
//! receiver). A
//! packet dropped on the segment — queue, error, outage, AQM — is in the sender-side file
//! and not in the receiver-side one. Each capture point is one pcapng file with both
//! directions (`<segment>.sender-side.pcapng`), so Wireshark's TCP analysis pairs data and
//! ACKs. What a capture point sees goes, in batches and in the order seen, to a thread of
//! the capture's own (`capture`), which builds the frames (`frame`) and writes them
//! (`pcapng`); the event log goes to disk from a thread of its own too (`output`). So
//! memory does not grow with the run, and building frames and writing files overlap the
//! simulation. (A packet the event loop hands to the next link ahead of time,
//! `Simulation::on_wire`, is seen leaving its link then, `egress_ahead`: a copy of its head
//! waits, at most a link's worth of packets, until the file reaches its time. Likewise a
//! packet a host passes on to the link behind its interface, `Simulation::forward_access`,
//! is seen entering that link ahead of time, `set_passing`, also when the host itself acts
//! ahead of time, `sim::ahead`: frames are written up to the time of the event being run,
//! never up to a time a host reached ahead of it. A capture point's frames ahead come from
//! one link each way, so each way they are in time order and the file merges the two. The
//! event log keeps the records of a sender acting ahead of time likewise, `events`.)
//!
//! Filters: flows (by index), a time window `[from, to)` and the segments; the event log
//! takes the flows and the window. Tracing only reads the simulation's state: the
//! initial sequence numbers come from random substreams of their own, and a traced run's
//! results are bit-identical to an untraced one's.
pub mod capture;
pub mod convert;
pub mod events;
pub mod frame;
mod handoff;
pub mod output;
pub mod pcapng;

use crate::engine::rng::SimRng;
use crate::engine::time::SimTime;
use crate::net::packet::{PacketHead, PacketPool, SackBlock};
use crate::net::topology::Dest;
use crate::scenario::AppConfig;
use crate::sim::Simulation;
use crate::tcp::connection::Connection;
use crate::tcp::linux::sender::REQUEST_BYTES;
use crate::tcp::rcvbuf::{RcvBufPolicy, RcvSpace, TCP_RMEM_MAX_BYTES};
use capture::{CaptureThread, Framer};
use events::EventLog;
use frame::ConnWire;
use output::FileOutput;
use pcapng::{Direction, PcapngWriter};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default bytes kept of each frame: every header (Ethernet 14 + IPv4 20 + TCP ≤ 60).
pub const DEFAULT_SNAPLEN_BYTES: u32 = 128;
/// Largest snap length (a full 64 KiB frame).
pub const MAX_SNAPLEN_BYTES: u32 = 262_144;
/// The two capture points of a segment, as their files name them: where data enters it
/// (towards the data sender) and where it leaves it.
pub const SIDES: [&str; 2] = ["sender-side", "receiver-side"];

/// The file of capture point `side` of segment `segment`.
pub fn capture_file_name(segment: &str, side: &str) -> String {
    format!("{segment}.{side}.pcapng")
}

/// What to trace (JSON from the Python layer; `docs/interface.md`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Directory for the pcapng files (`None`: no capture).
    #[serde(default)]
    pub pcap_dir: Option<String>,
    /// Segments to capture at, by name (empty: the bottleneck segment).
    #[serde(default)]
    pub links: Vec<String>,
    /// Flows to trace, by index (`None`: all).
    #[serde(default)]
    pub flows: Option<Vec<u32>>,
    /// Time window `[from_ns, to_ns)` (`to_ns` `None`: to the end).
    #[serde(default)]
    pub from_ns: u64,
    #[serde(default)]
    pub to_ns: Option<u64>,
    /// Bytes kept of each frame.
    #[serde(default = "default_snaplen")]
    pub snaplen_bytes: u32,
    /// File for the raw event log (`None`: none); see `events::format_json`.
    #[serde(default)]
    pub events_path: Option<String>,
    /// Written into each capture's section header (what run this is).
    #[serde(default)]
    pub comment: String,
}

fn default_snaplen() -> u32 {
    DEFAULT_SNAPLEN_BYTES
}

/// What a traced run wrote.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    pub captures: Vec<CaptureReport>,
    pub events: Option<EventsReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport {
    pub path: String,
    pub segment: String,
    pub side: &'static str,
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventsReport {
    pub path: String,
    pub records: u64,
}

type Out = FileOutput;

/// One capture file.
struct Capture {
    out: CaptureThread,
    path: PathBuf,
    segment: String,
    side: &'static str,
}

impl Capture {
    /// Packet `p` (SACK block slots `sacks`) is seen at `t_ns` going `dir`.
    #[inline]
    fn write(
        &mut self,
        t_ns: u64,
        dir: Direction,
        p: &PacketHead,
        sacks: &[SackBlock; 4],
    ) -> Result<(), String> {
        self.out
            .push(t_ns, dir, p, sacks)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// `Tracer::ahead`'s two ways: frames leaving a link, frames entering one.
const EGRESS: usize = 0;
const INGRESS: usize = 1;
/// The direction of the packets of each way at a capture point: leaving a link is arriving
/// at the capture point behind it, entering one leaving the point in front of it.
const WAY_DIRECTION: [Direction; 2] = [Direction::Inbound, Direction::Outbound];

/// The SACK block slots of a packet that carries none.
const NO_SACKS: [SackBlock; 4] = [SackBlock { start: 0, end: 0 }; 4];

/// What `AheadQueue::first` says of an empty queue: no packet is seen this late (a run
/// ends before it).
const NONE_DUE: u64 = u64::MAX;

/// Packets of one capture seen ahead of their time one way, in time order: each one's time
/// and a copy of its head as it was then (a later hop may change the packet), with the
/// SACK blocks of those that carry some. Its frame is built when it is written, straight
/// into the file's buffer.
#[derive(Default)]
struct AheadQueue {
    times: VecDeque<u64>,
    heads: VecDeque<PacketHead>,
    sacks: VecDeque<[SackBlock; 4]>,
}

impl AheadQueue {
    /// The time of the first packet not yet written (`NONE_DUE`: none).
    #[inline]
    fn first(&self) -> u64 {
        self.times.front().copied().unwrap_or(NONE_DUE)
    }

    /// Keep packet `idx` of `pool`, seen at `t_ns`.
    #[inline]
    fn push(&mut self, t_ns: u64, idx: u32, pool: &PacketPool) {
        debug_assert!(self.times.back().is_none_or(|&t| t <= t_ns) && t_ns < NONE_DUE);
        let head = pool.get(idx);
        if head.n_sack > 0 {
            self.sacks.push_back(*pool.sack_slots(idx));
        }
        self.times.push_back(t_ns);
        self.heads.push_back(*head);
    }

    /// The first packet not yet written: its head and SACK block slots.
    #[inline]
    fn front(&self) -> (&PacketHead, &[SackBlock; 4]) {
        let head = self.heads.front().expect("a time has its head");
        let sacks = match head.n_sack {
            0 => &NO_SACKS,
            _ => self.sacks.front().expect("kept with its head"),
        };
        (head, sacks)
    }

    /// The first packet, now written: drop it.
    #[inline]
    fn pop(&mut self) {
        self.times.pop_front();
        if let Some(head) = self.heads.pop_front() {
            if head.n_sack > 0 {
                self.sacks.pop_front();
            }
        }
    }
}

/// Which capture a link's ingress and egress feed.
#[derive(Copy, Clone, Default)]
struct Tap {
    ingress: Option<u16>,
    egress: Option<u16>,
}

/// The observer of one run.
pub struct Tracer {
    from_ns: u64,
    to_ns: u64,
    framer: Arc<Framer>,
    taps: Vec<Tap>,
    captures: Vec<Capture>,
    events: Option<(EventLog<Out>, PathBuf)>,
    /// Per capture: packets seen leaving a link ahead of their time (`egress_ahead`), and
    /// entering one (`set_passing`).
    ahead: Vec<[AheadQueue; 2]>,
    /// Per capture: the time of its first packet kept ahead (`NONE_DUE`: none), so that
    /// most calls of `write_ahead` cost one comparison.
    due_ns: Vec<u64>,
    /// While a packet is passed on ahead of its time, the time of the event being run (what
    /// the packet enters is seen ahead).
    passing: Option<SimTime>,
    /// The first write error (then nothing more is written).
    error: Option<String>,
}

fn create(path: &Path) -> Result<Out, String> {
    FileOutput::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The headers connection `c` shows (see `frame`).
fn conn_wire(seed: u64, c: &Connection) -> ConnWire {
    let n = c.negotiated;
    let (sender_ip, receiver_ip, opener_port) = frame::flow_addresses(c.flow);
    let mut rng = SimRng::substream(seed, &format!("trace/flow/{}/leg{}/isn", c.flow, c.leg));
    let isn_sender = rng.below(1 << 32) as u32;
    let isn_receiver = rng.below(1 << 32) as u32;
    // The data sender's socket is a Linux default one that never receives data: its
    // window stays the initial one, with the scale its buffer gives.
    let sender_socket = RcvSpace::new(
        RcvBufPolicy::Autotune,
        TCP_RMEM_MAX_BYTES,
        n.mss_bytes,
        n.window_scaling,
    );
    let receiver_scale = match c.receiver.rcv_space() {
        Some(space) => space.wscale,
        // ns-2's sink: the smallest shift that lets 16 bits carry its window.
        None => (0..14)
            .find(|s| c.receiver.rwnd_bytes() >> s <= 0xffff)
            .unwrap_or(14),
    };
    // A bulk sender opens its connection (iperf-like), a file client its own.
    let (request_bytes, file_bytes, sender_port, receiver_port) = match c.app {
        AppConfig::File { size_bytes } => (
            REQUEST_BYTES,
            Some(size_bytes),
            frame::LISTEN_PORT,
            opener_port,
        ),
        _ => (0, None, opener_port, frame::LISTEN_PORT),
    };
    ConnWire {
        sender_ip,
        receiver_ip,
        sender_port,
        receiver_port,
        isn_sender,
        isn_receiver,
        timestamps: n.timestamps,
        sack: n.sack,
        ecn: n.ecn,
        wscale_sender: n.window_scaling.then_some(sender_socket.wscale as u8),
        wscale_receiver: n.window_scaling.then_some(receiver_scale as u8),
        mss_option: (n.mss_bytes + if n.timestamps { 12 } else { 0 }) as u16,
        sender_window_bytes: sender_socket.rcv_wnd,
        request_bytes,
        file_bytes,
    }
}

impl Tracer {
    /// Open the outputs `spec` asks for on simulation `sim` (before it runs). Errors are one
    /// line naming the field or the file.
    pub fn new(spec: &TraceSpec, sim: &Simulation) -> Result<Tracer, String> {
        let topo = &sim.topo;
        let n_flows = sim.flows.len();
        let flows = match &spec.flows {
            None => vec![true; n_flows],
            Some(list) => {
                let mut v = vec![false; n_flows];
                for &f in list {
                    let slot = v.get_mut(f as usize).ok_or_else(|| {
                        format!(
                            "trace.flows: no flow {f}; the scenario has flows 0 to {}",
                            n_flows.saturating_sub(1)
                        )
                    })?;
                    *slot = true;
                }
                v
            }
        };
        let to_ns = spec.to_ns.unwrap_or(u64::MAX);
        if spec.from_ns >= to_ns {
            return Err(format!(
                "trace window: from {} ns must be before to {} ns",
                spec.from_ns, to_ns
            ));
        }
        if !(64..=MAX_SNAPLEN_BYTES).contains(&spec.snaplen_bytes) {
            return Err(format!(
                "trace.snaplen_bytes = {}: must be in [64, {MAX_SNAPLEN_BYTES}]",
                spec.snaplen_bytes
            ));
        }
        let mut taps = vec![Tap::default(); topo.links.len()];
        let mut writers = Vec::new();
        if let Some(dir) = &spec.pcap_dir {
            let names: Vec<&str> = topo.segments.iter().map(|s| s.0.as_str()).collect();
            let chosen: Vec<usize> = if spec.links.is_empty() {
                let b = topo
                    .segments
                    .iter()
                    .position(|s| s.1 == topo.bottleneck_fwd);
                b.into_iter().collect()
            } else {
                let mut v = Vec::new();
                for l in &spec.links {
                    let i = names.iter().position(|n| n == l).ok_or_else(|| {
                        format!(
                            "trace.links: unknown segment {l:?}; allowed: {}",
                            names.join(", ")
                        )
                    })?;
                    if !v.contains(&i) {
                        v.push(i);
                    }
                }
                v
            };
            let application = format!(
                "tcplab-core {} (model {})",
                crate::VERSION,
                crate::MODEL_VERSION
            );
            for s in chosen {
                let (name, fwd, rev) = &topo.segments[s];
                for (side, ingress_link, egress_link) in
                    [(SIDES[0], *fwd, *rev), (SIDES[1], *rev, *fwd)]
                {
                    let path = Path::new(dir).join(capture_file_name(name, side));
                    let description = format!(
                        "{side} of segment {name:?}: packets entering it ({}) and leaving it ({})",
                        topo.links[ingress_link as usize].name,
                        topo.links[egress_link as usize].name
                    );
                    let if_name = format!("{name}.{side}");
                    let header = pcapng::Header {
                        comment: &spec.comment,
                        application: &application,
                        if_name: &if_name,
                        if_description: &description,
                        linktype: pcapng::LINKTYPE_ETHERNET,
                        snaplen: spec.snaplen_bytes,
                    };
                    let writer = File::create(&path)
                        .and_then(|f| PcapngWriter::new(f, &header))
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    let id = writers.len() as u16;
                    taps[ingress_link as usize].ingress = Some(id);
                    taps[egress_link as usize].egress = Some(id);
                    writers.push((writer, path, name.clone(), side));
                }
            }
        }
        let events = match &spec.events_path {
            Some(p) => {
                let path = PathBuf::from(p);
                Some((EventLog::new(create(&path)?, sim.conns.len()), path))
            }
            None => None,
        };
        let n_routes = 2 * sim.conns.len();
        let udp_route_flow = topo.routes[n_routes..]
            .iter()
            .map(|r| match r.dest {
                Dest::Udp { flow } => flow,
                // cross traffic is not a flow under test: never captured
                Dest::Conn { .. } | Dest::Cross { .. } | Dest::CrossConn { .. } => u32::MAX,
            })
            .collect();
        let wires: Vec<ConnWire> = sim
            .conns
            .iter()
            .map(|c| conn_wire(sim.cfg.seed, c))
            .collect();
        let framer = Arc::new(Framer {
            snaplen: spec.snaplen_bytes as usize,
            flows,
            conn_flow: sim.conns.iter().map(|c| c.flow).collect(),
            templates: wires.iter().map(ConnWire::templates).collect(),
            wires,
            udp_route_flow,
        });
        let mut captures = Vec::new();
        for (writer, path, segment, side) in writers {
            let out = CaptureThread::start(writer, Arc::clone(&framer))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            captures.push(Capture {
                out,
                path,
                segment,
                side,
            });
        }
        Ok(Tracer {
            from_ns: spec.from_ns,
            // nothing at or after the end happens (a frame seen ahead may be due later)
            to_ns: to_ns.min(sim.end.ns()),
            framer,
            taps,
            ahead: captures.iter().map(|_| Default::default()).collect(),
            due_ns: vec![NONE_DUE; captures.len()],
            passing: None,
            captures,
            events,
            error: None,
        })
    }

    #[inline]
    fn in_window(&self, now: SimTime) -> bool {
        (self.from_ns..self.to_ns).contains(&now.ns())
    }

    /// Packet `idx` is offered to `link` (ahead of time while passing on: `set_passing`).
    #[inline]
    pub fn ingress(&mut self, now: SimTime, link: u32, idx: u32, pool: &PacketPool) {
        if let Some(cap) = self.taps[link as usize].ingress {
            if self.passing.is_some() {
                self.keep_ahead(now, cap, INGRESS, idx, pool);
            } else {
                self.capture(now, cap, INGRESS, idx, pool);
            }
        }
    }

    /// While the event of time `seen` runs, the event loop passes a packet on to the link
    /// behind a host's interface, ahead of the time it enters it
    /// (`Simulation::forward_access`): until this is called with `None`, what it enters is
    /// seen ahead. (The host itself may be acting ahead of `seen`, `sim::ahead`.)
    #[inline]
    pub fn set_passing(&mut self, seen: Option<SimTime>) {
        self.passing = seen;
    }

    /// Packet `idx` reaches the far end of `link`.
    #[inline]
    pub fn egress(&mut self, now: SimTime, link: u32, idx: u32, pool: &PacketPool) {
        if let Some(cap) = self.taps[link as usize].egress {
            self.capture(now, cap, EGRESS, idx, pool);
        }
    }

    /// Packet `idx` leaves `link` at `at`, which is later than the events written so far
    /// (`Simulation::on_wire`): it is kept until its capture file reaches `at`.
    #[inline]
    pub fn egress_ahead(&mut self, at: SimTime, link: u32, idx: u32, pool: &PacketPool) {
        if let Some(cap) = self.taps[link as usize].egress {
            self.keep_ahead(at, cap, EGRESS, idx, pool);
        }
    }

    /// Keep packet `idx`, seen at `at` ahead of the events written so far, in capture
    /// `cap`'s packets ahead of `way` (`EGRESS`, `INGRESS`).
    fn keep_ahead(&mut self, at: SimTime, cap: u16, way: usize, idx: u32, pool: &PacketPool) {
        if self.error.is_some() || !self.in_window(at) {
            return;
        }
        if let Some(seen) = self.passing {
            // every frame of `cap` due by the event being run has been seen: the rest come
            // later and are due later (a hop takes time), and frames kept only to be written
            // at the end would grow with the run when every frame of a capture is seen ahead
            self.write_ahead(cap as usize, seen.ns());
        }
        if self.framer.traced(pool.get(idx)) {
            self.ahead[cap as usize][way].push(at.ns(), idx, pool);
            let due = &mut self.due_ns[cap as usize];
            *due = (*due).min(at.ns());
        }
    }

    /// Write packet `idx`'s frame, seen at `now` going `way`, to capture `cap`.
    fn capture(&mut self, now: SimTime, cap: u16, way: usize, idx: u32, pool: &PacketPool) {
        if self.error.is_some() || !self.in_window(now) || !self.framer.traced(pool.get(idx)) {
            return;
        }
        self.write_ahead(cap as usize, now.ns());
        let c = &mut self.captures[cap as usize];
        let dir = WAY_DIRECTION[way];
        if let Err(e) = c.write(now.ns(), dir, pool.get(idx), pool.sack_slots(idx)) {
            self.error = Some(e);
        }
    }

    /// Write capture `cap`'s packets seen ahead whose time is `t_ns` or before, in time
    /// order; of two in the same nanosecond the one leaving a link first (as a frame seen
    /// ahead is written before one captured as it happens).
    #[inline]
    fn write_ahead(&mut self, cap: usize, t_ns: u64) {
        if t_ns >= self.due_ns[cap] {
            self.write_ahead_due(cap, t_ns);
        }
    }

    /// `write_ahead` when some packet kept ahead is due.
    fn write_ahead_due(&mut self, cap: usize, t_ns: u64) {
        let c = &mut self.captures[cap];
        let ahead = &mut self.ahead[cap];
        let mut first = [ahead[EGRESS].first(), ahead[INGRESS].first()];
        while self.error.is_none() {
            let way = if first[EGRESS] <= first[INGRESS] {
                EGRESS
            } else {
                INGRESS
            };
            let t = first[way];
            // (`NONE_DUE` is after every time asked for, `finish`'s included)
            if t > t_ns || t == NONE_DUE {
                break;
            }
            let q = &mut ahead[way];
            let (head, sacks) = q.front();
            if let Err(e) = c.write(t, WAY_DIRECTION[way], head, sacks) {
                self.error = Some(e);
            }
            q.pop();
            first[way] = q.first();
        }
        self.due_ns[cap] = first[EGRESS].min(first[INGRESS]);
    }

    /// The data sender of `conn` acted at `now`, sending `sent`, while the event of time
    /// `seen` ran (earlier when the sender handled a packet ahead of time, `sim::ahead`).
    #[inline]
    pub fn after_sender(
        &mut self,
        now: SimTime,
        seen: SimTime,
        conn: u32,
        c: &Connection,
        sent: &[crate::net::packet::Packet],
    ) {
        if self.error.is_some() || !self.framer.flows[c.flow as usize] {
            return;
        }
        let logged = self.in_window(now);
        if let Some((log, path)) = &mut self.events {
            if let Err(e) = log.after_sender(now, seen, conn, c, sent, logged) {
                self.error = Some(format!("cannot write {}: {e}", path.display()));
            }
        }
    }

    /// Flush every output; what was written, or the first error.
    pub fn finish(mut self) -> Result<TraceReport, String> {
        for cap in 0..self.captures.len() {
            // every frame kept is due before the end (`egress_ahead` checks the window)
            self.write_ahead(cap, u64::MAX);
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut captures = Vec::new();
        for c in self.captures {
            let (packets, bytes) = c
                .out
                .finish()
                .map_err(|e| format!("cannot write {}: {e}", c.path.display()))?;
            captures.push(CaptureReport {
                path: c.path.display().to_string(),
                segment: c.segment,
                side: c.side,
                packets,
                bytes,
            });
        }
        let events = match self.events {
            Some((log, path)) => {
                let records = log.records;
                log.finish()
                    .and_then(FileOutput::finish)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                Some(EventsReport {
                    path: path.display().to_string(),
                    records,
                })
            }
            None => None,
        };
        Ok(TraceReport { captures, events })
    }
}
