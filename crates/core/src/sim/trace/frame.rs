//! Real frames from simulated packets: Ethernet II, IPv4 and TCP (or UDP) headers with
//! correct lengths and checksums (RFC 791, RFC 793/9293, RFC 768, RFC 1071), the options a
//! Linux stack puts on the wire (RFC 7323 timestamps and window scale, RFC 2018 SACK,
//! RFC 879 MSS) and the ECN bits (RFC 3168), so Wireshark's TCP analysis works on them.
//!
//! A simulated packet carries what the simulation needs: 64-bit byte offsets of the
//! payload stream (the handshake takes no sequence space), the kind of segment, flags, the
//! advertised window in bytes and timestamps in ns. The frame turns that into what a
//! kernel would have sent, with what the connection negotiated (`ConnWire`):
//!
//! - sequence numbers: initial sequence numbers per direction, SYN and FIN each taking
//!   one, the file client's request taking `REQUEST_BYTES`; 32 bits, wrapping;
//! - the window field: the advertised bytes shifted right by the sender's window scale
//!   (never on a SYN), capped at 65535; the data sender, which receives nothing but a
//!   request, advertises a Linux socket's initial window;
//! - TSval/TSecr: the simulated clocks (ns, with the per-connection offset) in Linux's
//!   1 ms ticks, 32 bits;
//! - options: exactly the bytes the simulation sized the packet with (`wire_bytes`), in
//!   Linux's layout (NOP, NOP, timestamps; NOP, NOP, SACK; a SYN's MSS, SACK-permitted with
//!   timestamps, NOP and window scale), padded with end-of-option-list where the
//!   simulation counted more (a SYN without timestamps). ns-2's sink counts 8 bytes per
//!   SACK block and none for the option's kind and length, so its ACKs carry one block
//!   fewer than it sent;
//! - payload: zeros (the simulation carries no data), included up to the snap length;
//!   checksums always cover the whole payload, so they are right even when it is cut.
//!
//! Every flow gets its own addresses: the data sender 10.H.M.L and the receiver
//! 10.(128+H).M.L for flow number n = index + 1 = H·65536 + M·256 + L. The side that opens
//! the connection (a bulk sender, iperf-like; a file client) uses port n mod 4000 above
//! `EPHEMERAL_PORT_BASE`, the side that listens `LISTEN_PORT`: ports no Wireshark 4.0
//! dissector claims for TCP or UDP, so the zeros of the payload stay undissected data. Every leg of a flow split by PEPs has
//! the same four-tuple, as with a transparent PEP. IP identification is 0 with DF set
//! (RFC 6864: atomic datagrams), TTL 64.
use crate::net::packet::{flags, PacketHead, PacketKind, SackBlock};

/// Ethernet II header bytes.
pub const ETH_BYTES: usize = 14;
/// IPv4 header without options.
const IP_BYTES: usize = 20;
/// TCP header without options.
const TCP_BYTES: usize = 20;
/// UDP header.
const UDP_BYTES: usize = 8;
/// The listening side's port.
pub const LISTEN_PORT: u16 = 46_000;
/// The opening side's port is this plus the flow number modulo `EPHEMERAL_PORTS`.
pub const EPHEMERAL_PORT_BASE: u16 = 50_000;
pub const EPHEMERAL_PORTS: u32 = 4_000;
/// Linux's timestamp clock: 1 ms per tick (`TCP_TS_HZ`).
const TS_TICK_NS: u64 = 1_000_000;

/// TCP option kinds (IANA).
mod opt {
    pub const EOL: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WSCALE: u8 = 3;
    pub const SACK_PERM: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMP: u8 = 8;
}

/// TCP header flag bits.
mod tcpf {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// The one's-complement sum of RFC 1071 over `data` (big-endian 16-bit words, an odd last
/// byte padded with zero), added to `sum`; not yet folded.
#[inline]
pub fn ones_sum(mut sum: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = words.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

/// Fold a sum to 16 bits and complement it: the Internet checksum (RFC 1071).
#[inline]
pub fn fold_checksum(sum: u64) -> u16 {
    // each step adds the high half back at the bottom (2^32 and 2^16 are 1 modulo
    // 2^16 - 1): 64 bits to at most 33, then 17, then 16 and a carry, then 16
    let s = (sum & 0xffff_ffff) + (sum >> 32);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// Which way a packet travels on its connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Data sender (towards the server end of the path) to data receiver.
    ToReceiver,
    /// Data receiver to data sender: ACKs, and the handshake and request of a file client.
    ToSender,
}

impl Dir {
    /// Its place in `ConnWire::templates`.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Dir::ToReceiver => 0,
            Dir::ToSender => 1,
        }
    }
}

/// What one direction of a connection's frames keep from one to the next: the Ethernet
/// header, the IPv4 header but its length, ECN field and checksum, and the TCP ports; with
/// the sum of the IPv4 header's words there and the part of the TCP checksum's sum that
/// never changes (the pseudo-header's addresses and protocol, the ports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderTemplate {
    bytes: [u8; ETH_BYTES + IP_BYTES + 4],
    ip_sum: u64,
    tcp_sum: u64,
}

/// What a connection negotiated, as its headers show it.
#[derive(Clone, Debug)]
pub struct ConnWire {
    pub sender_ip: [u8; 4],
    pub receiver_ip: [u8; 4],
    pub sender_port: u16,
    pub receiver_port: u16,
    /// Initial sequence numbers of the data sender and of the data receiver.
    pub isn_sender: u32,
    pub isn_receiver: u32,
    pub timestamps: bool,
    pub sack: bool,
    pub ecn: bool,
    /// Window scale each side announces in its SYN (None: no window-scale option).
    pub wscale_sender: Option<u8>,
    pub wscale_receiver: Option<u8>,
    /// The MSS option's value (payload plus the timestamp option, as Linux announces it).
    pub mss_option: u16,
    /// The data sender's advertised window in bytes (it receives only a request).
    pub sender_window_bytes: u64,
    /// Sequence space the client's request takes (0 for bulk transfers).
    pub request_bytes: u32,
    /// File size of a download: the client's ACK of the last byte also ACKs the FIN.
    pub file_bytes: Option<u64>,
}

/// Addresses of flow `index`'s data sender and receiver, and the port of the side that
/// opens its connections (see the module note).
pub fn flow_addresses(index: u32) -> ([u8; 4], [u8; 4], u16) {
    let n = index + 1;
    let (h, m, l) = ((n >> 16) as u8, (n >> 8) as u8, n as u8);
    (
        [10, h, m, l],
        [10, 128 | h, m, l],
        EPHEMERAL_PORT_BASE + (n % EPHEMERAL_PORTS) as u16,
    )
}

/// Ethernet addresses: locally administered, naming the host's IPv4 address.
fn mac(ip: [u8; 4]) -> [u8; 6] {
    [0x02, 0x00, ip[0], ip[1], ip[2], ip[3]]
}

/// A frame being built: its bytes up to the snap length, appended to `buf`, and its
/// original length.
pub struct Frame<'a> {
    pub buf: &'a mut Vec<u8>,
    /// Bytes the frame has on the wire (Ethernet header included).
    pub orig_len: u32,
    /// Where the frame being built ends in `buf` once cut to the snap length.
    end: usize,
}

impl<'a> Frame<'a> {
    /// A frame to be built at the end of `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        Frame {
            buf,
            orig_len: 0,
            end: 0,
        }
    }

    /// Cut the frame just built to the snap length (`frame_in`).
    fn cut(&mut self) {
        self.buf.truncate(self.end);
    }
}

/// Scratch for the options of one segment (at most 40 bytes), and the one's-complement
/// sum of their 16-bit words.
struct Options {
    b: [u8; 40],
    n: usize,
    sum: u64,
}

impl Options {
    fn new() -> Self {
        Options {
            b: [0; 40],
            n: 0,
            sum: 0,
        }
    }
    /// Append whole 16-bit words (every option here is laid out in them), summed as they
    /// come: the checksum then never reads back bytes just stored.
    #[inline]
    fn push(&mut self, bytes: &[u8]) {
        debug_assert!(self.n.is_multiple_of(2) && bytes.len().is_multiple_of(2));
        self.b[self.n..self.n + bytes.len()].copy_from_slice(bytes);
        self.n += bytes.len();
        self.sum = ones_sum(self.sum, bytes);
    }
    /// Pad with end-of-option-list bytes (zeros: nothing to sum) to `len`.
    fn pad_to(&mut self, len: usize) {
        debug_assert!(opt::EOL == 0 && self.n <= len);
        self.n = len;
    }
    fn timestamps(&mut self, tsval: u32, tsecr: u32) {
        self.push(&[opt::NOP, opt::NOP, opt::TIMESTAMP, 10]);
        self.push(&tsval.to_be_bytes());
        self.push(&tsecr.to_be_bytes());
    }
}

/// Linux's TSval/TSecr: the ns clock in 1 ms ticks, 32 bits.
#[inline]
fn ts_ticks(ns: u64) -> u32 {
    (ns / TS_TICK_NS) as u32
}

impl ConnWire {
    /// The header templates of its two directions, in `Dir::index` order (what
    /// `tcp_frame` is given).
    pub fn templates(&self) -> [HeaderTemplate; 2] {
        [Dir::ToReceiver, Dir::ToSender].map(|dir| {
            let (src, dst, sport, dport) = self.endpoints(dir);
            let mut bytes = [0u8; ETH_BYTES + IP_BYTES + 4];
            let (eth_ip_header, ports) = bytes.split_at_mut(ETH_BYTES + IP_BYTES);
            let eth_ip_header = eth_ip_header.try_into().expect("split there");
            let ip_sum = eth_ip_fixed(eth_ip_header, src, dst, 6);
            ports[0..2].copy_from_slice(&sport.to_be_bytes());
            ports[2..4].copy_from_slice(&dport.to_be_bytes());
            let tcp_sum = pseudo_sum(src, dst, 6, 0) + sport as u64 + dport as u64;
            HeaderTemplate {
                bytes,
                ip_sum,
                tcp_sum,
            }
        })
    }

    fn seq_sender(&self, offset: u64) -> u32 {
        self.isn_sender.wrapping_add(1).wrapping_add(offset as u32)
    }

    /// Sequence number, acknowledgment number and TCP flags of a segment.
    fn numbers(&self, p: &PacketHead, dir: Dir) -> (u32, u32, u8) {
        let req = self.request_bytes;
        let receiver_data = self.isn_receiver.wrapping_add(1);
        match (dir, p.kind) {
            (Dir::ToReceiver, PacketKind::Syn) => (self.isn_sender, 0, tcpf::SYN),
            (Dir::ToReceiver, PacketKind::SynAck) => {
                (self.isn_sender, receiver_data, tcpf::SYN | tcpf::ACK)
            }
            (Dir::ToReceiver, PacketKind::Ack) => match self.file_bytes {
                // A file server's pure ACK answers the client's FIN, after its own FIN.
                Some(size) => (
                    self.seq_sender(size).wrapping_add(1),
                    receiver_data.wrapping_add(req).wrapping_add(1),
                    tcpf::ACK,
                ),
                None => (self.seq_sender(0), receiver_data, tcpf::ACK),
            },
            (Dir::ToReceiver, _) => {
                let mut f = tcpf::ACK;
                if p.has(flags::FIN) {
                    f |= tcpf::FIN | tcpf::PSH;
                }
                (self.seq_sender(p.seq), receiver_data.wrapping_add(req), f)
            }
            (Dir::ToSender, PacketKind::Syn) => (self.isn_receiver, 0, tcpf::SYN),
            (Dir::ToSender, PacketKind::SynAck) => {
                (self.isn_receiver, self.seq_sender(0), tcpf::SYN | tcpf::ACK)
            }
            (Dir::ToSender, PacketKind::Request) => {
                (receiver_data, self.seq_sender(0), tcpf::PSH | tcpf::ACK)
            }
            (Dir::ToSender, kind) => {
                // The server's FIN rides on the file's last byte: an ACK of that byte
                // acknowledges the FIN too.
                let fin_in = self.file_bytes.is_some_and(|s| p.ack >= s);
                let ack = self.seq_sender(p.ack).wrapping_add(fin_in as u32);
                let f = if kind == PacketKind::Fin {
                    tcpf::FIN | tcpf::ACK
                } else {
                    tcpf::ACK
                };
                (receiver_data.wrapping_add(req), ack, f)
            }
        }
    }

    /// The options of a SYN or SYN-ACK in Linux's layout.
    fn syn_options(&self, o: &mut Options, dir: Dir, p: &PacketHead) {
        o.push(&[opt::MSS, 4]);
        o.push(&self.mss_option.to_be_bytes());
        if self.timestamps {
            if self.sack {
                o.push(&[opt::SACK_PERM, 2, opt::TIMESTAMP, 10]);
            } else {
                o.push(&[opt::NOP, opt::NOP, opt::TIMESTAMP, 10]);
            }
            o.push(&ts_ticks(p.ts_val).to_be_bytes());
            o.push(&ts_ticks(p.ts_ecr).to_be_bytes());
        } else if self.sack {
            o.push(&[opt::NOP, opt::NOP, opt::SACK_PERM, 2]);
        }
        let ws = match dir {
            Dir::ToReceiver => self.wscale_sender,
            Dir::ToSender => self.wscale_receiver,
        };
        if let Some(ws) =
            ws.filter(|_| self.wscale_sender.is_some() && self.wscale_receiver.is_some())
        {
            o.push(&[opt::NOP, opt::WSCALE, 3, ws]);
        }
    }

    /// The window field of a segment.
    fn window_field(&self, p: &PacketHead, dir: Dir) -> u16 {
        let syn = matches!(p.kind, PacketKind::Syn | PacketKind::SynAck);
        let (bytes, scale) = match dir {
            Dir::ToReceiver => (self.sender_window_bytes, self.wscale_sender),
            Dir::ToSender => (p.wnd, self.wscale_receiver),
        };
        let negotiated = self.wscale_sender.is_some() && self.wscale_receiver.is_some();
        let shift = if syn || !negotiated {
            0
        } else {
            scale.unwrap_or(0) as u32
        };
        (bytes >> shift).min(0xffff) as u16
    }

    /// Build the frame of TCP packet `p` travelling `dir` at the end of `out.buf` (at most
    /// `snaplen` bytes kept); `sacks` are its SACK blocks, `tpl` this connection's template
    /// of `dir` (`templates()[dir.index()]`).
    pub fn tcp_frame(
        &self,
        tpl: &HeaderTemplate,
        p: &PacketHead,
        sacks: &[SackBlock],
        dir: Dir,
        snaplen: usize,
        out: &mut Frame<'_>,
    ) {
        let payload = match p.kind {
            PacketKind::Request => self.request_bytes as usize,
            _ => p.len as usize,
        };
        let wire = p.wire_bytes as usize;
        let opt_budget = wire.saturating_sub(IP_BYTES + TCP_BYTES + payload).min(40) & !3;
        let mut o = Options::new();
        match p.kind {
            PacketKind::Syn | PacketKind::SynAck => self.syn_options(&mut o, dir, p),
            _ => {
                if self.timestamps && opt_budget >= 12 {
                    o.timestamps(ts_ticks(p.ts_val), ts_ticks(p.ts_ecr));
                }
                let room = opt_budget - o.n;
                let fit = if room >= 12 { (room - 4) / 8 } else { 0 };
                let n = sacks.len().min(fit);
                if n > 0 {
                    o.push(&[opt::NOP, opt::NOP, opt::SACK, (2 + 8 * n) as u8]);
                    for b in &sacks[..n] {
                        o.push(&self.seq_sender(b.start).to_be_bytes());
                        o.push(&self.seq_sender(b.end).to_be_bytes());
                    }
                }
            }
        }
        // Pad to what the simulation counted (it never counts less than Linux sends).
        let opt_len = opt_budget.max(o.n.div_ceil(4) * 4);
        o.pad_to(opt_len);
        let (seq, ack, mut f) = self.numbers(p, dir);
        if p.has(flags::ECE) {
            f |= tcpf::ECE;
        }
        if p.has(flags::CWR) {
            f |= tcpf::CWR;
        }
        if self.ecn {
            // RFC 3168 §6.1.1: an ECN-setup SYN has ECE and CWR, its SYN-ACK ECE.
            match p.kind {
                PacketKind::Syn => f |= tcpf::ECE | tcpf::CWR,
                PacketKind::SynAck => f |= tcpf::ECE,
                _ => {}
            }
        }
        debug_assert_eq!(*tpl, self.templates()[dir.index()]);
        let tcp_len = TCP_BYTES + opt_len + payload;
        const TH: usize = ETH_BYTES + IP_BYTES;
        let tcp_header = TCP_BYTES + opt_len;
        let window = self.window_field(p, dir);
        let offset_flags = (((tcp_header / 4) as u16) << 12) | f as u16;
        // The words of the header (checksum 0) and of the options, summed from their
        // values; the payload is zeros: it adds nothing to the sum, only its length counts.
        let sum = tpl.tcp_sum
            + tcp_len as u64
            + word_sum(seq)
            + word_sum(ack)
            + offset_flags as u64
            + window as u64
            + o.sum;
        let h = frame_in(out, TH + tcp_header, payload, snaplen);
        let (fixed, options) = h.split_at_mut(TH + TCP_BYTES);
        // fixed places in an array of a fixed size: no bounds to check
        let fixed: &mut [u8; TH + TCP_BYTES] = fixed.try_into().expect("sized by frame_in");
        fixed[..tpl.bytes.len()].copy_from_slice(&tpl.bytes);
        let (eth_ip_header, t) = fixed.split_at_mut(TH);
        let eth_ip_header = eth_ip_header.try_into().expect("split at TH");
        ip_set_length_ecn(
            eth_ip_header,
            tpl.ip_sum,
            (IP_BYTES + tcp_len) as u16,
            ecn_bits(p),
        );
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12..14].copy_from_slice(&offset_flags.to_be_bytes());
        t[14..16].copy_from_slice(&window.to_be_bytes());
        t[16..18].copy_from_slice(&fold_checksum(sum).to_be_bytes());
        // the urgent pointer stays zero
        options.copy_from_slice(&o.b[..opt_len]);
        out.cut();
    }

    fn endpoints(&self, dir: Dir) -> ([u8; 4], [u8; 4], u16, u16) {
        match dir {
            Dir::ToReceiver => (
                self.sender_ip,
                self.receiver_ip,
                self.sender_port,
                self.receiver_port,
            ),
            Dir::ToSender => (
                self.receiver_ip,
                self.sender_ip,
                self.receiver_port,
                self.sender_port,
            ),
        }
    }
}

/// A UDP datagram of a constant-bit-rate flow (sender to receiver; payload zeros), at the
/// end of `out.buf`.
pub fn udp_frame(index: u32, p: &PacketHead, snaplen: usize, out: &mut Frame<'_>) {
    let (src, dst, sport) = flow_addresses(index);
    let dport = LISTEN_PORT;
    let payload = (p.wire_bytes as usize).saturating_sub(IP_BYTES + UDP_BYTES);
    let udp_len = UDP_BYTES + payload;
    // the UDP header's words (checksum 0) and the pseudo-header's; the payload is zeros
    let sum = pseudo_sum(src, dst, 17, udp_len) + sport as u64 + dport as u64 + udp_len as u64;
    let c = match fold_checksum(sum) {
        0 => 0xffff, // RFC 768: a computed zero is sent as all ones
        c => c,
    };
    let h = frame_in(out, ETH_BYTES + IP_BYTES + UDP_BYTES, payload, snaplen);
    let (eth_ip_header, u) = h.split_at_mut(ETH_BYTES + IP_BYTES);
    let eth_ip_header = eth_ip_header.try_into().expect("sized by frame_in");
    eth_ip(
        eth_ip_header,
        src,
        dst,
        17,
        (IP_BYTES + udp_len) as u16,
        ecn_bits(p),
    );
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    u[6..8].copy_from_slice(&c.to_be_bytes());
    out.cut();
}

/// The IPv4 ECN field of a packet (RFC 3168 §5): CE, ECT(0) or not ECN-capable.
fn ecn_bits(p: &PacketHead) -> u8 {
    if p.has(flags::CE) {
        0b11
    } else if p.has(flags::ECT) {
        0b10
    } else {
        0
    }
}

/// Sum of the TCP/UDP pseudo-header (RFC 793 §3.1, RFC 768).
fn pseudo_sum(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> u64 {
    addr_sum(src) + addr_sum(dst) + proto as u64 + len as u64
}

/// Ethernet II and IPv4 headers (DF, ID 0, TTL 64) with the header checksum, in `h`.
#[inline]
fn eth_ip(
    h: &mut [u8; ETH_BYTES + IP_BYTES],
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    total: u16,
    ecn: u8,
) {
    let fixed_sum = eth_ip_fixed(h, src, dst, proto);
    ip_set_length_ecn(h, fixed_sum, total, ecn);
}

/// What `eth_ip` writes but the length, the ECN field and the checksum (left zero); returns
/// the sum of the IPv4 header's words written.
fn eth_ip_fixed(h: &mut [u8; ETH_BYTES + IP_BYTES], src: [u8; 4], dst: [u8; 4], proto: u8) -> u64 {
    h[0..6].copy_from_slice(&mac(dst));
    h[6..12].copy_from_slice(&mac(src));
    h[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut h[ETH_BYTES..ETH_BYTES + IP_BYTES];
    ip[0] = 0x45;
    ip[4..10].copy_from_slice(&[0, 0, 0x40, 0, 64, proto]);
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    0x4500 + 0x4000 /* ID 0, DF */ + ((64 << 8) | proto as u64) + addr_sum(src) + addr_sum(dst)
}

/// Complete the IPv4 header `eth_ip_fixed` wrote (its words summing to `fixed_sum`): the
/// total length, the ECN field and the checksum, summed from their values.
#[inline]
fn ip_set_length_ecn(h: &mut [u8; ETH_BYTES + IP_BYTES], fixed_sum: u64, total: u16, ecn: u8) {
    let sum = fixed_sum + ecn as u64 + total as u64;
    let ip = &mut h[ETH_BYTES..ETH_BYTES + IP_BYTES];
    ip[1] = ecn;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[10..12].copy_from_slice(&fold_checksum(sum).to_be_bytes());
}

/// The sum of an IPv4 address's two 16-bit words.
#[inline]
fn addr_sum(a: [u8; 4]) -> u64 {
    u16::from_be_bytes([a[0], a[1]]) as u64 + u16::from_be_bytes([a[2], a[3]]) as u64
}

/// The sum of a 32-bit field's two 16-bit words.
#[inline]
fn word_sum(v: u32) -> u64 {
    (v >> 16) as u64 + (v & 0xffff) as u64
}

/// Make room at the end of `out.buf` for a frame of `headers` header bytes and `payload`
/// zero bytes, cut to `snaplen`: zeros, with room for all the headers even where the cut
/// falls inside them (their checksums need all of them); the caller writes the headers
/// there, then cuts the frame (`Frame::cut`). Sets `out.orig_len`.
#[inline]
fn frame_in<'b>(
    out: &'b mut Frame<'_>,
    headers: usize,
    payload: usize,
    snaplen: usize,
) -> &'b mut [u8] {
    let full = headers + payload;
    let at = out.buf.len();
    out.end = at + full.min(snaplen);
    out.orig_len = full as u32;
    out.buf.resize(out.end.max(at + headers), 0);
    &mut out.buf[at..at + headers]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_numerical_example() {
        // RFC 1071 §3: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (after the end-around
        // carry of 2ddf0), so the checksum is its complement, 220d.
        let sum = ones_sum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]);
        assert_eq!(sum, 0x2ddf0);
        assert_eq!(fold_checksum(sum), !0xddf2u16);
        assert_eq!(fold_checksum(sum), 0x220d);
    }

    #[test]
    fn a_published_ipv4_header_checksum() {
        // The worked IPv4 example of the Wikipedia article "Internet checksum"/"IPv4
        // header checksum": 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(fold_checksum(ones_sum(0, &h)), 0xb861);
    }

    #[test]
    fn odd_length_data_is_padded_with_a_zero_byte() {
        assert_eq!(ones_sum(0, &[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    fn wire() -> ConnWire {
        let (sender_ip, receiver_ip, sender_port) = flow_addresses(0);
        ConnWire {
            sender_ip,
            receiver_ip,
            sender_port,
            receiver_port: LISTEN_PORT,
            isn_sender: 0xffff_fff0,
            isn_receiver: 1000,
            timestamps: true,
            sack: true,
            ecn: false,
            wscale_sender: Some(7),
            wscale_receiver: Some(7),
            mss_option: 1460,
            sender_window_bytes: 65_160,
            request_bytes: 0,
            file_bytes: None,
        }
    }

    fn build(
        w: &ConnWire,
        p: &PacketHead,
        sacks: &[SackBlock],
        dir: Dir,
        snap: usize,
    ) -> (Vec<u8>, u32) {
        let mut buf = Vec::new();
        let mut f = Frame::new(&mut buf);
        w.tcp_frame(&w.templates()[dir.index()], p, sacks, dir, snap, &mut f);
        let orig = f.orig_len;
        (buf, orig)
    }

    #[test]
    fn a_full_data_segment_is_a_1514_byte_frame_and_its_headers_say_so() {
        let p = PacketHead {
            kind: PacketKind::Data,
            seq: 20,
            len: 1448,
            wire_bytes: 1500,
            ts_val: 5_300_000,
            ts_ecr: 2_000_000,
            ..Default::default()
        };
        let (b, orig) = build(&wire(), &p, &[], Dir::ToReceiver, 96);
        assert_eq!(orig, 1514);
        assert_eq!(b.len(), 96);
        assert_eq!(&b[12..14], &[0x08, 0x00]);
        assert_eq!(u16::from_be_bytes([b[16], b[17]]), 1500, "IP total length");
        assert_eq!(b[14 + 6], 0x40, "DF");
        assert_eq!(&b[26..30], &[10, 0, 0, 1]);
        assert_eq!(&b[30..34], &[10, 128, 0, 1]);
        let t = 34;
        // ISN 0xfffffff0 + 1 + 20 wraps to 5.
        assert_eq!(u32::from_be_bytes(b[t + 4..t + 8].try_into().unwrap()), 5);
        assert_eq!(b[t + 12] >> 4, 8, "32-byte TCP header");
        assert_eq!(b[t + 13], 0x10, "ACK");
        // 65160 >> 7 = 509.
        assert_eq!(u16::from_be_bytes([b[t + 14], b[t + 15]]), 509);
        assert_eq!(&b[t + 20..t + 24], &[1, 1, 8, 10]);
        assert_eq!(
            u32::from_be_bytes(b[t + 24..t + 28].try_into().unwrap()),
            5,
            "TSval ms"
        );
        assert_eq!(
            u32::from_be_bytes(b[t + 28..t + 32].try_into().unwrap()),
            2,
            "TSecr ms"
        );
        // IP header sums to 0xffff with its checksum in place.
        assert_eq!(fold_checksum(ones_sum(0, &b[14..34])), 0);
    }

    #[test]
    fn the_tcp_checksum_covers_the_pseudo_header_and_the_cut_payload() {
        // Build the whole frame and check the sum over pseudo-header + segment is 0xffff,
        // computed here byte by byte from the frame itself.
        let p = PacketHead {
            kind: PacketKind::Data,
            seq: 0,
            len: 100,
            wire_bytes: 152,
            ts_val: 1,
            ..Default::default()
        };
        let (b, orig) = build(&wire(), &p, &[], Dir::ToReceiver, 65_535);
        assert_eq!(orig as usize, b.len());
        let seg = &b[34..];
        let mut sum = 0u64;
        for pair in b[26..34].chunks(2) {
            sum += u16::from_be_bytes([pair[0], pair[1]]) as u64;
        }
        sum += 6 + seg.len() as u64;
        for pair in seg.chunks(2) {
            sum += ((pair[0] as u64) << 8) | *pair.get(1).unwrap_or(&0) as u64;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }

    #[test]
    fn an_ack_with_three_sack_blocks_fills_its_80_bytes_in_linux_layout() {
        let p = PacketHead {
            kind: PacketKind::Ack,
            ack: 1448,
            wnd: 1 << 20,
            n_sack: 3,
            wire_bytes: 80,
            ts_val: 7_000_000,
            ..Default::default()
        };
        let blocks = [
            SackBlock {
                start: 2896,
                end: 4344,
            },
            SackBlock {
                start: 5792,
                end: 7240,
            },
            SackBlock {
                start: 8688,
                end: 10136,
            },
        ];
        let (b, orig) = build(&wire(), &p, &blocks, Dir::ToSender, 200);
        assert_eq!(orig, 94);
        let t = 34;
        assert_eq!(b[t + 12] >> 4, 15, "60-byte header: 20 + 12 + 28");
        assert_eq!(&b[t + 32..t + 36], &[1, 1, 5, 26]);
        let le = u32::from_be_bytes(b[t + 36..t + 40].try_into().unwrap());
        assert_eq!(le, 0xffff_fff0u32.wrapping_add(1 + 2896));
        // 1 MiB >> 7 = 8192.
        assert_eq!(u16::from_be_bytes([b[t + 14], b[t + 15]]), 8192);
        let ack = u32::from_be_bytes(b[t + 8..t + 12].try_into().unwrap());
        assert_eq!(ack, 0xffff_fff0u32.wrapping_add(1 + 1448));
    }

    #[test]
    fn a_syn_announces_mss_sack_timestamps_and_scale_unscaled_window() {
        let p = PacketHead {
            kind: PacketKind::SynAck,
            wnd: 65_160,
            wire_bytes: 60,
            ts_val: 3_000_000,
            ts_ecr: 1_000_000,
            ..Default::default()
        };
        let (b, _) = build(&wire(), &p, &[], Dir::ToSender, 200);
        let t = 34;
        assert_eq!(b[t + 13], 0x12, "SYN|ACK");
        assert_eq!(u16::from_be_bytes([b[t + 14], b[t + 15]]), 65_160);
        assert_eq!(
            &b[t + 20..t + 40],
            &[2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 3, 0, 0, 0, 1, 1, 3, 3, 7]
        );
    }

    #[test]
    fn ecn_marks_go_into_the_ip_header_and_the_setup_syn_has_ece_cwr() {
        let mut w = wire();
        w.ecn = true;
        let data = PacketHead {
            kind: PacketKind::Data,
            len: 1448,
            wire_bytes: 1500,
            flags: flags::ECT | flags::CE | flags::CWR,
            ..Default::default()
        };
        let (b, _) = build(&w, &data, &[], Dir::ToReceiver, 100);
        assert_eq!(b[15] & 3, 3, "CE");
        assert_eq!(b[34 + 13], 0x90, "ACK|CWR");
        let syn = PacketHead {
            kind: PacketKind::Syn,
            wire_bytes: 60,
            ..Default::default()
        };
        let (b, _) = build(&w, &syn, &[], Dir::ToReceiver, 100);
        assert_eq!(b[34 + 13], 0xc2, "SYN|ECE|CWR");
    }

    #[test]
    fn udp_checksum_and_length() {
        let p = PacketHead {
            kind: PacketKind::Udp,
            wire_bytes: 1028,
            ..Default::default()
        };
        let mut buf = Vec::new();
        let mut f = Frame::new(&mut buf);
        udp_frame(2, &p, 65_535, &mut f);
        assert_eq!(f.orig_len, 1042);
        assert_eq!(u16::from_be_bytes([buf[38], buf[39]]), 1008);
        let mut sum = ones_sum(0, &buf[26..34]) + 17 + 1008;
        sum = ones_sum(sum, &buf[34..]);
        assert_eq!(fold_checksum(sum), 0);
    }
}
