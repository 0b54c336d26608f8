//! Packets and the packet pool.
//!
//! Packets live in a slab (`PacketPool`) and travel through links as `u32` handles, so the
//! per-hop work moves 8 bytes, not a 150-byte header. Sequence numbers are 64-bit byte
//! offsets from the start of the connection: a simulated run never wraps them.

/// IPv4 + TCP fixed headers (20 + 20 bytes).
pub const BASE_HEADER_BYTES: u32 = 40;
/// Timestamp option with padding (RFC 7323: 10 bytes, padded to 12).
pub const TS_OPTION_BYTES: u32 = 12;
/// IPv4 + UDP headers.
pub const UDP_HEADER_BYTES: u32 = 28;
/// Size of a SYN's options (MSS, SACK-permitted, timestamps, window scale: Linux sends 20 B).
pub const SYN_OPTION_BYTES: u32 = 20;

/// One SACK block `[start, end)` in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// What a packet is, at the level the simulator needs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PacketKind {
    /// TCP segment carrying payload `[seq, seq + len)`.
    #[default]
    Data,
    /// Pure ACK.
    Ack,
    /// Connection request (from the active opener).
    Syn,
    /// Reply to a SYN.
    SynAck,
    /// Client's ACK of the SYN-ACK carrying the application request (file downloads).
    Request,
    /// A UDP datagram (constant-bit-rate traffic); `seq` is its sequence number and `ts_val`
    /// its send time.
    Udp,
    /// The receiving side closes (FIN|ACK, RFC 793 §3.5): a file client that read the whole
    /// file, or a PEP passing a close upstream. It carries the cumulative ACK.
    Fin,
}

/// Flag bits of `Packet::flags`.
pub mod flags {
    /// ECN-capable transport (ECT(0)).
    pub const ECT: u8 = 1;
    /// Congestion experienced, set by a marking queue.
    pub const CE: u8 = 2;
    /// ECN echo (receiver → sender).
    pub const ECE: u8 = 4;
    /// Congestion window reduced (sender → receiver).
    pub const CWR: u8 = 8;
    /// The first SACK block is a D-SACK (RFC 2883).
    pub const DSACK: u8 = 16;
    /// The payload is a retransmission (statistics only; receivers must not look).
    pub const RETRANS: u8 = 32;
    /// FIN on the segment carrying the last byte of a file: the server closes as soon as it
    /// has written the file (Linux puts the FIN on the last queued skb).
    pub const FIN: u8 = 64;
    /// Not on the wire: the access link behind the link this packet is crossing refused it
    /// when it was handed over ahead of time (`Simulation::on_wire`); it is dropped on
    /// arrival, when the access link would have refused it.
    pub const REFUSED: u8 = 128;
}

/// A packet on the wire.
#[derive(Clone, Debug, Default)]
pub struct Packet {
    pub flow: u32,
    /// Route and position on it (which link the packet is on).
    pub route: u32,
    pub hop: u16,
    pub kind: PacketKind,
    pub flags: u8,
    pub n_sack: u8,
    /// Payload bytes.
    pub len: u32,
    /// Bytes on the wire (payload + headers + options).
    pub wire_bytes: u32,
    /// First payload byte (data), or the byte the SYN occupies.
    pub seq: u64,
    /// Cumulative acknowledgment: next byte expected.
    pub ack: u64,
    /// Advertised receive window in bytes.
    pub wnd: u64,
    /// Timestamp option (RFC 7323) in ns of the sender's clock; `ts_ecr` 0 = none echoed.
    pub ts_val: u64,
    pub ts_ecr: u64,
    pub sack: [SackBlock; 4],
}

impl Packet {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    #[inline]
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.n_sack as usize]
    }
    /// Wire size of a segment with `payload` bytes, `n_sack` SACK blocks and optionally
    /// timestamps: SACK option = 2 + 8n bytes, padded to a multiple of 4 (RFC 2018).
    pub fn wire_size(payload: u32, timestamps: bool, n_sack: u8) -> u32 {
        let mut opts = if timestamps { TS_OPTION_BYTES } else { 0 };
        if n_sack > 0 {
            opts += (2 + 8 * n_sack as u32).div_ceil(4) * 4;
        }
        BASE_HEADER_BYTES + opts + payload
    }
}

/// A packet as the pool stores it: every field but the SACK blocks, in one 64-byte cache
/// line. Data segments (most packets) never carry SACK blocks, so forwarding and delivering
/// them touches one line per packet, and twice as many packets in flight fit in the CPU's
/// caches as with the whole 128-byte `Packet`; with thousands of flows or a 10 Gbit/s
/// bottleneck the packets in flight outgrow the caches, and each line fetched from memory
/// is what a hop costs.
#[derive(Copy, Clone, Debug, Default)]
#[repr(align(64))]
pub struct PacketHead {
    pub flow: u32,
    pub route: u32,
    pub hop: u16,
    pub kind: PacketKind,
    pub flags: u8,
    pub n_sack: u8,
    pub len: u32,
    pub wire_bytes: u32,
    pub seq: u64,
    pub ack: u64,
    pub wnd: u64,
    pub ts_val: u64,
    pub ts_ecr: u64,
}

impl PacketHead {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// Slab of packets addressed by `u32` handles: their heads in one array and their SACK
/// blocks, written and read only for packets that carry some, in a parallel one.
#[derive(Debug, Default)]
pub struct PacketPool {
    heads: Vec<PacketHead>,
    sacks: Vec<[SackBlock; 4]>,
    free: Vec<u32>,
}

impl PacketPool {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn insert(&mut self, p: Packet) -> u32 {
        let Packet {
            flow,
            route,
            hop,
            kind,
            flags,
            n_sack,
            len,
            wire_bytes,
            seq,
            ack,
            wnd,
            ts_val,
            ts_ecr,
            sack,
        } = p;
        let head = PacketHead {
            flow,
            route,
            hop,
            kind,
            flags,
            n_sack,
            len,
            wire_bytes,
            seq,
            ack,
            wnd,
            ts_val,
            ts_ecr,
        };
        let i = if let Some(i) = self.free.pop() {
            self.heads[i as usize] = head;
            i
        } else {
            self.heads.push(head);
            self.sacks.push(Default::default());
            (self.heads.len() - 1) as u32
        };
        if n_sack > 0 {
            self.sacks[i as usize] = sack;
        }
        i
    }

    #[inline]
    pub fn get(&self, i: u32) -> &PacketHead {
        &self.heads[i as usize]
    }

    /// The SACK block slots of packet `i`: its `n_sack` blocks first, the others unused.
    #[inline]
    pub fn sack_slots(&self, i: u32) -> &[SackBlock; 4] {
        &self.sacks[i as usize]
    }

    /// SACK blocks of packet `i` (empty when it has none).
    #[inline]
    pub fn sacks(&self, i: u32) -> &[SackBlock] {
        &self.sacks[i as usize][..self.heads[i as usize].n_sack as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut PacketHead {
        &mut self.heads[i as usize]
    }

    /// Ask for packet `i`'s head ahead of its delivery (`engine::cache`).
    #[inline(always)]
    pub fn prefetch(&self, i: u32) {
        if let Some(head) = self.heads.get(i as usize) {
            crate::engine::cache::prefetch(head);
        }
    }

    /// Release a handle and take the packet out.
    #[inline]
    pub fn take(&mut self, i: u32) -> Packet {
        self.free.push(i);
        let PacketHead {
            flow,
            route,
            hop,
            kind,
            flags,
            n_sack,
            len,
            wire_bytes,
            seq,
            ack,
            wnd,
            ts_val,
            ts_ecr,
        } = self.heads[i as usize];
        let sack = if n_sack > 0 {
            self.sacks[i as usize]
        } else {
            Default::default()
        };
        Packet {
            flow,
            route,
            hop,
            kind,
            flags,
            n_sack,
            len,
            wire_bytes,
            seq,
            ack,
            wnd,
            ts_val,
            ts_ecr,
            sack,
        }
    }

    /// Number of packets currently alive (for the memory-bound test).
    pub fn live(&self) -> usize {
        self.heads.len() - self.free.len()
    }

    /// Handles given out so far (every handle is below this).
    pub fn capacity(&self) -> usize {
        self.heads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_data_segment_with_timestamps_is_1500_bytes() {
        // 1448 payload + 20 IP + 20 TCP + 12 TS = 1500 (MTU).
        assert_eq!(Packet::wire_size(1448, true, 0), 1500);
    }

    #[test]
    fn ack_with_three_sack_blocks_and_timestamps() {
        // 40 + 12 + (2 + 24 = 26 -> padded 28) = 80 bytes.
        assert_eq!(Packet::wire_size(0, true, 3), 80);
        assert_eq!(Packet::wire_size(0, false, 0), 40);
    }

    #[test]
    fn pool_reuses_released_slots() {
        let mut pool = PacketPool::new();
        let a = pool.insert(Packet {
            seq: 1,
            ..Default::default()
        });
        let _b = pool.insert(Packet::default());
        assert_eq!(pool.take(a).seq, 1);
        let c = pool.insert(Packet::default());
        assert_eq!(c, a);
        assert_eq!(pool.live(), 2);
    }

    #[test]
    fn a_packet_head_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<PacketHead>(), 64);
        assert_eq!(std::mem::align_of::<PacketHead>(), 64);
    }

    #[test]
    fn sack_blocks_survive_the_pool_and_never_leak_into_a_reused_slot() {
        let mut pool = PacketPool::new();
        let mut ack = Packet {
            kind: PacketKind::Ack,
            n_sack: 2,
            ack: 1000,
            ..Default::default()
        };
        ack.sack[0] = SackBlock {
            start: 2000,
            end: 3000,
        };
        ack.sack[1] = SackBlock {
            start: 4000,
            end: 5000,
        };
        let i = pool.insert(ack.clone());
        let back = pool.take(i);
        assert_eq!(back.sack_blocks(), ack.sack_blocks());
        assert_eq!(back.ack, 1000);
        let j = pool.insert(Packet {
            seq: 7,
            len: 1448,
            ..Default::default()
        });
        assert_eq!(j, i);
        let data = pool.take(j);
        assert_eq!(data.sack, [SackBlock::default(); 4]);
        assert_eq!((data.seq, data.len), (7, 1448));
    }
}
