//! Linux's receive buffer and advertised window: receive-side autotuning (Linux 6.18,
//! `net/ipv4/tcp_input.c`, `tcp_output.c`, `include/net/tcp.h`).
//!
//! A Linux receiver does not offer its whole buffer at once. Three quantities bound the
//! window it advertises (`__tcp_select_window`):
//! - `sk_rcvbuf`, the buffer, counted in skb *truesize* (payload plus the kernel's
//!   per-packet overhead). `tcp_win_from_space` turns buffer bytes into window bytes with
//!   `scaling_ratio` = 256 × payload / truesize of the segments seen: 128 (one half) until
//!   the first full-sized segment, then 160 for 1448 B of payload in a 2304 B skb;
//! - `window_clamp`, the window the whole buffer backs;
//! - `rcv_ssthresh`, which starts at the initial window (65160 B = 45 × 1448: `tcp_rmem[1]`
//!   = 128 KiB at ratio one half, rounded down to whole segments) and grows by two segments
//!   per in-order segment while there is room below the free space (`tcp_grow_window`).
//!   Every such step also forces an immediate ACK (`icsk_ack.quick |= 1`): a receiver that
//!   is opening its window ACKs every segment, well beyond its 16 quick ACKs, so a sender's
//!   ACKs arrive one segment apart (CUBIC's HyStart sees them as an ACK train).
//!
//! Dynamic right-sizing (`tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`) then grows `sk_rcvbuf`
//! once per receiver RTT (`rcv_rtt_est`, from the timestamps the sender echoes) to hold twice
//! what the application read in that RTT plus twice the growth over the previous RTT (slow
//! start doubles the rate), up to `tcp_rmem[2]`; the room that opens restarts the per-segment
//! ACKs. A socket with SO_RCVBUF set keeps its buffer (`SOCK_RCVBUF_LOCK`) but still opens
//! `rcv_ssthresh` up to it.
//!
//! The application (a bulk sink) reads data as soon as it is in order, so `copied_seq`
//! follows `rcv_nxt`: when an ACK is sent, the buffer holds the segment just received and any
//! out-of-order data. The numbers here were checked against `tcp_probe` and
//! `tcp_rcvbuf_grow` traces of Linux 6.18 under `tcplab emulate`.
use crate::engine::time::SimTime;

/// Linux `tcp_rmem[1]`: the receive buffer a socket starts with.
pub const TCP_RMEM_DEFAULT_BYTES: u64 = 131_072;
/// Linux `tcp_rmem[2]`: the largest receive buffer autotuning grows to. It is also tcplab's
/// default `rwnd`, which means "autotune" (see [`RcvBufPolicy`]).
pub const TCP_RMEM_MAX_BYTES: u64 = 6 * 1024 * 1024;
/// Linux `TCP_RMEM_TO_WIN_SCALE`: `scaling_ratio` is a fraction of 256.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// Linux `TCP_DEFAULT_SCALING_RATIO`: payload is assumed to be half of truesize until data
/// shows the real ratio.
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// Linux `TCP_INIT_CWND`: the first DRS measurement expects this many segments per RTT.
const TCP_INIT_CWND: u64 = 10;
/// Linux `TCP_MSS_DEFAULT` and `TCP_MIN_MSS` (`tcp_initialize_rcv_mss`).
const TCP_MSS_DEFAULT: u64 = 536;
const TCP_MIN_MSS: u64 = 88;
/// Linux `TCP_MAX_WSCALE` (RFC 7323 §2.3).
const TCP_MAX_WSCALE: u32 = 14;
/// `tcp_event_data_recv` grows the window only for segments of at least this many bytes.
pub const GROW_MIN_LEN_BYTES: u64 = 128;

/// Headroom (`NET_SKB_PAD`), `struct skb_shared_info` and `struct sk_buff` on x86-64.
const NET_SKB_PAD_BYTES: u64 = 64;
const SKB_SHINFO_BYTES: u64 = 320;
const SK_BUFF_BYTES: u64 = 256;

/// The truesize of a received packet of `wire_bytes` (IP length): the TUN device that
/// `tcplab emulate`'s links write into puts a packet in a kmalloc'd head (a power of two
/// holding the headroom, the packet and `skb_shared_info`) plus the `sk_buff`. 2304 B for a
/// 1500-byte packet, which gives the scaling ratio 160 the kernel reports.
pub fn skb_truesize(wire_bytes: u64) -> u64 {
    (wire_bytes + NET_SKB_PAD_BYTES + SKB_SHINFO_BYTES).next_power_of_two() + SK_BUFF_BYTES
}

/// How the receiver sizes its buffer and window.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RcvBufPolicy {
    /// ns-2's `TCPSink`: the window is `rwnd` minus out-of-order data, fixed.
    Fixed,
    /// Linux autotuning: the buffer starts at `tcp_rmem[1]` and dynamic right-sizing grows it
    /// up to `rwnd`, which plays `tcp_rmem[2]` (the scenario's default `rwnd`, 6 MiB).
    Autotune,
    /// Linux with `SO_RCVBUF` = `rwnd` (what `tcplab emulate` sets for any other `rwnd`): a
    /// fixed buffer of 2 × `rwnd` (the kernel doubles the value for overhead), no
    /// right-sizing; the window opens up to that buffer's worth of payload (1.25 × `rwnd` at
    /// the ratio 160), within the 16-bit field's reach at its window scale.
    Locked,
}

fn win_from_space(ratio: u64, space: u64) -> u64 {
    (space * ratio) >> RMEM_TO_WIN_SCALE
}

fn space_from_win(ratio: u64, win: u64) -> u64 {
    (win << RMEM_TO_WIN_SCALE) / ratio
}

fn align_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// A Linux receiver's window state (`struct tcp_sock` fields of the same names).
#[derive(Debug, Clone)]
pub struct RcvSpace {
    advmss: u64,
    /// Our window scale (RFC 7323), 0 without window scaling.
    pub wscale: u32,
    /// `tcp_rmem[2]`: the cap of right-sizing (and of `__tcp_grow_window`'s search).
    rmem_max: u64,
    autotune: bool,
    /// `sk_rcvbuf`, bytes of truesize.
    pub rcvbuf: u64,
    /// 256 × payload / truesize.
    pub scaling_ratio: u64,
    /// The largest window to advertise, bytes.
    pub window_clamp: u64,
    /// The current limit of the advertised window, bytes.
    pub rcv_ssthresh: u64,
    /// The window last advertised, bytes (before the 16-bit field's cap).
    pub rcv_wnd: u64,
    /// `icsk_ack.rcv_mss`: our estimate of the peer's segment size.
    rcv_mss: u64,
    /// `rcvq_space`: bytes read per receiver RTT, measured from `space_seq` at `space_time`.
    pub space: u64,
    space_seq: u64,
    space_time: SimTime,
    /// `rcv_rtt_est.rtt_us` (µs, scaled by 8) and the window-based measurement's state.
    rtt_us8: u64,
    rtt_seq: u64,
    rtt_time: Option<SimTime>,
    /// `rcv_rtt_last_tsecr`: one timestamp sample per echoed TSval.
    last_tsecr: u64,
}

impl RcvSpace {
    /// A socket's state when the connection is set up: `tcp_select_initial_window` (with the
    /// SO_RCVBUF clamp of `tcp_openreq_init_rwin` / `tcp_connect_init`), then
    /// `tcp_init_buffer_space` (with `tcp_app_win` = 31: one segment kept back).
    /// `mss` is the payload per segment (timestamps excluded), `rwnd_bytes` the scenario's.
    pub fn new(policy: RcvBufPolicy, rwnd_bytes: u64, mss: u32, window_scaling: bool) -> Self {
        let advmss = mss as u64;
        // `tcplab emulate` raises tcp_rmem[2] to rwnd when rwnd is larger.
        let rmem_max = TCP_RMEM_MAX_BYTES.max(rwnd_bytes);
        let autotune = policy == RcvBufPolicy::Autotune;
        let rcvbuf = if autotune {
            TCP_RMEM_DEFAULT_BYTES
        } else {
            2 * rwnd_bytes
        };
        let ratio = DEFAULT_SCALING_RATIO;
        let full_space = win_from_space(ratio, rcvbuf);
        let mut clamp = if autotune {
            65_535 << TCP_MAX_WSCALE
        } else {
            full_space
        };
        let mut space = clamp.min(full_space);
        if space > advmss {
            space = space / advmss * advmss;
        }
        let rcv_wnd = space;
        let wscale = if window_scaling {
            let reach = space.max(rmem_max).min(clamp);
            (reach.ilog2().saturating_sub(15)).min(TCP_MAX_WSCALE)
        } else {
            0
        };
        clamp = clamp.min(65_535 << wscale);
        // tcp_init_buffer_space
        let maxwin = full_space;
        if clamp >= maxwin {
            clamp = maxwin;
        }
        if clamp > 2 * advmss && clamp + advmss > maxwin {
            clamp = (2 * advmss).max(maxwin - advmss);
        }
        let rcv_ssthresh = rcv_wnd.min(clamp);
        let rcv_mss = advmss.min(rcv_wnd / 2).clamp(TCP_MIN_MSS, TCP_MSS_DEFAULT);
        RcvSpace {
            advmss,
            wscale,
            rmem_max,
            autotune,
            rcvbuf,
            scaling_ratio: ratio,
            window_clamp: clamp,
            rcv_ssthresh,
            rcv_wnd,
            rcv_mss,
            space: rcv_ssthresh.min(rcv_wnd).min(TCP_INIT_CWND * advmss),
            space_seq: 0,
            space_time: SimTime::ZERO,
            rtt_us8: 0,
            rtt_seq: 0,
            rtt_time: None,
            last_tsecr: 0,
        }
    }

    /// The connection is established: right-sizing measures from here.
    pub fn established(&mut self, now: SimTime, copied_seq: u64) {
        self.space_time = now;
        self.space_seq = copied_seq;
    }

    /// The window of a SYN-ACK (its field is never scaled).
    pub fn syn_window(&self) -> u64 {
        self.rcv_wnd.min(65_535)
    }

    /// `rcv_rtt_est.rtt_us` in ns (0 before the first sample).
    pub fn rcv_rtt_ns(&self) -> u64 {
        self.rtt_us8 * 125
    }

    /// `tcp_space`: the window the free part of the buffer backs. `rmem_bytes` is the
    /// truesize of the data held (`sk_rmem_alloc`).
    pub fn tcp_space(&self, rmem_bytes: u64) -> u64 {
        win_from_space(self.scaling_ratio, self.rcvbuf.saturating_sub(rmem_bytes))
    }

    /// `tcp_rcv_rtt_update`: a smaller sample is taken at once, a larger one smoothed by 1/8
    /// (timestamp samples only: a window-based sample can only lower the estimate).
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us << 3;
        if self.rtt_us8 == 0 || m < self.rtt_us8 {
            self.rtt_us8 = m;
        } else if !win_dep {
            self.rtt_us8 = self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us;
        }
    }

    /// `tcp_rcv_rtt_measure_ts`, for every data segment before it is queued: the time since
    /// we sent the TSval the segment echoes, in the timestamp clock's milliseconds, once per
    /// echoed value and from full-sized segments only. `now_ts_ns` and `tsecr_ns` are on our
    /// timestamp clock (offset included).
    pub fn rtt_measure_ts(&mut self, now_ts_ns: u64, tsecr_ns: u64, len: u64) {
        if tsecr_ns == self.last_tsecr {
            return;
        }
        self.last_tsecr = tsecr_ns;
        if len >= self.rcv_mss {
            let delta_ms = (now_ts_ns / 1_000_000).saturating_sub(tsecr_ns / 1_000_000);
            if delta_ms > 0 {
                self.rtt_update(delta_ms * 1_000, false);
            }
        }
    }

    /// `tcp_set_window_clamp`: a larger clamp also lifts rcv_ssthresh to the window already
    /// offered, a smaller one lowers it.
    fn set_window_clamp(&mut self, val: u64) {
        if val == self.window_clamp {
            return;
        }
        let old = self.window_clamp;
        self.window_clamp = val;
        if val < old {
            self.rcv_ssthresh = self.rcv_ssthresh.min(val);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(val));
        }
    }

    /// `tcp_event_data_recv` for an in-order segment of `len` payload bytes and `truesize`
    /// (`rcv_nxt` already past it, `rmem_bytes` including it): measure the peer's segment
    /// size and the payload ratio, take a window-based RTT sample, and grow rcv_ssthresh.
    /// Returns whether an immediate ACK is due (`icsk_ack.quick |= 1`).
    pub fn data_recv(
        &mut self,
        now: SimTime,
        len: u64,
        truesize: u64,
        rcv_nxt: u64,
        rmem_bytes: u64,
    ) -> bool {
        self.measure_rcv_mss(len, truesize);
        self.rtt_measure(now, rcv_nxt);
        len >= GROW_MIN_LEN_BYTES && self.grow_window(len, truesize, rmem_bytes)
    }

    /// The segment size to expect for ACK decisions (`icsk_ack.rcv_mss`).
    pub fn rcv_mss(&self) -> u64 {
        self.rcv_mss
    }

    /// `tcp_measure_rcv_mss`: a full-sized segment of a new size sets the payload ratio; a
    /// new ratio moves the window clamp to what the buffer backs at it.
    fn measure_rcv_mss(&mut self, len: u64, truesize: u64) {
        if len < self.rcv_mss {
            return;
        }
        if len != self.rcv_mss {
            let ratio = ((len << RMEM_TO_WIN_SCALE) / truesize).clamp(1, 255);
            if ratio != self.scaling_ratio {
                self.scaling_ratio = ratio;
                self.set_window_clamp(win_from_space(ratio, self.rcvbuf));
                self.space = self.space.min(self.window_clamp);
            }
        }
        self.rcv_mss = len.min(self.advmss);
    }

    /// `tcp_rcv_rtt_measure`: the time a window's worth of data takes to arrive, a sample
    /// that can only lower the estimate (it matters without timestamps).
    fn rtt_measure(&mut self, now: SimTime, rcv_nxt: u64) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            self.rtt_update(now.since(t).us().max(1), true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_grow_window`: while rcv_ssthresh is below what both the clamp and the free space
    /// allow, a segment whose truesize the buffer can afford raises it by two segments (at
    /// most up to that limit) and asks for an immediate ACK.
    fn grow_window(&mut self, len: u64, truesize: u64, rmem_bytes: u64) -> bool {
        let limit = self.window_clamp.min(self.tcp_space(rmem_bytes));
        if limit <= self.rcv_ssthresh {
            return false;
        }
        let room = limit - self.rcv_ssthresh;
        // TUN skbs hold their payload in the linear head: truesize_adjust leaves it as is.
        let incr = if win_from_space(self.scaling_ratio, truesize) <= len {
            2 * self.advmss
        } else {
            self.grow_window_slow(len, truesize)
        };
        if incr == 0 {
            return false;
        }
        self.rcv_ssthresh += room.min(incr.max(2 * len));
        true
    }

    /// `__tcp_grow_window`: a segment with more overhead than the ratio assumes may still
    /// grow the window while rcv_ssthresh is small enough for such segments to fit.
    fn grow_window_slow(&self, len: u64, truesize: u64) -> u64 {
        let mut truesize_win = win_from_space(self.scaling_ratio, truesize) >> 1;
        let mut window = win_from_space(self.scaling_ratio, self.rmem_max) >> 1;
        while self.rcv_ssthresh <= window {
            if truesize_win <= len {
                return 2 * self.rcv_mss;
            }
            truesize_win >>= 1;
            window >>= 1;
        }
        0
    }

    /// `tcp_data_queue_ofo`'s buffer work for an out-of-order segment (`rmem_bytes` without
    /// it; `ofo_span_bytes` from rcv_nxt to the end of the highest out-of-order data): with
    /// SACK the window may grow as for in-order data, and the buffer is grown to hold twice
    /// the last RTT's reads plus the out-of-order span. Returns whether an immediate ACK is
    /// asked for.
    pub fn ofo_queued(
        &mut self,
        len: u64,
        truesize: u64,
        rmem_bytes: u64,
        sack: bool,
        ofo_span_bytes: u64,
    ) -> bool {
        let quick = sack && self.grow_window(len, truesize, rmem_bytes);
        self.rcvbuf_grow(self.space, ofo_span_bytes);
        quick
    }

    /// `tcp_rcv_space_adjust`, after the application read up to `copied_seq`: once per
    /// receiver RTT, if it read more than in the previous RTT, grow the buffer.
    pub fn space_adjust(
        &mut self,
        now: SimTime,
        copied_seq: u64,
        rcv_nxt: u64,
        ofo_span_bytes: u64,
    ) {
        if self.rtt_us8 == 0 || now.since(self.space_time).us() < self.rtt_us8 >> 3 {
            return;
        }
        let inq = rcv_nxt - copied_seq;
        let copied = (copied_seq - self.space_seq).saturating_sub(inq);
        if copied > self.space {
            self.rcvbuf_grow(copied, ofo_span_bytes);
        }
        self.space_seq = copied_seq;
        self.space_time = now;
    }

    /// `tcp_rcvbuf_grow`: room for twice the reads of the last RTT (right-sizing is one RTT
    /// late) plus twice their growth over the RTT before (the sender may double again), plus
    /// the out-of-order span; never beyond tcp_rmem[2], never shrinking, and not at all for a
    /// locked (SO_RCVBUF) buffer.
    fn rcvbuf_grow(&mut self, newval: u64, ofo_span_bytes: u64) {
        let old = self.space;
        self.space = newval;
        if !self.autotune {
            return;
        }
        let mut rcvwin = newval << 1;
        let grow = rcvwin * newval.saturating_sub(old) / old.max(1);
        rcvwin += (grow << 1) + ofo_span_bytes;
        let rcvbuf = space_from_win(self.scaling_ratio, rcvwin).min(self.rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(self.scaling_ratio, rcvbuf);
        }
    }

    /// `__tcp_select_window` (window shrinking off, as by default): the free space, limited
    /// by rcv_ssthresh and aligned to the window scale; zero when the free space is below a
    /// segment or 1/16 of the buffer. Also says whether quick-ACK mode ends (the buffer is
    /// more than half full). Changes nothing.
    pub fn raw_window(&self, rmem_bytes: u64) -> (u64, bool) {
        let mut free = self.tcp_space(rmem_bytes);
        let allowed = win_from_space(self.scaling_ratio, self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mut mss = self.rcv_mss;
        if mss > full {
            mss = full;
            if mss == 0 {
                return (0, false);
            }
        }
        let unit = 1u64 << self.wscale;
        let mut quick_off = false;
        if free < full / 2 {
            quick_off = true;
            free = free / unit * unit;
            if free < allowed >> 4 || free < mss {
                return (0, true);
            }
        }
        free = free.min(self.rcv_ssthresh);
        if self.wscale > 0 {
            return (align_up(free, unit), quick_off);
        }
        // Without scaling, offer whole segments and keep the current offer while it is within
        // a segment of the free space.
        let mut window = self.rcv_wnd;
        if window + mss <= free || window > free {
            window = free / mss * mss;
        } else if mss == full && free > window + full / 2 {
            window = free;
        }
        (window, quick_off)
    }

    /// `tcp_select_window` for an ACK: the new window, at most `cap` (a PEP's relay buffer),
    /// but never retreating the right edge already offered (RFC 7323 §2.4); recorded as
    /// rcv_wnd, then limited to what the 16-bit field can carry. The caller sets rcv_wup =
    /// rcv_nxt. Returns the window and whether quick-ACK mode ends.
    pub fn select_window(
        &mut self,
        rcv_nxt: u64,
        rcv_wup: u64,
        rmem_bytes: u64,
        cap: Option<u64>,
    ) -> (u64, bool) {
        let cur = (rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        let (mut new, quick_off) = self.raw_window(rmem_bytes);
        if let Some(c) = cap {
            new = new.min(c);
        }
        if new < cur {
            new = align_up(cur, 1 << self.wscale);
        }
        self.rcv_wnd = new;
        (new.min(65_535 << self.wscale), quick_off)
    }

    /// `tcp_cleanup_rbuf`'s window update after a read: send an ACK if the window now on
    /// offer is at most half the clamp and the window we could offer is at least twice it.
    pub fn window_update_due(
        &self,
        rcv_nxt: u64,
        rcv_wup: u64,
        rmem_bytes: u64,
        cap: Option<u64>,
    ) -> bool {
        let now_win = (rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        if 2 * now_win > self.window_clamp {
            return false;
        }
        let (mut new, _) = self.raw_window(rmem_bytes);
        if let Some(c) = cap {
            new = new.min(c);
        }
        new != 0 && new >= 2 * now_win
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn autotuned() -> RcvSpace {
        RcvSpace::new(RcvBufPolicy::Autotune, TCP_RMEM_MAX_BYTES, 1448, true)
    }

    #[test]
    fn a_full_sized_segment_takes_2304_bytes_of_buffer_at_ratio_160() {
        // 1448 B + 52 B headers = 1500; + 64 + 320 = 1884 -> 2048 (kmalloc), + 256 = 2304.
        assert_eq!(skb_truesize(1500), 2304);
        assert_eq!((1448u64 << RMEM_TO_WIN_SCALE) / 2304, 160);
    }

    #[test]
    fn right_sizing_grows_as_the_kernel_traced_it() {
        // tcp_rcvbuf_grow events of a Linux 6.18 trace (terrestrial 10 Mbit/s, 40 ms):
        // space 15928 -> 30408 gave rcvbuf 274224 and window_clamp 171390; space 30408 ->
        // 57920 gave 520726 and 325453. By hand: rcvwin = 2 x 30408 + 2 x (60816 x 14480 /
        // 15928 = 55287) = 171390 -> 171390 x 256 / 160 = 274224; then 2 x 57920 + 2 x (115840
        // x 27512 / 30408 = 104807) = 325454 -> 520726, whose window is 325453.
        let mut s = autotuned();
        s.scaling_ratio = 160;
        s.space = 15_928;
        s.rcvbuf_grow(30_408, 0);
        assert_eq!((s.rcvbuf, s.window_clamp), (274_224, 171_390));
        s.rcvbuf_grow(57_920, 0);
        assert_eq!((s.rcvbuf, s.window_clamp), (520_726, 325_453));
        // Capped at tcp_rmem[2] = 6 MiB, a window of 6291456 x 160 / 256 = 3932160 B.
        s.rcvbuf_grow(4_000_000, 0);
        assert_eq!((s.rcvbuf, s.window_clamp), (6_291_456, 3_932_160));
    }

    #[test]
    fn out_of_order_data_grows_the_buffer_by_its_span() {
        // tcp_data_queue_ofo: rcvwin = 2 x space + span = 2 x 14480 + 200000 = 228960 at the
        // ratio 128 asks for 457920 B of buffer.
        let mut s = autotuned();
        assert!(!s.ofo_queued(1448, 2304, 0, false, 200_000));
        assert_eq!(s.rcvbuf, 457_920);
        assert_eq!(s.space, 14_480);
    }

    #[test]
    fn the_offered_right_edge_never_retreats() {
        // 65160 B offered at rcv_nxt 0; with 70000 B held the free space is (131072 -
        // 70000) x 128 / 256 = 30536 B, less than half the clamp (64088 / 2), which also ends
        // quick-ACK mode; but the window stays at what is left of the offer: 65160 - 1448 =
        // 63712, aligned up to 63744.
        let mut s = autotuned();
        let (wnd, quick_off) = s.select_window(1448, 0, 70_000, None);
        assert_eq!((wnd, quick_off), (63_744, true));
    }

    #[test]
    fn without_window_scaling_the_offer_is_whole_segments_within_the_16_bit_field() {
        // SO_RCVBUF 65535: 131070 B of buffer; 45 segments (65160 B) offered at first. After
        // the ratio 160 (clamp 81918) rcv_ssthresh opens toward the free space, and a window
        // is rounded down to whole segments (80 KB -> 55 x 1448 = 79640) and sent as 65535.
        let mut s = RcvSpace::new(RcvBufPolicy::Locked, 65_535, 1448, false);
        assert_eq!((s.wscale, s.rcv_wnd), (0, 65_160));
        for _ in 0..10 {
            s.data_recv(SimTime::ZERO, 1448, 2304, 1448, 2304);
        }
        // (131070 - 2304) x 160 / 256 = 80478 B free.
        assert_eq!(s.rcv_ssthresh, 80_478);
        assert_eq!(s.select_window(1448, 0, 2304, None), (65_535, false));
        assert_eq!(s.rcv_wnd, 79_640);
    }
}
