//! Topology: links and the routes packets follow.
//!
//! The dumbbell of the studies: sender_i —access— R2 —bottleneck— R1 —access— receiver_i.
//! Routers forward instantly, so a route is just the list of links a packet crosses and
//! the endpoint it is delivered to. Each flow has its own access links (as each host has
//! its own NIC), while all flows share the bottleneck in each direction.
use crate::config::{AccessConfig, DirConfig, ScenarioConfig};
use crate::event::Side;
use crate::net::link::{ErrorModel, Link, QueueLimit};
use crate::rng::SimRng;
use crate::time::SimDuration;

/// Router-side access interfaces buffer like a Linux NIC's default `txqueuelen`; host-side
/// interfaces never drop their own packets (TCP Small Queues back-pressure instead).
pub const ACCESS_QUEUE_PKTS: u64 = 1000;

/// A path through the network and the endpoint at its end.
#[derive(Debug, Clone)]
pub struct Route {
    pub links: Vec<u32>,
    pub dest_flow: u32,
    pub dest_side: Side,
}

/// All links and routes of a scenario.
#[derive(Debug)]
pub struct Topology {
    pub links: Vec<Link>,
    pub routes: Vec<Route>,
    pub bottleneck_fwd: u32,
    pub bottleneck_rev: u32,
}

impl Topology {
    /// Route of data packets (sender → receiver) of `flow`.
    #[inline]
    pub fn data_route(flow: u32) -> u32 {
        2 * flow
    }
    /// Route of ACKs (receiver → sender) of `flow`.
    #[inline]
    pub fn ack_route(flow: u32) -> u32 {
        2 * flow + 1
    }

    /// Build the dumbbell of a scenario.
    pub fn dumbbell(cfg: &ScenarioConfig) -> Topology {
        let seed = cfg.seed;
        let mut links = Vec::with_capacity(2 + 4 * cfg.flows.len());
        let dir_link = |name: &str, d: &DirConfig| Link::from_config(name, d, seed);
        links.push(dir_link("bottleneck.forward", &cfg.bottleneck.forward));
        links.push(dir_link("bottleneck.reverse", &cfg.bottleneck.reverse));
        let access_link = |name: String, a: &AccessConfig, host_side: bool| {
            let rng = SimRng::substream(seed, &format!("link/{name}/errors"));
            let limit = if host_side {
                QueueLimit::Unlimited
            } else {
                QueueLimit::Packets(ACCESS_QUEUE_PKTS)
            };
            Link::new(
                name,
                a.rate_bps,
                SimDuration::from_ns(a.delay_ns),
                limit,
                ErrorModel::default(),
                rng,
            )
        };
        let mut routes = Vec::with_capacity(2 * cfg.flows.len());
        for (i, f) in cfg.flows.iter().enumerate() {
            let a = f.access.unwrap_or(cfg.access);
            let base = links.len() as u32;
            links.push(access_link(format!("flow{i}.sender_up"), &a, true));
            links.push(access_link(format!("flow{i}.receiver_down"), &a, false));
            links.push(access_link(format!("flow{i}.receiver_up"), &a, true));
            links.push(access_link(format!("flow{i}.sender_down"), &a, false));
            routes.push(Route {
                links: vec![base, 0, base + 1],
                dest_flow: i as u32,
                dest_side: Side::Receiver,
            });
            routes.push(Route {
                links: vec![base + 2, 1, base + 3],
                dest_flow: i as u32,
                dest_side: Side::Sender,
            });
        }
        Topology {
            links,
            routes,
            bottleneck_fwd: 0,
            bottleneck_rev: 1,
        }
    }

    /// Round-trip propagation delay of a flow's path (no serialization, no queueing).
    pub fn base_rtt(&self, flow: u32) -> SimDuration {
        let mut d = SimDuration::ZERO;
        for r in [Self::data_route(flow), Self::ack_route(flow)] {
            for &l in &self.routes[r as usize].links {
                d += self.links[l as usize].delay;
            }
        }
        d
    }
}
