//! The binary series file a run streams its per-interval samples to (`api::run_json_series`):
//! the only file an untraced run's core writes (a traced run's captures and event log are
//! `sim::trace`'s), so that a run's memory does not grow with its duration.
//! The simulation itself does no I/O; it hands chunks to this `SeriesSink`.
//!
//! Layout (little-endian; `docs/interface.md` "Series file"):
//!
//! ```text
//! header  b"TCPLABSR"  u32 version (1)  u32 n_flows  u64 interval_ns
//! chunk   u32 n (> 0: intervals in the chunk)
//!         u64 t_ns[n]  f64 bottleneck_queue_pkts[n]  f64 bottleneck_utilization[n]
//!         then per flow, flow after flow (flow-major), n values each:
//!         f64 goodput_bps  f64 throughput_bps  f64 rtt_mean_ns (NaN: no sample)
//!         u64 cwnd_bytes  u64 retransmits
//! end     u32 0  u64 intervals (the total, as a check that nothing is missing)
//! ```
//!
//! A file without the end record is from a run that did not finish.
use crate::sim::series::{SeriesChunk, SeriesSink};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// First bytes of a series file.
pub const MAGIC: &[u8; 8] = b"TCPLABSR";
/// Version of the layout above.
pub const VERSION: u32 = 1;

/// Writes chunks to a series file as they come.
pub struct SeriesFile {
    path: PathBuf,
    out: BufWriter<File>,
    buf: Vec<u8>,
    intervals: u64,
}

impl SeriesFile {
    /// Create (or truncate) `path` and write the header. Errors name the path.
    pub fn create(path: &Path, n_flows: usize, interval_ns: u64) -> Result<SeriesFile, String> {
        let file = File::create(path).map_err(|e| io_error(path, &e))?;
        let mut f = SeriesFile {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, file),
            buf: Vec::new(),
            intervals: 0,
        };
        f.buf.extend_from_slice(MAGIC);
        f.buf.extend_from_slice(&VERSION.to_le_bytes());
        f.buf.extend_from_slice(&(n_flows as u32).to_le_bytes());
        f.buf.extend_from_slice(&interval_ns.to_le_bytes());
        f.put()?;
        Ok(f)
    }

    fn put(&mut self) -> Result<(), String> {
        let r = self.out.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|e| io_error(&self.path, &e))
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> String {
    format!("series file {}: {e}", path.display())
}

fn put_u64s<'a>(buf: &mut Vec<u8>, values: impl IntoIterator<Item = &'a u64>) {
    for v in values {
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

fn put_f64s<'a>(buf: &mut Vec<u8>, values: impl IntoIterator<Item = &'a f64>) {
    for v in values {
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

impl SeriesSink for SeriesFile {
    fn write(&mut self, chunk: &SeriesChunk) -> Result<(), String> {
        let n = chunk.t_ns.len();
        let b = &mut self.buf;
        b.extend_from_slice(&(n as u32).to_le_bytes());
        put_u64s(b, &chunk.t_ns);
        put_f64s(b, &chunk.bottleneck_queue_pkts);
        put_f64s(b, &chunk.bottleneck_utilization);
        for f in &chunk.flows {
            put_f64s(b, &f.goodput_bps);
        }
        for f in &chunk.flows {
            put_f64s(b, &f.throughput_bps);
        }
        for f in &chunk.flows {
            for v in &f.rtt_mean_ns {
                b.extend_from_slice(&v.unwrap_or(f64::NAN).to_le_bytes());
            }
        }
        for f in &chunk.flows {
            put_u64s(b, &f.cwnd_bytes);
        }
        for f in &chunk.flows {
            put_u64s(b, &f.retransmits);
        }
        self.intervals += n as u64;
        self.put()
    }

    fn finish(&mut self) -> Result<(), String> {
        self.buf.extend_from_slice(&0u32.to_le_bytes());
        self.buf.extend_from_slice(&self.intervals.to_le_bytes());
        self.put()?;
        self.out.flush().map_err(|e| io_error(&self.path, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::series::FlowSeries;

    #[test]
    fn layout_is_header_chunks_and_end_record() {
        let dir = std::env::temp_dir().join(format!("tcplab-sf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.bin");
        let mut f = SeriesFile::create(&path, 1, 5).unwrap();
        let chunk = SeriesChunk {
            t_ns: vec![5, 10],
            flows: vec![FlowSeries {
                id: 0,
                goodput_bps: vec![1.5, 2.5],
                throughput_bps: vec![3.0, 4.0],
                rtt_mean_ns: vec![None, Some(7.0)],
                cwnd_bytes: vec![8, 9],
                retransmits: vec![0, 1],
            }],
            bottleneck_queue_pkts: vec![0.25, 0.5],
            bottleneck_utilization: vec![1.0, 0.75],
        };
        f.write(&chunk).unwrap();
        f.finish().unwrap();
        drop(f);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // header 24, chunk 4 + 2 x 8 x (3 + 5), end 12
        assert_eq!(bytes.len(), 24 + 4 + 128 + 12);
        assert_eq!(&bytes[..8], b"TCPLABSR");
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let f64_at = |i: usize| f64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        assert_eq!((u32_at(8), u32_at(12), u64_at(16)), (1, 1, 5));
        assert_eq!(u32_at(24), 2);
        assert_eq!((u64_at(28), u64_at(36)), (5, 10));
        assert_eq!((f64_at(44), f64_at(60)), (0.25, 1.0));
        assert_eq!((f64_at(76), f64_at(84)), (1.5, 2.5)); // goodput
        assert!(f64_at(108).is_nan() && f64_at(116) == 7.0); // rtt: no sample, then 7
        assert_eq!((u64_at(140), u64_at(148)), (0, 1)); // retransmits
        assert_eq!((u32_at(156), u64_at(160)), (0, 2)); // end record
    }

    #[test]
    fn a_missing_directory_is_a_one_line_error_naming_the_path() {
        let e = SeriesFile::create(Path::new("/nonexistent-dir/x.bin"), 1, 1)
            .err()
            .unwrap();
        assert!(e.starts_with("series file /nonexistent-dir/x.bin: "), "{e}");
        assert!(!e.contains('\n'));
    }
}
