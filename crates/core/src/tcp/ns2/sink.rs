//! ns-2's `TCPSink` / `TCPSink/Sack1` (`tcp-sink.cc`), by rewriting what the Linux receiver
//! (`tcp::receiver`) sends.
//!
//! With `delayed_ack = false`, `dsack = false` and timestamps on, the Linux receiver already
//! behaves like the ns-2 sink:
//! - one ACK per data packet, carrying the cumulative ACK (ns-2 acknowledges the highest
//!   in-order packet; the byte ACK here maps one to one onto it);
//! - SACK blocks (`Sacker::append_ack`): first the block holding the packet that triggered
//!   the ACK, then earlier blocks most recent first, at most `maxSackBlocks_` = 3 (the Linux
//!   limit with timestamps is also 3); no D-SACK (`generateDSacks_` false);
//! - the echoed timestamp (`ts_echo_bugfix_`): the one of the last packet at or below the
//!   cumulative ACK, which is RFC 7323's TS.Recent rule. ns-2 sinks always echo (the
//!   timestamp is a simulator header field, not an option), and Agent/TCP/Fack samples the
//!   RTT from it on every SACK, so the receiver keeps timestamps on for ns-2 flows.
//!
//! What differs is the size on the wire: an ns-2 ACK is `packetSize_` 40 bytes plus 8 bytes
//! per SACK block, with no timestamp option (`Agent/TCP` `timestamps_` false). `rewrite`
//! applies that. Corner cases where the two SACK histories differ (ns-2 keeps reporting a
//! remembered block until a newer one covers it; Linux drops blocks below the cumulative
//! ACK at once) only change which old block fills the third slot.
use crate::net::packet::{Packet, PacketKind, BASE_HEADER_BYTES};
use crate::tcp::linux::sender::REQUEST_BYTES;

/// `Agent/TCPSink maxSackBlocks_`.
pub const MAX_SACK_BLOCKS: u8 = 3;
/// Bytes per SACK block in an ns-2 ACK (`ch->size() += sack_index * 8`).
pub const SACK_BLOCK_BYTES: u32 = 8;

/// Give a receiver's packet the size (and SACK limit) ns-2's sink would use.
#[inline]
pub fn rewrite(p: &mut Packet) {
    match p.kind {
        PacketKind::Ack => {
            p.n_sack = p.n_sack.min(MAX_SACK_BLOCKS);
            p.wire_bytes = BASE_HEADER_BYTES + SACK_BLOCK_BYTES * p.n_sack as u32;
        }
        PacketKind::Request => p.wire_bytes = BASE_HEADER_BYTES + REQUEST_BYTES,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::SackBlock;

    #[test]
    fn ack_with_sack_blocks_is_forty_bytes_plus_eight_per_block() {
        let mut p = Packet {
            kind: PacketKind::Ack,
            n_sack: 4,
            wire_bytes: 80,
            sack: [SackBlock::default(); 4],
            ..Default::default()
        };
        rewrite(&mut p);
        assert_eq!((p.n_sack, p.wire_bytes), (3, 64));
    }
}
