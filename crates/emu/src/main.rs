//! `tcplab-emu`: run the link emulator, or the UDP probes that measure it.
//!
//! ```text
//! tcplab-emu run CONFIG.json|- [--spin-us N] [--rt-prio N] [--stats FILE]
//! tcplab-emu probe-send --to ADDR:PORT --rate-bps R [--payload B] --duration-ms D [--spin-us N]
//! tcplab-emu probe-recv --bind ADDR:PORT [--max-ms D] [--idle-ms I]
//! tcplab-emu version
//! ```
//! `run` prints `ready` once every TUN device is attached, starts (or restarts, on SIGUSR1)
//! the measurement window, and on SIGTERM/SIGINT prints the report as one JSON line (or
//! writes it to `--stats FILE`). `version` prints `tcplab-emu <version> model <hash>`, the
//! hash fingerprinting the sources it emulates with (see `build.rs`). Errors are one line on
//! stderr with exit status 2.
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use tcplab_emu::config::EmuConfig;
use tcplab_emu::engine::{Engine, Timing};
use tcplab_emu::probe::{self, SendSpec};
use tcplab_emu::sys;

const USAGE: &str = "usage: tcplab-emu run CONFIG.json|- [--spin-us N] [--rt-prio N] [--stats FILE]
       tcplab-emu probe-send --to ADDR:PORT --rate-bps R [--payload B] --duration-ms D [--spin-us N]
       tcplab-emu probe-recv --bind ADDR:PORT [--max-ms D] [--idle-ms I]
       tcplab-emu version";

/// Default busy-wait before each departure: measured to keep departures within ~10 µs of
/// their instant at 100 Mbit/s without holding a core (see README, "Real-stack mode").
const DEFAULT_SPIN_US: u64 = 50;

/// `--key value` options after the subcommand's positional arguments.
struct Args {
    positional: Vec<String>,
    options: BTreeMap<String, String>,
}

impl Args {
    fn parse(args: &[String], allowed: &[&str]) -> Result<Args, String> {
        let mut positional = Vec::new();
        let mut options = BTreeMap::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if let Some(key) = arg.strip_prefix("--") {
                if !allowed.contains(&key) {
                    return Err(format!(
                        "unknown option --{key}; allowed: --{}",
                        allowed.join(", --")
                    ));
                }
                let value = it.next().ok_or_else(|| format!("--{key} needs a value"))?;
                options.insert(key.to_string(), value.clone());
            } else {
                positional.push(arg.clone());
            }
        }
        Ok(Args {
            positional,
            options,
        })
    }

    fn num(&self, key: &str, default: Option<u64>) -> Result<u64, String> {
        match self.options.get(key) {
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{key} = {v:?}: not a non-negative integer")),
            None => default.ok_or_else(|| format!("--{key} is required")),
        }
    }

    fn addr(&self, key: &str) -> Result<SocketAddr, String> {
        let v = self
            .options
            .get(key)
            .ok_or_else(|| format!("--{key} is required"))?;
        v.parse()
            .map_err(|_| format!("--{key} = {v:?}: expected ADDR:PORT"))
    }
}

fn read_config(path: &str) -> Result<EmuConfig, String> {
    let mut text = String::new();
    if path == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("stdin: {e}"))?;
    } else {
        text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    }
    EmuConfig::from_json(&text).map_err(|e| e.to_string())
}

fn cmd_run(args: &Args) -> Result<(), String> {
    let [path] = args.positional.as_slice() else {
        return Err("run needs exactly one CONFIG.json (or - for stdin)".into());
    };
    let config = read_config(path)?;
    let timing = Timing {
        spin_ns: args.num("spin-us", Some(DEFAULT_SPIN_US))? * 1000,
    };
    let rt_prio = args.num("rt-prio", Some(0))?;
    sys::install_signal_handlers().map_err(|e| format!("signal handlers: {e}"))?;
    sys::init_timing(rt_prio as i32).map_err(|e| format!("timer slack / SCHED_FIFO: {e}"))?;
    let mut engine = Engine::open(&config, timing).map_err(|e| e.to_string())?;
    println!("ready {}", engine.t0_ns());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let report = engine.run().map_err(|e| e.to_string())?;
    let text = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    match args.options.get("stats") {
        Some(file) => {
            let tmp = format!("{file}.tmp");
            std::fs::write(&tmp, text + "\n").map_err(|e| format!("{tmp}: {e}"))?;
            std::fs::rename(&tmp, file).map_err(|e| format!("{file}: {e}"))?;
        }
        None => println!("{text}"),
    }
    Ok(())
}

fn cmd_probe_send(args: &Args) -> Result<(), String> {
    let spec = SendSpec {
        to: args.addr("to")?,
        rate_bps: args.num("rate-bps", None)?,
        payload_bytes: args.num("payload", Some(1472))? as usize,
        duration_ns: args.num("duration-ms", None)? * 1_000_000,
        spin_ns: args.num("spin-us", Some(DEFAULT_SPIN_US))? * 1000,
    };
    // Best effort: a sender that cannot get 1 ns slack is only less regular.
    let _ = sys::init_timing(0);
    let report = probe::send(&spec).map_err(|e| format!("probe-send: {e}"))?;
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn cmd_probe_recv(args: &Args) -> Result<(), String> {
    let bind = args.addr("bind")?;
    let max_ns = args.num("max-ms", Some(60_000))? * 1_000_000;
    let idle_ns = args.num("idle-ms", Some(1_000))? * 1_000_000;
    let report = probe::recv(bind, max_ns, idle_ns).map_err(|e| format!("probe-recv: {e}"))?;
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = argv.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match cmd.as_str() {
        "run" => Args::parse(rest, &["spin-us", "rt-prio", "stats"]).and_then(|a| cmd_run(&a)),
        "probe-send" => Args::parse(
            rest,
            &["to", "rate-bps", "payload", "duration-ms", "spin-us"],
        )
        .and_then(|a| cmd_probe_send(&a)),
        "probe-recv" => {
            Args::parse(rest, &["bind", "max-ms", "idle-ms"]).and_then(|a| cmd_probe_recv(&a))
        }
        "version" | "--version" => {
            println!(
                "tcplab-emu {} model {}",
                env!("CARGO_PKG_VERSION"),
                env!("TCPLAB_EMU_MODEL_HASH")
            );
            return ExitCode::SUCCESS;
        }
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(format!(
            "unknown command {other:?}; allowed: run, probe-send, probe-recv, version"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "error: {}",
                e.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            ExitCode::from(2)
        }
    }
}
