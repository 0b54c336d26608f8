//! The model version: one integer that names the simulator's numbers.
//!
//! A stored run is reused only when its scenario, seed *and* model version match, so a run
//! computed by an older simulator is never counted as "already stored" for a newer one. Bump
//! `MODEL_VERSION` with any change that alters a result for some scenario and seed (a fix in
//! an algorithm, loss detection, a link model, a default the core applies, the result's
//! fields or their definitions); leave it alone for refactors, speed-ups and new features
//! that existing scenarios do not reach. The golden-results test (`tests/test_golden.py`)
//! tells which: it fails with "results changed: bump MODEL_VERSION and regenerate" when the
//! numbers differ under an unchanged version. Regenerate with
//! `python -m tcplab.tools.golden --update` after the bump.

/// Version of the simulation model (see the module note). Stored with every run and reported
/// in every result (`model_version`); Python asks the core for it and never hard-codes it.
///
/// - 1: the model as first versioned.
/// - 2: paced senders send TSO/GSO bursts (`tcp_tso_autosize` segments per pacing slot, as
///   Linux does; BBR's numbers change); results carry the smoothed RTT's time mean.
/// - 3: the Linux receiver opens its window as Linux does (initial 65160 B, `tcp_grow_window`
///   with an immediate ACK per step, right-sizing per receiver RTT, SO_RCVBUF for an explicit
///   `rwnd`), so it ACKs most segments during slow start; data segments echo TS.Recent.
/// - 4: a CBR source's first datagram leaves one period after its start (not at it), so a
///   run's CBR goodput no longer exceeds the configured rate by one datagram.
/// - 5: a timer (or any other event) due in the nanosecond a packet arrives runs before
///   the arrival, as the kernel runs expired timers before the packets received in the same
///   tick; it used to depend on which was scheduled first (a delayed-ACK timer, whose
///   timeout follows the arrival gaps, often falls due exactly at an arrival). This lets a
///   packet leaving a link be handed to the access link behind it at once, one event for
///   the two hops, with every time unchanged.
/// - 6: packets from several links that reach a link in the same nanosecond enter it in the
///   order of the links' numbers, not in the order their arrivals were scheduled; with many
///   flows a delayed-ACK timer of one flow falls due in the nanosecond another's segment
///   arrives, and the order of their two ACKs at the return link decided between runs that
///   differ from then on. Now that order is fixed by the path, so an endpoint may handle a
///   packet on its last hop as soon as its arrival time is known (`sim::ahead`).
pub const MODEL_VERSION: u32 = 6;
