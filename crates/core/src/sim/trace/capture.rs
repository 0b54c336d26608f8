//! Capture files, each written by a thread of its own.
//!
//! The run's thread decides what a capture point sees and in which order (`Tracer`). It
//! hands the capture's thread (`handoff`) batches of packets — each one's time, direction
//! and a copy of its head and SACK blocks as they were then — and that thread builds their
//! frames (`Framer`) and writes them. So on a machine with a core to spare, building frames
//! and the kernel's copy of the file into the page cache overlap the simulation instead of
//! adding to it. Frames are built and written in the order they were handed over: the file
//! is the same as if the run's thread had written it.
use super::frame::{self, ConnWire, Dir, Frame, HeaderTemplate};
use super::handoff::Handoff;
use super::pcapng::{Direction, PcapngWriter};
use crate::net::packet::{PacketHead, SackBlock};
use std::fs::File;
use std::io;
use std::sync::Arc;

/// Packets in a batch handed over at once: about 0.7 MB of frames at the default snap length.
const BATCH_PACKETS: usize = 4096;

/// What a frame is built from: the traced flows and each connection's headers. Read only
/// once the run starts, by the run's thread (`traced`) and the captures' (`build`).
pub(super) struct Framer {
    pub snaplen: usize,
    /// Per user flow: traced?
    pub flows: Vec<bool>,
    /// Per connection: its flow, its headers and their templates.
    pub conn_flow: Vec<u32>,
    pub wires: Vec<ConnWire>,
    pub templates: Vec<[HeaderTemplate; 2]>,
    /// Flow of each UDP route (routes after the connections' two each).
    pub udp_route_flow: Vec<u32>,
}

impl Framer {
    /// Whether packet `p` is traced (not a flow filtered out, nor cross traffic).
    #[inline]
    pub fn traced(&self, p: &PacketHead) -> bool {
        let route = p.route as usize;
        let n_routes = 2 * self.wires.len();
        if route < n_routes {
            return self.flows[self.conn_flow[route / 2] as usize];
        }
        // routes made during the run (TCP cross traffic's) are not captured either
        let flow = self
            .udp_route_flow
            .get(route - n_routes)
            .copied()
            .unwrap_or(u32::MAX);
        flow != u32::MAX && self.flows[flow as usize]
    }

    /// Append the frame of traced packet `p`, with SACK blocks `sacks`, to `buf`; its
    /// length on the wire.
    fn build(&self, p: &PacketHead, sacks: &[SackBlock], buf: &mut Vec<u8>) -> u32 {
        let route = p.route as usize;
        let n_routes = 2 * self.wires.len();
        let mut f = Frame::new(buf);
        if route < n_routes {
            let dir = if route.is_multiple_of(2) {
                Dir::ToReceiver
            } else {
                Dir::ToSender
            };
            let tpl = &self.templates[route / 2][dir.index()];
            self.wires[route / 2].tcp_frame(tpl, p, sacks, dir, self.snaplen, &mut f);
        } else {
            let flow = self.udp_route_flow[route - n_routes];
            frame::udp_frame(flow, p, self.snaplen, &mut f);
        }
        f.orig_len
    }
}

/// Packets handed to a capture's thread at once, in the order they are written: the time,
/// direction and head of each, and the SACK blocks of those that carry some.
struct Batch {
    times: Vec<u64>,
    dirs: Vec<Direction>,
    heads: Vec<PacketHead>,
    sacks: Vec<[SackBlock; 4]>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            times: Vec::with_capacity(BATCH_PACKETS),
            dirs: Vec::with_capacity(BATCH_PACKETS),
            heads: Vec::with_capacity(BATCH_PACKETS),
            sacks: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.times.clear();
        self.dirs.clear();
        self.heads.clear();
        self.sacks.clear();
    }

    /// Build and write every packet's frame.
    fn write(&self, framer: &Framer, out: &mut PcapngWriter<File>) -> io::Result<()> {
        let mut sacks = self.sacks.iter();
        for ((&t_ns, &dir), head) in self.times.iter().zip(&self.dirs).zip(&self.heads) {
            let blocks: &[SackBlock] = match head.n_sack {
                0 => &[],
                n => &sacks.next().expect("kept with its head")[..n as usize],
            };
            let start = out.start_packet(t_ns);
            let orig_len = framer.build(head, blocks, out.frame_buf());
            out.finish_packet(start, orig_len, Some(dir))?;
        }
        Ok(())
    }
}

/// A capture file and its thread (see the module note).
pub(super) struct CaptureThread {
    batch: Batch,
    /// The file's packets and bytes, once the thread is done.
    handoff: Handoff<Batch, (u64, u64)>,
}

impl CaptureThread {
    /// Start the thread that writes `out` (its header already in it), building frames with
    /// `framer`.
    pub fn start(out: PcapngWriter<File>, framer: Arc<Framer>) -> io::Result<CaptureThread> {
        let handoff = Handoff::spawn(
            "trace-capture",
            (out, framer),
            |(out, framer), batch: &mut Batch| {
                batch.write(framer, out)?;
                batch.clear();
                Ok(())
            },
            |(out, _)| {
                let counts = (out.packets, out.bytes);
                out.finish()?;
                Ok(counts)
            },
        )?;
        Ok(CaptureThread {
            batch: Batch::new(),
            handoff,
        })
    }

    /// Packet `p` (SACK block slots `sacks`) is seen at `t_ns` going `dir`.
    #[inline]
    pub fn push(
        &mut self,
        t_ns: u64,
        dir: Direction,
        p: &PacketHead,
        sacks: &[SackBlock; 4],
    ) -> io::Result<()> {
        let b = &mut self.batch;
        if p.n_sack > 0 {
            b.sacks.push(*sacks);
        }
        b.times.push(t_ns);
        b.dirs.push(dir);
        b.heads.push(*p);
        if b.times.len() >= BATCH_PACKETS {
            return self.hand_over();
        }
        Ok(())
    }

    /// Hand the batch being filled to the thread.
    fn hand_over(&mut self) -> io::Result<()> {
        if self.batch.times.is_empty() {
            return Ok(());
        }
        self.handoff.hand_over(&mut self.batch, Batch::new)
    }

    /// Hand everything over and wait until it is written: the packets and bytes the file
    /// holds, or the first write error.
    pub fn finish(mut self) -> io::Result<(u64, u64)> {
        self.close()
    }

    fn close(&mut self) -> io::Result<(u64, u64)> {
        let handed = self.hand_over();
        self.handoff.join(handed)
    }
}

/// A capture dropped unfinished (its run was interrupted) still gets every frame handed over
/// or being gathered before the drop returns: the file ends with the last packet seen.
impl Drop for CaptureThread {
    fn drop(&mut self) {
        if self.handoff.is_open() {
            let _ = self.close();
        }
    }
}
