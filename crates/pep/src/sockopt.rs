//! Socket options the proxy relies on, and startup probes for them.
//!
//! - `TCP_CONGESTION` per leg (validated at startup by setting it on a probe socket, so a module
//!   the kernel can autoload is accepted and a typo fails with the list from
//!   `/proc/sys/net/ipv4/tcp_available_congestion_control`);
//! - `IP_TRANSPARENT` / `IPV6_TRANSPARENT` on the listener (TPROXY delivery) and on upstream
//!   sockets that bind the client's address (full transparency);
//! - `SO_MARK` on upstream sockets;
//! - `SO_LINGER 0` to abort a connection with an RST.
//!
//! The probes never send a packet: they create, configure and close unconnected sockets.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
    fn loopback_is_local_and_documentation_address_is_not() {
        assert!(is_local_address("127.0.0.1".parse().unwrap()));
        assert!(!is_local_address("192.0.2.1".parse().unwrap()));
    }
}
