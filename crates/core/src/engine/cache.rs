//! Hints that bring memory into the CPU's caches before it is read.
//!
//! A packet's hop reads state that has often left the caches since it was last touched: the
//! packet itself after a long propagation delay, the link of the next hop when thousands of
//! flows take turns. The event loop knows what the next delivery of a link will read one
//! delivery ahead (the link's pipeline is in arrival order), so it asks for those lines
//! early and their fetch overlaps the events in between. A hint never changes what the
//! program computes: a CPU may ignore it, and on architectures other than x86-64 it is
//! nothing.

const LINE_BYTES: usize = 64;

/// Ask for the cache lines of `value` without waiting for them.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    prefetch_bytes(value, std::mem::size_of::<T>());
}

/// Ask for the cache lines of the first `bytes` bytes of `value` (at most its size).
#[inline(always)]
pub fn prefetch_bytes<T>(value: &T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let start: *const T = value;
        let lines = bytes.min(std::mem::size_of::<T>()).div_ceil(LINE_BYTES);
        for line in 0..lines {
            let at = start.cast::<i8>().wrapping_add(line * LINE_BYTES);
            // SAFETY: a prefetch neither faults nor writes, whatever the address (here one
            // inside a live value); `sse` is part of every x86-64 target.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (value, bytes);
}
