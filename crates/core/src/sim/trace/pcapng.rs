//! A pcapng writer (draft-ietf-opsawg-pcapng): one Section Header Block, one Interface
//! Description Block with nanosecond timestamps (`if_tsresol` = 9), then one Enhanced
//! Packet Block per packet, written as they come (a megabyte at a time, handed to a
//! `Sink`: memory stays bounded whatever the run's length). Little-endian, as the
//! byte-order magic says; every block and option is padded to 32 bits.
use super::output::Sink;
use std::io;

/// Block types.
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Option codes.
const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;

/// Link types (LINKTYPE_*, tcpdump.org).
pub const LINKTYPE_ETHERNET: u16 = 1;
pub const LINKTYPE_RAW: u16 = 101;

/// Direction of a packet at its capture point (`epb_flags` bits 0–1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    Inbound = 1,
    Outbound = 2,
}

/// What the file and its one interface are.
pub struct Header<'a> {
    /// The section's comment: what was captured (scenario, seed, model version).
    pub comment: &'a str,
    /// `shb_userappl`: the writing application and its version.
    pub application: &'a str,
    pub if_name: &'a str,
    pub if_description: &'a str,
    pub linktype: u16,
    pub snaplen: u32,
}

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

fn push_u16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn push_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn push_option(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    push_u16(b, code);
    push_u16(b, value.len() as u16);
    b.extend_from_slice(value);
    b.resize(b.len() + pad4(value.len()) - value.len(), 0);
}

/// Wrap `body` (everything between the length fields) into a block of type `kind`.
fn block(kind: u32, body: &[u8], out: &mut Vec<u8>) {
    let total = (12 + body.len()) as u32;
    push_u32(out, kind);
    push_u32(out, total);
    out.extend_from_slice(body);
    push_u32(out, total);
}

/// Bytes of an Enhanced Packet Block before its data.
const EPB_HEAD_BYTES: usize = 28;
/// Bytes a writer gathers before it hands them to its output in one write.
const PENDING_BYTES: usize = 1 << 20;

/// Start an Enhanced Packet Block seen at `t_ns` at the end of `b`: its head, with the
/// lengths left to `end_epb`, which completes it once the frame's bytes follow. Returns
/// where the block starts.
fn begin_epb(b: &mut Vec<u8>, t_ns: u64) -> usize {
    let start = b.len();
    let mut head = [0u8; EPB_HEAD_BYTES];
    head[0..4].copy_from_slice(&EPB.to_le_bytes());
    // interface 0; then the timestamp's high and low words
    head[12..16].copy_from_slice(&((t_ns >> 32) as u32).to_le_bytes());
    head[16..20].copy_from_slice(&(t_ns as u32).to_le_bytes());
    b.extend_from_slice(&head);
    start
}

/// Complete the block `begin_epb` started at `start`: what follows its head is the frame's
/// data (cut to `snaplen`) of a frame of `orig_len` bytes.
fn end_epb(b: &mut Vec<u8>, start: usize, snaplen: u32, orig_len: u32, dir: Option<Direction>) {
    let data_at = start + EPB_HEAD_BYTES;
    let cap = (b.len() - data_at).min(snaplen as usize);
    b.truncate(data_at + cap);
    let padded = pad4(cap);
    b.resize(data_at + padded, 0);
    let opts = if dir.is_some() { 12 } else { 0 };
    let total = (EPB_HEAD_BYTES + padded + opts + 4) as u32;
    match dir {
        Some(d) => {
            // flags option, end of options, block length: every field at a fixed place, so
            // the tail is assembled in registers and stored whole
            let mut tail = [0u8; 16];
            tail[0..2].copy_from_slice(&EPB_FLAGS.to_le_bytes());
            tail[2..4].copy_from_slice(&4u16.to_le_bytes());
            tail[4..8].copy_from_slice(&(d as u32).to_le_bytes());
            tail[12..16].copy_from_slice(&total.to_le_bytes());
            b.extend_from_slice(&tail);
        }
        None => b.extend_from_slice(&total.to_le_bytes()),
    }
    b[start + 4..start + 8].copy_from_slice(&total.to_le_bytes());
    b[start + 20..start + 24].copy_from_slice(&(cap as u32).to_le_bytes());
    b[start + 24..start + 28].copy_from_slice(&orig_len.to_le_bytes());
}

/// A pcapng file being written. Blocks gather in `pending` and go to the output a
/// megabyte at a time; a frame is built in place there (`start_packet`). A writer dropped
/// unfinished (its run was interrupted) still hands its output the whole blocks it
/// gathered, as a `BufWriter` does: the file ends with the last packet written.
pub struct PcapngWriter<W: Sink> {
    /// `None` once `finish` took it.
    out: Option<W>,
    pending: Vec<u8>,
    snaplen: u32,
    pub packets: u64,
    pub bytes: u64,
}

impl<W: Sink> PcapngWriter<W> {
    /// Write the section header and the interface description.
    pub fn new(out: W, h: &Header<'_>) -> io::Result<Self> {
        let mut buf = Vec::with_capacity(PENDING_BYTES + 4096);
        let mut body = Vec::with_capacity(128);
        push_u32(&mut body, BYTE_ORDER_MAGIC);
        push_u16(&mut body, 1);
        push_u16(&mut body, 0);
        body.extend_from_slice(&u64::MAX.to_le_bytes()); // section length: not given
        if !h.comment.is_empty() {
            push_option(&mut body, OPT_COMMENT, h.comment.as_bytes());
        }
        if !h.application.is_empty() {
            push_option(&mut body, SHB_USERAPPL, h.application.as_bytes());
        }
        push_option(&mut body, OPT_ENDOFOPT, &[]);
        block(SHB, &body, &mut buf);
        body.clear();
        push_u16(&mut body, h.linktype);
        push_u16(&mut body, 0);
        push_u32(&mut body, h.snaplen);
        push_option(&mut body, IF_NAME, h.if_name.as_bytes());
        if !h.if_description.is_empty() {
            push_option(&mut body, IF_DESCRIPTION, h.if_description.as_bytes());
        }
        push_option(&mut body, IF_TSRESOL, &[9]);
        push_option(&mut body, OPT_ENDOFOPT, &[]);
        block(IDB, &body, &mut buf);
        let bytes = buf.len() as u64;
        Ok(PcapngWriter {
            out: Some(out),
            pending: buf,
            snaplen: h.snaplen,
            packets: 0,
            bytes,
        })
    }

    /// One packet: `data` (at most the snap length, cut here otherwise) of a frame of
    /// `orig_len` bytes, seen at `t_ns` (ns since the epoch of the capture).
    pub fn packet(
        &mut self,
        t_ns: u64,
        data: &[u8],
        orig_len: u32,
        dir: Option<Direction>,
    ) -> io::Result<()> {
        let start = self.start_packet(t_ns);
        self.frame_buf().extend_from_slice(data);
        self.finish_packet(start, orig_len, dir)
    }

    /// Start a packet seen at `t_ns`: its frame's bytes are then appended to `frame_buf`,
    /// and `finish_packet` is given what this returns.
    #[inline]
    pub fn start_packet(&mut self, t_ns: u64) -> usize {
        begin_epb(&mut self.pending, t_ns)
    }

    /// Where a started packet's frame goes (appended).
    #[inline]
    pub fn frame_buf(&mut self) -> &mut Vec<u8> {
        &mut self.pending
    }

    /// Complete the packet started at `start`, a frame of `orig_len` bytes.
    pub fn finish_packet(
        &mut self,
        start: usize,
        orig_len: u32,
        dir: Option<Direction>,
    ) -> io::Result<()> {
        end_epb(&mut self.pending, start, self.snaplen, orig_len, dir);
        self.written(start)
    }

    fn written(&mut self, start: usize) -> io::Result<()> {
        self.packets += 1;
        self.bytes += (self.pending.len() - start) as u64;
        if self.pending.len() >= PENDING_BYTES {
            let out = self.out.as_mut().expect("written to until finished");
            out.put(&mut self.pending)?;
        }
        Ok(())
    }

    /// Hand the output the last blocks, and the output back.
    pub fn finish(mut self) -> io::Result<W> {
        let mut out = self.out.take().expect("finished once");
        out.put(&mut self.pending)?;
        Ok(out)
    }
}

impl<W: Sink> Drop for PcapngWriter<W> {
    fn drop(&mut self) {
        if let Some(out) = self.out.as_mut() {
            // unfinished: the blocks gathered are whole; an error here has no one to tell
            // (the interrupted run reports its own)
            let _ = out.put(&mut self.pending);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(comment: &'a str) -> Header<'a> {
        Header {
            comment,
            application: "",
            if_name: "eth0",
            if_description: "",
            linktype: LINKTYPE_ETHERNET,
            snaplen: 96,
        }
    }

    #[test]
    fn section_and_interface_blocks_match_the_spec_byte_for_byte() {
        // SHB (spec §4.1): type 0A0D0D0A, total length 32 (28 + opt_endofopt), magic
        // 1A2B3C4D (LE: 4D 3C 2B 1A), version 1.0, section length -1, opt_endofopt, length.
        // IDB (§4.2): type 1, length 20 + options, LinkType 1, reserved, SnapLen 96,
        // if_name "eth0" (code 2, length 4), if_tsresol 9 (code 9, length 1, padded),
        // opt_endofopt, length.
        let w = PcapngWriter::new(Vec::new(), &header("")).unwrap();
        let bytes = w.finish().unwrap();
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            0x0A, 0x0D, 0x0D, 0x0A, 32, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0,
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 32, 0, 0, 0,
            1, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 96, 0, 0, 0,
            2, 0, 4, 0, b'e', b't', b'h', b'0',
            9, 0, 1, 0, 9, 0, 0, 0,
            0, 0, 0, 0, 40, 0, 0, 0,
        ];
        assert_eq!(bytes, expected);
    }

    #[test]
    fn an_enhanced_packet_block_splits_the_ns_timestamp_and_pads_the_data() {
        let mut w = PcapngWriter::new(Vec::new(), &header("")).unwrap();
        let start = w.bytes as usize;
        // t = 5_000_000_001 ns = 0x1_2A05_F201: high word 1, low word 0x2A05F201.
        w.packet(
            5_000_000_001,
            &[0xAA, 0xBB, 0xCC],
            1514,
            Some(Direction::Outbound),
        )
        .unwrap();
        let bytes = w.finish().unwrap();
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            6, 0, 0, 0, 48, 0, 0, 0, 0, 0, 0, 0,
            1, 0, 0, 0, 0x01, 0xF2, 0x05, 0x2A,
            3, 0, 0, 0, 0xEA, 0x05, 0, 0,
            0xAA, 0xBB, 0xCC, 0,
            2, 0, 4, 0, 2, 0, 0, 0, 0, 0, 0, 0,
            48, 0, 0, 0,
        ];
        assert_eq!(&bytes[start..], &expected[..]);
    }

    #[test]
    fn comment_option_is_padded_and_data_beyond_the_snap_length_is_cut() {
        let mut w = PcapngWriter::new(Vec::new(), &header("hello")).unwrap();
        let start = w.bytes as usize;
        let data = vec![7u8; 200];
        w.packet(0, &data, 200, None).unwrap();
        let bytes = w.finish().unwrap();
        // "hello": code 1, length 5, 3 bytes of padding.
        let shb_len = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        assert_eq!(shb_len, 32 + 12);
        assert_eq!(
            &bytes[24..36],
            &[1, 0, 5, 0, b'h', b'e', b'l', b'l', b'o', 0, 0, 0]
        );
        let epb = &bytes[start..];
        assert_eq!(u32::from_le_bytes(epb[20..24].try_into().unwrap()), 96);
        assert_eq!(u32::from_le_bytes(epb[24..28].try_into().unwrap()), 200);
        assert_eq!(epb.len(), 32 + 96);
    }

    #[test]
    fn a_writer_dropped_unfinished_leaves_the_blocks_it_gathered() {
        let mut finished = PcapngWriter::new(Vec::new(), &header("run")).unwrap();
        let mut dropped_out = Vec::new();
        let mut dropped = PcapngWriter::new(&mut dropped_out, &header("run")).unwrap();
        for t in 0..3u64 {
            let data = [t as u8; 60];
            finished
                .packet(t, &data, 60, Some(Direction::Inbound))
                .unwrap();
            dropped
                .packet(t, &data, 60, Some(Direction::Inbound))
                .unwrap();
        }
        drop(dropped);
        let expected = finished.finish().unwrap();
        // the section header (32 bytes, 8 more for the comment), the interface's (40) and
        // three blocks of 28 + 60 + 12 + 4 bytes: not a byte more or less
        assert_eq!(dropped_out.len(), 32 + 8 + 40 + 3 * 104);
        assert_eq!(dropped_out, expected);
    }
}
