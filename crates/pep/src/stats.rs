//! Counters shared by the accept loop, the connection tasks and the stats endpoint.
//!
//! All counters are atomics updated where the event happens; the registry of live connections
//! is a `Mutex<BTreeMap>` touched only when a connection starts or ends and when stats are
//! read, never per byte. `buffered_bytes` is the user data the proxy holds in its relay rings
//! (read from one socket, not yet written to the other), which is what `--buffer` bounds.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

/// Proxy-wide counters.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted by the listener (including refused ones).
    pub accepted: AtomicU64,
    /// Connections being relayed now (upstream connect included).
    pub active: AtomicU64,
    /// Connections reset at once because `--max-conns` was reached.
    pub refused: AtomicU64,
    /// Connections whose upstream connect failed or timed out (the client was reset).
    pub upstream_failed: AtomicU64,
    /// Connections that ended with a FIN in both directions.
    pub closed: AtomicU64,
    /// Connections aborted because the client side reset or failed.
    pub reset_by_client: AtomicU64,
    /// Connections aborted because the server side reset or failed.
    pub reset_by_server: AtomicU64,
    /// Connections aborted by SIGTERM/SIGINT.
    pub aborted_at_shutdown: AtomicU64,
    /// Bytes written to servers (client→server direction).
    pub bytes_up: AtomicU64,
    /// Bytes written to clients (server→client direction).
    pub bytes_down: AtomicU64,
    /// User bytes held in relay rings now, all connections.
    pub buffered_bytes: AtomicU64,
    /// High-water mark of `buffered_bytes`.
    pub peak_buffered_bytes: AtomicU64,
    /// High-water mark of one direction of one connection (bounded by `--buffer`).
    pub peak_direction_buffered_bytes: AtomicU64,
    /// Live connections by id.
    pub conns: Mutex<BTreeMap<u64, Arc<ConnStats>>>,
}

/// Per-connection record, visible in the stats endpoint while the connection lives.
#[derive(Debug)]
pub struct ConnStats {
    pub id: u64,
    pub client: SocketAddr,
    /// The server address this connection is relayed to.
    pub upstream: SocketAddr,
    pub started: Instant,
    /// TCP_CONGESTION read back (getsockopt) from the client-side socket.
    pub cca_downstream: Mutex<String>,
    /// TCP_CONGESTION read back (getsockopt) from the server-side socket.
    pub cca_upstream: Mutex<String>,
    /// Local address of the server-side socket (the client's address when spoofing).
    pub upstream_local: Mutex<Option<SocketAddr>>,
    pub bytes_up: AtomicU64,
    pub bytes_down: AtomicU64,
    pub buffered_up: AtomicU64,
    pub buffered_down: AtomicU64,
}

impl ConnStats {
    pub fn new(id: u64, client: SocketAddr, upstream: SocketAddr) -> ConnStats {
        ConnStats {
            id,
            client,
            upstream,
            started: Instant::now(),
            cca_downstream: Mutex::new(String::new()),
            cca_upstream: Mutex::new(String::new()),
            upstream_local: Mutex::new(None),
            bytes_up: AtomicU64::new(0),
            bytes_down: AtomicU64::new(0),
            buffered_up: AtomicU64::new(0),
            buffered_down: AtomicU64::new(0),
        }
    }

    fn to_json(&self) -> Value {
        let lock = |m: &Mutex<String>| m.lock().map(|s| s.clone()).unwrap_or_default();
        json!({
            "id": self.id,
            "client": self.client.to_string(),
            "upstream": self.upstream.to_string(),
            "upstream_local": self.upstream_local.lock().ok().and_then(|a| *a).map(|a| a.to_string()),
            "cca_downstream": lock(&self.cca_downstream),
            "cca_upstream": lock(&self.cca_upstream),
            "age_ms": self.started.elapsed().as_millis() as u64,
            "bytes_up": self.bytes_up.load(Relaxed),
            "bytes_down": self.bytes_down.load(Relaxed),
            "buffered_up": self.buffered_up.load(Relaxed),
            "buffered_down": self.buffered_down.load(Relaxed),
        })
    }
}

/// Resident set size of this process in bytes (from /proc/self/statm).
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Open file descriptors of this process (entries of /proc/self/fd).
pub fn open_fds() -> Option<u64> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count() as u64)
}

impl Stats {
    /// Adds `n` to the proxy-wide buffered bytes and updates the high-water mark.
    pub fn add_buffered(&self, n: u64) {
        let now = self.buffered_bytes.fetch_add(n, Relaxed) + n;
        self.peak_buffered_bytes.fetch_max(now, Relaxed);
    }

    pub fn sub_buffered(&self, n: u64) {
        self.buffered_bytes.fetch_sub(n, Relaxed);
    }

    /// A snapshot; with `with_conns` it lists every live connection.
    pub fn snapshot(&self, with_conns: bool) -> Value {
        let mut v = json!({
            "accepted": self.accepted.load(Relaxed),
            "active": self.active.load(Relaxed),
            "refused": self.refused.load(Relaxed),
            "upstream_failed": self.upstream_failed.load(Relaxed),
            "closed": self.closed.load(Relaxed),
            "reset_by_client": self.reset_by_client.load(Relaxed),
            "reset_by_server": self.reset_by_server.load(Relaxed),
            "aborted_at_shutdown": self.aborted_at_shutdown.load(Relaxed),
            "bytes_up": self.bytes_up.load(Relaxed),
            "bytes_down": self.bytes_down.load(Relaxed),
            "buffered_bytes": self.buffered_bytes.load(Relaxed),
            "peak_buffered_bytes": self.peak_buffered_bytes.load(Relaxed),
            "peak_direction_buffered_bytes": self.peak_direction_buffered_bytes.load(Relaxed),
            "rss_bytes": rss_bytes(),
            "open_fds": open_fds(),
        });
        if with_conns {
            let conns: Vec<Value> = match self.conns.lock() {
                Ok(m) => m.values().map(|c| c.to_json()).collect(),
                Err(_) => Vec::new(),
            };
            v["conns"] = Value::Array(conns);
        }
        v
    }
}
