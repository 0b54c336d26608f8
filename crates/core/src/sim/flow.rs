//! User flows, as the scenario lists them: a TCP flow is one connection end to end, or a
//! chain of connections joined by split-TCP PEP relays (`relay`); a CBR flow is a UDP
//! source and sink. `plan` builds every flow's connections and says where each runs.
use crate::app::udp::{UdpSink, UdpSource};
use crate::engine::time::SimTime;
use crate::net::topology::{ConnPlan, Endpoint};
use crate::scenario::{satellite_segment, AppConfig, ConfigError, PepMode, ScenarioConfig};
use crate::sim::relay::Relay;
use crate::tcp::connection::{self, ConnSpec, Connection};

/// What a user flow is.
#[derive(Debug)]
pub enum FlowKind {
    Tcp {
        conns: Vec<u32>,
        relays: Vec<Relay>,
    },
    Udp {
        source: UdpSource,
        sink: UdpSink,
        route: u32,
    },
}

/// A user flow.
#[derive(Debug)]
pub struct Flow {
    pub cca: String,
    pub start: SimTime,
    pub app: AppConfig,
    pub kind: FlowKind,
}

impl Flow {
    /// Connections of a TCP flow, from the server side (empty for UDP).
    pub fn conns(&self) -> &[u32] {
        match &self.kind {
            FlowKind::Tcp { conns, .. } => conns,
            FlowKind::Udp { .. } => &[],
        }
    }
}

/// The user flows, their connections, and the routing plans of the connections and of
/// the UDP flows.
pub struct Plan {
    pub flows: Vec<Flow>,
    pub conns: Vec<Connection>,
    pub conn_plans: Vec<ConnPlan>,
    pub udp_flows: Vec<usize>,
}

/// Legs of a TCP flow on this path: (from, to, crosses the satellite segment).
fn legs(cfg: &ScenarioConfig) -> Vec<(Endpoint, Endpoint, bool)> {
    let (segs, pep) = cfg.segments();
    let g = satellite_segment(&segs);
    match pep {
        PepMode::None => vec![(Endpoint::Server, Endpoint::Client, true)],
        PepMode::Gateway => vec![
            (Endpoint::Server, Endpoint::Node(g), false),
            (Endpoint::Node(g), Endpoint::Client, true),
        ],
        PepMode::Distributed => vec![
            (Endpoint::Server, Endpoint::Node(g), false),
            (Endpoint::Node(g), Endpoint::Node(g + 1), true),
            (Endpoint::Node(g + 1), Endpoint::Client, false),
        ],
    }
}

/// Plan every flow of a scenario.
pub fn plan(cfg: &ScenarioConfig) -> Result<Plan, ConfigError> {
    let legs = legs(cfg);
    let n_legs = legs.len();
    let mut flows = Vec::with_capacity(cfg.flows.len());
    let mut conns: Vec<Connection> = Vec::new();
    let mut conn_plans = Vec::new();
    let mut udp_flows = Vec::new();
    for (i, f) in cfg.flows.iter().enumerate() {
        let start = SimTime(f.start_ns);
        if let AppConfig::Cbr {
            rate_bps,
            packet_bytes,
        } = f.app
        {
            flows.push(Flow {
                cca: "udp-cbr".into(),
                start,
                app: f.app,
                kind: FlowKind::Udp {
                    source: UdpSource::new(i as u32, rate_bps, packet_bytes),
                    sink: UdpSink::default(),
                    route: udp_flows.len() as u32,
                },
            });
            udp_flows.push(i);
            continue;
        }
        let mut ids = Vec::with_capacity(n_legs);
        let mut relays = Vec::new();
        for (l, &(from, to, satellite)) in legs.iter().enumerate() {
            // The leg over the satellite segment runs the PEP's TCP (when the flow names
            // one and the path has PEPs); legs ending at an end host run the flow's own.
            let use_pep = satellite && n_legs > 1 && f.pep.is_some();
            let (cca, params, tcp, field) = match (&f.pep, use_pep) {
                (Some(p), true) => (&p.cca, &p.cca_params, &p.tcp, format!("flows[{i}].pep")),
                _ => (&f.cca, &f.cca_params, &f.tcp, format!("flows[{i}]")),
            };
            let buffer = f.pep.as_ref().map_or(4 * 1024 * 1024, |p| p.buffer_bytes);
            let spec = ConnSpec {
                flow: i,
                leg: l,
                field,
                cca,
                cca_params: params,
                tcp,
                app: f.app,
                start,
                relay_sender: l > 0,
                relay_limit: (l + 1 < n_legs).then_some(buffer),
                streams: None,
            };
            let id = conns.len() as u32;
            conns.push(connection::build(cfg.seed, &spec)?);
            conn_plans.push(ConnPlan { flow: i, from, to });
            if l > 0 {
                let name = if n_legs == 2 {
                    "pep".to_string()
                } else {
                    format!("pep{l}")
                };
                relays.push(Relay::new(id - 1, id, name, buffer));
            }
            ids.push(id);
        }
        flows.push(Flow {
            cca: f.cca.clone(),
            start,
            app: f.app,
            kind: FlowKind::Tcp { conns: ids, relays },
        });
    }
    Ok(Plan {
        flows,
        conns,
        conn_plans,
        udp_flows,
    })
}
