//! The proxy: startup checks, the listener, the accept loop and one task per connection.
//!
//! Task structure:
//! - the **accept loop** (the `run` future itself) accepts, enforces `--max-conns` (an excess
//!   connection is closed at once with SO_LINGER 0, i.e. an RST, and counted as `refused`) and
//!   spawns one **connection task** per accepted socket;
//! - a **connection task** finds the upstream (the `--upstream` address, or in transparent mode
//!   the accepted socket's local address, which TPROXY keeps as the original destination),
//!   connects the second leg (optionally bound to the client's address with IP_TRANSPARENT,
//!   with SO_MARK and its own TCP_CONGESTION), then runs [`relay`] for both directions while
//!   also watching both sockets for errors (an RST on an otherwise idle leg) and the shutdown
//!   signal. Its end is logged with the per-connection byte counts and, with `--report`,
//!   recorded (the same task samples TCP_INFO every 100 ms while relaying, see [`report`]);
//! - optional **stats** tasks: a TCP endpoint answering one JSON line per connection and a
//!   periodic log line;
//! - a **signal** task turns SIGTERM/SIGINT into the shutdown signal: the listener is closed,
//!   every connection task aborts its two sockets (RST: the streams were cut short) and `run`
//!   returns once no connection is left, after writing the `--report` file.
//!
//! No connection state is shared between tasks except atomic counters and the stats registry.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{SockRef, Socket};
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

use crate::config::{Config, Mode};
use crate::log::{Logger, Opt};
use crate::relay::{relay, DirCounters, DirSummary, Pipe, RelayError, Side};
use crate::report::{self, ConnEnd, Report, Sampler};
use crate::sockopt::{self, tcp_socket_for};
use crate::stats::{ConnStats, Stats};

/// Listen backlog.
const BACKLOG: i32 = 1024;
/// How long shutdown waits for connection tasks to finish closing (they abort at once on the
/// signal; this bounds a straggler), so the process exits within 2 s of SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1000);

/// State shared by every task of one proxy instance.
struct Ctx {
    cfg: Config,
    log: Logger,
    stats: Stats,
    next_id: AtomicU64,
    /// `--report`: where finished connections leave their record.
    report: Option<Report>,
}

/// How a connection ended.
enum Outcome {
    /// Both directions forwarded their FIN.
    Closed,
    /// The client side reset or failed; the server side was reset too.
    ResetByClient(String),
    /// The server side reset or failed; the client side was reset too.
    ResetByServer(String),
    /// The upstream connect failed or timed out; the client was reset.
    UpstreamFailed(String),
    /// SIGTERM/SIGINT: both sides were reset.
    Shutdown,
}

impl Outcome {
    fn as_str(&self) -> &'static str {
        match self {
            Outcome::Closed => "closed",
            Outcome::ResetByClient(_) => "reset_by_client",
            Outcome::ResetByServer(_) => "reset_by_server",
            Outcome::UpstreamFailed(_) => "upstream_failed",
            Outcome::Shutdown => "shutdown",
        }
    }

    fn error(&self) -> Option<&str> {
        match self {
            Outcome::ResetByClient(e) | Outcome::ResetByServer(e) | Outcome::UpstreamFailed(e) => {
                Some(e)
            }
            _ => None,
        }
    }
}

/// Startup checks that turn into a one-line error: congestion controls, transparent-mode
/// support, SO_MARK, and an explicit upstream that would loop back into the proxy.
pub fn check_startup(cfg: &Config, log: &Logger) -> Result<(), String> {
    if let Some(name) = &cfg.cca_upstream {
        sockopt::validate_cca("--cca-upstream", name)?;
    }
    if let Some(name) = &cfg.cca_downstream {
        sockopt::validate_cca("--cca-downstream", name)?;
    }
    match &cfg.mode {
        Mode::Transparent { spoof_client } => {
            let sup = sockopt::probe_transparent(cfg.listen.is_ipv6());
            if let Err(e) = &sup.ip_transparent {
                return Err(format!(
                    "--transparent: IP_TRANSPARENT does not work here: {e}"
                ));
            }
            if *spoof_client {
                if let Err(e) = &sup.nonlocal_bind {
                    return Err(format!(
                        "--transparent: cannot bind the client's address upstream ({e}); \
                         use --no-spoof to relay from the gateway's own address"
                    ));
                }
            }
            match &sup.tproxy {
                Some(found) => log.info("tproxy_support", &[("found", found)]),
                None => log.warn(
                    "tproxy_support",
                    &[(
                        "found",
                        &"none: no xt_TPROXY/nft_tproxy in this kernel; only policy-routing \
                          (AnyIP) interception can reach the listener",
                    )],
                ),
            }
        }
        Mode::Explicit { addr, host } => {
            if addr.port() == 0 {
                return Err(format!(
                    "--upstream = {host:?}: port 0 is not a destination"
                ));
            }
            if *addr == cfg.listen
                || (cfg.listen.ip().is_unspecified()
                    && addr.port() == cfg.listen.port()
                    && sockopt::is_local_address(addr.ip()))
            {
                return Err(format!(
                    "--upstream = {host:?}: is the proxy's own --listen address (a loop)"
                ));
            }
        }
    }
    if let Some(path) = &cfg.report {
        Report::check_writable(path)?;
    }
    let soft = crate::fds::ensure_for(cfg.max_conns)?;
    log.info("nofile_limit", &[("soft", &soft)]);
    if cfg.mark.is_some() {
        let probe = tcp_socket_for(&cfg.listen).map_err(|e| format!("socket: {e}"))?;
        probe.set_mark(1).map_err(|e| {
            format!("--mark: SO_MARK does not work here: {e} (needs CAP_NET_ADMIN)")
        })?;
    }
    Ok(())
}

/// Creates the listening socket: SO_REUSEADDR, IP_TRANSPARENT in transparent mode and the
/// downstream TCP_CONGESTION (accepted sockets inherit it from the listener).
fn make_listener(cfg: &Config) -> Result<TcpListener, String> {
    let addr = cfg.listen;
    let sock = tcp_socket_for(&addr).map_err(|e| format!("socket: {e}"))?;
    sock.set_reuse_address(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    if matches!(cfg.mode, Mode::Transparent { .. }) {
        sockopt::set_transparent(&sock, &addr)
            .map_err(|e| format!("--transparent: IP_TRANSPARENT on the listener: {e}"))?;
    }
    if let Some(name) = &cfg.cca_downstream {
        sockopt::set_cca(SockRef::from(&sock), name)
            .map_err(|e| format!("--cca-downstream = {name:?}: {e}"))?;
    }
    sock.set_nonblocking(true)
        .map_err(|e| format!("O_NONBLOCK: {e}"))?;
    sock.bind(&addr.into())
        .map_err(|e| format!("--listen = {addr}: cannot bind: {e}"))?;
    sock.listen(BACKLOG)
        .map_err(|e| format!("--listen = {addr}: cannot listen: {e}"))?;
    TcpListener::from_std(sock.into()).map_err(|e| format!("--listen = {addr}: {e}"))
}

/// A bound stats endpoint (`--stats`).
fn make_stats_listener(addr: SocketAddr) -> Result<TcpListener, String> {
    let sock = tcp_socket_for(&addr).map_err(|e| format!("socket: {e}"))?;
    sock.set_reuse_address(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    sock.set_nonblocking(true)
        .map_err(|e| format!("O_NONBLOCK: {e}"))?;
    sock.bind(&addr.into())
        .map_err(|e| format!("--stats = {addr}: cannot bind: {e}"))?;
    sock.listen(64)
        .map_err(|e| format!("--stats = {addr}: cannot listen: {e}"))?;
    TcpListener::from_std(sock.into()).map_err(|e| format!("--stats = {addr}: {e}"))
}

/// Decrements `active` when a connection task ends, even by panic.
struct ActiveGuard(Arc<Ctx>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.stats.active.fetch_sub(1, Relaxed);
    }
}

/// Runs the proxy until SIGTERM/SIGINT (or until `stop` becomes true). `on_ready` is called
/// once the listener is bound, with its address; `main` prints `ready` there.
pub async fn run(
    cfg: Config,
    log: Logger,
    stop: Option<watch::Receiver<bool>>,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<(), String> {
    check_startup(&cfg, &log)?;
    let listener = make_listener(&cfg)?;
    let stats_listener = cfg.stats_addr.map(make_stats_listener).transpose()?;
    let listen_addr = listener
        .local_addr()
        .map_err(|e| format!("--listen: {e}"))?;

    let report = match &cfg.report {
        Some(path) => Some(
            Report::create(path.clone(), cfg.buffer_bytes)
                .map_err(|e| format!("--report = {:?}: {e}", path.display()))?,
        ),
        None => None,
    };
    let ctx = Arc::new(Ctx {
        cfg,
        log,
        stats: Stats::default(),
        next_id: AtomicU64::new(1),
        report,
    });
    let (shutdown_tx, shutdown_rx) = watch::channel(false);

    // Signals (and an optional external stop, used by embedders) → shutdown.
    {
        let tx = shutdown_tx.clone();
        let log = ctx.log;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("SIGTERM handler: {e}"))?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| format!("SIGINT handler: {e}"))?;
        let mut stop = stop;
        tokio::spawn(async move {
            let external = async {
                match stop.as_mut() {
                    Some(rx) => {
                        let _ = rx.wait_for(|v| *v).await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let why = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
                _ = external => "stop",
            };
            log.always("shutdown", &[("reason", &why)]);
            let _ = tx.send(true);
        });
    }

    if let Some(l) = stats_listener {
        let addr = l.local_addr().map_err(|e| format!("--stats: {e}"))?;
        ctx.log.always("stats_listening", &[("addr", &addr)]);
        tokio::spawn(serve_stats(l, ctx.clone(), shutdown_rx.clone()));
    }
    if let Some(every) = ctx.cfg.stats_interval {
        tokio::spawn(log_stats(every, ctx.clone(), shutdown_rx.clone()));
    }

    let mode = match &ctx.cfg.mode {
        Mode::Explicit { addr, .. } => format!("explicit upstream={addr}"),
        Mode::Transparent { spoof_client: true } => "transparent spoof_client=true".into(),
        Mode::Transparent {
            spoof_client: false,
        } => "transparent spoof_client=false".into(),
    };
    ctx.log.always(
        "listening",
        &[
            ("addr", &listen_addr),
            ("mode", &mode),
            ("cca_upstream", &Opt(&ctx.cfg.cca_upstream)),
            ("cca_downstream", &Opt(&ctx.cfg.cca_downstream)),
            ("buffer_bytes", &ctx.cfg.buffer_bytes),
            ("max_conns", &ctx.cfg.max_conns),
            ("mark", &Opt(&ctx.cfg.mark)),
        ],
    );
    on_ready(listen_addr);

    accept_loop(&listener, &ctx, shutdown_rx.clone()).await;
    drop(listener);

    // Connection tasks see the same signal and abort; wait for them to close their sockets.
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    while ctx.stats.active.load(Relaxed) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let st = &ctx.stats;
    let mut result = Ok(());
    if let (Some(r), Some(path)) = (&ctx.report, &ctx.cfg.report) {
        match r.write(st.active.load(Relaxed)) {
            Ok(()) => ctx
                .log
                .always("report_written", &[("path", &path.display())]),
            Err(e) => {
                ctx.log
                    .error("report_failed", &[("path", &path.display()), ("err", &e)]);
                result = Err(format!("--report = {:?}: {e}", path.display()));
            }
        }
    }
    ctx.log.always(
        "exit",
        &[
            ("accepted", &st.accepted.load(Relaxed)),
            ("closed", &st.closed.load(Relaxed)),
            ("refused", &st.refused.load(Relaxed)),
            ("upstream_failed", &st.upstream_failed.load(Relaxed)),
            ("reset_by_client", &st.reset_by_client.load(Relaxed)),
            ("reset_by_server", &st.reset_by_server.load(Relaxed)),
            ("aborted_at_shutdown", &st.aborted_at_shutdown.load(Relaxed)),
            ("still_active", &st.active.load(Relaxed)),
            ("bytes_up", &st.bytes_up.load(Relaxed)),
            ("bytes_down", &st.bytes_down.load(Relaxed)),
        ],
    );
    result
}

async fn accept_loop(listener: &TcpListener, ctx: &Arc<Ctx>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.wait_for(|v| *v) => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                ctx.stats.accepted.fetch_add(1, Relaxed);
                let active = ctx.stats.active.load(Relaxed);
                if active >= ctx.cfg.max_conns as u64 {
                    ctx.stats.refused.fetch_add(1, Relaxed);
                    sockopt::set_abortive_close(SockRef::from(&stream));
                    drop(stream);
                    ctx.log.warn(
                        "refused",
                        &[
                            ("client", &peer),
                            ("active", &active),
                            ("max_conns", &ctx.cfg.max_conns),
                        ],
                    );
                    continue;
                }
                ctx.stats.active.fetch_add(1, Relaxed);
                let id = ctx.next_id.fetch_add(1, Relaxed);
                let guard = ActiveGuard(ctx.clone());
                let rx = shutdown.clone();
                tokio::spawn(async move {
                    let ctx = guard.0.clone();
                    handle_conn(id, stream, peer, &ctx, rx).await;
                    drop(guard);
                });
            }
            Err(e) => {
                // Out of descriptors or memory: back off instead of spinning; per-connection
                // errors (ECONNABORTED) are simply skipped.
                let fatalish = matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                );
                ctx.log.error("accept_failed", &[("err", &e)]);
                if fatalish {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// The upstream leg's socket: TCP_NODELAY, SO_MARK, TCP_CONGESTION and, when spoofing, bound
/// to the client's address with IP_TRANSPARENT (same port if free, else an ephemeral one).
fn upstream_socket(
    cfg: &Config,
    client: SocketAddr,
    upstream: SocketAddr,
) -> std::io::Result<Socket> {
    let sock = tcp_socket_for(&upstream)?;
    sock.set_tcp_nodelay(true)?;
    if let Some(mark) = cfg.mark {
        sock.set_mark(mark)?;
    }
    if let Some(name) = &cfg.cca_upstream {
        sockopt::set_cca(SockRef::from(&sock), name)?;
    }
    if let Mode::Transparent { spoof_client: true } = cfg.mode {
        if client.is_ipv4() == upstream.is_ipv4() {
            sockopt::set_transparent(&sock, &upstream)?;
            sock.set_reuse_address(true)?;
            if sock.bind(&client.into()).is_err() {
                sock.bind(&SocketAddr::new(client.ip(), 0).into())?;
            }
        }
    }
    sock.set_nonblocking(true)?;
    Ok(sock)
}

/// Connects the upstream leg, bounded by `--connect-timeout`, by shutdown and by the client
/// giving up meanwhile (an RST from the client while a long-RTT connect is pending).
async fn connect_upstream(
    cfg: &Config,
    client: &TcpStream,
    client_addr: SocketAddr,
    upstream: SocketAddr,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<TcpStream, Outcome> {
    let sock = upstream_socket(cfg, client_addr, upstream)
        .map_err(|e| Outcome::UpstreamFailed(format!("socket: {e}")))?;
    let sock = TcpSocket::from_std_stream(sock.into());
    tokio::select! {
        _ = shutdown.wait_for(|v| *v) => Err(Outcome::Shutdown),
        _ = client.ready(Interest::ERROR) => {
            Err(Outcome::ResetByClient(socket_error(client, "client socket error")))
        }
        r = tokio::time::timeout(cfg.connect_timeout, sock.connect(upstream)) => match r {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(Outcome::UpstreamFailed(format!("connect {upstream}: {e}"))),
            Err(_) => Err(Outcome::UpstreamFailed(format!(
                "connect {upstream}: timed out after {:?}",
                cfg.connect_timeout
            ))),
        },
    }
}

/// The socket's pending error (SO_ERROR) as text, for the log.
fn socket_error(s: &TcpStream, fallback: &str) -> String {
    match s.take_error() {
        Ok(Some(e)) => e.to_string(),
        _ => fallback.to_string(),
    }
}

async fn handle_conn(
    id: u64,
    client: TcpStream,
    peer: SocketAddr,
    ctx: &Arc<Ctx>,
    mut shutdown: watch::Receiver<bool>,
) {
    let cfg = &ctx.cfg;
    let started = Instant::now();
    let accepted_mono_ns = ctx.report.as_ref().map_or(0, |_| report::mono_ns());
    let upstream = match &cfg.mode {
        Mode::Explicit { addr, .. } => *addr,
        // TPROXY (and AnyIP routing) keep the original destination as the local address.
        Mode::Transparent { .. } => match client.local_addr() {
            Ok(a) => normalize(a),
            Err(e) => {
                ctx.log.warn(
                    "conn_dropped",
                    &[("id", &id), ("client", &peer), ("err", &e)],
                );
                return;
            }
        },
    };
    let peer = normalize(peer);
    let conn = Arc::new(ConnStats::new(id, peer, upstream));
    if let Ok(mut m) = ctx.stats.conns.lock() {
        m.insert(id, conn.clone());
    }
    let _ = client.set_nodelay(true);
    if let Some(name) = &cfg.cca_downstream {
        // Inherited from the listener; set again only if the kernel did not.
        if sockopt::get_cca(SockRef::from(&client)).ok().as_deref() != Some(name.as_str()) {
            let _ = sockopt::set_cca(SockRef::from(&client), name);
        }
    }
    if let Ok(name) = sockopt::get_cca(SockRef::from(&client)) {
        set_string(&conn.cca_downstream, name);
    }

    // Records a connection that ended (both sockets still open) when reporting.
    let record = |outcome: &Outcome, server, dirs, sampler| {
        if let Some(r) = &ctx.report {
            r.push(report::conn_record(&ConnEnd {
                conn: &conn,
                outcome: outcome.as_str(),
                error: outcome.error(),
                accepted_mono_ns,
                client: &client,
                server,
                dirs,
                sampler,
            }));
        }
    };
    let outcome = if matches!(cfg.mode, Mode::Transparent { .. })
        && upstream.port() == cfg.listen.port()
        && sockopt::is_local_address(upstream.ip())
    {
        let outcome = Outcome::UpstreamFailed(format!("{upstream} is the proxy itself (a loop)"));
        record(&outcome, None, Default::default(), None);
        outcome
    } else {
        match connect_upstream(cfg, &client, peer, upstream, &mut shutdown).await {
            Err(outcome) => {
                record(&outcome, None, Default::default(), None);
                outcome
            }
            Ok(server) => {
                if let Ok(name) = sockopt::get_cca(SockRef::from(&server)) {
                    set_string(&conn.cca_upstream, name);
                }
                if let Ok(mut a) = conn.upstream_local.lock() {
                    *a = server.local_addr().ok().map(normalize);
                }
                ctx.log.debug(
                    "conn_open",
                    &[
                        ("id", &id),
                        ("client", &peer),
                        ("upstream", &upstream),
                        ("upstream_local", &Opt(&server.local_addr().ok())),
                    ],
                );
                let mut sampler = ctx.report.as_ref().map(|_| Sampler::new(accepted_mono_ns));
                let (outcome, dirs) = relay_conn(
                    &client,
                    &server,
                    &conn,
                    ctx,
                    &mut shutdown,
                    sampler.as_mut(),
                )
                .await;
                if let Some(sampler) = sampler.as_mut() {
                    if matches!(outcome, Outcome::Closed) {
                        report::settle(&client, &server, &mut shutdown).await;
                    }
                    sampler.sample(&conn, &client, &server);
                }
                record(&outcome, Some(&server), dirs, sampler.as_ref());
                if !matches!(outcome, Outcome::Closed) {
                    sockopt::set_abortive_close(SockRef::from(&server));
                }
                outcome
            }
        }
    };
    if !matches!(outcome, Outcome::Closed) {
        // Propagate the abort (or the failed connect) to the client as an RST.
        sockopt::set_abortive_close(SockRef::from(&client));
    }
    drop(client);

    let counter = match &outcome {
        Outcome::Closed => &ctx.stats.closed,
        Outcome::ResetByClient(_) => &ctx.stats.reset_by_client,
        Outcome::ResetByServer(_) => &ctx.stats.reset_by_server,
        Outcome::UpstreamFailed(_) => &ctx.stats.upstream_failed,
        Outcome::Shutdown => &ctx.stats.aborted_at_shutdown,
    };
    counter.fetch_add(1, Relaxed);
    if let Ok(mut m) = ctx.stats.conns.lock() {
        m.remove(&id);
    }
    let level = match outcome {
        Outcome::UpstreamFailed(_) => crate::log::Level::Warn,
        _ => crate::log::Level::Info,
    };
    ctx.log.log(
        level,
        "conn_closed",
        &[
            ("id", &id),
            ("client", &peer),
            ("upstream", &upstream),
            ("outcome", &outcome.as_str()),
            ("bytes_up", &conn.bytes_up.load(Relaxed)),
            ("bytes_down", &conn.bytes_down.load(Relaxed)),
            ("duration_ms", &started.elapsed().as_millis()),
            ("cca_downstream", &get_string(&conn.cca_downstream)),
            ("cca_upstream", &get_string(&conn.cca_upstream)),
            ("err", &outcome.error().unwrap_or("-")),
        ],
    );
}

/// Relays until both FINs are forwarded, a socket fails, an idle socket reports an error
/// (e.g. an RST after its FIN) or shutdown is signalled; meanwhile `sampler` (with
/// `--report`) takes its samples. Returns how it ended and what each direction
/// (client→server, server→client) moved.
async fn relay_conn(
    client: &TcpStream,
    server: &TcpStream,
    conn: &ConnStats,
    ctx: &Ctx,
    shutdown: &mut watch::Receiver<bool>,
    sampler: Option<&mut Sampler>,
) -> (Outcome, (DirSummary, DirSummary)) {
    let buf = ctx.cfg.buffer_bytes;
    let mut up = Pipe::new(
        Side::Client,
        Side::Server,
        buf,
        DirCounters {
            bytes: &conn.bytes_up,
            total_bytes: &ctx.stats.bytes_up,
            buffered: &conn.buffered_up,
            stats: &ctx.stats,
        },
    );
    let mut down = Pipe::new(
        Side::Server,
        Side::Client,
        buf,
        DirCounters {
            bytes: &conn.bytes_down,
            total_bytes: &ctx.stats.bytes_down,
            buffered: &conn.buffered_down,
            stats: &ctx.stats,
        },
    );
    let from_error = |e: RelayError| {
        let text = format!("{} {}: {}", e.side.as_str(), e.op, e.err);
        match e.side {
            Side::Client => Outcome::ResetByClient(text),
            Side::Server => Outcome::ResetByServer(text),
        }
    };
    let sampling = async {
        match sampler {
            Some(s) => s.run(conn, client, server).await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        r = relay(client, server, &mut up, &mut down) => match r {
            Ok(()) => Outcome::Closed,
            Err(e) => from_error(e),
        },
        _ = client.ready(Interest::ERROR) => {
            Outcome::ResetByClient(socket_error(client, "client socket error"))
        }
        _ = server.ready(Interest::ERROR) => {
            Outcome::ResetByServer(socket_error(server, "server socket error"))
        }
        _ = shutdown.wait_for(|v| *v) => Outcome::Shutdown,
        never = sampling => match never {},
    };
    (outcome, (up.summary(), down.summary()))
}

/// IPv4-mapped IPv6 addresses (from a dual-stack listener) as plain IPv4.
fn normalize(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

fn set_string(m: &std::sync::Mutex<String>, v: String) {
    if let Ok(mut s) = m.lock() {
        *s = v;
    }
}

fn get_string(m: &std::sync::Mutex<String>) -> String {
    m.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Answers each connection to `--stats` with one JSON line, then closes it.
async fn serve_stats(listener: TcpListener, ctx: Arc<Ctx>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|v| *v) => return,
            a = listener.accept() => a,
        };
        let Ok((mut s, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let mut line = ctx.stats.snapshot(true).to_string();
        line.push('\n');
        tokio::spawn(async move {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), s.write_all(line.as_bytes())).await;
            // close() (not shutdown) so the descriptor is gone before the reader sees EOF.
            drop(s);
        });
    }
}

/// Logs a `stats` line every `every`.
async fn log_stats(every: Duration, ctx: Arc<Ctx>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = shutdown.wait_for(|v| *v) => return,
            _ = tick.tick() => {}
        }
        let s = &ctx.stats;
        // Asked for explicitly, so printed whatever the level.
        ctx.log.always(
            "stats",
            &[
                ("active", &s.active.load(Relaxed)),
                ("accepted", &s.accepted.load(Relaxed)),
                ("refused", &s.refused.load(Relaxed)),
                ("upstream_failed", &s.upstream_failed.load(Relaxed)),
                ("bytes_up", &s.bytes_up.load(Relaxed)),
                ("bytes_down", &s.bytes_down.load(Relaxed)),
                ("buffered_bytes", &s.buffered_bytes.load(Relaxed)),
                ("rss_bytes", &Opt(&crate::stats::rss_bytes())),
            ],
        );
    }
}
