//! The event log: every change of a sender's congestion state, with its time.
//!
//! After each action of a data sender (a packet or a timer it handled, data a relay
//! supplied) the log compares what the sender shows — cwnd, ssthresh, CA state, pacing
//! rate, the controller's phase (BBR's mode) and its cumulative counters of RTOs, tail
//! loss probes, undos and segments marked lost — with what it showed after its previous
//! action, and writes one record per change, each carrying the whole state after the
//! action; every retransmitted segment the action sent is a record of its own. So the log
//! is exact at the resolution of the simulation's events: several changes inside one ACK's
//! processing (a reduction and a growth) show as their net result, as they would on the
//! wire. Nothing is sampled, and each record goes straight to the output unless its sender
//! acted ahead of the event being run (a packet handed to it ahead of time, `sim::ahead`):
//! such records wait, in time order, until a sender acts at or after their time or the run
//! ends, so the log stays in time order (records of one nanosecond from different senders
//! in the order they were made). Few wait: a sender acts ahead of time only up to its next
//! timer, the next series sample or the end.
//!
//! Records are fixed-size little-endian rows (`RECORD_BYTES`, layout in `format_json`),
//! which the Python layer turns into Parquet in bounded chunks.
use crate::cc::{CaState, CongestionControl, INFINITE_SSTHRESH, PHASES};
use crate::engine::time::SimTime;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::tcp::connection::{AnySender, Connection};
use std::collections::VecDeque;
use std::io::{self, Write};

/// Bytes per record.
pub const RECORD_BYTES: usize = 64;
/// Stored for a missing value (no ssthresh yet, no pacing, no segment).
const NONE_U64: u64 = u64::MAX;
const NONE_U8: u8 = u8::MAX;

/// What a record says happened (its name in the log: `KINDS`). `RecoveryEntry` is a fast
/// recovery entered (Linux `tcp_enter_recovery`); an RTO enters the Loss state, `Rto`;
/// `RecoveryExit` is leaving Recovery or Loss; counted events carry their count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// The sender's first action in the log's time window: its state then.
    Start = 0,
    Rto,
    Tlp,
    Undo,
    RecoveryExit,
    RecoveryEntry,
    LossMarked,
    Retransmission,
    CaState,
    Ssthresh,
    Cwnd,
    PacingRate,
    Phase,
}

/// Names of the kinds, by value.
pub const KINDS: &[&str] = &[
    "start",
    "rto",
    "tlp",
    "undo",
    "recovery_exit",
    "recovery_entry",
    "loss_marked",
    "retransmission",
    "ca_state",
    "ssthresh",
    "cwnd",
    "pacing_rate",
    "cc_phase",
];

/// Names of the CA states (Linux `TCP_CA_*`), by value.
pub const CA_STATES: &[&str] = &["open", "disorder", "cwr", "recovery", "loss"];

/// What a sender shows after an action.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct State {
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    ca_state: u8,
    pacing_rate_bps: u64,
    phase: u8,
}

/// Its cumulative counters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Counters {
    rto: u64,
    tlp: u64,
    undo: u64,
    recoveries: u64,
    lost: u64,
}

fn phase_index(name: Option<&'static str>) -> u8 {
    name.and_then(|n| PHASES.iter().position(|p| *p == n))
        .map_or(NONE_U8, |i| i as u8)
}

fn observe(s: &AnySender) -> (State, Counters) {
    let st = s.stats();
    let mut counters = Counters {
        rto: st.rto_count,
        tlp: st.tlp_probes,
        undo: st.undos,
        recoveries: st.fast_recoveries,
        lost: 0,
    };
    let state = match s {
        AnySender::Linux(l) => {
            counters.lost = l.lost_segments();
            State {
                cwnd_bytes: l.cwnd_bytes(),
                ssthresh_bytes: if l.w.ssthresh >= INFINITE_SSTHRESH {
                    NONE_U64
                } else {
                    l.ssthresh_bytes()
                },
                ca_state: l.ca_state() as u8,
                pacing_rate_bps: l.pacing_rate_bps().unwrap_or(NONE_U64),
                phase: phase_index(l.cc.phase()),
            }
        }
        AnySender::Ns2(n) => State {
            cwnd_bytes: n.cwnd_bytes(),
            ssthresh_bytes: n.ssthresh_bytes(),
            ca_state: NONE_U8,
            pacing_rate_bps: NONE_U64,
            phase: NONE_U8,
        },
    };
    (state, counters)
}

fn in_recovery(ca: u8) -> bool {
    ca == CaState::Recovery as u8 || ca == CaState::Loss as u8
}

/// The log of one run: the last state seen per connection, and the output.
pub struct EventLog<W: Write> {
    out: W,
    last: Vec<Option<(State, Counters)>>,
    buf: [u8; RECORD_BYTES],
    /// Records made ahead of the event being run, with their times, in time order (equal
    /// times in the order made).
    later: VecDeque<(u64, [u8; RECORD_BYTES])>,
    /// The time of the event being run, as of the last action.
    seen_ns: u64,
    pub records: u64,
}

impl<W: Write> EventLog<W> {
    pub fn new(out: W, n_conns: usize) -> Self {
        EventLog {
            out,
            last: vec![None; n_conns],
            buf: [0; RECORD_BYTES],
            later: VecDeque::new(),
            seen_ns: 0,
            records: 0,
        }
    }

    /// The sender of connection `conn` acted at `now` and sent `sent`, while the event of
    /// time `seen` ran (`now` is later when it acted ahead of time); `logged`: `now` is in
    /// the log's window (the state is followed either way).
    pub fn after_sender(
        &mut self,
        now: SimTime,
        seen: SimTime,
        conn: u32,
        c: &Connection,
        sent: &[Packet],
        logged: bool,
    ) -> io::Result<()> {
        debug_assert!(seen.ns() >= self.seen_ns && now >= seen);
        self.seen_ns = seen.ns();
        self.release(seen.ns())?;
        let (state, counters) = observe(&c.sender);
        let slot = &mut self.last[conn as usize];
        let prev = *slot;
        *slot = Some((state, counters));
        if !logged {
            return Ok(());
        }
        let row = Row {
            t_ns: now.ns(),
            flow: c.flow,
            leg: c.leg,
            state,
        };
        let Some((ps, pc)) = prev else {
            return self.write(&row, Kind::Start, 0, None);
        };
        for (kind, delta) in [
            (Kind::Rto, counters.rto.saturating_sub(pc.rto)),
            (Kind::Tlp, counters.tlp.saturating_sub(pc.tlp)),
            (Kind::Undo, counters.undo.saturating_sub(pc.undo)),
        ] {
            if delta > 0 {
                self.write(&row, kind, delta as u32, None)?;
            }
        }
        if in_recovery(ps.ca_state) && !in_recovery(state.ca_state) {
            self.write(&row, Kind::RecoveryExit, 0, None)?;
        }
        for (kind, delta) in [
            (
                Kind::RecoveryEntry,
                counters.recoveries.saturating_sub(pc.recoveries),
            ),
            (Kind::LossMarked, counters.lost.saturating_sub(pc.lost)),
        ] {
            if delta > 0 {
                self.write(&row, kind, delta as u32, None)?;
            }
        }
        for p in sent {
            if p.kind == PacketKind::Data && p.has(flags::RETRANS) {
                self.write(&row, Kind::Retransmission, 1, Some((p.seq, p.len)))?;
            }
        }
        for (kind, changed) in [
            (Kind::CaState, ps.ca_state != state.ca_state),
            (Kind::Ssthresh, ps.ssthresh_bytes != state.ssthresh_bytes),
            (Kind::Cwnd, ps.cwnd_bytes != state.cwnd_bytes),
            (
                Kind::PacingRate,
                ps.pacing_rate_bps != state.pacing_rate_bps,
            ),
            (Kind::Phase, ps.phase != state.phase),
        ] {
            if changed {
                self.write(&row, kind, 0, None)?;
            }
        }
        Ok(())
    }

    fn write(
        &mut self,
        r: &Row,
        kind: Kind,
        count: u32,
        seg: Option<(u64, u32)>,
    ) -> io::Result<()> {
        let b = &mut self.buf;
        let (seq, len) = seg.unwrap_or((NONE_U64, 0));
        b[0..8].copy_from_slice(&r.t_ns.to_le_bytes());
        b[8..16].copy_from_slice(&r.state.cwnd_bytes.to_le_bytes());
        b[16..24].copy_from_slice(&r.state.ssthresh_bytes.to_le_bytes());
        b[24..32].copy_from_slice(&r.state.pacing_rate_bps.to_le_bytes());
        b[32..40].copy_from_slice(&seq.to_le_bytes());
        b[40..44].copy_from_slice(&r.flow.to_le_bytes());
        b[44..48].copy_from_slice(&count.to_le_bytes());
        b[48..52].copy_from_slice(&len.to_le_bytes());
        b[52] = r.leg;
        b[53] = kind as u8;
        b[54] = r.state.ca_state;
        b[55] = r.state.phase;
        self.records += 1;
        if r.t_ns <= self.seen_ns {
            return self.out.write_all(b);
        }
        // made ahead of time: behind every record of its time or earlier
        let at = self.later.partition_point(|(t, _)| *t <= r.t_ns);
        self.later.insert(at, (r.t_ns, *b));
        Ok(())
    }

    /// Write the records made ahead of time that are due by `t_ns`.
    fn release(&mut self, t_ns: u64) -> io::Result<()> {
        while let Some(&(t, ref rec)) = self.later.front() {
            if t > t_ns {
                break;
            }
            self.out.write_all(rec)?;
            self.later.pop_front();
        }
        Ok(())
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.release(u64::MAX)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The columns a record holds, for one event.
struct Row {
    t_ns: u64,
    flow: u32,
    leg: u8,
    state: State,
}

/// The record layout and the names its codes stand for, as JSON: `record_bytes`, `fields`
/// (name, type, byte offset, the value that stands for "none" if any) and the name lists
/// `kinds`, `ca_states`, `phases`. The Python reader builds its dtype from this.
pub fn format_json() -> serde_json::Value {
    let f = |name: &str, ty: &str, offset: usize, none: Option<u64>| serde_json::json!({"name": name, "type": ty, "offset": offset, "none": none});
    serde_json::json!({
        "record_bytes": RECORD_BYTES,
        "fields": [
            f("t_ns", "u64", 0, None),
            f("cwnd_bytes", "u64", 8, None),
            f("ssthresh_bytes", "u64", 16, Some(NONE_U64)),
            f("pacing_rate_bps", "u64", 24, Some(NONE_U64)),
            f("seq_bytes", "u64", 32, Some(NONE_U64)),
            f("flow", "u32", 40, None),
            f("segments", "u32", 44, None),
            f("len_bytes", "u32", 48, None),
            f("leg", "u8", 52, None),
            f("event", "u8", 53, None),
            f("ca_state", "u8", 54, Some(NONE_U8 as u64)),
            f("cc_phase", "u8", 55, Some(NONE_U8 as u64)),
        ],
        "kinds": KINDS,
        "ca_states": CA_STATES,
        "phases": PHASES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_follow_the_enum_and_ca_states_linux_numbering() {
        assert_eq!(KINDS.len(), Kind::Phase as usize + 1);
        assert_eq!(KINDS[Kind::Retransmission as usize], "retransmission");
        assert_eq!(CA_STATES[CaState::Recovery as usize], "recovery");
        assert_eq!(CA_STATES[CaState::Loss as usize], "loss");
    }

    #[test]
    fn every_phase_bbr_reports_has_an_index() {
        for name in PHASES {
            assert_ne!(phase_index(Some(name)), NONE_U8);
        }
        assert_eq!(phase_index(None), NONE_U8);
    }
}
