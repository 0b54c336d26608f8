//! PHY timings of IEEE 802.11-2016 for the b (HR/DSSS, clause 16), a/g (OFDM/ERP-OFDM,
//! clauses 17/18), n (HT, clause 19) and ac (VHT, clause 21) standards: slot, SIFS,
//! contention windows, preambles, the rate/MCS tables and the duration of a PPDU.
//!
//! Durations are integer nanoseconds. A transmission "mode" is an index into the
//! standard's rate table (`Phy::modes`): DSSS/CCK rates for b, the eight OFDM rates for
//! a/g, MCS 0–7 (times the spatial streams) for n, MCS 0–9 for ac.
//!
//! Control responses (ACK, BlockAck) go at the highest mandatory legacy rate not above the
//! eliciting frame's rate (IEEE 802.11-2016 §10.6.6.5): 1 or 2 Mbit/s for b, 6/12/24
//! Mbit/s OFDM otherwise (non-HT duplicate on wider channels: same duration).

/// The 802.11 amendment a link runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Standard {
    B,
    A,
    G,
    N,
    Ac,
}

impl Standard {
    /// Parse `"b" | "a" | "g" | "n" | "ac"`.
    pub fn parse(s: &str) -> Option<Standard> {
        Some(match s {
            "b" => Standard::B,
            "a" => Standard::A,
            "g" => Standard::G,
            "n" => Standard::N,
            "ac" => Standard::Ac,
            _ => return None,
        })
    }
    /// HT/VHT: QoS data, EDCA, A-MPDU with BlockAck.
    pub fn aggregates(self) -> bool {
        matches!(self, Standard::N | Standard::Ac)
    }
}

/// Frequency band.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Band {
    Ghz2_4,
    Ghz5,
}

/// MAC header bytes of a data MPDU: 24 (non-QoS) or 26 (QoS, HT/VHT), plus the 4-byte FCS.
pub const MAC_OVERHEAD_BYTES: u32 = 28;
pub const QOS_MAC_OVERHEAD_BYTES: u32 = 30;
/// LLC/SNAP header in front of an IP packet (RFC 1042 encapsulation).
pub const LLC_SNAP_BYTES: u32 = 8;
/// ACK frame (frame control, duration, RA, FCS).
pub const ACK_BYTES: u32 = 14;
/// Compressed BlockAck frame (16 header + 2 BA control + 2 SSC + 8 bitmap + 4 FCS).
pub const BLOCK_ACK_BYTES: u32 = 32;
/// A-MPDU subframe delimiter.
pub const AMPDU_DELIMITER_BYTES: u32 = 4;
/// aPPDUMaxTime (HT and VHT): the longest PPDU, bounded by L-SIG's length field.
pub const PPDU_MAX_NS: u64 = 5_484_000;
/// BlockAck window (mac80211 negotiates 64 for HT and VHT).
pub const BA_WINDOW_MPDUS: u32 = 64;

/// One entry of a rate table.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Mode {
    /// Rate index within the standard (MCS for n/ac).
    pub index: u32,
    /// Data rate in bit/s (for n/ac: with the link's width, streams and guard interval).
    pub rate_bps: u64,
    /// Data bits per OFDM symbol (all streams); 0 for DSSS/CCK.
    pub n_dbps: u32,
    /// Minimum SNR (dB) at which this mode is used (see `radio`).
    pub min_snr_db: f64,
}

/// The PHY of a Wi-Fi link.
#[derive(Clone, Debug, PartialEq)]
pub struct Phy {
    pub standard: Standard,
    pub band: Band,
    pub width_mhz: u32,
    pub streams: u32,
    pub short_gi: bool,
    modes: Vec<Mode>,
}

/// Required SNR (dB) per rate: the standards' receiver minimum input sensitivity (10 % PER)
/// above their reference noise floor (−174 dBm/Hz + 10·log10(bandwidth) + 10 dB noise
/// figure; the sensitivity tables include a 5 dB implementation margin), so the same for
/// every channel width. OFDM a/g: IEEE 802.11-2016 Table 17-18 (−82 … −65 dBm at 20 MHz);
/// HT/VHT MCS 0–7: Tables 19-23/21-25 (−82 … −64 dBm), VHT MCS 8/9: −59/−57 dBm. DSSS
/// (only 11 Mbit/s is specified: −76 dBm at 8 % FER over 22 MHz, i.e. 14.6 dB): the lower
/// rates are 3 dB apart per halving of the bits per chip.
const SNR_OFDM_DB: [f64; 8] = [9.0, 10.0, 12.0, 14.0, 17.0, 21.0, 25.0, 26.0];
const SNR_MCS_DB: [f64; 10] = [9.0, 12.0, 14.0, 17.0, 21.0, 25.0, 26.0, 27.0, 32.0, 34.0];
const SNR_DSSS_DB: [f64; 4] = [5.6, 8.6, 11.6, 14.6];

/// Data bits per OFDM symbol of a/g rates 6, 9, 12, 18, 24, 36, 48, 54 Mbit/s.
const OFDM_NDBPS: [u32; 8] = [24, 36, 48, 72, 96, 144, 192, 216];
/// Data bits per symbol and stream, HT/VHT MCS 0–9, at 20/40/80 MHz (160 MHz: twice 80).
/// MCS 9 does not exist at 20 MHz with 1, 2 or 4 streams (non-integer bits per symbol).
const MCS_NDBPS_20: [u32; 10] = [26, 52, 78, 104, 156, 208, 234, 260, 312, 0];
const MCS_NDBPS_40: [u32; 10] = [54, 108, 162, 216, 324, 432, 486, 540, 648, 720];
const MCS_NDBPS_80: [u32; 10] = [117, 234, 351, 468, 702, 936, 1053, 1170, 1404, 1560];
/// 802.11b rates in units of 100 kbit/s.
const DSSS_RATES_100K: [u64; 4] = [10, 20, 55, 110];

impl Phy {
    /// The PHY of `standard` in `band` with `width_mhz` and `streams` (checked by the
    /// scenario's validation: `check` returns the reason a combination is invalid).
    pub fn new(
        standard: Standard,
        band: Band,
        width_mhz: u32,
        streams: u32,
        short_gi: bool,
    ) -> Phy {
        let mut p = Phy {
            standard,
            band,
            width_mhz,
            streams,
            short_gi,
            modes: Vec::new(),
        };
        p.modes = p.build_modes();
        p
    }

    /// Why this combination is not a PHY of the standard, if it is not.
    pub fn check(
        standard: Standard,
        band: Band,
        width_mhz: u32,
        streams: u32,
    ) -> Result<(), String> {
        let (bands_ok, widths, max_streams): (bool, &[u32], u32) = match standard {
            Standard::B | Standard::G => (band == Band::Ghz2_4, &[20], 1),
            Standard::A => (band == Band::Ghz5, &[20], 1),
            Standard::N => (true, &[20, 40], 4),
            Standard::Ac => (band == Band::Ghz5, &[20, 40, 80, 160], 4),
        };
        if !bands_ok {
            return Err(format!(
                "{standard:?} does not run in that band (b, g: 2.4; a, ac: 5; n: both)"
            ));
        }
        if !widths.contains(&width_mhz) {
            return Err(format!("allowed channel widths: {widths:?} MHz"));
        }
        if !(1..=max_streams).contains(&streams) {
            return Err(format!("spatial streams: 1 to {max_streams}"));
        }
        Ok(())
    }

    fn build_modes(&self) -> Vec<Mode> {
        match self.standard {
            Standard::B => (0..4)
                .map(|i| Mode {
                    index: i as u32,
                    rate_bps: DSSS_RATES_100K[i] * 100_000,
                    n_dbps: 0,
                    min_snr_db: SNR_DSSS_DB[i],
                })
                .collect(),
            Standard::A | Standard::G => (0..8)
                .map(|i| Mode {
                    index: i as u32,
                    rate_bps: OFDM_NDBPS[i] as u64 * 250_000,
                    n_dbps: OFDM_NDBPS[i],
                    min_snr_db: SNR_OFDM_DB[i],
                })
                .collect(),
            Standard::N | Standard::Ac => {
                let table = match self.width_mhz {
                    20 => &MCS_NDBPS_20,
                    40 => &MCS_NDBPS_40,
                    _ => &MCS_NDBPS_80,
                };
                let scale = if self.width_mhz == 160 { 2 } else { 1 };
                let top = if self.standard == Standard::N { 8 } else { 10 };
                let sym = self.symbol_ns();
                (0..top)
                    .filter_map(|i| {
                        let per_stream = table[i] * scale;
                        // MCS 9 at 20 MHz exists only with 3 streams (1040/3·… is whole).
                        let n_dbps = if per_stream == 0 {
                            if self.streams == 3 {
                                1040
                            } else {
                                return None;
                            }
                        } else {
                            per_stream * self.streams
                        };
                        Some(Mode {
                            index: i as u32,
                            rate_bps: n_dbps as u64 * 1_000_000_000 / sym,
                            n_dbps,
                            min_snr_db: SNR_MCS_DB[i],
                        })
                    })
                    .collect()
            }
        }
    }

    /// The rate table, slowest first.
    pub fn modes(&self) -> &[Mode] {
        &self.modes
    }

    /// Slot time: 20 µs (DSSS), 9 µs (OFDM; ERP short slot in a g-only BSS).
    pub fn slot_ns(&self) -> u64 {
        match self.standard {
            Standard::B => 20_000,
            _ => 9_000,
        }
    }

    /// SIFS: 10 µs in 2.4 GHz, 16 µs in 5 GHz.
    pub fn sifs_ns(&self) -> u64 {
        match self.band {
            Band::Ghz2_4 => 10_000,
            Band::Ghz5 => 16_000,
        }
    }

    /// Idle time before the backoff counts down: DIFS (SIFS + 2 slots) for the legacy DCF
    /// of b/a/g; AIFS[AC_BE] = SIFS + 3 slots (EDCA default) for HT/VHT QoS stations.
    pub fn aifs_ns(&self) -> u64 {
        let aifsn = if self.standard.aggregates() { 3 } else { 2 };
        self.sifs_ns() + aifsn * self.slot_ns()
    }

    /// CWmin, CWmax: 31/1023 for DSSS, 15/1023 for OFDM (AC_BE uses aCWmin/aCWmax).
    pub fn cw_bounds(&self) -> (u32, u32) {
        match self.standard {
            Standard::B => (31, 1023),
            _ => (15, 1023),
        }
    }

    /// OFDM symbol: 4 µs, or 3.6 µs with the short guard interval (HT/VHT).
    fn symbol_ns(&self) -> u64 {
        if self.short_gi && self.standard.aggregates() {
            3_600
        } else {
            4_000
        }
    }

    /// ERP-OFDM and HT in 2.4 GHz append a 6 µs signal extension to every OFDM PPDU.
    fn signal_extension_ns(&self) -> u64 {
        match (self.standard, self.band) {
            (Standard::B, _) | (_, Band::Ghz5) => 0,
            _ => 6_000,
        }
    }

    /// Number of HT/VHT long training fields for the stream count.
    fn n_ltf(&self) -> u64 {
        match self.streams {
            1 => 1,
            2 => 2,
            3 | 4 => 4,
            5 | 6 => 6,
            _ => 8,
        }
    }

    /// Duration of a PPDU carrying `psdu_bytes` at `mode`.
    pub fn ppdu_ns(&self, mode: usize, psdu_bytes: u32) -> u64 {
        let m = &self.modes[mode];
        let bits = 8 * psdu_bytes as u64;
        match self.standard {
            // Long PLCP preamble and header (192 µs at 1 Mbit/s), then the PSDU rounded up
            // to whole microseconds.
            Standard::B => {
                192_000 + (bits * 1_000_000_000).div_ceil(m.rate_bps).div_ceil(1000) * 1000
            }
            // L-STF + L-LTF + L-SIG = 20 µs; SERVICE (16) and tail (6) bits pad the symbols.
            Standard::A | Standard::G => {
                let n_sym = (16 + bits + 6).div_ceil(m.n_dbps as u64);
                20_000 + n_sym * 4_000 + self.signal_extension_ns()
            }
            Standard::N | Standard::Ac => {
                // BCC encoders: one per 300 Mbit/s (HT) or 600 Mbit/s (VHT, approximately
                // its N_ES tables); each adds 6 tail bits.
                let per_encoder = if self.standard == Standard::N {
                    300_000_000
                } else {
                    600_000_000
                };
                let n_es = m.rate_bps.div_ceil(per_encoder).max(1);
                let n_sym = (16 + bits + 6 * n_es).div_ceil(m.n_dbps as u64);
                // HT-mixed: legacy 20 µs + HT-SIG 8 + HT-STF 4 + 4 per HT-LTF; VHT adds
                // VHT-SIG-B (4 µs).
                let pre = 20_000
                    + 8_000
                    + 4_000
                    + 4_000 * self.n_ltf()
                    + if self.standard == Standard::Ac {
                        4_000
                    } else {
                        0
                    };
                let data = if self.short_gi {
                    (n_sym * self.symbol_ns()).div_ceil(4_000) * 4_000
                } else {
                    n_sym * 4_000
                };
                pre + data + self.signal_extension_ns()
            }
        }
    }

    /// Duration of a legacy control frame of `bytes` (ACK, BlockAck) answering a frame sent
    /// at `mode`.
    pub fn control_ns(&self, mode: usize, bytes: u32) -> u64 {
        let data_rate = self.modes[mode].rate_bps;
        let bits = 8 * bytes as u64;
        match self.standard {
            Standard::B => {
                let rate = if data_rate >= 2_000_000 {
                    2_000_000
                } else {
                    1_000_000
                };
                192_000 + (bits * 1_000_000_000).div_ceil(rate).div_ceil(1000) * 1000
            }
            _ => {
                let n_dbps: u64 = if data_rate >= 24_000_000 {
                    96
                } else if data_rate >= 12_000_000 {
                    48
                } else {
                    24
                };
                20_000 + (16 + bits + 6).div_ceil(n_dbps) * 4_000 + self.signal_extension_ns()
            }
        }
    }

    /// MAC overhead of a data MPDU (header + FCS) plus LLC/SNAP, around an IP packet.
    pub fn mpdu_bytes(&self, ip_bytes: u32) -> u32 {
        let mac = if self.standard.aggregates() {
            QOS_MAC_OVERHEAD_BYTES
        } else {
            MAC_OVERHEAD_BYTES
        };
        ip_bytes + mac + LLC_SNAP_BYTES
    }

    /// Largest A-MPDU in bytes (IEEE 802.11-2016: 65 535 for HT, 1 048 575 for VHT).
    pub fn max_ampdu_bytes(&self) -> u32 {
        match self.standard {
            Standard::N => 65_535,
            Standard::Ac => 1_048_575,
            _ => 0,
        }
    }
}

/// Bytes an MPDU of `mpdu_bytes` occupies inside an A-MPDU: delimiter plus padding to 4.
pub fn ampdu_subframe_bytes(mpdu_bytes: u32) -> u32 {
    (AMPDU_DELIMITER_BYTES + mpdu_bytes).div_ceil(4) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ofdm_54mbps_1500_byte_ppdu_matches_the_standards_txtime() {
        // IEEE 802.11-2016 §17.4.3: N_SYM = ceil((16 + 8·1536 + 6)/216) = 57 → 20 + 228 µs.
        let p = Phy::new(Standard::A, Band::Ghz5, 20, 1, false);
        assert_eq!(p.ppdu_ns(7, 1536), 248_000);
        // ACK at 24 Mbit/s: ceil((16 + 112 + 6)/96) = 2 symbols → 28 µs.
        assert_eq!(p.control_ns(7, ACK_BYTES), 28_000);
        // ERP-OFDM in 2.4 GHz adds the 6 µs signal extension.
        let g = Phy::new(Standard::G, Band::Ghz2_4, 20, 1, false);
        assert_eq!(g.ppdu_ns(7, 1536), 254_000);
    }

    #[test]
    fn ht_and_vht_rates_match_the_mcs_tables() {
        // HT MCS 7, 40 MHz, 2 streams, short GI: 300 Mbit/s; long GI 270 Mbit/s.
        let n = Phy::new(Standard::N, Band::Ghz5, 40, 2, true);
        assert_eq!(n.modes()[7].rate_bps, 300_000_000);
        let n = Phy::new(Standard::N, Band::Ghz5, 40, 2, false);
        assert_eq!(n.modes()[7].rate_bps, 270_000_000);
        // VHT MCS 9, 80 MHz, 1 stream, long GI: 390 Mbit/s; 20 MHz 1 stream has no MCS 9.
        let ac = Phy::new(Standard::Ac, Band::Ghz5, 80, 1, false);
        assert_eq!(ac.modes()[9].rate_bps, 390_000_000);
        assert_eq!(
            Phy::new(Standard::Ac, Band::Ghz5, 20, 1, false)
                .modes()
                .len(),
            9
        );
        // 802.11b: 11 Mbit/s; 1500 B of PSDU take 192 + 1091 µs (rounded up).
        let b = Phy::new(Standard::B, Band::Ghz2_4, 20, 1, false);
        assert_eq!(b.ppdu_ns(3, 1500), 192_000 + 1_091_000);
    }

    #[test]
    fn invalid_combinations_are_named() {
        assert!(Phy::check(Standard::Ac, Band::Ghz2_4, 80, 1).is_err());
        assert!(Phy::check(Standard::N, Band::Ghz2_4, 80, 1).is_err());
        assert!(Phy::check(Standard::G, Band::Ghz2_4, 20, 2).is_err());
        assert!(Phy::check(Standard::N, Band::Ghz2_4, 40, 4).is_ok());
    }
}
