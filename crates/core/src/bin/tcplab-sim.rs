//! `tcplab-sim SCENARIO.json`: run a normalized scenario without Python and print the
//! result JSON, with wall time and event rate on stderr (used by the benchmark).
use std::io::Read;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = match args.get(1).map(String::as_str) {
        None | Some("-") => {
            let mut s = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut s) {
                eprintln!("error: cannot read stdin: {e}");
                std::process::exit(2);
            }
            s
        }
        Some(path) => match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {path}: {e}");
                std::process::exit(2);
            }
        },
    };
    let t0 = Instant::now();
    match tcplab_core::api::run_json(&text) {
        Ok(out) => {
            let wall = t0.elapsed().as_secs_f64();
            println!("{out}");
            eprintln!("wall_s={wall:.4}");
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
