mod common;
use common::*;
use tcplab_core::api;

fn run(spec: &Spec) -> api::RunResult {
    api::run(spec.build()).expect("valid scenario")
}

#[test]
fn explore() {
    for cca in ["bbr", "cubic", "reno"] {
        for per in [0.0, 0.01, 0.05] {
            let r = run(&Spec {
                rtt_ms: 500.4,
                rate_bps: 4_000_000,
                return_rate_bps: 4_000_000,
                queue_pkts: 333,
                duration_s: 600,
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
