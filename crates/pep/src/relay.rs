//! The relay between the two legs of one split connection.
//!
//! One task per connection drives both directions with a hand-written poll loop over the two
//! sockets (`&TcpStream` readiness + `try_read`/`try_write`), so reading from one side and
//! writing to the other overlap without extra tasks or locks:
//!
//! - **Buffering**: each direction has a [`Ring`] capped at `--buffer` bytes. A direction reads
//!   from its source only while its ring has room, and writes to its destination whenever the
//!   ring holds bytes. While the ring is full the source is not read, its kernel receive buffer
//!   fills, the advertised window closes and the sender is throttled: backpressure with bounded
//!   memory and no data loss.
//! - **Half-close**: a read of 0 bytes (FIN) marks the direction's source finished; once the
//!   ring has drained into the destination, the relay calls `shutdown(SHUT_WR)` on the
//!   destination, so the FIN is forwarded after the last byte. The other direction keeps
//!   flowing until it finishes the same way.
//! - **Reset**: any read, write or shutdown error on a socket (ECONNRESET, EPIPE, ...) ends the
//!   relay with a [`RelayError`] naming the side; the caller then closes *both* sockets with
//!   SO_LINGER 0, so the peer of the healthy side sees an RST too. Bytes still buffered are
//!   discarded: an RST means the stream was aborted.

use std::future::poll_fn;
use std::io;
use std::net::Shutdown;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};

use socket2::SockRef;
use tokio::net::TcpStream;

use crate::ring::Ring;
use crate::stats::Stats;

/// Which leg of the split connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client ↔ proxy leg ("downstream").
    Client,
    /// The proxy ↔ server leg ("upstream").
    Server,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// A socket operation that failed and ended the relay.
#[derive(Debug)]
pub struct RelayError {
    pub side: Side,
    pub op: &'static str,
    pub err: io::Error,
}

/// Upper bound on read/write rounds in one poll before yielding to other tasks.
const ROUNDS_PER_POLL: usize = 64;

/// Counters one direction updates as bytes move.
pub struct DirCounters<'a> {
    /// Bytes written to the destination (per connection).
    pub bytes: &'a AtomicU64,
    /// Bytes written to the destination (proxy-wide).
    pub total_bytes: &'a AtomicU64,
    /// Bytes held in this direction's ring (per connection).
    pub buffered: &'a AtomicU64,
    pub stats: &'a Stats,
}

/// One direction: bytes read from `src` are written to `dst`.
pub struct Pipe<'a> {
    ring: Ring,
    src_eof: bool,
    done: bool,
    src: Side,
    dst: Side,
    counters: DirCounters<'a>,
    /// Plain fields, owned by the connection task: the per-byte path stays free of atomics
    /// for the report's figures.
    bytes_read: u64,
    peak_buffered_bytes: usize,
}

/// What one direction did, for `--report`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirSummary {
    /// Bytes read from the source socket.
    pub bytes_read: u64,
    /// Bytes written to the destination socket.
    pub bytes_written: u64,
    /// Most bytes the ring held at once (≤ `--buffer`).
    pub peak_buffered_bytes: u64,
}

impl<'a> Pipe<'a> {
    pub fn new(src: Side, dst: Side, buffer_bytes: usize, counters: DirCounters<'a>) -> Pipe<'a> {
        Pipe {
            ring: Ring::new(buffer_bytes),
            src_eof: false,
            done: false,
            src,
            dst,
            counters,
            bytes_read: 0,
            peak_buffered_bytes: 0,
        }
    }

    /// Bytes moved and the ring's high-water mark so far.
    pub fn summary(&self) -> DirSummary {
        DirSummary {
            bytes_read: self.bytes_read,
            bytes_written: self.counters.bytes.load(Relaxed),
            peak_buffered_bytes: self.peak_buffered_bytes as u64,
        }
    }

    /// True once the source sent FIN, every byte reached the destination and the FIN was
    /// forwarded.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Moves bytes until neither socket can make progress; `Ready(Ok)` when finished.
    pub fn poll_pipe(
        &mut self,
        cx: &mut Context<'_>,
        src: &TcpStream,
        dst: &TcpStream,
    ) -> Poll<Result<(), RelayError>> {
        if self.done {
            return Poll::Ready(Ok(()));
        }
        for _ in 0..ROUNDS_PER_POLL {
            let mut progressed = false;

            // Read only while there is room: this is the backpressure.
            if !self.src_eof && !self.ring.is_full() {
                match src.poll_read_ready(cx) {
                    Poll::Ready(Ok(())) => match src.try_read(self.ring.free_mut()) {
                        Ok(0) => {
                            self.src_eof = true;
                            progressed = true;
                        }
                        Ok(n) => {
                            self.ring.commit(n);
                            self.bytes_read += n as u64;
                            self.peak_buffered_bytes =
                                self.peak_buffered_bytes.max(self.ring.len());
                            let c = &self.counters;
                            let now = c.buffered.fetch_add(n as u64, Relaxed) + n as u64;
                            c.stats
                                .peak_direction_buffered_bytes
                                .fetch_max(now, Relaxed);
                            c.stats.add_buffered(n as u64);
                            progressed = true;
                        }
                        // Readiness was stale; the next poll_read_ready re-arms the waker.
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => progressed = true,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => progressed = true,
                        Err(err) => return self.fail(self.src, "read", err),
                    },
                    Poll::Ready(Err(err)) => return self.fail(self.src, "read", err),
                    Poll::Pending => {}
                }
            }

            if !self.ring.is_empty() {
                match dst.poll_write_ready(cx) {
                    Poll::Ready(Ok(())) => match dst.try_write(self.ring.filled()) {
                        Ok(n) => {
                            self.ring.consume(n);
                            let c = &self.counters;
                            c.buffered.fetch_sub(n as u64, Relaxed);
                            c.stats.sub_buffered(n as u64);
                            c.bytes.fetch_add(n as u64, Relaxed);
                            c.total_bytes.fetch_add(n as u64, Relaxed);
                            progressed = true;
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => progressed = true,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => progressed = true,
                        Err(err) => return self.fail(self.dst, "write", err),
                    },
                    Poll::Ready(Err(err)) => return self.fail(self.dst, "write", err),
                    Poll::Pending => {}
                }
            }

            if self.src_eof && self.ring.is_empty() {
                // Forward the FIN after the last byte (half-close).
                if let Err(err) = SockRef::from(dst).shutdown(Shutdown::Write) {
                    return self.fail(self.dst, "shutdown", err);
                }
                self.done = true;
                return Poll::Ready(Ok(()));
            }

            if !progressed {
                return Poll::Pending;
            }
        }
        // Still busy: let other connections run, then come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    fn fail(&self, side: Side, op: &'static str, err: io::Error) -> Poll<Result<(), RelayError>> {
        Poll::Ready(Err(RelayError { side, op, err }))
    }
}

impl Drop for Pipe<'_> {
    fn drop(&mut self) {
        // Bytes still buffered are discarded (the relay was aborted); keep the gauges right.
        let left = self.ring.len() as u64;
        if left > 0 {
            self.counters.buffered.fetch_sub(left, Relaxed);
            self.counters.stats.sub_buffered(left);
        }
    }
}

/// Relays both directions until both have forwarded their FIN (`Ok`) or a socket fails.
pub async fn relay(
    client: &TcpStream,
    server: &TcpStream,
    up: &mut Pipe<'_>,
    down: &mut Pipe<'_>,
) -> Result<(), RelayError> {
    poll_fn(|cx| {
        // Poll both directions every time: one direction's progress never starves the other.
        let a = up.poll_pipe(cx, client, server);
        if let Poll::Ready(Err(e)) = a {
            return Poll::Ready(Err(e));
        }
        let b = down.poll_pipe(cx, server, client);
        if let Poll::Ready(Err(e)) = b {
            return Poll::Ready(Err(e));
        }
        if up.is_done() && down.is_done() {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    })
    .await
}
