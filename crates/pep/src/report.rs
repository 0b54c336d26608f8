//! `--report FILE`: one JSON record per relayed connection, appended to `FILE.records` as
//! each connection ends and assembled into `FILE` when the proxy exits.
//!
//! What a record holds (the README lists every field): the connection's addresses and
//! outcome, per direction the bytes read and written and the relay ring's peak and
//! time-weighted mean occupancy, per socket the congestion control read back and the
//! kernel's `TCP_INFO` at the end of the connection (or at exit for a connection still live
//! then: shutdown aborts it and it is recorded like any other), and a sample log.
//!
//! Sampling: a 100 ms timer inside the connection's own task reads `TCP_INFO` of both
//! sockets and the rings' occupancy (atomics the relay already keeps). The relay's per-byte
//! path gains no lock, syscall or atomic: the ring's peak and bytes read are plain fields of
//! the task's `Pipe`. The mean occupancy weights each sample by the time since the previous
//! one (trapezoids), so a late timer tick does not skew it.
//!
//! Times: `CLOCK_MONOTONIC` in ns, which every network namespace of the host shares, so
//! records of several proxies (and of other programs) can be put on one time line. Sample
//! times are relative to the record's `accepted_mono_ns`.
//!
//! A connection that closed cleanly is recorded once the FINs it sent are acknowledged
//! (bounded by [`SETTLE_LIMIT`] and by shutdown), so its final `TCP_INFO` covers everything
//! the leg delivered. Records go to disk as connections end, so the proxy's memory does not
//! grow with the connections it served. The file is written to a temporary name and renamed
//! over `FILE`, so a reader never sees half of it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use socket2::SockRef;
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::relay::DirSummary;
use crate::sockopt::{self, TcpInfo};
use crate::stats::ConnStats;

/// Period of the per-connection sample timer.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);
/// Samples kept per connection (one hour at 100 ms); later ones are counted, not stored, so a
/// long-lived connection cannot grow the report without bound.
pub const MAX_SAMPLES: usize = 36_000;
/// How long a cleanly closed connection waits for its FINs to be acknowledged before it is
/// recorded anyway.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(5);
/// Poll period while settling (short: on a LAN the last ACK is a fraction of a millisecond
/// away).
const SETTLE_POLL: Duration = Duration::from_millis(10);
/// Format version of the report file.
pub const REPORT_VERSION: u32 = 1;

/// `CLOCK_MONOTONIC` now, in ns.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The records of one proxy run and where they go: each record is appended to the spool
/// file (`FILE.records`, JSON Lines) when its connection ends, so memory does not grow with
/// the connections served; at exit the spool is assembled into `FILE` and removed.
#[derive(Debug)]
pub struct Report {
    path: PathBuf,
    buffer_limit_bytes: u64,
    started_mono_ns: u64,
    /// The spool file, appended to once per connection end, never per byte.
    spool: Mutex<File>,
    /// The first error appending to the spool (reported when the file is written).
    spool_error: Mutex<Option<String>>,
}

impl Report {
    /// Starts a report: creates (truncates) the spool file beside `path`.
    pub fn create(path: PathBuf, buffer_limit_bytes: usize) -> io::Result<Report> {
        let spool = File::create(spool_path(&path))?;
        Ok(Report {
            path,
            buffer_limit_bytes: buffer_limit_bytes as u64,
            started_mono_ns: mono_ns(),
            spool: Mutex::new(spool),
            spool_error: Mutex::new(None),
        })
    }

    /// Startup check: the file's directory exists and takes a file (created and removed).
    pub fn check_writable(path: &Path) -> Result<(), String> {
        let tmp = temp_path(path);
        std::fs::File::create(&tmp)
            .and_then(|_| std::fs::remove_file(&tmp))
            .map_err(|e| format!("--report = {:?}: cannot write there: {e}", path.display()))
    }

    /// Appends one connection's record to the spool (one `write` of one line).
    pub fn push(&self, record: Value) {
        let mut line = match serde_json::to_vec(&record) {
            Ok(line) => line,
            Err(e) => return self.remember(e.to_string()),
        };
        line.push(b'\n');
        let written = match self.spool.lock() {
            Ok(mut file) => file.write_all(&line),
            Err(_) => return,
        };
        if let Err(e) = written {
            self.remember(e.to_string());
        }
    }

    fn remember(&self, e: String) {
        if let Ok(mut first) = self.spool_error.lock() {
            first.get_or_insert(e);
        }
    }

    /// Writes the report file from the spool (atomically: a temporary file renamed over
    /// the target), streaming the records through, and removes the spool.
    /// `still_active`: connection tasks that had not ended, so have no record.
    pub fn write(&self, still_active: u64) -> io::Result<()> {
        if let Some(e) = self.spool_error.lock().ok().and_then(|e| e.clone()) {
            return Err(io::Error::other(format!(
                "{}: {e}",
                spool_path(&self.path).display()
            )));
        }
        let head = json!({
            "version": REPORT_VERSION,
            "clock": "CLOCK_MONOTONIC",
            "started_mono_ns": self.started_mono_ns,
            "written_mono_ns": mono_ns(),
            "sample_interval_ns": SAMPLE_INTERVAL.as_nanos() as u64,
            "buffer_limit_bytes": self.buffer_limit_bytes,
            "still_active": still_active,
        });
        let mut head = serde_json::to_string(&head)?;
        head.pop(); // the closing brace: the records follow
        let tmp = temp_path(&self.path);
        let mut out = BufWriter::new(File::create(&tmp)?);
        out.write_all(head.as_bytes())?;
        out.write_all(b",\"conns\":[")?;
        let spool = BufReader::new(File::open(spool_path(&self.path))?);
        for (i, line) in spool.lines().enumerate() {
            let line = line?;
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(line.as_bytes())?;
        }
        out.write_all(b"]}\n")?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &self.path)?;
        std::fs::remove_file(spool_path(&self.path))
    }
}

/// `FILE.tmp.<pid>` next to `FILE` (same file system, so the rename is atomic).
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// `FILE.records`: the records written so far, one JSON object per line (left behind, with
/// every record up to then, if the proxy is killed before it can write `FILE`).
pub fn spool_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".records");
    path.with_file_name(name)
}

/// One socket's sample columns.
#[derive(Debug, Default)]
struct SocketColumns {
    rtt_us: Vec<u32>,
    total_retrans: Vec<u32>,
    total_rto: Vec<Option<u16>>,
    bytes_acked: Vec<u64>,
    bytes_received: Vec<u64>,
    unacked_pkts: Vec<u32>,
}

impl SocketColumns {
    fn push(&mut self, info: &TcpInfo) {
        self.rtt_us.push(info.rtt_us);
        self.total_retrans.push(info.total_retrans);
        self.total_rto.push(info.total_rto);
        self.bytes_acked.push(info.bytes_acked);
        self.bytes_received.push(info.bytes_received);
        self.unacked_pkts.push(info.unacked_pkts);
    }

    fn put(&self, prefix: &str, out: &mut serde_json::Map<String, Value>) {
        out.insert(format!("{prefix}_rtt_us"), json!(self.rtt_us));
        out.insert(format!("{prefix}_total_retrans"), json!(self.total_retrans));
        out.insert(format!("{prefix}_total_rto"), json!(self.total_rto));
        out.insert(format!("{prefix}_bytes_acked"), json!(self.bytes_acked));
        out.insert(
            format!("{prefix}_bytes_received"),
            json!(self.bytes_received),
        );
        out.insert(format!("{prefix}_unacked_pkts"), json!(self.unacked_pkts));
    }
}

/// Running time-weighted occupancy of one ring.
#[derive(Debug, Default, Clone, Copy)]
struct Occupancy {
    /// Σ (b[i-1] + b[i]) / 2 × (t[i] - t[i-1]), byte·ns.
    area: u128,
    last_bytes: u64,
}

/// The sample log of one connection, filled by its own task.
#[derive(Debug)]
pub struct Sampler {
    accepted_mono_ns: u64,
    t_ns: Vec<u64>,
    buffered_up_bytes: Vec<u64>,
    buffered_down_bytes: Vec<u64>,
    client: SocketColumns,
    server: SocketColumns,
    dropped: u64,
    first_t_ns: Option<u64>,
    last_t_ns: u64,
    up: Occupancy,
    down: Occupancy,
}

impl Sampler {
    pub fn new(accepted_mono_ns: u64) -> Sampler {
        Sampler {
            accepted_mono_ns,
            t_ns: Vec::new(),
            buffered_up_bytes: Vec::new(),
            buffered_down_bytes: Vec::new(),
            client: SocketColumns::default(),
            server: SocketColumns::default(),
            dropped: 0,
            first_t_ns: None,
            last_t_ns: 0,
            up: Occupancy::default(),
            down: Occupancy::default(),
        }
    }

    /// One sample: both sockets' `TCP_INFO` and both rings' occupancy. A socket whose
    /// `TCP_INFO` cannot be read (already torn down) reads as zeros in that sample.
    pub fn sample(&mut self, conn: &ConnStats, client: &TcpStream, server: &TcpStream) {
        let t = mono_ns().saturating_sub(self.accepted_mono_ns);
        let up = conn.buffered_up.load(Relaxed);
        let down = conn.buffered_down.load(Relaxed);
        match self.first_t_ns {
            None => self.first_t_ns = Some(t),
            Some(_) => {
                let dt = u128::from(t.saturating_sub(self.last_t_ns));
                self.up.area += u128::from(self.up.last_bytes + up) * dt / 2;
                self.down.area += u128::from(self.down.last_bytes + down) * dt / 2;
            }
        }
        self.last_t_ns = t;
        self.up.last_bytes = up;
        self.down.last_bytes = down;
        if self.t_ns.len() >= MAX_SAMPLES {
            self.dropped += 1;
            return;
        }
        let info = |s: &TcpStream| sockopt::tcp_info(SockRef::from(s)).unwrap_or_default();
        self.t_ns.push(t);
        self.buffered_up_bytes.push(up);
        self.buffered_down_bytes.push(down);
        self.client.push(&info(client));
        self.server.push(&info(server));
    }

    /// Samples every [`SAMPLE_INTERVAL`] until the future is dropped (the relay ended).
    pub async fn run(
        &mut self,
        conn: &ConnStats,
        client: &TcpStream,
        server: &TcpStream,
    ) -> std::convert::Infallible {
        let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.sample(conn, client, server);
        }
    }

    /// Time-weighted mean of a ring's occupancy over the sampled time, bytes (None before
    /// two samples).
    fn mean(&self, occ: &Occupancy) -> Option<f64> {
        let span = self.last_t_ns.saturating_sub(self.first_t_ns?);
        (span > 0).then(|| occ.area as f64 / span as f64)
    }

    fn columns(&self) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("t_ns".into(), json!(self.t_ns));
        out.insert("buffered_up_bytes".into(), json!(self.buffered_up_bytes));
        out.insert(
            "buffered_down_bytes".into(),
            json!(self.buffered_down_bytes),
        );
        self.client.put("client", &mut out);
        self.server.put("server", &mut out);
        Value::Object(out)
    }
}

/// Waits until both sockets' FINs are acknowledged (their final `TCP_INFO` then counts every
/// byte), at most [`SETTLE_LIMIT`], or until shutdown.
pub async fn settle(client: &TcpStream, server: &TcpStream, shutdown: &mut watch::Receiver<bool>) {
    let acked = |s: &TcpStream| {
        sockopt::tcp_info(SockRef::from(s))
            .map(|i| i.fin_acked())
            .unwrap_or(true)
    };
    let wait = async {
        while !(acked(client) && acked(server)) {
            tokio::time::sleep(SETTLE_POLL).await;
        }
    };
    tokio::select! {
        _ = wait => {}
        _ = tokio::time::sleep(SETTLE_LIMIT) => {}
        _ = shutdown.wait_for(|v| *v) => {}
    }
}

/// Everything known about a connection when it ends.
pub struct ConnEnd<'a> {
    pub conn: &'a ConnStats,
    pub outcome: &'a str,
    pub error: Option<&'a str>,
    pub accepted_mono_ns: u64,
    pub client: &'a TcpStream,
    /// None when the upstream leg never connected.
    pub server: Option<&'a TcpStream>,
    /// (client→server, server→client); zeros when nothing was relayed.
    pub dirs: (DirSummary, DirSummary),
    pub sampler: Option<&'a Sampler>,
}

fn tcp_info_json(info: &TcpInfo) -> Value {
    json!({
        "state": info.state_name(),
        "ca_state": info.ca_state,
        "rtt_us": info.rtt_us,
        "rttvar_us": info.rttvar_us,
        "min_rtt_us": info.min_rtt_us,
        "rto_us": info.rto_us,
        "snd_mss_bytes": info.snd_mss_bytes,
        "snd_cwnd_pkts": info.snd_cwnd_pkts,
        "snd_cwnd_bytes": info.snd_cwnd_bytes(),
        "snd_ssthresh_pkts": info.snd_ssthresh_pkts,
        "unacked_pkts": info.unacked_pkts,
        "lost_pkts": info.lost_pkts,
        "total_retrans": info.total_retrans,
        "total_rto": info.total_rto,
        "bytes_acked": info.bytes_acked,
        "bytes_received": info.bytes_received,
        "bytes_sent": info.bytes_sent,
        "bytes_retrans": info.bytes_retrans,
        "segs_out": info.segs_out,
        "segs_in": info.segs_in,
        "data_segs_out": info.data_segs_out,
        "data_segs_in": info.data_segs_in,
        "delivery_rate_bps": info.delivery_rate_bps,
        "pacing_rate_bps": info.pacing_rate_bps,
        "notsent_bytes": info.notsent_bytes,
    })
}

fn socket_json(s: &TcpStream, cca: &Mutex<String>) -> Value {
    let sock = SockRef::from(s);
    // No addresses here: a closed socket has no peer any more; the record names both ends.
    json!({
        "cca": cca.lock().map(|c| c.clone()).unwrap_or_default(),
        "tcp_info": sockopt::tcp_info(sock).ok().map(|i| tcp_info_json(&i)),
    })
}

fn dir_json(d: &DirSummary, mean: Option<f64>) -> Value {
    json!({
        "bytes_read": d.bytes_read,
        "bytes_written": d.bytes_written,
        "peak_buffered_bytes": d.peak_buffered_bytes,
        "mean_buffered_bytes": mean,
    })
}

fn addr(a: Option<SocketAddr>) -> Value {
    a.map_or(Value::Null, |a| Value::String(a.to_string()))
}

/// The connection's record (read while both sockets are still open).
pub fn conn_record(end: &ConnEnd<'_>) -> Value {
    let c = end.conn;
    let upstream_local = c.upstream_local.lock().ok().and_then(|a| *a);
    let (mean_up, mean_down) = end
        .sampler
        .map_or((None, None), |s| (s.mean(&s.up), s.mean(&s.down)));
    json!({
        "id": c.id,
        "client": c.client.to_string(),
        "upstream": c.upstream.to_string(),
        "upstream_local": addr(upstream_local),
        "outcome": end.outcome,
        "error": end.error,
        "accepted_mono_ns": end.accepted_mono_ns,
        "ended_mono_ns": mono_ns(),
        "up": dir_json(&end.dirs.0, mean_up),
        "down": dir_json(&end.dirs.1, mean_down),
        "sockets": {
            "client": socket_json(end.client, &c.cca_downstream),
            "server": end.server.map(|s| socket_json(s, &c.cca_upstream)),
        },
        "samples": end.sampler.map(Sampler::columns),
        "samples_dropped": end.sampler.map_or(0, |s| s.dropped),
    })
}
