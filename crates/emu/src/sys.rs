//! Thin, safe wrappers over the Linux calls the emulator needs: the monotonic clock,
//! precise sleeping, TUN devices opened inside a network namespace, `ppoll`, and signals.
//!
//! Timing: `sleep_until` sleeps with `clock_nanosleep(TIMER_ABSTIME)` until `spin` before
//! the deadline and busy-waits the rest, and `init_timing` sets the thread's timer slack
//! to 1 ns (the default 50 µs slack would otherwise be added to every wake-up).
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Nanoseconds of `CLOCK_MONOTONIC` (the same clock in every network namespace, so
/// timestamps taken by two processes in two namespaces compare directly).
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Timer slack 1 ns and, if `rt_prio` > 0, `SCHED_FIFO` at that priority (errors are
/// returned so the caller can say what it could not get).
pub fn init_timing(rt_prio: i32) -> io::Result<()> {
    // SAFETY: prctl with an integer argument.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if rt_prio > 0 {
        let param = libc::sched_param {
            sched_priority: rt_prio,
        };
        // SAFETY: valid sched_param for the calling thread (pid 0).
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sleep until `deadline_ns` (monotonic): the kernel's absolute sleep up to `spin_ns`
/// before it, then a busy wait.
pub fn sleep_until(deadline_ns: u64, spin_ns: u64) {
    let wake = deadline_ns.saturating_sub(spin_ns);
    if mono_ns() < wake {
        let ts = timespec(wake);
        // SAFETY: valid timespec; EINTR simply ends the sleep early (we spin the rest).
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
    }
    while mono_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` with only the name and flags (the union is 24 bytes).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Run `f` with the calling thread inside network namespace `/run/netns/<netns>`, then
/// return to the original one.
fn in_netns<T>(netns: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let own = File::open("/proc/thread-self/ns/net")?;
    let target = File::open(format!("/run/netns/{netns}"))
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {netns}: {e}")))?;
    // SAFETY: setns on an open namespace file descriptor.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let out = f();
    // SAFETY: as above; returning to our own namespace cannot fail for root.
    if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    out
}

/// Attach to TUN device `dev` (created with `ip tuntap add mode tun`, no packet info) in
/// namespace `netns` (None: the current one), non-blocking.
pub fn open_tun(netns: Option<&str>, dev: &str) -> io::Result<OwnedFd> {
    let open = || -> io::Result<OwnedFd> {
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: valid C string; the descriptor is owned below.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        if dev.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name too long",
            ));
        }
        req.name[..dev.len()].copy_from_slice(dev.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out.
        if unsafe { libc::ioctl(owned.as_raw_fd(), TUNSETIFF, &mut req) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("TUN device {dev}: {e}")));
        }
        Ok(owned)
    };
    match netns {
        Some(ns) => in_netns(ns, open),
        None => open(),
    }
}

/// Read one packet; `Ok(None)` when nothing is waiting.
#[inline]
pub fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// Write one packet (a TUN write injects it as received on that device).
#[inline]
pub fn write_packet(fd: RawFd, pkt: &[u8]) -> io::Result<()> {
    // SAFETY: pkt is valid for pkt.len() bytes.
    let n = unsafe { libc::write(fd, pkt.as_ptr().cast(), pkt.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `ppoll` over a fixed set of descriptors, reusing its array between calls.
pub struct Poller {
    pfds: Vec<libc::pollfd>,
}

impl Poller {
    pub fn new(fds: &[RawFd]) -> Poller {
        let pfds = fds
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        Poller { pfds }
    }

    /// Wait until a descriptor is readable or `timeout_ns` passed (0: just look); a signal
    /// ends the wait early. Afterwards `readable(i)` tells about descriptor `i`.
    pub fn wait(&mut self, timeout_ns: u64) {
        let ts = timespec(timeout_ns);
        // SAFETY: pfds is a valid array of pollfd of the given length.
        let n = unsafe {
            libc::ppoll(
                self.pfds.as_mut_ptr(),
                self.pfds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if n <= 0 {
            for p in &mut self.pfds {
                p.revents = 0;
            }
        }
    }

    #[inline]
    pub fn readable(&self, i: usize) -> bool {
        self.pfds[i].revents & libc::POLLIN != 0
    }
}

/// Process-wide flags set by signal handlers (the only statics in the emulator: a signal
/// handler can reach nothing else).
pub static STOP: AtomicBool = AtomicBool::new(false);
pub static START_MEASUREMENT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_start(_: libc::c_int) {
    START_MEASUREMENT.store(true, Ordering::SeqCst);
}

/// SIGTERM/SIGINT set `STOP`; SIGUSR1 sets `START_MEASUREMENT`; the parent's death sends
/// SIGTERM (so an emulator never outlives the `tcplab emulate` that started it).
pub fn install_signal_handlers() -> io::Result<()> {
    let handlers: [(libc::c_int, extern "C" fn(libc::c_int)); 3] = [
        (libc::SIGTERM, on_stop),
        (libc::SIGINT, on_stop),
        (libc::SIGUSR1, on_start),
    ];
    for (sig, handler) in handlers {
        // SAFETY: a zeroed sigaction with a plain handler and no SA_RESTART, so blocking
        // calls return EINTR and the loop sees the flag.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) };
    Ok(())
}

/// A UDP socket bound to `addr` with a large receive buffer (root may exceed rmem_max).
pub fn udp_socket(
    bind: std::net::SocketAddr,
    rcvbuf_bytes: i32,
) -> io::Result<std::net::UdpSocket> {
    let sock = std::net::UdpSocket::bind(bind)?;
    let size = rcvbuf_bytes;
    // SAFETY: setsockopt with a valid int option value; failure only means a smaller buffer.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
    }
    Ok(sock)
}
