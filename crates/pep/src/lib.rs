//! tcplab-pep: a transparent split-TCP Performance Enhancing Proxy, in the spirit of PEPsal.
//!
//! Each TCP connection that reaches the proxy (explicitly, or intercepted on a gateway with
//! TPROXY) is terminated locally and relayed on a second TCP connection to the server, so each
//! leg runs its own congestion control (`--cca-upstream`, `--cca-downstream`) and loss recovery
//! over its own RTT. Between the legs the proxy holds at most `--buffer` bytes per direction and
//! throttles the sender through TCP flow control when that is full.
//!
//! Modules: [`config`] (command line), [`fds`] (`RLIMIT_NOFILE` for `--max-conns`), [`proxy`] (listener, accept loop, connection tasks,
//! shutdown), [`relay`] (the two-direction relay with half-close and reset propagation),
//! [`ring`] (the bounded buffer), [`sockopt`] (TCP_CONGESTION, IP_TRANSPARENT, SO_MARK,
//! SO_LINGER, TCP_INFO and startup probes), [`stats`] (counters and the JSON snapshot),
//! [`report`] (`--report`: per-connection records with kernel TCP statistics), [`log`]
//! (logfmt lines on stderr).

pub mod config;
pub mod fds;
pub mod log;
pub mod proxy;
pub mod relay;
pub mod report;
pub mod ring;
pub mod sockopt;
pub mod stats;
