//! Transparent mode inside network namespaces: client ── gateway (proxy) ── server.
//!
//! ```text
//!  ns C: eth0 198.18.1.2/24 ── veth-c 198.18.1.1 │ ns G │ 198.18.2.1 veth-s ── eth0 198.18.2.2/24: ns S
//! ```
//!
//! The client connects to the *server's* address; the gateway intercepts the connection and
//! the proxy relays it to the original destination. Two interception methods:
//! - `tproxy_nft`: the production recipe (nftables `tproxy` + `socket transparent` marking +
//!   policy routing), set up and torn down by `scripts/tcplab-pep-intercept.sh` as in the
//!   README; needs the `nft` tool (Debian package `nftables`);
//! - `anyip_routing`: no netfilter at all, only policy routing that delivers every packet
//!   arriving on the gateway's veths locally (AnyIP, the script's `--method anyip`); the
//!   listener uses the service port.
//!
//! Both check that the server sees the client's own address (full transparency via
//! IP_TRANSPARENT on the upstream socket), the checksums of both directions, and the proxy's
//! accounting. `--no-spoof` is checked once: the server then sees the gateway's address.
//! Each test prints `SKIPPED: <reason>` and returns when the machine cannot run it (not root,
//! no `ip`/netns, no IP_TRANSPARENT, no `nft` or no TPROXY in the kernel).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use common::*;

const CLIENT_IP: &str = "198.18.1.2";
const GW_CLIENT_SIDE: &str = "198.18.1.1";
const GW_SERVER_SIDE: &str = "198.18.2.1";
const SERVER_IP: &str = "198.18.2.2";
const SERVICE_PORT: u16 = 5201;
const TPROXY_PORT: u16 = 15201;
const UP_BYTES: u64 = 24 << 20;
const DOWN_BYTES: u64 = 8 << 20;
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scripts/tcplab-pep-intercept.sh"
);

/// Runs a command; Err carries its stderr.
fn run(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Three namespaces joined by veth pairs; removed on drop (also on panic).
struct Topo {
    c: String,
    g: String,
    s: String,
}

impl Topo {
    fn new(tag: &str) -> Result<Topo, String> {
        let id = std::process::id();
        let t = Topo {
            c: format!("pep{tag}{id}c"),
            g: format!("pep{tag}{id}g"),
            s: format!("pep{tag}{id}s"),
        };
        for ns in [&t.c, &t.g, &t.s] {
            run(&["ip", "netns", "add", ns])?;
        }
        let (c, g, s) = (t.c.as_str(), t.g.as_str(), t.s.as_str());
        let cmds: Vec<Vec<&str>> = vec![
            vec![
                "ip", "-n", g, "link", "add", "veth-c", "type", "veth", "peer", "name", "eth0",
                "netns", c,
            ],
            vec![
                "ip", "-n", g, "link", "add", "veth-s", "type", "veth", "peer", "name", "eth0",
                "netns", s,
            ],
            vec!["ip", "-n", c, "addr", "add", "198.18.1.2/24", "dev", "eth0"],
            vec![
                "ip",
                "-n",
                g,
                "addr",
                "add",
                "198.18.1.1/24",
                "dev",
                "veth-c",
            ],
            vec![
                "ip",
                "-n",
                g,
                "addr",
                "add",
                "198.18.2.1/24",
                "dev",
                "veth-s",
            ],
            vec!["ip", "-n", s, "addr", "add", "198.18.2.2/24", "dev", "eth0"],
            vec!["ip", "-n", c, "link", "set", "lo", "up"],
            vec!["ip", "-n", g, "link", "set", "lo", "up"],
            vec!["ip", "-n", s, "link", "set", "lo", "up"],
            vec!["ip", "-n", c, "link", "set", "eth0", "up"],
            vec!["ip", "-n", g, "link", "set", "veth-c", "up"],
            vec!["ip", "-n", g, "link", "set", "veth-s", "up"],
            vec!["ip", "-n", s, "link", "set", "eth0", "up"],
            vec![
                "ip",
                "-n",
                c,
                "route",
                "add",
                "default",
                "via",
                GW_CLIENT_SIDE,
            ],
            vec![
                "ip",
                "-n",
                s,
                "route",
                "add",
                "default",
                "via",
                GW_SERVER_SIDE,
            ],
            vec![
                "ip",
                "netns",
                "exec",
                g,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
            ],
            vec![
                "ip",
                "netns",
                "exec",
                g,
                "sysctl",
                "-qw",
                "net.ipv4.conf.all.rp_filter=0",
            ],
            vec![
                "ip",
                "netns",
                "exec",
                g,
                "sysctl",
                "-qw",
                "net.ipv4.conf.default.rp_filter=0",
            ],
            vec![
                "ip",
                "netns",
                "exec",
                g,
                "sysctl",
                "-qw",
                "net.ipv4.conf.veth-c.rp_filter=0",
            ],
            vec![
                "ip",
                "netns",
                "exec",
                g,
                "sysctl",
                "-qw",
                "net.ipv4.conf.veth-s.rp_filter=0",
            ],
        ];
        for cmd in cmds {
            run(&cmd)?;
        }
        Ok(t)
    }

    /// `ip netns exec G` prefix for the proxy.
    fn in_gw(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.g]
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        for ns in [&self.c, &self.g, &self.s] {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}

/// Runs `f` on a thread that has entered network namespace `ns`.
fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on this thread only; the fd is valid for the call.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Why the namespace tests cannot run here, if they cannot.
fn netns_skip_reason(tag: &str) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, IP_TRANSPARENT)".into());
    }
    if run(&["ip", "-V"]).is_err() {
        return Some("`ip` (iproute2) not installed".into());
    }
    let probe = format!("pep{tag}{}probe", std::process::id());
    if let Err(e) = run(&["ip", "netns", "add", &probe]) {
        return Some(format!("cannot create a network namespace: {e}"));
    }
    let check = run(&["ip", "netns", "exec", &probe, BIN, "--check"]);
    let _ = run(&["ip", "netns", "del", &probe]);
    match check {
        Ok(report) if report.contains("nonlocal_bind: ok") => None,
        Ok(report) => Some(format!(
            "IP_TRANSPARENT not usable: {}",
            report.replace('\n', "; ")
        )),
        Err(e) => Some(format!(
            "IP_TRANSPARENT not usable: {}",
            e.replace('\n', "; ")
        )),
    }
}

/// What the server saw: the peer address and the digest of the bytes received.
struct ServerView {
    peer: SocketAddr,
    /// The client socket's own address, as the client saw it.
    client: SocketAddr,
    got: StreamSum,
    sent: StreamSum,
}

/// One transfer client → (intercepted) → server in both directions with half-close; returns
/// the server's view after checking the client's.
fn transfer_through_gateway(topo: &Topo) -> ServerView {
    let server = in_netns(&topo.s, || {
        let l = TcpListener::bind(("0.0.0.0", SERVICE_PORT)).unwrap();
        let (mut s, peer) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut sum = Summer::new();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            sum.update(&buf[..n]);
        }
        // After the client's FIN, answer on the still-open direction (half-close).
        let sent = write_stream(&mut s, 77, DOWN_BYTES);
        s.shutdown(std::net::Shutdown::Write).unwrap();
        ServerView {
            peer,
            client: peer,
            got: sum.finish(),
            sent,
        }
    });
    std::thread::sleep(Duration::from_millis(100)); // the server is listening
    let client = in_netns(&topo.c, || {
        let dst: SocketAddr = format!("{SERVER_IP}:{SERVICE_PORT}").parse().unwrap();
        let mut s = TcpStream::connect_timeout(&dst, Duration::from_secs(5)).unwrap();
        let local = s.local_addr().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let sent = write_stream(&mut s, 66, UP_BYTES);
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut sum = Summer::new();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            sum.update(&buf[..n]);
        }
        (sent, sum.finish(), local)
    });
    let (client_sent, client_got, client_addr) = client.join().expect("client thread");
    let view = server.join().expect("server thread");
    assert_eq!(view.got, client_sent, "client→server stream differs");
    assert_eq!(client_got, view.sent, "server→client stream differs");
    ServerView {
        client: client_addr,
        ..view
    }
}

fn write_stream(s: &mut TcpStream, seed: u64, total: u64) -> StreamSum {
    let mut sum = Summer::new();
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0;
    while off < total {
        let n = (total - off).min(CHUNK as u64) as usize;
        fill(seed, off, &mut buf[..n]);
        sum.update(&buf[..n]);
        s.write_all(&buf[..n]).unwrap();
        off += n as u64;
    }
    sum.finish()
}

/// Stats of a proxy running in namespace `ns`.
fn stats_in(ns: &str, proxy: &Proxy) -> serde_json::Value {
    let addr = proxy.stats_addr.unwrap();
    in_netns(ns, move || stats_from(addr)).join().unwrap()
}

/// Checks the proxy relayed exactly one intercepted connection to the original destination.
fn assert_relayed(topo: &Topo, proxy: &Proxy, expect_closed: u64) {
    let mut s = stats_in(&topo.g, proxy);
    for _ in 0..100 {
        if s["active"] == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        s = stats_in(&topo.g, proxy);
    }
    assert_eq!(s["active"], 0, "{s}");
    assert_eq!(s["closed"], expect_closed, "{s}");
    assert_eq!(s["bytes_up"], UP_BYTES * expect_closed, "{s}");
    assert_eq!(s["bytes_down"], DOWN_BYTES * expect_closed, "{s}");
    let line = proxy
        .wait_log("msg=conn_closed", expect_closed as usize)
        .last()
        .cloned()
        .expect("conn_closed line");
    let want = format!("{SERVER_IP}:{SERVICE_PORT}");
    assert_eq!(
        logfmt_field(&line, "upstream"),
        Some(want.as_str()),
        "{line}"
    );
    assert_eq!(logfmt_field(&line, "outcome"), Some("closed"), "{line}");
}

/// nftables TPROXY interception, the README's gateway recipe.
#[test]
fn transparent_tproxy_nft_full_transparency() {
    if let Some(why) = netns_skip_reason("t") {
        println!("SKIPPED transparent_tproxy_nft_full_transparency: {why}");
        return;
    }
    if run(&["nft", "--version"]).is_err() {
        println!(
            "SKIPPED transparent_tproxy_nft_full_transparency: `nft` not installed \
             (Debian package nftables)"
        );
        return;
    }
    let topo = Topo::new("t").expect("topology");
    let g = topo.g.as_str();
    let tport = TPROXY_PORT.to_string();
    let up = intercept(
        g,
        &[
            "up",
            "--in",
            "veth-c",
            "--ports",
            "5201",
            "--proxy-port",
            &tport,
        ],
    );
    if let Err(e) = up {
        println!(
            "SKIPPED transparent_tproxy_nft_full_transparency: nft tproxy rules rejected: {e}"
        );
        return;
    }

    let listen = format!("0.0.0.0:{TPROXY_PORT}");
    let proxy = Proxy::spawn(
        &topo.in_gw(),
        &[
            "--listen",
            &listen,
            "--transparent",
            "--stats",
            "127.0.0.1:0",
            "--mark",
            "2",
        ],
    );
    let view = transfer_through_gateway(&topo);
    assert_eq!(
        view.peer.ip().to_string(),
        CLIENT_IP,
        "server must see the client's address"
    );
    assert_eq!(view.peer, view.client, "the client's port is kept too");
    assert_relayed(&topo, &proxy, 1);
    println!(
        "tproxy (nft): {} MiB up / {} MiB down relayed to {SERVER_IP}:{SERVICE_PORT}, server saw \
         peer {}",
        UP_BYTES >> 20,
        DOWN_BYTES >> 20,
        view.peer
    );
    drop(proxy);

    // --no-spoof: same interception, the server sees the gateway's address instead.
    let proxy = Proxy::spawn(
        &topo.in_gw(),
        &[
            "--listen",
            &listen,
            "--transparent",
            "--no-spoof",
            "--stats",
            "127.0.0.1:0",
        ],
    );
    let view = transfer_through_gateway(&topo);
    assert_eq!(view.peer.ip().to_string(), GW_SERVER_SIDE);
    assert_relayed(&topo, &proxy, 1);

    // `down` removes what `up` added.
    intercept(
        g,
        &[
            "down",
            "--in",
            "veth-c",
            "--ports",
            "5201",
            "--proxy-port",
            &tport,
        ],
    )
    .unwrap();
    let ruleset = run(&["ip", "netns", "exec", g, "nft", "list", "ruleset"]).unwrap();
    assert!(!ruleset.contains("tcplab_pep"), "{ruleset}");
    assert_policy_routing_removed(g);
}

/// Runs the README's interception script inside namespace `ns`.
fn intercept(ns: &str, args: &[&str]) -> Result<String, String> {
    let mut cmd = vec!["ip", "netns", "exec", ns, "sh", SCRIPT];
    cmd.extend_from_slice(args);
    run(&cmd)
}

fn assert_policy_routing_removed(ns: &str) {
    let rules = run(&["ip", "-n", ns, "rule", "show"]).unwrap();
    assert!(!rules.contains("lookup 100"), "{rules}");
    let table = run(&["ip", "-n", ns, "route", "show", "table", "100"]).unwrap_or_default();
    assert!(table.trim().is_empty(), "{table}");
}

/// Policy-routing (AnyIP) interception without any netfilter rule.
#[test]
fn transparent_anyip_routing_full_transparency() {
    if let Some(why) = netns_skip_reason("a") {
        println!("SKIPPED transparent_anyip_routing_full_transparency: {why}");
        return;
    }
    let topo = Topo::new("a").expect("topology");
    let g = topo.g.as_str();
    let args = ["--method", "anyip", "--in", "veth-c", "--out", "veth-s"];
    let mut up = vec!["up"];
    up.extend_from_slice(&args);
    intercept(g, &up).unwrap();
    let listen = format!("0.0.0.0:{SERVICE_PORT}");
    let proxy = Proxy::spawn(
        &topo.in_gw(),
        &[
            "--listen",
            &listen,
            "--transparent",
            "--stats",
            "127.0.0.1:0",
        ],
    );
    let view = transfer_through_gateway(&topo);
    assert_eq!(
        view.peer.ip().to_string(),
        CLIENT_IP,
        "server must see the client's address"
    );
    assert_eq!(view.peer, view.client, "the client's port is kept too");
    assert_relayed(&topo, &proxy, 1);
    println!(
        "anyip routing: {} MiB up / {} MiB down relayed to {SERVER_IP}:{SERVICE_PORT}, server saw \
         peer {}",
        UP_BYTES >> 20,
        DOWN_BYTES >> 20,
        view.peer
    );
    drop(proxy);
    let mut down = vec!["down"];
    down.extend_from_slice(&args);
    intercept(g, &down).unwrap();
    assert_policy_routing_removed(g);
}
