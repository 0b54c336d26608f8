//! Topology: links and the routes packets follow.
//!
//! A path is a chain of segments between nodes 0..=k, from the server side to the client
//! side; the dumbbell of the studies is the one-segment path `bottleneck`. Each user flow
//! has its own access links (its hosts' NICs) at both ends. A TCP connection — a whole flow
//! end to end, or one leg of it between split-TCP PEPs — runs between two endpoints (a host
//! or a path node) and gets a data route and an ACK route. Routers forward instantly, so a
//! route is just the list of links a packet crosses and what it is delivered to.
//!
//! Link numbering: segment `s` has forward link `2s` and reverse link `2s + 1` (so the
//! dumbbell's bottleneck is links 0 and 1), then four access links per flow. The event loop
//! forwards over the access links with their compact twins in `Topology::access`
//! (`net::access`); their `Link`s keep the names and configuration.
use crate::engine::rng::SimRng;
use crate::engine::time::SimDuration;
use crate::limits::MAX_RATE_BPS;
use crate::net::access::AccessLink;
use crate::net::link::{stream_name, ErrorModel, Link, QueueLimit};
use crate::net::wifi::WifiMedium;
use crate::scenario::{AccessConfig, DirConfig, ScenarioConfig, SegmentConfig};
use crate::tcp::connection::Side;

/// Router-side access interfaces buffer like a Linux NIC's default `txqueuelen`; host-side
/// interfaces never drop their own packets (TCP Small Queues back-pressure instead).
pub const ACCESS_QUEUE_PKTS: u64 = 1000;

/// Where a connection starts or ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The flow's server host (before node 0).
    Server,
    /// A path node (a PEP sits there).
    Node(usize),
    /// The flow's client host (after the last node).
    Client,
}

/// A connection to route: which flow's access links it uses and its two ends.
#[derive(Copy, Clone, Debug)]
pub struct ConnPlan {
    pub flow: usize,
    pub from: Endpoint,
    pub to: Endpoint,
}

/// What a route delivers to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dest {
    /// An endpoint of TCP connection `conn`.
    Conn { conn: u32, side: Side },
    /// The UDP sink of flow `flow`.
    Udp { flow: u32 },
    /// The sink of cross-traffic source `source` (the far end of its link).
    Cross { source: u32 },
    /// An endpoint of TCP cross-traffic connection slot `conn` (`Simulation::xconns`).
    CrossConn { conn: u32, side: Side },
}

/// A path through the network and the endpoint at its end: its links are
/// `Topology::route_links[first..first + len]`.
///
/// Every hop of every packet reads its route, so the routes are two dense arrays (16 bytes
/// a route, 4 a link) rather than a list allocated per route: with thousands of flows the
/// per-route allocations were scattered over the heap and a hop cost a cache miss for the
/// route and another for its list, which the dense arrays, small enough to stay cached, do
/// not.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    first: u32,
    /// Links on the route.
    pub len: u32,
    pub dest: Dest,
}

/// All links and routes of a scenario.
#[derive(Debug)]
pub struct Topology {
    pub links: Vec<Link>,
    /// The flows' access links as the event loop forwards over them: link
    /// `first_access + i` is `access[i]` (`Topology::access_index`).
    pub access: Vec<AccessLink>,
    pub first_access: u32,
    /// Per access link (as `access`): the one wired link every packet reaches it from, when
    /// there is one (`NO_FEEDER` otherwise). A packet leaving that link is handed to the
    /// access link at once (`Simulation::on_wire`): nothing else offers to it, and the feeder
    /// delivers in order, so the access link sees the same offers at the same times.
    pub access_feeder: Vec<u32>,
    /// Per access link (as `access`): the wired link it alone feeds, when it is a host's own
    /// unlimited interface and the link behind it decides each packet at admission from
    /// its arrival time alone (`NO_FEEDER` otherwise). A packet leaving the host is offered
    /// to that link at once, for the time it reaches it (`Simulation::forward_access`): no
    /// other packet reaches the link, and the interface delivers in order, so the link sees
    /// the same offers at the same times.
    pub access_feeds: Vec<u32>,
    pub routes: Vec<Route>,
    /// The links of all routes, route after route (`Route::first`).
    route_links: Vec<u32>,
    /// Forward/reverse link of each segment.
    pub segments: Vec<(String, u32, u32)>,
    /// The forward link of the slowest segment (the one sampled for the series).
    pub bottleneck_fwd: u32,
    pub bottleneck_rev: u32,
    n_conns: u32,
    /// Routes of the cross-traffic sources, in scenario order.
    pub cross_routes: Vec<u32>,
    /// Per cross-traffic source: for TCP cross traffic, the links its data and its ACKs
    /// cross (the segment's two directions, behind and before a delay link each that
    /// brings the round trip to the source's RTT); every connection slot gets a route
    /// pair over them when it is made (`add_route`).
    pub cross_tcp_links: Vec<Option<(Vec<u32>, Vec<u32>)>>,
    /// Wi-Fi media (segments with `wifi`); their two links only carry what the medium
    /// delivers (the pipeline to the far end) and its counters.
    pub media: Vec<WifiMedium>,
    /// Per link: the medium it belongs to (`NO_MEDIUM`: a wire).
    pub medium_of: Vec<u32>,
}

/// A flow's four access links, in the order `Topology::access` holds them: name, whether
/// it is a host's own interface (else the router's port facing the host), and the endpoint
/// its packets travel to.
const ACCESS_DIRS: [(&str, bool, Side); 4] = [
    ("sender_up", true, Side::Receiver),
    ("receiver_down", false, Side::Receiver),
    ("receiver_up", true, Side::Sender),
    ("sender_down", false, Side::Sender),
];

/// The flow access link `a` (`Topology::access[a]`) belongs to, and the endpoint of the
/// flow's connection its packets travel to.
#[inline]
pub fn access_flow_end(a: usize) -> (usize, Side) {
    (a / ACCESS_DIRS.len(), ACCESS_DIRS[a % ACCESS_DIRS.len()].2)
}

/// `Topology::medium_of` of a wired link.
pub const NO_MEDIUM: u32 = u32::MAX;

/// `Topology::access_feeder` of an access link fed by more than one link, or first on a
/// route.
pub const NO_FEEDER: u32 = u32::MAX;

fn dir_link(name: &str, d: &DirConfig, seed: u64) -> Link {
    Link::from_config(name, d, seed)
}

/// An access link direction: its `Link` (name, configuration) and the compact twin the
/// event loop forwards over, with the same rate, delay and queue limit (lossless, no ECN).
fn access_link(name: String, a: &AccessConfig, host_side: bool, seed: u64) -> (Link, AccessLink) {
    let rng = SimRng::substream(seed, &stream_name(&name, "errors"));
    let limit_pkts = match (a.queue_pkts, host_side) {
        (Some(n), _) => Some(n.max(1)),
        (None, true) => None,
        (None, false) => Some(ACCESS_QUEUE_PKTS),
    };
    let delay = SimDuration::from_ns(a.delay_ns);
    let link = Link::new(
        name,
        a.rate_bps,
        delay,
        limit_pkts.map_or(QueueLimit::Unlimited, QueueLimit::Packets),
        ErrorModel::default(),
        rng,
    );
    (link, AccessLink::new(a.rate_bps, delay, limit_pkts))
}

/// The routes while they are built.
struct Routes {
    routes: Vec<Route>,
    links: Vec<u32>,
}

impl Routes {
    fn with_capacity(n: usize) -> Self {
        Routes {
            routes: Vec::with_capacity(n),
            links: Vec::with_capacity(4 * n),
        }
    }

    fn push(&mut self, links: &[u32], dest: Dest) {
        self.routes.push(Route {
            first: self.links.len() as u32,
            len: links.len() as u32,
            dest,
        });
        self.links.extend_from_slice(links);
    }
}

/// `predecessors`' value of a link reached from more than one place.
const MANY: u32 = u32::MAX - 1;

/// Per link: the link before it on every route that crosses it; `MANY` when the routes
/// differ or one starts there (packets then also enter it from elsewhere: a host, a relay,
/// cross traffic); `NO_FEEDER` when no route crosses it.
fn predecessors(routes: &Routes, n_links: usize) -> Vec<u32> {
    let mut before = vec![NO_FEEDER; n_links];
    for r in &routes.routes {
        let links = &routes.links[r.first as usize..(r.first + r.len) as usize];
        for (hop, &l) in links.iter().enumerate() {
            let from = match hop {
                0 => MANY,
                _ => links[hop - 1],
            };
            let b = &mut before[l as usize];
            *b = match *b {
                NO_FEEDER => from,
                same if same == from => same,
                _ => MANY,
            };
        }
    }
    before
}

/// `Topology::access_feeder`: per access link, the wired link before it on every route
/// that crosses it. An access link first on a route (a host's own) is fed by the host;
/// one behind a Wi-Fi medium's link is left alone (the medium's deliveries have their own
/// path).
fn feeders(before: &[u32], first_access: u32, n_access: usize, medium_of: &[u32]) -> Vec<u32> {
    (0..n_access)
        .map(|a| match before[first_access as usize + a] {
            f if f == NO_FEEDER || f == MANY => NO_FEEDER,
            f if f.wrapping_sub(first_access) as usize >= n_access
                && medium_of[f as usize] == NO_MEDIUM =>
            {
                f
            }
            _ => NO_FEEDER,
        })
        .collect()
}

/// `Topology::access_feeds`: per access link, the wired link it alone leads to, when it may
/// pass packets on at once (`passes`: a host's unlimited interface, which never refuses
/// one) and that link decides at admission: not a link behind a Wi-Fi medium, nor one that
/// queues packets for later service (CoDel: its dequeues run as events), nor one that TCP
/// cross traffic's routes (made during the run) cross.
fn fed_links(
    before: &[u32],
    links: &[Link],
    first_access: u32,
    passes: &[bool],
    medium_of: &[u32],
    cross_tcp_links: &[Option<(Vec<u32>, Vec<u32>)>],
) -> Vec<u32> {
    let n_access = passes.len();
    let access_of = |l: u32| Some(l.wrapping_sub(first_access) as usize).filter(|&a| a < n_access);
    let crossed: Vec<u32> = cross_tcp_links
        .iter()
        .flatten()
        .flat_map(|(data, ack)| data.iter().chain(ack).copied())
        .collect();
    let mut feeds = vec![NO_FEEDER; n_access];
    for (l, link) in links.iter().enumerate() {
        let wired = access_of(l as u32).is_none() && medium_of[l] == NO_MEDIUM;
        if !wired || link.is_event_driven() || crossed.contains(&(l as u32)) {
            continue;
        }
        if let Some(a) = access_of(before[l]).filter(|&a| passes[a]) {
            feeds[a] = l as u32;
        }
    }
    feeds
}

impl Topology {
    /// The links of route `route`, in the order a packet crosses them.
    #[inline]
    pub fn route_links(&self, route: u32) -> &[u32] {
        let r = &self.routes[route as usize];
        &self.route_links[r.first as usize..(r.first + r.len) as usize]
    }

    /// The link at position `hop` of route `route`.
    #[inline]
    pub fn route_link(&self, route: u32, hop: u16) -> u32 {
        let r = &self.routes[route as usize];
        debug_assert!((hop as u32) < r.len);
        self.route_links[(r.first + hop as u32) as usize]
    }

    /// Where link `link` is in `access`, if it is a flow's access link.
    #[inline]
    pub fn access_index(&self, link: u32) -> Option<usize> {
        let i = link.wrapping_sub(self.first_access) as usize;
        (i < self.access.len()).then_some(i)
    }

    /// Route of data packets (sender → receiver) of connection `conn`.
    #[inline]
    pub fn data_route(conn: u32) -> u32 {
        2 * conn
    }
    /// Route of ACKs (receiver → sender) of connection `conn`.
    #[inline]
    pub fn ack_route(conn: u32) -> u32 {
        2 * conn + 1
    }
    /// Route of UDP flow number `udp` (its index among the UDP flows).
    pub fn udp_route(&self, udp: u32) -> u32 {
        2 * self.n_conns + udp
    }

    /// Build the links of `cfg`'s path and the routes of `conns` and of the UDP flows
    /// `udp_flows` (flow indices; server → client).
    pub fn build(cfg: &ScenarioConfig, conns: &[ConnPlan], udp_flows: &[usize]) -> Topology {
        let seed = cfg.seed;
        let (segs, _) = cfg.segments();
        let k = segs.len();
        let mut links = Vec::with_capacity(2 * k + 4 * cfg.flows.len());
        let mut segments = Vec::with_capacity(k);
        let mut media = Vec::new();
        let mut medium_of = Vec::new();
        for s in &segs {
            let SegmentConfig {
                name,
                forward,
                reverse,
                wifi,
            } = s;
            let f = links.len() as u32;
            links.push(dir_link(&format!("{name}.forward"), forward, seed));
            links.push(dir_link(&format!("{name}.reverse"), reverse, seed));
            segments.push((name.clone(), f, f + 1));
            let m = match wifi {
                Some(w) => {
                    media.push(WifiMedium::new(
                        name,
                        w,
                        forward,
                        reverse,
                        cfg.flows.len(),
                        seed,
                    ));
                    media.len() as u32 - 1
                }
                None => NO_MEDIUM,
            };
            medium_of.extend([m, m]);
        }
        let first_access = links.len() as u32;
        let mut access_twins = Vec::with_capacity(4 * cfg.flows.len());
        for (i, f) in cfg.flows.iter().enumerate() {
            let a = f.access.unwrap_or(cfg.access);
            for (dir, host_side, _) in ACCESS_DIRS {
                let (link, twin) = access_link(format!("flow{i}.{dir}"), &a, host_side, seed);
                links.push(link);
                access_twins.push(twin);
            }
        }
        // TCP cross traffic's delay links (after every flow's, so no link number changes),
        // at the fastest rate a link may have: they delay, they do not queue.
        let mut cross_tcp_links = Vec::with_capacity(cfg.cross.len());
        for (i, c) in cfg.cross.iter().enumerate() {
            let Some(rtt) = cfg.cross_rtt_ns(c) else {
                cross_tcp_links.push(None);
                continue;
            };
            let s = c.segment_index(&segs);
            let (f, r) = (&segs[s].forward, &segs[s].reverse);
            let extra = rtt.saturating_sub(f.delay_ns.saturating_add(r.delay_ns));
            let (fl, rl) = (segments[s].1, segments[s].2);
            let (data_link, ack_link) = if c.place().1 { (rl, fl) } else { (fl, rl) };
            let mut delay_link = |name: String, delay_ns: u64| {
                let rng = SimRng::substream(seed, &stream_name(&name, "errors"));
                links.push(Link::new(
                    name,
                    MAX_RATE_BPS,
                    SimDuration::from_ns(delay_ns),
                    QueueLimit::Unlimited,
                    ErrorModel::default(),
                    rng,
                ));
                links.len() as u32 - 1
            };
            let up = delay_link(format!("cross{i}.server"), extra / 2);
            let down = delay_link(format!("cross{i}.client"), extra - extra / 2);
            cross_tcp_links.push(Some((vec![up, data_link], vec![ack_link, down])));
        }
        medium_of.resize(links.len(), NO_MEDIUM);
        let access = |flow: usize| (2 * k + 4 * flow) as u32;
        let pos = |e: Endpoint| match e {
            Endpoint::Server => 0,
            Endpoint::Node(n) => n,
            Endpoint::Client => k,
        };
        let mut routes = Routes::with_capacity(2 * conns.len() + udp_flows.len());
        for (c, plan) in conns.iter().enumerate() {
            let base = access(plan.flow);
            let (a, b) = (pos(plan.from), pos(plan.to));
            let mut data = Vec::new();
            if plan.from == Endpoint::Server {
                data.push(base);
            }
            data.extend((a..b).map(|s| segments[s].1));
            if plan.to == Endpoint::Client {
                data.push(base + 1);
            }
            let mut ack = Vec::new();
            if plan.to == Endpoint::Client {
                ack.push(base + 2);
            }
            ack.extend((a..b).rev().map(|s| segments[s].2));
            if plan.from == Endpoint::Server {
                ack.push(base + 3);
            }
            let conn = c as u32;
            routes.push(
                &data,
                Dest::Conn {
                    conn,
                    side: Side::Receiver,
                },
            );
            routes.push(
                &ack,
                Dest::Conn {
                    conn,
                    side: Side::Sender,
                },
            );
        }
        for &flow in udp_flows {
            let base = access(flow);
            let mut links_u = vec![base];
            links_u.extend(segments.iter().map(|s| s.1));
            links_u.push(base + 1);
            routes.push(&links_u, Dest::Udp { flow: flow as u32 });
        }
        let slowest = crate::scenario::bottleneck_segment(&segs);
        // Cross traffic crosses one direction of one segment (the bottleneck's unless named)
        // and leaves the path there: it shares that queue and nothing else.
        let mut cross_routes = Vec::with_capacity(cfg.cross.len());
        for (i, c) in cfg.cross.iter().enumerate() {
            let reverse = c.place().1;
            let s = c.segment_index(&segs);
            let link = if reverse {
                segments[s].2
            } else {
                segments[s].1
            };
            cross_routes.push(routes.routes.len() as u32);
            routes.push(&[link], Dest::Cross { source: i as u32 });
        }
        let before = predecessors(&routes, links.len());
        let access_feeder = feeders(&before, first_access, access_twins.len(), &medium_of);
        let passes: Vec<bool> = access_twins.iter().map(AccessLink::is_unlimited).collect();
        let access_feeds = fed_links(
            &before,
            &links,
            first_access,
            &passes,
            &medium_of,
            &cross_tcp_links,
        );
        Topology {
            access_feeder,
            access_feeds,
            cross_routes,
            cross_tcp_links,
            bottleneck_fwd: segments.get(slowest).map_or(0, |s| s.1),
            bottleneck_rev: segments.get(slowest).map_or(1, |s| s.2),
            links,
            access: access_twins,
            first_access,
            routes: routes.routes,
            route_links: routes.links,
            segments,
            n_conns: conns.len() as u32,
            media,
            medium_of,
        }
    }

    /// Add a route over `links` to `dest` (a TCP cross-traffic slot made during the run);
    /// its number follows every route made before.
    pub fn add_route(&mut self, links: &[u32], dest: Dest) -> u32 {
        // a new feeder would break `access_feeder`'s and `access_feeds`' promises
        debug_assert!(links.iter().all(|&l| self.access_index(l).is_none()));
        debug_assert!(links.iter().all(|l| !self.access_feeds.contains(l)));
        let id = self.routes.len() as u32;
        self.routes.push(Route {
            first: self.route_links.len() as u32,
            len: links.len() as u32,
            dest,
        });
        self.route_links.extend_from_slice(links);
        id
    }

    /// The segment whose links medium `m` carries.
    pub fn medium_segment(&self, m: u32) -> usize {
        (0..self.segments.len())
            .find(|&s| self.medium_of[2 * s] == m)
            .expect("a medium belongs to a segment")
    }

    /// Round-trip propagation delay of connection `conn` (no serialization, no queueing).
    pub fn base_rtt(&self, conn: u32) -> SimDuration {
        let mut d = SimDuration::ZERO;
        for r in [Self::data_route(conn), Self::ack_route(conn)] {
            for &l in self.route_links(r) {
                d += self.links[l as usize].delay;
            }
        }
        d
    }
}
