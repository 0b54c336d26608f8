//! A classic pcap file (what `tcpdump -w` writes, µs or ns timestamps, either byte order)
//! rewritten as this module's pcapng: the same frames, with time measured from a given
//! instant (a real-stack run's start, so its captures line up with a simulation's) and the
//! capture point named as the simulator names it. Frames outside a time window (from that
//! instant) are left out, as a simulation's trace window leaves them out.
use super::pcapng::{Header, PcapngWriter};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::Path;

/// What the pcapng file says about itself and its interface.
pub struct Naming<'a> {
    pub if_name: &'a str,
    pub if_description: &'a str,
    pub comment: &'a str,
    pub application: &'a str,
}

fn read_exact_or_eof<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 if got == 0 => return Ok(false),
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => got += n,
        }
    }
    Ok(true)
}

/// Rewrite `src` (classic pcap) as pcapng `dst`, times relative to `t0_ns` (ns since the
/// epoch), keeping the frames in `[window.0, window.1)` of that time; returns the frames
/// written. Errors are one line naming the file.
pub fn pcap_to_pcapng(
    src: &Path,
    dst: &Path,
    t0_ns: u64,
    window: (u64, u64),
    naming: &Naming<'_>,
) -> Result<u64, String> {
    let bad = |why: String| format!("{}: {why}", src.display());
    let file = File::open(src).map_err(|e| bad(format!("cannot read ({e})")))?;
    let mut r = BufReader::new(file);
    let mut head = [0u8; 24];
    if !read_exact_or_eof(&mut r, &mut head).map_err(|e| bad(e.to_string()))? {
        return Err(bad("empty file, not a pcap capture".into()));
    }
    let magic: [u8; 4] = head[0..4].try_into().expect("4 bytes");
    let (big, unit_ns) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (false, 1_000),
        [0xa1, 0xb2, 0xc3, 0xd4] => (true, 1_000),
        [0x4d, 0x3c, 0xb2, 0xa1] => (false, 1),
        [0xa1, 0xb2, 0x3c, 0x4d] => (true, 1),
        _ => return Err(bad("not a pcap capture (unknown magic number)".into())),
    };
    let u32_of = |b: &[u8]| {
        let a: [u8; 4] = b.try_into().expect("4 bytes");
        if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    let snaplen = u32_of(&head[16..20]);
    let linktype = (u32_of(&head[20..24]) & 0xffff) as u16;
    let out = File::create(dst).map_err(|e| format!("cannot write {}: {e}", dst.display()))?;
    let header = Header {
        comment: naming.comment,
        application: naming.application,
        if_name: naming.if_name,
        if_description: naming.if_description,
        linktype,
        snaplen,
    };
    let werr = |e: std::io::Error| format!("cannot write {}: {e}", dst.display());
    let mut w = PcapngWriter::new(BufWriter::new(out), &header).map_err(werr)?;
    let mut rec = [0u8; 16];
    let mut data = Vec::new();
    while read_exact_or_eof(&mut r, &mut rec).map_err(|e| bad(format!("truncated ({e})")))? {
        let t = u32_of(&rec[0..4]) as u64 * 1_000_000_000 + u32_of(&rec[4..8]) as u64 * unit_ns;
        let cap = u32_of(&rec[8..12]) as usize;
        let orig = u32_of(&rec[12..16]);
        if cap > 1 << 24 {
            return Err(bad(format!("a record of {cap} bytes")));
        }
        data.resize(cap, 0);
        r.read_exact(&mut data)
            .map_err(|e| bad(format!("truncated ({e})")))?;
        let rel = t.wrapping_sub(t0_ns);
        if t >= t0_ns && (window.0..window.1).contains(&rel) {
            w.packet(rel, &data, orig, None).map_err(werr)?;
        }
    }
    let packets = w.packets;
    w.finish().map_err(werr)?;
    Ok(packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nanosecond_pcap_becomes_pcapng_from_its_time_zero() {
        let dir = std::env::temp_dir().join(format!("tcplab-convert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, dst) = (dir.join("in.pcap"), dir.join("out.pcapng"));
        // Header: ns magic (LE), version 2.4, snaplen 96, LINKTYPE_RAW; two records at
        // 10.000000005 s and 12.5 s of 3 bytes each.
        let mut b = vec![0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&96u32.to_le_bytes());
        b.extend_from_slice(&101u32.to_le_bytes());
        for (s, ns) in [(10u32, 5u32), (12, 500_000_000)] {
            for v in [s, ns, 3, 40] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&[1, 2, 3]);
        }
        std::fs::write(&src, &b).unwrap();
        let naming = Naming {
            if_name: "bottleneck.sender-side",
            if_description: "",
            comment: "",
            application: "",
        };
        // Time zero at 11 s: the first frame is left out, the second is at 1.5 s.
        let n = pcap_to_pcapng(&src, &dst, 11_000_000_000, (0, u64::MAX), &naming).unwrap();
        assert_eq!(n, 1);
        let out = std::fs::read(&dst).unwrap();
        let epb = out.len() - 36;
        assert_eq!(&out[epb..epb + 4], &6u32.to_le_bytes());
        let lo = u32::from_le_bytes(out[epb + 16..epb + 20].try_into().unwrap());
        assert_eq!(lo, 1_500_000_000);
        assert_eq!(&out[epb + 28..epb + 31], &[1, 2, 3]);
        // The IDB keeps the link type (101) and snap length (96).
        let idb = 32;
        assert_eq!(&out[idb + 8..idb + 10], &101u16.to_le_bytes());
        assert_eq!(&out[idb + 12..idb + 16], &96u32.to_le_bytes());
        // A window ending at 1.5 s leaves it out too.
        let n = pcap_to_pcapng(&src, &dst, 11_000_000_000, (0, 1_500_000_000), &naming).unwrap();
        assert_eq!(n, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
