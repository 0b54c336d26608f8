//! Socket options the proxy relies on, and startup probes for them.
//!
//! - `TCP_CONGESTION` per leg (validated at startup by setting it on a probe socket, so a module
//!   the kernel can autoload is accepted and a typo fails with the list from
//!   `/proc/sys/net/ipv4/tcp_available_congestion_control`);
//! - `IP_TRANSPARENT` / `IPV6_TRANSPARENT` on the listener (TPROXY delivery) and on upstream
//!   sockets that bind the client's address (full transparency);
//! - `SO_MARK` on upstream sockets;
//! - `SO_LINGER 0` to abort a connection with an RST;
//! - `TCP_INFO`, the kernel's own counters of a connection (for `--report`).
//!
//! The probes never send a packet: they create, configure and close unconnected sockets.

use std::io;
use std::mem::{offset_of, size_of};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, Type};

/// Where the kernel lists the congestion controls it has loaded.
pub const AVAILABLE_CCA_PATH: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// The congestion controls listed in [`AVAILABLE_CCA_PATH`] (empty if unreadable).
pub fn available_ccas() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE_CCA_PATH)
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Creates an unconnected TCP socket of the address family of `addr`.
pub fn tcp_socket_for(addr: &SocketAddr) -> io::Result<Socket> {
    Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )
}

/// Checks at startup that `name` can be set as TCP_CONGESTION; the error is one line naming
/// the flag and the available algorithms.
pub fn validate_cca(flag: &str, name: &str) -> Result<(), String> {
    let probe = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| format!("cannot create a probe socket: {e}"))?;
    match probe.set_tcp_congestion(name.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) => {
            let avail = available_ccas();
            let list = if avail.is_empty() {
                "(unreadable)".to_string()
            } else {
                avail.join(" ")
            };
            let why = match e.raw_os_error() {
                Some(libc::ENOENT) => "unknown to this kernel".to_string(),
                Some(libc::EPERM) => {
                    "not permitted (see net.ipv4.tcp_allowed_congestion_control)".to_string()
                }
                _ => format!("setsockopt TCP_CONGESTION: {e}"),
            };
            Err(format!(
                "{flag} = {name:?}: {why}; available ({AVAILABLE_CCA_PATH}): {list}"
            ))
        }
    }
}

/// Sets TCP_CONGESTION on a socket.
pub fn set_cca(sock: SockRef<'_>, name: &str) -> io::Result<()> {
    sock.set_tcp_congestion(name.as_bytes())
}

/// Reads TCP_CONGESTION back from a socket (getsockopt).
pub fn get_cca(sock: SockRef<'_>) -> io::Result<String> {
    let raw = sock.tcp_congestion()?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    Ok(String::from_utf8_lossy(&raw[..end]).into_owned())
}

/// Sets IP_TRANSPARENT (IPv4) or IPV6_TRANSPARENT (IPv6) according to the family of `addr`.
pub fn set_transparent(sock: &Socket, addr: &SocketAddr) -> io::Result<()> {
    match addr {
        SocketAddr::V4(_) => sock.set_ip_transparent_v4(true),
        SocketAddr::V6(_) => sock.set_ip_transparent_v6(true),
    }
}

/// Makes the next close of this socket send an RST (SO_LINGER with a zero timeout).
pub fn set_abortive_close(sock: SockRef<'_>) {
    // Failing here only means the socket is already dead; the close still happens.
    let _ = sock.set_linger(Some(Duration::ZERO));
}

/// Linux TCP states (`include/net/tcp_states.h`), as `tcpi_state` reports them.
pub const TCP_STATES: [&str; 12] = [
    "unknown",
    "established",
    "syn_sent",
    "syn_recv",
    "fin_wait1",
    "fin_wait2",
    "time_wait",
    "close",
    "close_wait",
    "last_ack",
    "listen",
    "closing",
];

/// The kernel's counters of one TCP socket (`getsockopt(TCP_INFO)`), the fields the report
/// uses. Times in µs and rates in bit/s as named; `*_pkts` are segments. Fields newer than
/// the running kernel (it fills only the prefix of `struct tcp_info` it knows) are `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// `tcpi_state`, an index into [`TCP_STATES`].
    pub state: u8,
    /// `tcpi_ca_state`: 0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss.
    pub ca_state: u8,
    /// Smoothed RTT (`tcpi_rtt`).
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// Windowed minimum RTT (`tcpi_min_rtt`).
    pub min_rtt_us: u32,
    pub rto_us: u32,
    pub snd_mss_bytes: u32,
    pub snd_cwnd_pkts: u32,
    pub snd_ssthresh_pkts: u32,
    /// Segments in flight not yet acknowledged (`tcpi_unacked`).
    pub unacked_pkts: u32,
    pub lost_pkts: u32,
    /// Retransmitted segments over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Bytes acknowledged by the peer (`tcpi_bytes_acked`; counts the SYN and FIN as one
    /// each, as the sequence numbers do).
    pub bytes_acked: u64,
    /// Bytes received in order (`tcpi_bytes_received`; counts a received FIN as one).
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub data_segs_out: u32,
    pub data_segs_in: u32,
    /// `tcpi_delivery_rate` (the kernel's bytes/s) × 8.
    pub delivery_rate_bps: u64,
    /// `tcpi_pacing_rate` × 8, saturating (an unpaced socket reports `u64::MAX`).
    pub pacing_rate_bps: u64,
    /// Bytes written but not yet sent (`tcpi_notsent_bytes`).
    pub notsent_bytes: u32,
    /// Payload bytes sent, retransmissions included (Linux ≥ 4.19).
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    /// RTO expirations over the connection's life (`tcpi_total_rto`, Linux ≥ 6.7).
    pub total_rto: Option<u16>,
}

impl TcpInfo {
    /// `snd_cwnd` in bytes (segments × MSS).
    pub fn snd_cwnd_bytes(&self) -> u64 {
        u64::from(self.snd_cwnd_pkts) * u64::from(self.snd_mss_bytes)
    }

    /// The state's name (`established`, `close`, ...).
    pub fn state_name(&self) -> &'static str {
        TCP_STATES
            .get(usize::from(self.state))
            .copied()
            .unwrap_or("unknown")
    }

    /// True once this side's FIN was acknowledged (or the socket is closed): nothing of
    /// what it sent is outstanding any more.
    pub fn fin_acked(&self) -> bool {
        matches!(self.state_name(), "fin_wait2" | "time_wait" | "close")
    }
}

/// Reads `TCP_INFO` (one getsockopt).
pub fn tcp_info(sock: SockRef<'_>) -> io::Result<TcpInfo> {
    // SAFETY: `tcp_info` is plain integers, so all-zero is a valid value; the kernel writes
    // at most `len` bytes into it and reports how many.
    let mut raw: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `raw` is valid for `len` bytes and outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let filled = len as usize;
    // A field is there when the kernel's struct reaches its end.
    let has = |offset: usize, size: usize| offset + size <= filled;
    let bytes_sent = offset_of!(libc::tcp_info, tcpi_bytes_sent);
    let bytes_retrans = offset_of!(libc::tcp_info, tcpi_bytes_retrans);
    let total_rto = offset_of!(libc::tcp_info, tcpi_total_rto);
    if !has(
        offset_of!(libc::tcp_info, tcpi_data_segs_out),
        size_of::<u32>(),
    ) {
        return Err(io::Error::other(format!(
            "TCP_INFO: the kernel filled {filled} bytes, too old (needs Linux >= 4.6)"
        )));
    }
    Ok(TcpInfo {
        state: raw.tcpi_state,
        ca_state: raw.tcpi_ca_state,
        rtt_us: raw.tcpi_rtt,
        rttvar_us: raw.tcpi_rttvar,
        min_rtt_us: raw.tcpi_min_rtt,
        rto_us: raw.tcpi_rto,
        snd_mss_bytes: raw.tcpi_snd_mss,
        snd_cwnd_pkts: raw.tcpi_snd_cwnd,
        snd_ssthresh_pkts: raw.tcpi_snd_ssthresh,
        unacked_pkts: raw.tcpi_unacked,
        lost_pkts: raw.tcpi_lost,
        total_retrans: raw.tcpi_total_retrans,
        bytes_acked: raw.tcpi_bytes_acked,
        bytes_received: raw.tcpi_bytes_received,
        segs_out: raw.tcpi_segs_out,
        segs_in: raw.tcpi_segs_in,
        data_segs_out: raw.tcpi_data_segs_out,
        data_segs_in: raw.tcpi_data_segs_in,
        delivery_rate_bps: raw.tcpi_delivery_rate.saturating_mul(8),
        pacing_rate_bps: raw.tcpi_pacing_rate.saturating_mul(8),
        notsent_bytes: raw.tcpi_notsent_bytes,
        bytes_sent: has(bytes_sent, size_of::<u64>()).then_some(raw.tcpi_bytes_sent),
        bytes_retrans: has(bytes_retrans, size_of::<u64>()).then_some(raw.tcpi_bytes_retrans),
        total_rto: has(total_rto, size_of::<u16>()).then_some(raw.tcpi_total_rto),
    })
}

/// What transparent mode needs, as found on this machine.
#[derive(Debug, Clone)]
pub struct TransparentSupport {
    /// Setting IP_TRANSPARENT worked (needs CAP_NET_ADMIN or CAP_NET_RAW).
    pub ip_transparent: Result<(), String>,
    /// Binding a non-local address with IP_TRANSPARENT worked (full transparency).
    pub nonlocal_bind: Result<(), String>,
    /// Where a TPROXY target was found (xt_TPROXY or nft_tproxy), if anywhere.
    pub tproxy: Option<String>,
    /// Setting SO_MARK worked.
    pub so_mark: Result<(), String>,
}

fn probe_ip_transparent(v6: bool) -> Result<Socket, String> {
    let (domain, addr): (Domain, SocketAddr) = if v6 {
        (
            Domain::IPV6,
            SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
        )
    } else {
        (
            Domain::IPV4,
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        )
    };
    let s = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| format!("socket: {e}"))?;
    set_transparent(&s, &addr)
        .map_err(|e| format!("setsockopt IP_TRANSPARENT: {e} (needs root or CAP_NET_ADMIN)"))?;
    Ok(s)
}

/// Looks for a TPROXY implementation in the running kernel: the xtables target list, loaded
/// modules, or the kernel configuration. `None` when nothing says it is there.
pub fn find_tproxy() -> Option<String> {
    if let Ok(targets) = std::fs::read_to_string("/proc/net/ip_tables_targets") {
        if targets.lines().any(|l| l.trim() == "TPROXY") {
            return Some("xt_TPROXY (/proc/net/ip_tables_targets)".into());
        }
    }
    for m in ["nft_tproxy", "xt_TPROXY"] {
        if Path::new("/sys/module").join(m).exists() {
            return Some(format!("{m} (module loaded)"));
        }
    }
    if let Some(cfg) = read_kernel_config() {
        for key in ["CONFIG_NFT_TPROXY", "CONFIG_NETFILTER_XT_TARGET_TPROXY"] {
            for val in ["y", "m"] {
                if cfg.lines().any(|l| l.trim() == format!("{key}={val}")) {
                    return Some(format!("{key}={val} (kernel config)"));
                }
            }
        }
    }
    None
}

/// The kernel configuration from /proc/config.gz (decompressed with `zcat` if present) or
/// /boot/config-$(uname -r).
fn read_kernel_config() -> Option<String> {
    if Path::new("/proc/config.gz").exists() {
        if let Ok(out) = std::process::Command::new("zcat")
            .arg("/proc/config.gz")
            .stderr(std::process::Stdio::null())
            .output()
        {
            if out.status.success() {
                return Some(String::from_utf8_lossy(&out.stdout).into_owned());
            }
        }
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()
}

/// Probes everything transparent mode needs, for an address family.
pub fn probe_transparent(v6: bool) -> TransparentSupport {
    let ip_transparent = probe_ip_transparent(v6).map(|_| ());
    let nonlocal_bind = match probe_ip_transparent(v6) {
        Err(e) => Err(e),
        Ok(s) => {
            // A documentation address (RFC 5737 / RFC 3849) that is never local.
            let addr: SocketAddr = if v6 {
                "[2001:db8::1]:0".parse().expect("literal")
            } else {
                "192.0.2.1:0".parse().expect("literal")
            };
            s.bind(&addr.into())
                .map_err(|e| format!("bind {addr} with IP_TRANSPARENT: {e}"))
        }
    };
    let so_mark = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .and_then(|s| s.set_mark(1))
        .map_err(|e| format!("setsockopt SO_MARK: {e} (needs root or CAP_NET_ADMIN)"));
    TransparentSupport {
        ip_transparent,
        nonlocal_bind,
        tproxy: find_tproxy(),
        so_mark,
    }
}

impl TransparentSupport {
    /// The `--check` report, one `key: value` line each.
    pub fn report(&self) -> String {
        fn r(x: &Result<(), String>) -> String {
            match x {
                Ok(()) => "ok".into(),
                Err(e) => format!("no: {e}"),
            }
        }
        let avail = available_ccas().join(" ");
        format!(
            "ip_transparent: {}\nnonlocal_bind: {}\ntproxy: {}\nso_mark: {}\ncongestion_controls: {}\n",
            r(&self.ip_transparent),
            r(&self.nonlocal_bind),
            self.tproxy
                .as_deref()
                .map(|s| format!("ok: {s}"))
                .unwrap_or_else(|| "not found (no xt_TPROXY/nft_tproxy in this kernel)".into()),
            r(&self.so_mark),
            avail,
        )
    }
}

/// Whether `ip` is an address of this host (binding it works without IP_TRANSPARENT).
pub fn is_local_address(ip: IpAddr) -> bool {
    let addr = SocketAddr::new(ip, 0);
    match tcp_socket_for(&addr) {
        Ok(s) => s.bind(&addr.into()).is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_cca_unknown_name_lists_available_ones() {
        let e = validate_cca("--cca-upstream", "no-such-cca").unwrap_err();
        assert!(
            e.starts_with("--cca-upstream = \"no-such-cca\": unknown to this kernel"),
            "{e}"
        );
        for name in available_ccas() {
            assert!(e.contains(&name), "{e}");
        }
    }

    #[test]
    fn cca_set_then_read_back() {
        let avail = available_ccas();
        let Some(name) = avail.first() else { return };
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set_cca(SockRef::from(&s), name).unwrap();
        assert_eq!(&get_cca(SockRef::from(&s)).unwrap(), name);
    }

    #[test]
    fn tcp_info_counts_the_bytes_of_a_loopback_connection() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut b, _) = listener.accept().unwrap();
        a.write_all(&[7u8; 10_000]).unwrap();
        let mut got = vec![0u8; 10_000];
        b.read_exact(&mut got).unwrap();
        let sent = tcp_info(SockRef::from(&a)).unwrap();
        let received = tcp_info(SockRef::from(&b)).unwrap();
        assert_eq!(sent.state_name(), "established");
        // 10 000 payload bytes plus the SYN's sequence number.
        assert_eq!(sent.bytes_acked, 10_001);
        assert_eq!(received.bytes_received, 10_000);
        assert_eq!(sent.total_retrans, 0);
        assert!(sent.rtt_us > 0 && sent.min_rtt_us > 0, "{sent:?}");
        assert!(sent.snd_cwnd_bytes() > 0 && !sent.fin_acked());
    }

    #[test]
    fn loopback_is_local_and_documentation_address_is_not() {
        assert!(is_local_address("127.0.0.1".parse().unwrap()));
        assert!(!is_local_address("192.0.2.1".parse().unwrap()));
    }
}
