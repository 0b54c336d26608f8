//! A bounded byte ring for one relay direction.
//!
//! Capacity is capped at `max_bytes` (the `--buffer` setting), which is what bounds the proxy's
//! memory: a direction never holds more than `max_bytes` of user data, and while the ring is full
//! the relay stops reading from the source socket, so the kernel's receive window closes and the
//! sender is throttled (backpressure). The storage starts small and doubles when full, up to the
//! cap, so thousands of idle or slow connections do not each pin 2 × 4 MiB.
//!
//! Reads and writes go through the largest *contiguous* free or filled region, so each socket
//! call is one `read`/`write` syscall without an extra copy.

/// Initial storage per direction; grows by doubling up to the cap.
pub const INITIAL_BYTES: usize = 64 << 10;

/// A ring of bytes with a growable storage capped at `max_bytes`.
#[derive(Debug)]
pub struct Ring {
    storage: Vec<u8>,
    /// Index of the first filled byte.
    head: usize,
    /// Number of filled bytes.
    len: usize,
    max_bytes: usize,
}

impl Ring {
    /// An empty ring that will hold at most `max_bytes`.
    pub fn new(max_bytes: usize) -> Ring {
        assert!(max_bytes > 0, "ring capacity must be positive");
        Ring {
            storage: Vec::new(),
            head: 0,
            len: 0,
            max_bytes,
        }
    }

    /// Bytes waiting to be written to the destination.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no more bytes may be buffered (the relay must stop reading).
    pub fn is_full(&self) -> bool {
        self.len >= self.max_bytes
    }

    /// Bytes of storage currently allocated (≤ the cap).
    pub fn allocated_bytes(&self) -> usize {
        self.storage.len()
    }

    /// The largest contiguous free region after the filled bytes, growing the storage when
    /// it is full and below the cap. Empty only when the ring is full.
    pub fn free_mut(&mut self) -> &mut [u8] {
        if self.len == self.storage.len() && self.storage.len() < self.max_bytes {
            self.grow();
        }
        let cap = self.storage.len();
        if self.len == cap {
            return &mut [];
        }
        if self.len == 0 {
            // Restart at 0 so the whole storage is one contiguous free region.
            self.head = 0;
        }
        // 0 ≤ len < cap, so tail == head only when the ring is empty (head = 0).
        let tail = (self.head + self.len) % cap;
        let end = if tail >= self.head { cap } else { self.head };
        &mut self.storage[tail..end]
    }

    /// Marks `n` bytes of the region returned by [`Ring::free_mut`] as filled.
    pub fn commit(&mut self, n: usize) {
        assert!(self.len + n <= self.storage.len(), "commit beyond storage");
        if self.len == 0 {
            self.head = 0;
        }
        self.len += n;
    }

    /// The largest contiguous filled region starting at the head.
    pub fn filled(&self) -> &[u8] {
        let cap = self.storage.len();
        let end = (self.head + self.len).min(cap);
        &self.storage[self.head..end]
    }

    /// Drops `n` bytes from the head (they were written to the destination).
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.len, "consume beyond filled bytes");
        self.len -= n;
        self.head = if self.len == 0 {
            0
        } else {
            (self.head + n) % self.storage.len()
        };
    }

    /// Doubles the storage (up to the cap), moving the filled bytes to the front.
    fn grow(&mut self) {
        let old_cap = self.storage.len();
        let new_cap = (old_cap * 2).max(INITIAL_BYTES).min(self.max_bytes);
        let mut next = vec![0u8; new_cap];
        let first = (old_cap - self.head).min(self.len);
        next[..first].copy_from_slice(&self.storage[self.head..self.head + first]);
        next[first..self.len].copy_from_slice(&self.storage[..self.len - first]);
        self.storage = next;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes as much of `data` as fits; returns how much went in.
    fn push(r: &mut Ring, data: &[u8]) -> usize {
        let mut done = 0;
        while done < data.len() {
            let free = r.free_mut();
            if free.is_empty() {
                break;
            }
            let n = free.len().min(data.len() - done);
            free[..n].copy_from_slice(&data[done..done + n]);
            r.commit(n);
            done += n;
        }
        done
    }

    fn pop(r: &mut Ring, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() < max && !r.is_empty() {
            let f = r.filled();
            let n = f.len().min(max - out.len());
            out.extend_from_slice(&f[..n]);
            r.consume(n);
        }
        out
    }

    #[test]
    fn ring_never_holds_more_than_the_cap() {
        let mut r = Ring::new(100_000);
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        assert_eq!(push(&mut r, &data), 100_000);
        assert!(r.is_full());
        assert!(r.free_mut().is_empty());
        assert_eq!(r.allocated_bytes(), 100_000);
    }

    #[test]
    fn ring_starts_small_and_grows_by_doubling() {
        let mut r = Ring::new(1 << 20);
        assert_eq!(r.allocated_bytes(), 0);
        push(&mut r, &[1u8; 10]);
        assert_eq!(r.allocated_bytes(), INITIAL_BYTES);
        push(&mut r, &vec![2u8; INITIAL_BYTES]);
        assert_eq!(r.allocated_bytes(), 2 * INITIAL_BYTES);
    }

    #[test]
    fn ring_preserves_byte_order_across_wraparound_and_growth() {
        // Interleave pushes and pops of odd sizes so the filled region wraps, then grow while
        // wrapped; the bytes out must be exactly the bytes in.
        let mut r = Ring::new(1 << 20);
        let data: Vec<u8> = (0..3_000_000u64)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        let mut input = 0;
        let mut out = Vec::new();
        let sizes = [7_000usize, 50_000, 130_000, 3, 65_536, 200_001];
        let mut k = 0;
        while out.len() < data.len() {
            let n = sizes[k % sizes.len()];
            let end = (input + n).min(data.len());
            input += push(&mut r, &data[input..end]);
            out.extend(pop(&mut r, sizes[(k + 2) % sizes.len()] / 2 + 1));
            k += 1;
            assert!(r.len() <= 1 << 20);
        }
        assert_eq!(out, data);
    }
}
