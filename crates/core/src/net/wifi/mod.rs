//! A Wi-Fi hop: one shared, half-duplex medium on which the access point (the forward,
//! data direction), one station per flow (the reverse, ACK direction) and background
//! stations contend with the 802.11 DCF/EDCA at packet level.
//!
//! # Channel access
//!
//! Each contender keeps a backoff counter in slots and a contention window. After the
//! medium has been idle for DIFS/AIFS the counters count down one per idle slot; the
//! contender whose counter ends first transmits, and all whose counters end in the same
//! slot transmit together and collide. When the medium goes busy the others freeze their
//! counters (what they counted down is kept). After a success the window returns to CWmin,
//! after a failure it doubles up to CWmax, and a new counter is drawn uniformly in
//! [0, CW] — also when the queue is empty (post-backoff), so a frame that arrives to an
//! empty queue after the post-backoff ended, with the medium idle for DIFS/AIFS, goes at
//! once; one that arrives while the medium is busy draws a counter first.
//!
//! The simulation needs one event per channel access: `arm_wakeup` names the instant the
//! next backoff ends (or a background frame arrives), and `on_wake` decides that whole
//! exchange at its start — who transmits, which MPDUs survive the channel, when the
//! exchange ends — and reports the packets that reach the far end (at the end of the
//! PPDU plus the link's propagation delay) and those dropped after the retry limit.
//!
//! # Exchanges
//!
//! A success takes PPDU + SIFS + ACK (one MPDU) or BlockAck (an A-MPDU), then the medium
//! is idle. A collision, or a frame that failed entirely, takes the longest PPDU and then
//! DIFS/AIFS as after any busy medium: as in Bianchi's model, ACK timeout and EIFS are
//! not modelled. HT/VHT transmitters aggregate up to the BlockAck window (64 MPDUs), the
//! A-MPDU byte limit and aPPDUMaxTime (5.484 ms) from the head of one receiver's queue; a
//! BlockAck acknowledges each MPDU, the failed ones are retransmitted first in the next
//! A-MPDU, and the receiver's reorder buffer releases MPDUs to the next hop only in
//! order, so MAC retransmissions show up as delay, not reordering. The AP serves its
//! per-station queues round-robin (mac80211's per-station TXQs); their sum is limited by
//! the forward direction's DropTail queue.
//!
//! With `ap_queue = "fq-codel"` each per-station queue is managed by CoDel, as mac80211's
//! FQ-CoDel intermediate queues are (per station, target 20 ms, interval 100 ms, ECN on):
//! frames wait unsequenced until the AP builds an A-MPDU, and CoDel decides, frame by
//! frame as they leave, whether to drop one (or CE-mark an ECN-capable one); a frame that
//! left gets its sequence number and is never dropped by CoDel again (retransmissions
//! keep their place). The arrivals are still bounded by the forward direction's limit.
//!
//! With `server_on_wifi` the flows' senders are one station too, a server (the data's first
//! hop is its uplink to the AP, the AP relays each frame down to its flow's station; ACKs go
//! the other way through the AP), so every packet takes two exchanges on the one medium. A relayed
//! frame joins the AP's queue at the end of the PPDU that brought it (in order, through
//! the AP's reorder buffer); the hop's propagation delay is added once, on the last
//! exchange.
//!
//! Not modelled: RTS/CTS, hidden terminals, TXOP bursts, capture, the ACK timeout/EIFS.
pub mod phy;
pub mod radio;

use crate::engine::rng::SimRng;
use crate::engine::time::{SimDuration, SimTime};
use crate::net::aqm::codel::{Codel, PacketQueue, Queued};
use crate::net::link::QueueLimit;
use crate::scenario::{ApQueue, CodelConfig, DirConfig, WifiConfig};
use phy::{
    ampdu_subframe_bytes, Band, Phy, Standard, ACK_BYTES, BA_WINDOW_MPDUS, BLOCK_ACK_BYTES,
    PPDU_MAX_NS,
};
use std::collections::{BTreeMap, VecDeque};

/// Handle of a background frame (not a simulation packet).
const NO_PACKET: u32 = u32::MAX;
/// Frames a background station keeps waiting at most.
const BACKGROUND_QUEUE_FRAMES: usize = 1000;
/// mac80211's CoDel parameters for a station's queue (`sta_info.c`: 20 ms, 100 ms, ECN).
pub const AP_CODEL: CodelConfig = CodelConfig {
    target_ns: 20_000_000,
    interval_ns: 100_000_000,
    ecn: true,
};

/// What a channel access did to a simulation packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WifiOutput {
    /// `pkt` reaches the far end of the forward (AP → station) or reverse direction at `at`.
    Deliver {
        forward: bool,
        pkt: u32,
        at: SimTime,
    },
    /// `pkt` was discarded after the retry limit.
    Dropped { forward: bool, pkt: u32 },
    /// CoDel at the AP dropped `pkt` (forward direction).
    AqmDropped { pkt: u32 },
    /// CoDel at the AP marked `pkt` Congestion Experienced.
    Marked { pkt: u32 },
    /// The AP's queue was full when relayed `pkt` reached it.
    Refused { forward: bool, pkt: u32 },
}

/// A frame's packet as the reorder buffer hands it on (to the next hop or the AP's queue).
#[derive(Copy, Clone, Debug)]
struct Frame {
    pkt: u32,
    ip_bytes: u32,
    ect: bool,
    /// The flow (its receiver's station), where the AP relays a server's frame.
    flow: u32,
}

/// What the reorder buffer holds at a gap's sequence number: nothing to hand on.
const GAP: Frame = Frame {
    pkt: NO_PACKET,
    ip_bytes: 0,
    ect: false,
    flow: 0,
};

#[derive(Copy, Clone, Debug)]
struct Mpdu {
    pkt: u32,
    ip_bytes: u32,
    ect: bool,
    flow: u32,
    seq: u64,
    attempts: u32,
    /// Arrival order at the transmitter (across its receivers' queues).
    arrival: u64,
}

/// Frames from one transmitter to one receiver, with the receiver's reorder buffer.
#[derive(Debug)]
struct TxQueue {
    /// Frames with their sequence numbers (the next PPDU's first).
    q: VecDeque<Mpdu>,
    /// With CoDel: frames not yet dequeued (no sequence number yet), and CoDel's state.
    fresh: PacketQueue,
    codel: Option<Codel>,
    next_seq: u64,
    /// Next sequence number the receiver hands on, and what it holds beyond a gap.
    rx_next: u64,
    held: BTreeMap<u64, Frame>,
    /// Rate index and bit error probability of this radio link.
    mode: usize,
    p_bit: f64,
}

impl TxQueue {
    fn new(mode: usize, p_bit: f64) -> TxQueue {
        TxQueue {
            q: VecDeque::new(),
            fresh: PacketQueue::default(),
            codel: None,
            next_seq: 0,
            rx_next: 0,
            held: BTreeMap::new(),
            mode,
            p_bit,
        }
    }

    fn is_empty(&self) -> bool {
        self.q.is_empty() && self.fresh.is_empty()
    }

    /// The receiver got (`Some(pkt)`) or the sender gave up on (`None`) MPDU `seq`:
    /// hand on everything now in order.
    fn resolve(&mut self, seq: u64, frame: Option<Frame>, released: &mut Vec<Frame>) {
        if seq == self.rx_next && self.held.is_empty() {
            self.rx_next += 1;
            if let Some(f) = frame.filter(|f| f.pkt != NO_PACKET) {
                released.push(f);
            }
            return;
        }
        self.held.insert(seq, frame.unwrap_or(GAP));
        while let Some(f) = self.held.remove(&self.rx_next) {
            self.rx_next += 1;
            if f.pkt != NO_PACKET {
                released.push(f);
            }
        }
    }
}

/// Which of the AP's queues a relayed frame joins.
#[derive(Copy, Clone, Debug)]
enum Relay {
    To(usize),
    /// The queue toward the frame's flow's station.
    ToItsFlow,
}

/// Who a contender is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    AccessPoint,
    /// The station of flow `n`'s receiver (the sender's too without `server_on_wifi`).
    Station(usize),
    /// The flows' senders' station (`server_on_wifi`).
    Server,
    /// Background station number `n`.
    Background(usize),
}

/// Poisson frame source of a background station.
#[derive(Debug)]
struct Source {
    next_arrival: SimTime,
    mean_gap_ns: f64,
    frame_bytes: u32,
}

/// Per-contender counters reported in the results.
#[derive(Clone, Debug, Default)]
pub struct ContenderStats {
    /// Medium time of this contender's exchanges (PPDU, plus SIFS and ACK/BlockAck after a
    /// success).
    pub airtime_ns: u64,
    /// PPDUs sent, and those that collided.
    pub ppdus: u64,
    pub collisions: u64,
    /// MPDUs sent for the first time, retransmitted, delivered, and discarded at the retry
    /// limit.
    pub mpdus: u64,
    pub retries: u64,
    pub delivered: u64,
    pub drops: u64,
    /// PPDUs per number of MPDUs aggregated (index 0: one MPDU).
    pub aggregation: Vec<u64>,
    /// PPDUs per rate index.
    pub modes: Vec<u64>,
}

#[derive(Debug)]
struct Contender {
    role: Role,
    queues: Vec<TxQueue>,
    rr: usize,
    arrivals: u64,
    backlog_pkts: u64,
    backlog_bytes: u64,
    limit: QueueLimit,
    bo: u32,
    cw: u32,
    active_since: SimTime,
    source: Option<Source>,
    stats: ContenderStats,
}

impl Contender {
    fn full(&self, ip_bytes: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => self.backlog_pkts >= n,
            QueueLimit::Bytes(b) => self.backlog_bytes + ip_bytes as u64 > b,
            QueueLimit::Unlimited => false,
        }
    }
}

/// One Wi-Fi medium (both directions of a Wi-Fi hop).
#[derive(Debug)]
pub struct WifiMedium {
    pub name: String,
    pub phy: Phy,
    contenders: Vec<Contender>,
    /// Propagation delay of the hop (the directions' `delay`).
    delay_fwd: SimDuration,
    delay_rev: SimDuration,
    /// The medium is busy until here, then idle (DIFS/AIFS first).
    idle_since: SimTime,
    slot_ns: u64,
    aifs_ns: u64,
    sifs_ns: u64,
    cw_min: u32,
    cw_max: u32,
    retry_limit: u32,
    max_mpdus: u32,
    /// The AP serves its stations in arrival order instead of round-robin.
    ap_fifo: bool,
    /// Flows (receiver stations); with `server_on_wifi` their senders are a station too and
    /// the AP has a queue toward it (after the receivers').
    n_stations: usize,
    server_on_wifi: bool,
    /// Frames on their way into the AP's queue `queue` (relayed), in time order.
    relays: VecDeque<(SimTime, usize, Frame)>,
    frame_errors: bool,
    armed: Option<SimTime>,
    backoff_rng: SimRng,
    error_rng: SimRng,
    source_rng: SimRng,
    /// Scratch: the contenders transmitting in this slot.
    tx: Vec<usize>,
}

fn limit_of(d: &DirConfig) -> QueueLimit {
    match (d.queue.limit_pkts, d.queue.limit_bytes) {
        (_, Some(b)) => QueueLimit::Bytes(b),
        (Some(p), None) => QueueLimit::Packets(p),
        (None, None) => QueueLimit::Packets(1000),
    }
}

/// Parse the band name of a `WifiConfig`.
pub fn parse_band(s: &str) -> Option<Band> {
    match s {
        "2.4" => Some(Band::Ghz2_4),
        "5" => Some(Band::Ghz5),
        _ => None,
    }
}

/// The PHY of a (validated) configuration.
pub fn phy_of(w: &WifiConfig) -> Phy {
    Phy::new(
        Standard::parse(&w.standard).expect("validated standard"),
        parse_band(&w.band).expect("validated band"),
        w.width_mhz,
        w.streams,
        w.short_gi,
    )
}

impl WifiMedium {
    /// The medium of segment `name` for `n_stations` flows. Random streams:
    /// `wifi/<name>/backoff`, `/errors`, `/background`.
    pub fn new(
        name: &str,
        w: &WifiConfig,
        forward: &DirConfig,
        reverse: &DirConfig,
        n_stations: usize,
        seed: u64,
    ) -> WifiMedium {
        let phy = phy_of(w);
        let (cw_min, cw_max) = phy.cw_bounds();
        let radio = |power: f64, distance: f64| -> (usize, f64) {
            let snr = radio::snr_db(&phy, power, distance, w.noise_figure_db);
            let mode = match w.mcs {
                Some(m) => (m as usize).min(phy.modes().len() - 1),
                None => radio::select_mode(&phy, snr),
            };
            let p_bit = if w.frame_errors {
                radio::bit_error_prob(&phy, mode, snr)
            } else {
                0.0
            };
            (mode, p_bit)
        };
        let station = |i: usize| {
            let s = w.stations.get(i).copied().unwrap_or_default();
            (
                s.tx_power_dbm.unwrap_or(w.tx_power_dbm),
                s.distance_m.unwrap_or(w.distance_m),
            )
        };
        let blank = |role, queues, limit| Contender {
            role,
            queues,
            rr: 0,
            arrivals: 0,
            backlog_pkts: 0,
            backlog_bytes: 0,
            limit,
            bo: 0,
            cw: cw_min,
            active_since: SimTime::ZERO,
            source: None,
            stats: ContenderStats::default(),
        };
        let mut contenders = Vec::new();
        // toward each receiver, then (server_on_wifi) toward the server at the link's
        // default distance
        let n_ap_queues = n_stations + usize::from(w.server_on_wifi);
        let ap_queues = (0..n_ap_queues)
            .map(|i| {
                let distance = if i < n_stations {
                    station(i).1
                } else {
                    w.distance_m
                };
                let (mode, p) = radio(w.ap_tx_power_dbm, distance);
                let mut q = TxQueue::new(mode, p);
                if w.ap_queue == ApQueue::FqCodel {
                    q.codel = Some(Codel::new(&AP_CODEL));
                }
                q
            })
            .collect();
        contenders.push(blank(Role::AccessPoint, ap_queues, limit_of(forward)));
        for i in 0..n_stations {
            let (power, distance) = station(i);
            let (mode, p) = radio(power, distance);
            contenders.push(blank(
                Role::Station(i),
                vec![TxQueue::new(mode, p)],
                limit_of(reverse),
            ));
        }
        if w.server_on_wifi {
            let (mode, p) = radio(w.tx_power_dbm, w.distance_m);
            contenders.push(blank(
                Role::Server,
                vec![TxQueue::new(mode, p)],
                limit_of(forward),
            ));
        }
        let mut source_rng = SimRng::substream(seed, &format!("wifi/{name}/background"));
        let mut n_bg = 0;
        for b in &w.background {
            for _ in 0..b.count {
                let (mode, p) = radio(b.tx_power_dbm, b.distance_m);
                let mut c = blank(
                    Role::Background(n_bg),
                    vec![TxQueue::new(mode, p)],
                    QueueLimit::Packets(BACKGROUND_QUEUE_FRAMES as u64),
                );
                let mean_gap_ns = 8.0 * b.frame_bytes as f64 * 1e9 / b.load_bps as f64;
                c.source = Some(Source {
                    next_arrival: SimTime(exp_gap(&mut source_rng, mean_gap_ns)),
                    mean_gap_ns,
                    frame_bytes: b.frame_bytes,
                });
                contenders.push(c);
                n_bg += 1;
            }
        }
        let nm = phy.modes().len();
        for c in &mut contenders {
            c.stats.modes = vec![0; nm];
        }
        let max_mpdus = if phy.standard.aggregates() {
            w.max_ampdu_mpdus.unwrap_or(BA_WINDOW_MPDUS).max(1)
        } else {
            1
        };
        WifiMedium {
            name: name.to_string(),
            slot_ns: phy.slot_ns(),
            aifs_ns: phy.aifs_ns(),
            sifs_ns: phy.sifs_ns(),
            cw_min,
            cw_max,
            phy,
            contenders,
            delay_fwd: SimDuration::from_ns(forward.delay_ns),
            delay_rev: SimDuration::from_ns(reverse.delay_ns),
            idle_since: SimTime::ZERO,
            retry_limit: w.retry_limit.max(1),
            max_mpdus,
            ap_fifo: w.ap_queue == ApQueue::Fifo,
            n_stations,
            server_on_wifi: w.server_on_wifi,
            relays: VecDeque::new(),
            frame_errors: w.frame_errors,
            armed: None,
            backoff_rng: SimRng::substream(seed, &format!("wifi/{name}/backoff")),
            error_rng: SimRng::substream(seed, &format!("wifi/{name}/errors")),
            source_rng,
            tx: Vec::new(),
        }
    }

    /// Offer packet `pkt` (IP size `ip_bytes`, ECN-capable transport if `ect`) at `now`:
    /// from the AP to flow `station`'s station (`forward`), or from that station to the
    /// AP. False: the queue was full.
    pub fn enqueue(
        &mut self,
        now: SimTime,
        forward: bool,
        station: usize,
        pkt: u32,
        ip_bytes: u32,
        ect: bool,
    ) -> bool {
        let (c, q) = match (forward, self.server_on_wifi) {
            (true, false) => (0, station),
            (true, true) => (1 + self.n_stations, 0),
            (false, _) => (1 + station, 0),
        };
        if self.contenders[c].full(ip_bytes) {
            return false;
        }
        self.push(c, q, now, pkt, ip_bytes, ect, station as u32);
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        c: usize,
        q: usize,
        now: SimTime,
        pkt: u32,
        ip_bytes: u32,
        ect: bool,
        flow: u32,
    ) {
        let busy = now < self.idle_since + SimDuration(self.aifs_ns);
        let k = &mut self.contenders[c];
        let was_empty = k.backlog_pkts == 0;
        let tq = &mut k.queues[q];
        if tq.codel.is_some() {
            tq.fresh.push(Queued {
                pkt,
                bytes: ip_bytes,
                enq: now,
                ect,
                ce: false,
            });
        } else {
            tq.q.push_back(Mpdu {
                pkt,
                ip_bytes,
                ect,
                flow,
                seq: tq.next_seq,
                attempts: 0,
                arrival: k.arrivals,
            });
            tq.next_seq += 1;
        }
        k.arrivals += 1;
        k.backlog_pkts += 1;
        k.backlog_bytes += ip_bytes as u64;
        if was_empty {
            k.active_since = now;
            if k.bo == 0 && busy {
                k.bo = self.backoff_rng.below(k.cw as u64 + 1) as u32;
            }
        }
    }

    /// Packets (of the simulation) waiting in the forward or reverse direction.
    pub fn backlog(&self, forward: bool) -> (u64, u64) {
        self.contenders
            .iter()
            .filter(|c| match c.role {
                // the AP's few ACKs toward senders count with its data
                Role::AccessPoint | Role::Server => forward,
                Role::Station(_) => !forward,
                Role::Background(_) => false,
            })
            .fold((0, 0), |(p, b), c| {
                (p + c.backlog_pkts, b + c.backlog_bytes)
            })
    }

    /// Handles of simulation packets the medium still holds (queued or in a reorder buffer).
    pub fn in_flight(&self) -> impl Iterator<Item = u32> + '_ {
        self.contenders
            .iter()
            .flat_map(|c| c.queues.iter())
            .flat_map(|q| {
                q.q.iter()
                    .map(|m| m.pkt)
                    .chain(q.fresh.iter().map(|p| p.pkt))
                    .chain(q.held.values().map(|f| f.pkt))
            })
            .chain(self.relays.iter().map(|(_, _, f)| f.pkt))
            .filter(|&p| p != NO_PACKET)
    }

    /// The contenders' roles and counters.
    pub fn contenders(&self) -> impl Iterator<Item = (Role, &ContenderStats)> {
        self.contenders.iter().map(|c| (c.role, &c.stats))
    }

    /// When contender `c` would start transmitting, if it has frames.
    fn start_of(&self, c: &Contender) -> Option<SimTime> {
        if c.backlog_pkts == 0 {
            return None;
        }
        let ready = self.idle_since + SimDuration(self.aifs_ns + c.bo as u64 * self.slot_ns);
        Some(ready.max(c.active_since))
    }

    fn next_event(&self) -> Option<SimTime> {
        self.contenders
            .iter()
            .filter_map(|c| {
                let s = self.start_of(c);
                let a = c.source.as_ref().map(|s| s.next_arrival);
                match (s, a) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                }
            })
            .chain(self.relays.front().map(|&(at, _, _)| at))
            .min()
    }

    /// The instant of the next channel access or background arrival, if it is earlier than
    /// the wake-up already scheduled (the caller schedules it; stale ones are ignored).
    pub fn arm_wakeup(&mut self) -> Option<SimTime> {
        let t = self.next_event()?;
        if self.armed.is_some_and(|a| a <= t) {
            return None;
        }
        self.armed = Some(t);
        Some(t)
    }

    /// A wake-up at `now`: background arrivals, then the channel access due now, if any.
    pub fn on_wake(&mut self, now: SimTime, out: &mut Vec<WifiOutput>) {
        if self.armed == Some(now) {
            self.armed = None;
        }
        self.relayed(now, out);
        self.arrivals(now);
        let starts: Vec<Option<SimTime>> =
            self.contenders.iter().map(|c| self.start_of(c)).collect();
        let Some(first) = starts.iter().flatten().min().copied() else {
            return;
        };
        if first != now {
            return;
        }
        let mut tx = std::mem::take(&mut self.tx);
        tx.clear();
        tx.extend((0..starts.len()).filter(|&i| starts[i] == Some(now)));
        // Everyone counted down the idle slots that elapsed; the transmitters reached 0.
        let count_from = self.idle_since + SimDuration(self.aifs_ns);
        let elapsed = if now >= count_from {
            now.since(count_from).ns() / self.slot_ns
        } else {
            0
        };
        for c in &mut self.contenders {
            c.bo = c.bo.saturating_sub(elapsed.min(u32::MAX as u64) as u32);
        }
        let collided = tx.len() > 1;
        let mut busy_end = now;
        for &c in &tx {
            let end = self.transmit(now, c, collided, out);
            busy_end = busy_end.max(end);
        }
        self.idle_since = busy_end;
        for &c in &tx {
            let k = &mut self.contenders[c];
            k.bo = self.backoff_rng.below(k.cw as u64 + 1) as u32;
        }
        self.tx = tx;
    }

    /// Relayed frames that reached the AP by `now` join its queues (or are refused when
    /// they are full).
    fn relayed(&mut self, now: SimTime, out: &mut Vec<WifiOutput>) {
        while let Some(&(at, q, f)) = self.relays.front() {
            if at > now {
                break;
            }
            self.relays.pop_front();
            if self.contenders[0].full(f.ip_bytes) {
                let forward = q < self.n_stations;
                out.push(WifiOutput::Refused {
                    forward,
                    pkt: f.pkt,
                });
            } else {
                self.push(0, q, at, f.pkt, f.ip_bytes, f.ect, f.flow);
            }
        }
    }

    fn arrivals(&mut self, now: SimTime) {
        let aifs = SimDuration(self.aifs_ns);
        for c in 0..self.contenders.len() {
            while let Some(s) = self.contenders[c].source.as_mut() {
                let t = s.next_arrival;
                if t > now {
                    break;
                }
                let bytes = s.frame_bytes;
                s.next_arrival =
                    t + SimDuration(exp_gap(&mut self.source_rng, s.mean_gap_ns).max(1));
                let k = &self.contenders[c];
                if (k.backlog_pkts as usize) < BACKGROUND_QUEUE_FRAMES {
                    let busy = t < self.idle_since + aifs;
                    let k = &mut self.contenders[c];
                    let was_empty = k.backlog_pkts == 0;
                    let tq = &mut k.queues[0];
                    tq.q.push_back(Mpdu {
                        pkt: NO_PACKET,
                        ip_bytes: bytes,
                        ect: false,
                        flow: 0,
                        seq: tq.next_seq,
                        attempts: 0,
                        arrival: k.arrivals,
                    });
                    k.arrivals += 1;
                    tq.next_seq += 1;
                    k.backlog_pkts += 1;
                    k.backlog_bytes += bytes as u64;
                    if was_empty {
                        k.active_since = t;
                        if k.bo == 0 && busy {
                            k.bo = self.backoff_rng.below(k.cw as u64 + 1) as u32;
                        }
                    }
                }
            }
        }
    }

    /// Contender `c` transmits at `now`; returns when its exchange ends.
    fn transmit(
        &mut self,
        now: SimTime,
        c: usize,
        collided: bool,
        out: &mut Vec<WifiOutput>,
    ) -> SimTime {
        let k = &mut self.contenders[c];
        // The AP serves its per-station queues round-robin, or (FIFO) the one whose head
        // frame arrived first; a retried frame keeps its place.
        let nq = k.queues.len();
        let qi = if self.ap_fifo {
            (0..nq)
                .filter(|&j| !k.queues[j].q.is_empty())
                .min_by_key(|&j| k.queues[j].q[0].arrival)
                .expect("a transmitter has frames")
        } else {
            (0..nq)
                .map(|j| (k.rr + j) % nq)
                .find(|&j| !k.queues[j].is_empty())
                .expect("a transmitter has frames")
        };
        k.rr = (qi + 1) % nq;
        let tq = &mut k.queues[qi];
        let mode = tq.mode;
        if let Some(codel) = tq.codel.as_mut() {
            // Frames leave CoDel's queue for this PPDU (at most as many as it can carry),
            // each getting its sequence number as it leaves.
            while tq.q.len() < self.max_mpdus as usize {
                let mut dropped = |p: Queued| {
                    k.backlog_pkts -= 1;
                    k.backlog_bytes -= p.bytes as u64;
                    out.push(WifiOutput::AqmDropped { pkt: p.pkt });
                };
                let Some(p) = codel.dequeue(now, &mut tq.fresh, &mut dropped) else {
                    break;
                };
                if p.ce {
                    out.push(WifiOutput::Marked { pkt: p.pkt });
                }
                tq.q.push_back(Mpdu {
                    pkt: p.pkt,
                    ip_bytes: p.bytes,
                    ect: p.ect,
                    flow: qi as u32,
                    seq: tq.next_seq,
                    attempts: 0,
                    arrival: 0,
                });
                tq.next_seq += 1;
            }
            if tq.q.is_empty() {
                // CoDel dropped everything waiting: nothing to send after all.
                return Self::charge(k, now, now);
            }
        }
        // Build the PPDU from the head of the queue.
        let (mut n, mut psdu, mut dur) = (0u32, 0u32, 0u64);
        for m in tq.q.iter() {
            if n == self.max_mpdus {
                break;
            }
            let mpdu = self.phy.mpdu_bytes(m.ip_bytes);
            let (bytes, d) = if self.max_mpdus == 1 {
                (mpdu, self.phy.ppdu_ns(mode, mpdu))
            } else {
                let b = psdu + ampdu_subframe_bytes(mpdu);
                if n > 0 && b > self.phy.max_ampdu_bytes() {
                    break;
                }
                (b, self.phy.ppdu_ns(mode, b))
            };
            if n > 0 && d > PPDU_MAX_NS {
                break;
            }
            n += 1;
            psdu = bytes;
            dur = d;
        }
        // Where the PPDU's frames go: out of the medium in the `forward` (data) or reverse
        // direction, or (`relay`) into the AP's queue toward the next station.
        let n_st = self.n_stations;
        let (forward, relay) = match k.role {
            Role::AccessPoint => (qi < n_st, None),
            // to the AP's queue toward the server
            Role::Station(_) => (false, self.server_on_wifi.then_some(Relay::To(n_st))),
            Role::Server => (true, Some(Relay::ToItsFlow)),
            Role::Background(_) => (false, None),
        };
        let delay = match (relay, forward) {
            (Some(_), _) => SimDuration::ZERO,
            (None, true) => self.delay_fwd,
            (None, false) => self.delay_rev,
        };
        let arrive = now + SimDuration(dur) + delay;
        let relays = &mut self.relays;
        let mut released = Vec::new();
        let mut hand_on = |released: &mut Vec<Frame>, out: &mut Vec<WifiOutput>| {
            for f in released.drain(..) {
                match relay {
                    Some(Relay::To(q)) => relays.push_back((arrive, q, f)),
                    Some(Relay::ToItsFlow) => relays.push_back((arrive, f.flow as usize, f)),
                    None => out.push(WifiOutput::Deliver {
                        forward,
                        pkt: f.pkt,
                        at: arrive,
                    }),
                }
            }
        };
        k.stats.ppdus += 1;
        let agg = &mut k.stats.aggregation;
        if agg.len() < n as usize {
            agg.resize(n as usize, 0);
        }
        agg[n as usize - 1] += 1;
        k.stats.modes[mode] += 1;
        if collided {
            k.stats.collisions += 1;
        }
        // Which MPDUs the receiver decodes.
        let mut ok = [false; 64];
        let many = n as usize > ok.len();
        let mut okv = if many {
            vec![false; n as usize]
        } else {
            Vec::new()
        };
        let mut any = false;
        for (i, m) in tq.q.iter().take(n as usize).enumerate() {
            let good = !collided
                && (!self.frame_errors || {
                    let p = radio::frame_error_prob(tq.p_bit, self.phy.mpdu_bytes(m.ip_bytes));
                    !self.error_rng.bernoulli(p)
                });
            if many {
                okv[i] = good;
            } else {
                ok[i] = good;
            }
            any |= good;
        }
        let good = |i: usize| if many { okv[i] } else { ok[i] };
        // Resolve each MPDU: delivered, retried (kept at the head, in order) or dropped.
        let mut kept: Vec<Mpdu> = Vec::new();
        for i in 0..n as usize {
            let mut m = tq.q.pop_front().expect("counted");
            if m.attempts == 0 {
                k.stats.mpdus += 1;
            } else {
                k.stats.retries += 1;
            }
            m.attempts += 1;
            if good(i) {
                k.backlog_pkts -= 1;
                k.backlog_bytes -= m.ip_bytes as u64;
                k.stats.delivered += 1;
                let frame = Frame {
                    pkt: m.pkt,
                    ip_bytes: m.ip_bytes,
                    ect: m.ect,
                    flow: m.flow,
                };
                tq.resolve(m.seq, Some(frame), &mut released);
                hand_on(&mut released, out);
            } else if m.attempts >= self.retry_limit {
                k.backlog_pkts -= 1;
                k.backlog_bytes -= m.ip_bytes as u64;
                k.stats.drops += 1;
                if m.pkt != NO_PACKET {
                    out.push(WifiOutput::Dropped {
                        forward,
                        pkt: m.pkt,
                    });
                }
                tq.resolve(m.seq, None, &mut released);
                hand_on(&mut released, out);
            } else {
                kept.push(m);
            }
        }
        let gave_up = kept.is_empty();
        for m in kept.into_iter().rev() {
            tq.q.push_front(m);
        }
        let end = if any || gave_up {
            // Acknowledged, or discarded at the retry limit: the window starts over.
            k.cw = self.cw_min;
            if !any {
                return Self::charge(k, now, now + SimDuration(dur));
            }
            let ack = if n > 1 { BLOCK_ACK_BYTES } else { ACK_BYTES };
            now + SimDuration(dur + self.sifs_ns + self.phy.control_ns(mode, ack))
        } else {
            k.cw = (2 * k.cw + 1).min(self.cw_max);
            now + SimDuration(dur)
        };
        Self::charge(k, now, end)
    }

    fn charge(k: &mut Contender, now: SimTime, end: SimTime) -> SimTime {
        k.stats.airtime_ns += end.since(now).ns();
        end
    }
}

/// An exponential inter-arrival gap (ns) of mean `mean_ns`.
fn exp_gap(rng: &mut SimRng, mean_ns: f64) -> u64 {
    let u = rng.next_f64();
    (-(1.0 - u).ln() * mean_ns) as u64
}

#[cfg(test)]
mod tests;
