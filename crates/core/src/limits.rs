//! Ranges and sizes of the normalized scenario that both languages need.
//!
//! The core validates its input with these (`config.rs`) because it must never panic on
//! input; the Python layer validates the user's file with the same numbers, read through
//! `api::limits_json`, so its one-line messages and the core's checks can never disagree.
//! A limit changes here and nowhere else.
use std::ops::RangeInclusive;

/// Longest run: 30 simulated days (time is u64 ns, so this is far from overflow).
pub const MAX_DURATION_NS: u64 = 30 * 86_400 * 1_000_000_000;
/// Fastest link: 10 Tbit/s, beyond any link worth simulating packet by packet.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// Longest one-way propagation delay of a link (and of a CoDel target or interval).
pub const MAX_DELAY_NS: u64 = 3_600 * 1_000_000_000;
/// Shortest series interval: 1 ms.
pub const MIN_INTERVAL_NS: u64 = 1_000_000;
/// Default series interval: 1 s.
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000_000;
/// Most intervals in one run's series (duration / interval).
pub const MAX_INTERVALS: u64 = 10_000_000;
/// Longest trace or outage list (entries).
pub const MAX_TRACE_LEN: usize = 10_000_000;
/// Smallest byte limit of a queue: it must hold one full packet with room for headers.
pub const MIN_QUEUE_BYTES: u64 = 1600;
/// Wire size of a full data packet (IPv4, MSS 1448 with timestamps): the packet a
/// `"<k>bdp"` queue is counted in and a Mahimahi delivery opportunity carries.
pub const MTU_BYTES: u64 = 1500;
/// Most segments of a path.
pub const MAX_SEGMENTS: usize = 64;
/// Most flows of a scenario (after `count` expansion), in one `[[flows]]` table or all
/// together. What a flow costs in the core: about 6 KiB of state from the start (sender,
/// receiver, the two access links each way, counters and histograms; measured as the peak
/// RSS of 50,000 against 10,000 bulk flows over 100 ms: 5.7 KiB each), plus its packets in
/// flight; its series cost nothing when they are streamed to a file or not kept (one
/// chunk of at most 65,536 flow-intervals is held: 3 MiB), and 48 bytes per interval when
/// they are kept in memory (`SeriesOut::Memory`). So 100,000 bulk flows take about
/// 0.6 GiB. The limit is what the Python side can expand and check in reasonable time
/// (each flow is a validated table there), far below what memory would allow.
pub const MAX_FLOWS: usize = 100_000;
/// What a flow's state costs in the core (sender, receiver, access links, counters;
/// measured as described at `MAX_FLOWS`), for the resource budget (`budget`).
pub const FLOW_STATE_BYTES: u64 = 6 * 1024;
/// What one flow-interval of series costs when a run keeps its series in its result
/// (`SeriesOut::Memory`, the Python API's `series="memory"`): 48 bytes in the core, the
/// rest in the result's JSON text and in the Python objects made from it. Measured: 100
/// idle flows for 86,400 one-second intervals peaked at 1.64 GiB of RSS, 204 bytes each.
pub const MEMORY_SERIES_BYTES_PER_FLOW_INTERVAL: u64 = 200;
/// The resource budget (`budget`): the most events a run is expected to take before it is
/// refused unless forced. 5·10^10 is about an hour at the core's 15 M events/s.
pub const MAX_EVENTS: u64 = 50_000_000_000;
/// The resource budget: the most memory a run is expected to take before it is refused
/// unless forced.
pub const MAX_MEMORY_BYTES: u64 = 4 << 30;
/// Most runs of one study's grid (variants × axis values × repetitions).
pub const MAX_RUNS: u64 = 10_000_000;
/// Maximum segment size.
pub const MSS_BYTES: RangeInclusive<u32> = 64..=65_495;
/// Initial window (RFC 6928 calls 10 large; the range only guards the arithmetic).
pub const INITIAL_WINDOW_PKTS: RangeInclusive<u32> = 1..=100_000;
/// Largest receive window: RFC 7323 §2.3 window scale ≤ 14 gives about 1 GiB.
pub const MAX_RWND_BYTES: u64 = 1 << 30;
/// Largest receive window without the window scale option.
pub const NO_WSCALE_MAX_RWND_BYTES: u64 = 65_535;
/// Largest file of a download.
pub const MAX_FILE_BYTES: u64 = 1 << 50;
/// UDP payload of one CBR datagram (the largest an IPv4 datagram carries).
pub const CBR_PACKET_BYTES: RangeInclusive<u32> = 1..=65_507;
/// A PEP's relay buffer per connection: default, and its range (at least two segments of
/// the PEP's own MSS).
pub const DEFAULT_PEP_BUFFER_BYTES: u64 = 4 * 1024 * 1024;
pub const MIN_PEP_BUFFER_SEGMENTS: u64 = 2;
pub const MAX_PEP_BUFFER_BYTES: u64 = 1 << 34;
/// A policer's bucket: it must hold one full packet (a smaller one would drop every
/// full-size packet), and at most 1 GiB.
pub const POLICER_BURST_BYTES: RangeInclusive<u64> = MTU_BYTES..=1 << 30;
/// Wire bytes of a full cross-traffic packet: an IPv4 header and up to a 64 KiB datagram.
pub const CROSS_PACKET_BYTES: RangeInclusive<u32> = 40..=65_535;
/// TCP cross traffic (`kind = "tcp-flows"`): connections one source keeps open at once.
/// A connection costs about what a flow's sender and receiver do (`FLOW_STATE_BYTES`, less
/// the access links) plus its packets in flight, and two routes that stay once made; so
/// 10,000 cost under 100 MiB. An arrival finding them all open is refused and counted: a
/// server's full accept queue, not a queue of its own that would grow without bound when
/// the offered load exceeds what the path carries.
pub const CROSS_CONNECTIONS: RangeInclusive<u32> = 1..=10_000;
/// TCP cross traffic: the default of that limit.
pub const DEFAULT_CROSS_CONNECTIONS: u32 = 1_000;
/// TCP cross traffic: the default congestion control (Linux's default).
pub const DEFAULT_CROSS_CCA: &str = "cubic";

/// Wi-Fi: transmission attempts per frame (dot11ShortRetryLimit is a byte; 255 at most).
pub const WIFI_RETRY_LIMIT_MAX: u32 = 255;
/// Wi-Fi transmit power range (dBm): 0.1 mW to 1 W.
pub const WIFI_TX_POWER_DBM: (f64, f64) = (-10.0, 30.0);
/// Wi-Fi distance to the receiver (m).
pub const WIFI_DISTANCE_M: (f64, f64) = (0.1, 10_000.0);
/// Background stations per entry.
pub const WIFI_BACKGROUND_MAX: u32 = 100;
/// Largest MSDU (IEEE 802.11-2016).
pub const WIFI_MSDU_MAX_BYTES: u32 = 2304;
