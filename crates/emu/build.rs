//! Fingerprints the sources whose behaviour `tcplab-emu` emulates, for `tcplab-emu version`.
//!
//! Results measured through the emulator (the kernel runs `tcplab validate --matrix` caches)
//! stay valid while these files are unchanged, whatever else of the workspace changes: the
//! emulator's own sources and the parts of `tcplab-core` it runs (the link model in `net/`,
//! its random numbers, statistics and time; the scenario's link configuration and its
//! checks in `scenario/`; the link counters' result shape in `result.rs`). The simulator's
//! TCP and congestion control (`tcp/`, `cc/`, `sim/`, ...) are deliberately left out, so
//! fixing those keeps the cached kernel runs. FNV-1a (64 bit) over each file's path and
//! bytes, in path order; no dependency needed, and a collision only matters against a
//! deliberate attack.
use std::fs;
use std::path::{Path, PathBuf};

/// Directories (every file below) and single files, relative to this crate.
const SOURCES: &[&str] = &[
    "src",
    "Cargo.toml",
    "../core/src/net",
    "../core/src/engine/rng.rs",
    "../core/src/engine/stats.rs",
    "../core/src/engine/time.rs",
    "../core/src/scenario",
    "../core/src/result.rs",
];

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
            fnv1a(&mut hash, &bytes);
        }
    }
    println!("cargo:rustc-env=TCPLAB_EMU_MODEL_HASH={hash:016x}");
}
