//! A pcapng writer (draft-ietf-opsawg-pcapng): one Section Header Block, one Interface
//! Description Block with nanosecond timestamps (`if_tsresol` = 9), then one Enhanced
//! Packet Block per packet, written as they come (a `BufWriter`: memory stays bounded
//! whatever the run's length). Little-endian, as the byte-order magic says; every block and
//! option is padded to 32 bits.
use std::io::{self, Write};

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

/// A pcapng file being written.
pub struct PcapngWriter<W: Write> {
    out: W,
    scratch: Vec<u8>,
    snaplen: u32,
    pub packets: u64,
    pub bytes: u64,
}

impl<W: Write> PcapngWriter<W> {
    /// Write the section header and the interface description.
    pub fn new(mut out: W, h: &Header<'_>) -> io::Result<Self> {
        let mut buf = Vec::with_capacity(256);
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
        out.write_all(&buf)?;
        let bytes = buf.len() as u64;
        Ok(PcapngWriter {
            out,
            scratch: buf,
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
        let data = &data[..data.len().min(self.snaplen as usize)];
        let b = &mut self.scratch;
        b.clear();
        let opts = if dir.is_some() { 12 } else { 0 };
        let total = (32 + pad4(data.len()) + opts) as u32;
        push_u32(b, EPB);
        push_u32(b, total);
        push_u32(b, 0); // interface 0
        push_u32(b, (t_ns >> 32) as u32);
        push_u32(b, t_ns as u32);
        push_u32(b, data.len() as u32);
        push_u32(b, orig_len);
        b.extend_from_slice(data);
        b.resize(b.len() + pad4(data.len()) - data.len(), 0);
        if let Some(d) = dir {
            push_u16(b, EPB_FLAGS);
            push_u16(b, 4);
            push_u32(b, d as u32);
            push_u32(b, 0); // opt_endofopt
        }
        push_u32(b, total);
        self.out.write_all(b)?;
        self.packets += 1;
        self.bytes += total as u64;
        Ok(())
    }

    /// Flush and hand back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
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
        // "hello": code 1, length 5, 3 bytes of padding.
        let shb_len = u32::from_le_bytes(w.scratch[4..8].try_into().unwrap());
        assert_eq!(shb_len, 32 + 12);
        assert_eq!(
            &w.scratch[24..36],
            &[1, 0, 5, 0, b'h', b'e', b'l', b'l', b'o', 0, 0, 0]
        );
        let data = vec![7u8; 200];
        w.packet(0, &data, 200, None).unwrap();
        assert_eq!(
            u32::from_le_bytes(w.scratch[20..24].try_into().unwrap()),
            96
        );
        assert_eq!(
            u32::from_le_bytes(w.scratch[24..28].try_into().unwrap()),
            200
        );
        assert_eq!(w.scratch.len(), 32 + 96);
    }
}
