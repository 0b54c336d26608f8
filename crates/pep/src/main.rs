//! `tcplab-pep` binary: parses the command line, runs the proxy on a tokio runtime, prints
//! `ready` on stdout once listening, exits 0 after SIGTERM/SIGINT, 2 on a usage or startup
//! check error, 1 when the proxy cannot start (e.g. the address is in use).

use std::io::Write;
use std::process::ExitCode;

use tcplab_pep::config::{self, Command};
use tcplab_pep::log::Logger;
use tcplab_pep::{proxy, sockopt};

fn main() -> ExitCode {
    let cmd = match config::parse(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cfg = match cmd {
        Command::Help => {
            print!("{}", config::USAGE);
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            println!("tcplab-pep {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Check => {
            let v4 = sockopt::probe_transparent(false);
            print!("{}", v4.report());
            return if v4.ip_transparent.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            };
        }
        Command::Run(cfg) => *cfg,
    };
    let log = Logger {
        level: cfg.log_level,
    };
    // Startup checks first, on the main thread: their errors are usage-level (exit 2).
    if let Err(e) = proxy::check_startup(
        &cfg,
        &Logger {
            level: tcplab_pep::log::Level::Error,
        },
    ) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = rt.block_on(proxy::run(cfg, log, None, |_addr| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }));
    // Connection tasks have all finished or were given up on after the grace period.
    rt.shutdown_timeout(std::time::Duration::from_millis(300));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
