//! The one table of algorithms. Each row names an algorithm's catalogue entry and how it
//! runs: as a Linux congestion module on the Linux sender (an enum variant, its type and
//! its constructor), as an ns-2 agent with a sender of its own (`tcp::ns2`), or both (`reno`
//! and `vegas` run ns-2's agents on `tcp.stack = "ns2"`). The table generates:
//!
//! - `Cc`, the enum of the Linux modules, and its `CongestionControl` dispatch (enum
//!   dispatch keeps the hot path inline, as smoltcp's `AnyController` does);
//! - the catalogue (`catalogue`, `info`; `api::ccas_json`), in the table's order;
//! - the builders: `build` for a Linux module, `ns2_agent` for the agent that runs a flow.
//!
//! Adding an algorithm is one file in `cc/` and one row here.
use super::{
    AckFlags, AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, Params,
    Window,
};
use crate::engine::rng::SimRng;
use crate::engine::time::SimTime;
use crate::scenario::{ConfigError, Stack};
use crate::tcp::linux::rate::RateSample;
use crate::tcp::ns2::{self, Ns2Kind};

/// Builds a Linux module from checked parameters.
type Builder = fn(&Params<'_>, &FlowInit, &mut SimRng) -> Result<Cc, ConfigError>;

/// One row of the table.
#[derive(Copy, Clone)]
pub struct Entry {
    pub info: CcInfo,
    /// The Linux module, if the algorithm has one.
    linux: Option<Builder>,
    /// The ns-2 agent, and whether it runs only on `tcp.stack = "ns2"` (else always).
    ns2: Option<(Ns2Kind, bool)>,
}

macro_rules! registry {
    (@linux) => { None };
    (@linux $V:ident $ctor:expr) => {
        Some(|p: &Params<'_>, init: &FlowInit, rng: &mut SimRng| -> Result<Cc, ConfigError> {
            ($ctor)(p, init, rng).map(Cc::$V)
        })
    };
    (@ns2) => { None };
    (@ns2 $K:ident) => { Some((Ns2Kind::$K, false)) };
    (@ns2 $K:ident $only:ident) => { Some((Ns2Kind::$K, true)) };
    ($(
        $info:path
        $(=> $V:ident($T:ty) $ctor:expr)?
        $(, ns2 $K:ident $($only:ident)?)?
        ;
    )*) => {
        /// The Linux congestion modules (one variant per row of the table that has one).
        pub enum Cc {
            $($( $V($T), )?)*
        }

        /// The table, in catalogue order.
        const TABLE: &[Entry] = &[
            $(Entry {
                info: $info,
                linux: registry!(@linux $($V $ctor)?),
                ns2: registry!(@ns2 $($K $($only)?)?),
            },)*
        ];

        impl Cc {
            /// The catalogue entry of the running module.
            pub fn info(&self) -> CcInfo {
                match self {
                    $($( Cc::$V(_) => $info, )?)*
                }
            }
        }

        impl CongestionControl for Cc {
            #[inline]
            fn on_ack_event(&mut self, w: &mut Window, f: AckFlags) {
                match self { $($( Cc::$V(c) => c.on_ack_event(w, f), )?)* }
            }
            #[inline]
            fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
                match self { $($( Cc::$V(c) => c.on_pkts_acked(w, s), )?)* }
            }
            fn on_congestion_event(&mut self, w: &mut Window, kind: LossKind) -> u32 {
                match self { $($( Cc::$V(c) => c.on_congestion_event(w, kind), )?)* }
            }
            #[inline]
            fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
                match self { $($( Cc::$V(c) => c.cong_avoid(w, acked), )?)* }
            }
            fn on_state_change(&mut self, w: &mut Window, new: CaState) {
                match self { $($( Cc::$V(c) => c.on_state_change(w, new), )?)* }
            }
            fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
                match self { $($( Cc::$V(c) => c.on_cwnd_event(w, ev), )?)* }
            }
            fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
                match self { $($( Cc::$V(c) => c.on_spurious_loss(w), )?)* }
            }
            #[inline]
            fn cong_control(&mut self, w: &mut Window, rs: &RateSample) -> bool {
                match self { $($( Cc::$V(c) => c.cong_control(w, rs), )?)* }
            }
            fn has_cong_control(&self) -> bool {
                match self { $($( Cc::$V(c) => c.has_cong_control(), )?)* }
            }
            #[inline]
            fn pacing_rate_bps(&self, w: &Window) -> Option<u64> {
                match self { $($( Cc::$V(c) => c.pacing_rate_bps(w), )?)* }
            }
            fn sets_pacing_rate(&self) -> bool {
                match self { $($( Cc::$V(c) => c.sets_pacing_rate(), )?)* }
            }
            #[inline]
            fn min_tso_segs(&self, w: &Window) -> u32 {
                match self { $($( Cc::$V(c) => c.min_tso_segs(w), )?)* }
            }
            #[inline]
            fn on_packet_sent(&mut self, w: &Window, bytes: u32) {
                match self { $($( Cc::$V(c) => c.on_packet_sent(w, bytes), )?)* }
            }
            #[inline]
            fn send_timer(&self) -> Option<SimTime> {
                match self { $($( Cc::$V(c) => c.send_timer(), )?)* }
            }
            fn on_send_timer(&mut self, w: &mut Window) {
                match self { $($( Cc::$V(c) => c.on_send_timer(w), )?)* }
            }
            fn phase(&self) -> Option<&'static str> {
                match self { $($( Cc::$V(c) => c.phase(), )?)* }
            }
        }
    };
}

use super::{
    bbr, bic, compound, cubic, dctcp, fast, highspeed, htcp, hybla, illinois, ledbat, lp, reno,
    scalable, vegas, veno, wave, westwood, yeah,
};

registry! {
    reno::INFO => Reno(reno::Reno) |p, i, _| reno::Reno::new(p, i), ns2 Reno ns2_stack_only;
    ns2::NEWRENO_INFO, ns2 NewReno;
    cubic::INFO => Cubic(Box<cubic::Cubic>) |p, i, _| cubic::Cubic::new(p, i).map(Box::new);
    bic::INFO => Bic(Box<bic::Bic>) |p, i, _| bic::Bic::new(p, i).map(Box::new);
    highspeed::INFO => HighSpeed(highspeed::HighSpeed) |p, i, _| highspeed::HighSpeed::new(p, i);
    scalable::INFO => Scalable(scalable::Scalable) |p, i, _| scalable::Scalable::new(p, i);
    htcp::INFO => Htcp(Box<htcp::Htcp>) |p, i, _| htcp::Htcp::new(p, i).map(Box::new);
    hybla::INFO => Hybla(Box<hybla::Hybla>) |p, i, _| hybla::Hybla::new(p, i).map(Box::new);
    westwood::INFO => Westwood(Box<westwood::Westwood>)
        |p, i, _| westwood::Westwood::new(p, i).map(Box::new);
    illinois::INFO => Illinois(Box<illinois::Illinois>)
        |p, i, _| illinois::Illinois::new(p, i).map(Box::new);
    lp::INFO => Lp(Box<lp::Lp>) |p, i, _| lp::Lp::new(p, i).map(Box::new);
    vegas::INFO => Vegas(Box<vegas::Vegas>) |p, i, _| vegas::Vegas::new(p, i).map(Box::new),
        ns2 Vegas ns2_stack_only;
    veno::INFO => Veno(Box<veno::Veno>) |p, i, _| veno::Veno::new(p, i).map(Box::new);
    yeah::INFO => Yeah(Box<yeah::Yeah>) |p, i, _| yeah::Yeah::new(p, i).map(Box::new);
    fast::INFO => Fast(Box<fast::Fast>) |p, i, _| fast::Fast::new(p, i).map(Box::new);
    compound::INFO => Compound(Box<compound::Compound>)
        |p, i, _| compound::Compound::new(p, i).map(Box::new);
    bbr::v1::INFO => Bbr(Box<bbr::v1::Bbr>) |p, i, r| bbr::v1::Bbr::new(p, i, r).map(Box::new);
    bbr::v3::INFO => Bbr3(Box<bbr::v3::Bbr3>)
        |p, i, r| bbr::v3::Bbr3::new(p, i, r).map(Box::new);
    dctcp::INFO => Dctcp(dctcp::Dctcp) |p, i, _| dctcp::Dctcp::new(p, i);
    ledbat::INFO => Ledbat(Box<ledbat::Ledbat>) |p, i, _| ledbat::Ledbat::new(p, i).map(Box::new);
    wave::INFO => Wave(Box<wave::Wave>) |p, i, _| wave::Wave::new(p, i).map(Box::new);
    ns2::TAHOE_INFO, ns2 Tahoe;
    ns2::SACK_INFO, ns2 Sack1;
    ns2::FACK_INFO, ns2 Fack;
}

/// All built-in algorithms, in catalogue order.
pub fn catalogue() -> impl Iterator<Item = CcInfo> {
    TABLE.iter().map(|e| e.info)
}

/// The row of algorithm `name`.
fn entry(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.info.name == name)
}

/// Catalogue entry for `name`.
pub fn info(name: &str) -> Option<CcInfo> {
    entry(name).map(|e| e.info)
}

/// "cca: unknown algorithm …; allowed: <the catalogue>".
fn unknown(name: &str) -> ConfigError {
    let names: Vec<&str> = catalogue().map(|i| i.name).collect();
    ConfigError(format!(
        "cca: unknown algorithm {name:?}; allowed: {}",
        names.join(", ")
    ))
}

/// The parameters of the ns-2 agent that `name` runs on `tcp.stack = "ns2"` when that agent
/// differs from its Linux module (`reno`, `vegas`); `None` for every other algorithm.
pub fn ns2_stack_params(name: &str) -> Option<&'static [crate::cc::ParamSpec]> {
    match entry(name)?.ns2? {
        (kind, true) => Some(kind.params()),
        (_, false) => None,
    }
}

/// The ns-2 agent that runs a flow of algorithm `cca` on stack `stack`, if any (`tahoe`,
/// `newreno`, `sack`, `fack` always; `reno` and `vegas` on the ns-2 stack).
pub fn ns2_agent(cca: &str, stack: Stack) -> Option<Ns2Kind> {
    let (kind, only_on_ns2) = entry(cca)?.ns2?;
    (!only_on_ns2 || stack == Stack::Ns2).then_some(kind)
}

/// Build the Linux module `name` with scenario parameters `params`.
pub fn build(
    name: &str,
    params: &std::collections::BTreeMap<String, f64>,
    init: &FlowInit,
    rng: &mut SimRng,
) -> Result<Cc, ConfigError> {
    let e = entry(name).ok_or_else(|| unknown(name))?;
    let p = Params::new(name, params, e.info.params)?;
    match e.linux {
        Some(builder) => builder(&p, init, rng),
        None => Err(ConfigError(format!(
            "cca: {name:?} is an ns-2 agent with its own sender (tcp::ns2), not a Linux \
             congestion module; the simulation builds it itself"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_a_module_or_an_agent_and_names_are_unique() {
        for (i, e) in TABLE.iter().enumerate() {
            assert!(e.linux.is_some() || e.ns2.is_some(), "{}", e.info.name);
            assert!(
                TABLE[..i].iter().all(|o| o.info.name != e.info.name),
                "{} twice",
                e.info.name
            );
        }
    }

    #[test]
    fn routing_reno_and_vegas_follow_the_stack() {
        assert_eq!(ns2_agent("tahoe", Stack::Linux), Some(Ns2Kind::Tahoe));
        assert_eq!(ns2_agent("newreno", Stack::Linux), Some(Ns2Kind::NewReno));
        assert_eq!(ns2_agent("sack", Stack::Ns2), Some(Ns2Kind::Sack1));
        assert_eq!(ns2_agent("fack", Stack::Linux), Some(Ns2Kind::Fack));
        assert_eq!(ns2_agent("reno", Stack::Linux), None);
        assert_eq!(ns2_agent("reno", Stack::Ns2), Some(Ns2Kind::Reno));
        assert_eq!(ns2_agent("vegas", Stack::Linux), None);
        assert_eq!(ns2_agent("vegas", Stack::Ns2), Some(Ns2Kind::Vegas));
        // reno's Linux module has no parameter; its ns-2 agent has the RTO clock's.
        let names = |p: &[crate::cc::ParamSpec]| p.iter().map(|s| s.name).collect::<Vec<_>>();
        assert!(names(ns2_stack_params("reno").unwrap()).contains(&"tick_ns"));
        assert!(names(ns2_stack_params("vegas").unwrap()).contains(&"tick_ns"));
        assert!(
            ns2_stack_params("sack").is_none(),
            "sack is the agent everywhere"
        );
        assert!(ns2_stack_params("cubic").is_none());
        assert_eq!(ns2_agent("cubic", Stack::Ns2), None);
        assert_eq!(ns2_agent("cubik", Stack::Ns2), None);
    }

    #[test]
    fn a_built_module_reports_its_own_row() {
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        for e in TABLE.iter().filter(|e| e.linux.is_some()) {
            let cc = build(
                e.info.name,
                &Default::default(),
                &init,
                &mut SimRng::substream(1, "t"),
            )
            .unwrap();
            assert_eq!(cc.info().name, e.info.name);
        }
        let e = build(
            "tahoe",
            &Default::default(),
            &init,
            &mut SimRng::substream(1, "t"),
        );
        assert!(e.is_err_and(|e| e.0.contains("ns-2 agent")));
    }
}
