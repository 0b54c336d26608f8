//! Command line of `tcplab-pep`.
//!
//! The contract used by `tcplab emulate` is
//! `tcplab-pep --listen ADDR:PORT [--upstream HOST:PORT | --transparent] [--cca-upstream NAME]
//! [--cca-downstream NAME] [--buffer BYTES] [--max-conns N] [--mark N] [--log-level LEVEL]`;
//! the remaining options are extras for operators and tests. Parsing is hand-written so every
//! mistake is one line (`error: ...`) and exit code 2, like the rest of tcplab.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use crate::log::Level;

/// Default relay buffer per direction per connection: 4 MiB.
pub const DEFAULT_BUFFER_BYTES: usize = 4 << 20;
/// Default connection limit.
pub const DEFAULT_MAX_CONNS: usize = 1024;
/// Default timeout for the upstream connect.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Where each accepted connection is relayed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `--upstream HOST:PORT`: every connection goes to this (resolved at startup) address.
    Explicit { host: String, addr: SocketAddr },
    /// `--transparent`: the original destination (the accepted socket's local address under
    /// TPROXY or AnyIP routing) is the upstream. With `spoof_client` the upstream leg binds the
    /// client's address (full transparency); otherwise it uses the gateway's own address.
    Transparent { spoof_client: bool },
}

/// Everything the proxy needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub mode: Mode,
    /// TCP_CONGESTION for the proxy→server leg (None: kernel default).
    pub cca_upstream: Option<String>,
    /// TCP_CONGESTION for the client→proxy leg (None: kernel default).
    pub cca_downstream: Option<String>,
    /// Relay buffer per direction per connection, bytes.
    pub buffer_bytes: usize,
    /// At most this many relayed connections at once; excess ones are reset and counted.
    pub max_conns: usize,
    /// SO_MARK for upstream sockets (None: unset).
    pub mark: Option<u32>,
    pub log_level: Level,
    /// A TCP address that answers every connection with one JSON line of statistics.
    pub stats_addr: Option<SocketAddr>,
    /// Period of the `stats` log line (None: off).
    pub stats_interval: Option<Duration>,
    pub connect_timeout: Duration,
    /// Where to write the per-connection report (JSON) at exit (None: no report, no
    /// sampling).
    pub report: Option<PathBuf>,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Run(Box<Config>),
    /// `--check`: report what transparent mode needs and exit.
    Check,
    Help,
    Version,
}

pub const USAGE: &str = "\
usage: tcplab-pep --listen ADDR:PORT (--upstream HOST:PORT | --transparent) [options]

A split-TCP Performance Enhancing Proxy: every accepted connection is relayed on a second
TCP connection with its own congestion control and bounded buffers.

  --listen ADDR:PORT       address to accept on (port 0: any; the log says which)
  --upstream HOST:PORT     explicit mode: relay every connection to HOST:PORT
  --transparent            transparent mode (TPROXY): relay to the original destination;
                           the upstream leg binds the client's address (IP_TRANSPARENT)
  --no-spoof               transparent mode: use the gateway's own address upstream
  --cca-upstream NAME      TCP_CONGESTION of the proxy->server leg
  --cca-downstream NAME    TCP_CONGESTION of the client->proxy leg
  --buffer BYTES           relay buffer per direction per connection (default 4MiB;
                           suffixes k/K/KiB, m/M/MiB)
  --max-conns N            connection limit; excess connections are reset (default 1024)
  --mark N                 SO_MARK on upstream sockets (decimal or 0x hex)
  --connect-timeout SECS   upstream connect timeout (default 30)
  --stats ADDR:PORT        serve one JSON line of statistics per TCP connection
  --stats-interval SECS    log a stats line every SECS seconds
  --report FILE            at exit, write one JSON record per connection (bytes, relay
                           buffer occupancy, TCP_INFO of both sockets, 100 ms samples)
  --log-level LEVEL        error, warn, info (default) or debug; logs go to stderr
  --check                  report IP_TRANSPARENT/TPROXY support and exit (0 = usable)
  --help, --version
";

fn parse_socket_addr(flag: &str, v: &str) -> Result<SocketAddr, String> {
    v.parse::<SocketAddr>()
        .map_err(|_| format!("{flag} = {v:?}: expected IP:PORT (IPv6 as [ADDR]:PORT)"))
}

fn parse_u64(flag: &str, v: &str) -> Result<u64, String> {
    let r = if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else {
        v.parse::<u64>()
    };
    r.map_err(|_| format!("{flag} = {v:?}: expected a non-negative integer"))
}

/// Parses `4194304`, `64k`, `64KiB`, `4M`, `4MiB` (all binary multiples).
pub fn parse_bytes(flag: &str, v: &str) -> Result<usize, String> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, suffix) = v.split_at(split);
    let mult: u64 = match suffix {
        "" | "B" => 1,
        "k" | "K" | "KiB" | "KB" | "kB" => 1 << 10,
        "m" | "M" | "MiB" | "MB" => 1 << 20,
        "g" | "G" | "GiB" | "GB" => 1 << 30,
        _ => {
            return Err(format!(
                "{flag} = {v:?}: expected BYTES, e.g. 4194304, 256KiB or 4MiB"
            ))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{flag} = {v:?}: expected BYTES, e.g. 4194304, 256KiB or 4MiB"))?;
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("{flag} = {v:?}: too large"))?;
    if bytes < 1024 {
        return Err(format!("{flag} = {v:?}: must be at least 1024 bytes"));
    }
    usize::try_from(bytes).map_err(|_| format!("{flag} = {v:?}: too large"))
}

fn parse_secs(flag: &str, v: &str) -> Result<Duration, String> {
    let s: f64 = v
        .parse()
        .map_err(|_| format!("{flag} = {v:?}: expected seconds"))?;
    if !(s.is_finite() && s > 0.0) {
        return Err(format!("{flag} = {v:?}: must be > 0"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Parses `args` (without the program name).
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    let mut listen = None;
    let mut upstream: Option<String> = None;
    let mut transparent = false;
    let mut no_spoof = false;
    let mut cca_upstream = None;
    let mut cca_downstream = None;
    let mut buffer_bytes = DEFAULT_BUFFER_BYTES;
    let mut max_conns = DEFAULT_MAX_CONNS;
    let mut mark = None;
    let mut log_level = Level::Info;
    let mut stats_addr = None;
    let mut stats_interval = None;
    let mut connect_timeout = DEFAULT_CONNECT_TIMEOUT;
    let mut report = None;
    let mut check = false;

    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let takes_value = matches!(
            flag.as_str(),
            "--listen"
                | "--upstream"
                | "--cca-upstream"
                | "--cca-downstream"
                | "--buffer"
                | "--max-conns"
                | "--mark"
                | "--log-level"
                | "--stats"
                | "--stats-interval"
                | "--connect-timeout"
                | "--report"
        );
        let value = if takes_value {
            match inline {
                Some(v) => v,
                None => it.next().ok_or_else(|| format!("{flag}: missing value"))?,
            }
        } else {
            if inline.is_some() {
                return Err(format!("{flag}: takes no value"));
            }
            String::new()
        };
        match flag.as_str() {
            "--listen" => listen = Some(parse_socket_addr("--listen", &value)?),
            "--upstream" => upstream = Some(value),
            "--transparent" => transparent = true,
            "--no-spoof" => no_spoof = true,
            "--cca-upstream" => cca_upstream = Some(value),
            "--cca-downstream" => cca_downstream = Some(value),
            "--buffer" => buffer_bytes = parse_bytes("--buffer", &value)?,
            "--max-conns" => {
                let n = parse_u64("--max-conns", &value)?;
                if n == 0 {
                    return Err("--max-conns = 0: must be at least 1".into());
                }
                max_conns = usize::try_from(n).map_err(|_| "--max-conns: too large".to_string())?;
            }
            "--mark" => {
                let n = parse_u64("--mark", &value)?;
                mark = Some(
                    u32::try_from(n)
                        .map_err(|_| format!("--mark = {value:?}: must fit in 32 bits"))?,
                );
            }
            "--log-level" => {
                log_level = Level::parse(&value).ok_or_else(|| {
                    format!("--log-level = {value:?}: expected error, warn, info or debug")
                })?
            }
            "--stats" => stats_addr = Some(parse_socket_addr("--stats", &value)?),
            "--stats-interval" => stats_interval = Some(parse_secs("--stats-interval", &value)?),
            "--connect-timeout" => connect_timeout = parse_secs("--connect-timeout", &value)?,
            "--report" => {
                if value.is_empty() {
                    return Err("--report: expected a file name".into());
                }
                report = Some(PathBuf::from(value));
            }
            "--check" => check = true,
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    if check {
        return Ok(Command::Check);
    }
    let listen = listen.ok_or("--listen ADDR:PORT is required (see --help)")?;
    let mode = match (upstream, transparent) {
        (Some(_), true) => return Err("--upstream and --transparent are exclusive".into()),
        (None, false) => {
            return Err("one of --upstream HOST:PORT or --transparent is required".into())
        }
        (Some(host), false) => {
            if no_spoof {
                return Err("--no-spoof only applies to --transparent".into());
            }
            let addr = resolve_upstream(&host)?;
            Mode::Explicit { host, addr }
        }
        (None, true) => Mode::Transparent {
            spoof_client: !no_spoof,
        },
    };
    Ok(Command::Run(Box::new(Config {
        listen,
        mode,
        cca_upstream,
        cca_downstream,
        buffer_bytes,
        max_conns,
        mark,
        log_level,
        stats_addr,
        stats_interval,
        connect_timeout,
        report,
    })))
}

/// Resolves `HOST:PORT` once at startup (the first address wins).
fn resolve_upstream(host: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = host.parse::<SocketAddr>() {
        return Ok(a);
    }
    if !host.contains(':') {
        return Err(format!("--upstream = {host:?}: expected HOST:PORT"));
    }
    host.to_socket_addrs()
        .map_err(|e| format!("--upstream = {host:?}: cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("--upstream = {host:?}: no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parse_contract_command_line() {
        let c = match parse(args(
            "--listen 127.0.0.1:9000 --upstream 127.0.0.1:9001 --cca-upstream bbr \
             --cca-downstream cubic --buffer 1MiB --max-conns 10 --mark 0x10 --log-level warn",
        ))
        .unwrap()
        {
            Command::Run(c) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(c.listen, "127.0.0.1:9000".parse().unwrap());
        assert!(matches!(c.mode, Mode::Explicit { .. }));
        assert_eq!(c.cca_upstream.as_deref(), Some("bbr"));
        assert_eq!(c.cca_downstream.as_deref(), Some("cubic"));
        assert_eq!(c.buffer_bytes, 1 << 20);
        assert_eq!(c.max_conns, 10);
        assert_eq!(c.mark, Some(16));
        assert_eq!(c.log_level, Level::Warn);
        assert_eq!(c.report, None);
    }

    #[test]
    fn parse_report_file() {
        let c = match parse(args(
            "--listen 127.0.0.1:1 --transparent --report /tmp/r.json",
        ))
        .unwrap()
        {
            Command::Run(c) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(c.report, Some(PathBuf::from("/tmp/r.json")));
        assert!(parse(args("--listen 127.0.0.1:1 --transparent --report=")).is_err());
    }

    #[test]
    fn parse_transparent_defaults_to_spoofing() {
        let c = match parse(args("--listen=0.0.0.0:5000 --transparent")).unwrap() {
            Command::Run(c) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(c.mode, Mode::Transparent { spoof_client: true });
        assert_eq!(c.buffer_bytes, DEFAULT_BUFFER_BYTES);
    }

    #[test]
    fn parse_rejects_mistakes_with_one_line() {
        for bad in [
            "--listen 127.0.0.1:1",
            "--listen 127.0.0.1:1 --upstream 127.0.0.1:2 --transparent",
            "--listen nowhere --transparent",
            "--listen 127.0.0.1:1 --transparent --buffer 12x",
            "--listen 127.0.0.1:1 --transparent --buffer 10",
            "--listen 127.0.0.1:1 --transparent --max-conns 0",
            "--listen 127.0.0.1:1 --transparent --mark 0x100000000",
            "--listen 127.0.0.1:1 --transparent --bogus",
        ] {
            let e = parse(args(bad)).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn parse_bytes_binary_suffixes() {
        assert_eq!(parse_bytes("b", "4194304").unwrap(), 4 << 20);
        assert_eq!(parse_bytes("b", "64k").unwrap(), 64 << 10);
        assert_eq!(parse_bytes("b", "4MiB").unwrap(), 4 << 20);
        assert!(parse_bytes("b", "MiB").is_err());
    }
}
