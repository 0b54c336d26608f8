//! Fingerprints the sources whose behaviour `tcplab-emu` emulates, for `tcplab-emu version`.
//!
//! Results measured through the emulator (the kernel runs `tcplab validate --matrix` caches)
//! stay valid while these files are unchanged, whatever else of the workspace changes: the
//! emulator's own sources and the parts of `tcplab-core` it runs (the wired link model and
//! what it uses: queues and AQMs, loss, policer, traces, random numbers, statistics, time,
//! limits; the scenario's link configuration and its checks in `scenario/`; the link
//! counters' result shape in `result/link.rs`). The simulator's topology, TCP and congestion
//! control (`net/topology.rs`, `tcp/`, `cc/`, `sim/`, ...) are deliberately left out, so
//! changing those keeps the cached kernel runs. FNV-1a (64 bit) over each file's path and
//! bytes, in path order; no dependency needed, and a collision only matters against a
//! deliberate attack.
//!
//! So that the list cannot silently miss a dependency, the build fails when a fingerprinted
//! core file names a `crate::` module that is neither fingerprinted nor in `NOT_EMULATED`.
use std::fs;
use std::path::{Path, PathBuf};

/// Directories (every file below) and single files, relative to this crate.
const SOURCES: &[&str] = &[
    "src",
    "Cargo.toml",
    "../core/src/net/link.rs",
    "../core/src/net/aqm",
    "../core/src/net/loss.rs",
    "../core/src/net/policer.rs",
    "../core/src/net/trace.rs",
    "../core/src/engine/rng.rs",
    "../core/src/engine/stats.rs",
    "../core/src/engine/time.rs",
    "../core/src/limits.rs",
    "../core/src/scenario",
    "../core/src/result/link.rs",
];

/// Core modules that fingerprinted files name but the emulator never runs, each for a reason:
/// - `net/wifi`: `scenario/` checks Wi-Fi settings, but the emulator refuses Wi-Fi links
///   (they exist only in the simulator);
/// - `tcp/rcvbuf.rs`: `scenario/` takes a flow's default receive buffer from it; the
///   emulator carries no flows (the kernel's own TCP does), and the scenario itself is part
///   of every cached run's key;
/// - `cc`: `scenario/` builds TCP cross traffic's algorithm once to check it; the emulator
///   refuses cross traffic;
/// - `engine/cache.rs`: `engine/stats.rs` asks it for the cache line of a histogram's last
///   count, which only the simulator's TCP sender does (and a hint computes nothing).
const NOT_EMULATED: &[&str] = &[
    "../core/src/net/wifi",
    "../core/src/tcp/rcvbuf.rs",
    "../core/src/cc",
    "../core/src/engine/cache.rs",
];

const CORE_SRC: &str = "../core/src";

fn files_below(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|entry| entry.expect("directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            files_below(&entry, out);
        }
    } else {
        out.push(path.to_path_buf());
    }
}

fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for &byte in bytes {
        *hash ^= u64::from(byte);
        *hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// The file or directory of the core that a `crate::a::b::c` path lives in: the longest
/// prefix of its segments that names one (`a/b.rs`, `a/b/mod.rs` or the directory `a/b`).
fn module_of(segments: &[&str]) -> Option<PathBuf> {
    for n in (1..=segments.len()).rev() {
        let base = Path::new(CORE_SRC).join(segments[..n].join("/"));
        let file = base.with_extension("rs");
        if file.is_file() {
            return Some(file);
        }
        if base.is_dir() {
            return Some(base);
        }
    }
    None
}

fn covered(path: &Path, list: &[&str]) -> bool {
    list.iter().any(|entry| path.starts_with(entry))
}

/// Fails the build when `file` (fingerprinted) names a core module outside the fingerprint.
fn check_closure(file: &Path, text: &str) {
    if !file.starts_with(CORE_SRC) {
        return;
    }
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let segments: Vec<&str> = path
            .split("::")
            .take_while(|s| s.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .collect();
        if segments.is_empty() {
            continue;
        }
        let Some(module) = module_of(&segments) else {
            continue;
        };
        // a directory named as a whole (`crate::net::{...}`) counts when its files do
        if !covered(&module, SOURCES) && !covered(&module, NOT_EMULATED) {
            panic!(
                "{} names crate::{}, whose source {} the emulator fingerprint does not cover: \
                 add it to SOURCES or, if the emulator never runs it, to NOT_EMULATED with \
                 the reason",
                file.display(),
                segments.join("::"),
                module.display()
            );
        }
    }
}

fn main() {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
        let mut files = Vec::new();
        files_below(Path::new(source), &mut files);
        for file in files {
            // The path as written relative to the crate: the same on every checkout.
            fnv1a(&mut hash, file.to_string_lossy().as_bytes());
            fnv1a(&mut hash, &[0]);
            let bytes = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            check_closure(&file, &String::from_utf8_lossy(&bytes));
            fnv1a(&mut hash, &bytes);
        }
    }
    println!("cargo:rustc-env=TCPLAB_EMU_MODEL_HASH={hash:016x}");
}
