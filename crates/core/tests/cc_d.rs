mod common;
use common::*;
use tcplab_core::api;

fn run(spec: &Spec) -> api::RunResult {
    api::run(spec.build()).expect("valid scenario")
}

#[test]
fn explore() {
    let env = |k: &str, d: f64| {
        std::env::var(k)
            .ok()
            .map(|v| v.parse().unwrap())
            .unwrap_or(d)
    };
    let rtt = env("RTT", 500.4);
    let rate = env("RATE", 4e6) as u64;
    let q = env("Q", 333.0) as u64;
    let dur = env("DUR", 600.0) as u64;
    let ccas = std::env::var("CCAS").unwrap_or("bbr,bbr3,cubic".into());
    let pers = std::env::var("PERS").unwrap_or("0,0.01,0.05".into());
    for cca in ccas.split(',') {
        let cca: &'static str = Box::leak(cca.to_string().into_boxed_str());
        for per in pers.split(',') {
            let per: f64 = per.parse().unwrap();
            let r = run(&Spec {
                rtt_ms: rtt,
                rate_bps: rate,
                return_rate_bps: rate,
                queue_pkts: q,
                duration_s: dur,
                per,
                cca,
                ..Default::default()
            });
            let f = &r.flows[0];
            println!("{cca} per={per}: util {:.3} goodput {:.0} rtt mean {:.1} ms min {:?} retrans {} rto {} qmean {:.1} qmax {} drops {}",
            r.links[0].utilization, f.goodput_bps, f.rtt.mean_ns.unwrap()/1e6, f.rtt.min_ns, f.retransmits, f.rto_count, r.links[0].queue_mean_pkts, r.links[0].queue_max_pkts, r.links[0].queue_drops);
        }
    }
}
