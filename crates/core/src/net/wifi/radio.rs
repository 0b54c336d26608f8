//! The radio channel between the access point and a station: log-distance path loss,
//! thermal noise, SNR, the rate rule (SNR table) and the frame error rate.
//!
//! - Path loss: PL(d) = PL(1 m) + 10·n·log10(d / 1 m). PL(1 m) is the free-space loss
//!   20·log10(4π·f/c) at the band's centre (channel 6, 2437 MHz: 40.2 dB; channel 36,
//!   5180 MHz: 46.7 dB). The exponent n is ITU-R P.1238's distance power loss coefficient
//!   for residential buildings (28 at 2.4 GHz → n = 2.8; 30 at 5.2 GHz → n = 3.0).
//! - Noise: −174 dBm/Hz + 10·log10(bandwidth) + the receiver's noise figure (7 dB by
//!   default, a typical consumer radio).
//! - Rate rule: the fastest mode whose minimum SNR (`phy::Mode::min_snr_db`, the standard's
//!   sensitivity table) the link's SNR meets — a static SNR table, what an ideal rate
//!   controller (or Minstrel once settled) picks on a static channel; below the slowest
//!   mode's threshold the slowest mode is used.
//! - Frame errors: each mode's threshold is where its PER is 10 % for the standard's
//!   reference PSDU (1000 B for DSSS/OFDM, 4096 B for HT/VHT). Per bit, the error
//!   probability falls a decade for every `FER_DB_PER_DECADE` dB of margin above it (the
//!   slope of coded-OFDM waterfall curves), and a frame of L bytes fails with
//!   1 − (1 − p_bit)^(8L).
use super::phy::{Band, Phy, Standard};

/// Path-loss exponent and loss at 1 m (dB) of a band.
pub fn path_loss_params(band: Band) -> (f64, f64) {
    match band {
        Band::Ghz2_4 => (2.8, 40.2),
        Band::Ghz5 => (3.0, 46.7),
    }
}

/// Slope of the frame-error waterfall: dB of SNR per decade of bit error rate.
pub const FER_DB_PER_DECADE: f64 = 2.0;

/// Path loss (dB) over `distance_m` (at least 1 m: closer is the reference loss).
pub fn path_loss_db(band: Band, distance_m: f64) -> f64 {
    let (n, pl0) = path_loss_params(band);
    pl0 + 10.0 * n * distance_m.max(1.0).log10()
}

/// Thermal noise floor (dBm) over `width_mhz` with a receiver noise figure.
pub fn noise_floor_dbm(width_mhz: u32, noise_figure_db: f64) -> f64 {
    // DSSS occupies 22 MHz in a 20 MHz channel slot; the difference (0.4 dB) is ignored.
    -174.0 + 10.0 * (width_mhz as f64 * 1e6).log10() + noise_figure_db
}

/// SNR (dB) of a transmission at `tx_power_dbm` over `distance_m`.
pub fn snr_db(phy: &Phy, tx_power_dbm: f64, distance_m: f64, noise_figure_db: f64) -> f64 {
    tx_power_dbm
        - path_loss_db(phy.band, distance_m)
        - noise_floor_dbm(phy.width_mhz, noise_figure_db)
}

/// The rate rule: index of the fastest mode whose minimum SNR `snr` meets (0 if none).
pub fn select_mode(phy: &Phy, snr: f64) -> usize {
    phy.modes()
        .iter()
        .rposition(|m| snr >= m.min_snr_db)
        .unwrap_or(0)
}

/// Reference PSDU of the sensitivity tables.
fn reference_bytes(standard: Standard) -> f64 {
    if standard.aggregates() {
        4096.0
    } else {
        1000.0
    }
}

/// Bit error probability of `mode` at `snr` (see the module note).
pub fn bit_error_prob(phy: &Phy, mode: usize, snr: f64) -> f64 {
    let min = phy.modes()[mode].min_snr_db;
    // PER 10 % over the reference PSDU at the threshold: p = 1 − 0.9^(1/bits).
    let bits = 8.0 * reference_bytes(phy.standard);
    let p_ref = 1.0 - 0.9f64.powf(1.0 / bits);
    (p_ref * 10f64.powf(-(snr - min) / FER_DB_PER_DECADE)).min(0.5)
}

/// Probability that a frame of `bytes` fails, given the bit error probability.
pub fn frame_error_prob(p_bit: f64, bytes: u32) -> f64 {
    if p_bit <= 0.0 {
        0.0
    } else {
        -f64::exp_m1(8.0 * bytes as f64 * f64::ln_1p(-p_bit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_reference_loss_matches_friis_at_one_metre() {
        // 20·log10(4π·f/c): 2.437 GHz → 40.18 dB, 5.18 GHz → 46.73 dB.
        let friis = |f: f64| 20.0 * (4.0 * std::f64::consts::PI * f / 299_792_458.0).log10();
        assert!((path_loss_db(Band::Ghz2_4, 1.0) - friis(2.437e9)).abs() < 0.05);
        assert!((path_loss_db(Band::Ghz5, 1.0) - friis(5.18e9)).abs() < 0.05);
        // Ten times the distance: 10·n dB more.
        assert!(
            (path_loss_db(Band::Ghz5, 10.0) - path_loss_db(Band::Ghz5, 1.0) - 30.0).abs() < 1e-9
        );
    }

    #[test]
    fn rate_rule_picks_the_fastest_mode_the_snr_supports() {
        let g = Phy::new(Standard::G, Band::Ghz2_4, 20, 1, false);
        // Noise over 20 MHz with NF 7: −174 + 73.01 + 7 = −93.99 dBm.
        assert!((noise_floor_dbm(20, 7.0) + 93.99).abs() < 0.01);
        // 20 mW = 13.01 dBm at 10 m: 13.01 − (40.2 + 28) + 93.99 = 38.8 dB → 54 Mbit/s.
        let snr = snr_db(&g, 13.0103, 10.0, 7.0);
        assert!((snr - 38.8).abs() < 0.01, "{snr}");
        assert_eq!(select_mode(&g, snr), 7);
        // 13 dB supports 12 Mbit/s (12 dB) but not 18 (14 dB).
        assert_eq!(g.modes()[select_mode(&g, 13.0)].rate_bps, 12_000_000);
        assert_eq!(select_mode(&g, -3.0), 0);
    }

    #[test]
    fn frame_error_is_ten_percent_at_threshold_for_the_reference_length() {
        let a = Phy::new(Standard::A, Band::Ghz5, 20, 1, false);
        let p = bit_error_prob(&a, 7, 26.0);
        assert!((frame_error_prob(p, 1000) - 0.1).abs() < 1e-9);
        // 4 dB of margin: two decades fewer bit errors, so about 0.1 %.
        let p = bit_error_prob(&a, 7, 30.0);
        assert!((frame_error_prob(p, 1000) - 0.001_053).abs() < 1e-5);
    }
}
