//! The poll period against every 32-bit model of the table, and extension across wraps: exact when
//! polled at the period, wrong (and so caught) when polled too rarely.

use super::*;
use crate::imc::models::MODELS;

const SECOND_100NS: u64 = 10_000_000;
const WRAP_BYTES: u64 = (1 << 32) * BYTES_PER_COUNT;

#[test]
fn the_fastest_32_bit_model_wraps_in_4_6_seconds() {
    let fastest = MODELS
        .iter()
        .filter(|model| !model.layout.all_64_bit())
        .max_by_key(|model| model.peak.bytes_per_second())
        .unwrap();
    assert!(fastest.linux_name.starts_with("ICELAKE"), "{}", fastest.linux_name);
    assert_eq!(fastest.peak.bytes_per_second(), 59_728_000_000);
    // 2^38 bytes / 59.728 GB/s, in 100 ns units: 4.60 s.
    let wrap_100ns = WRAP_BYTES * SECOND_100NS / fastest.peak.bytes_per_second();
    assert_eq!(wrap_100ns / 100_000, 460);
}

#[test]
fn the_poll_period_holds_for_every_32_bit_model() {
    for model in MODELS {
        let safe = safe_poll_period_100ns(model);
        if model.layout.all_64_bit() {
            // (2^64 - 1) lines at the peak rate, over the safety factor: more than 50 years (68 for
            // Lunar Lake's LPDDR5x-8533, the fastest).
            const FIFTY_YEARS_100NS: i64 = 50 * 365 * 86_400 * 10_000_000;
            assert!(safe > FIFTY_YEARS_100NS, "{}: {safe}", model.linux_name);
            continue;
        }
        assert!(POLL_PERIOD_100NS <= safe, "{}: {POLL_PERIOD_100NS} > {safe}", model.linux_name);
        // And the counts of one period stay under a quarter of the counter's range.
        let per_period = peak_counts_per_second(model) * POLL_PERIOD_100NS as u64 / SECOND_100NS;
        assert!(per_period * u64::from(DEFAULT_SAFETY) < 1 << 32, "{}", model.linux_name);
    }
}

#[test]
fn two_polls_straddling_one_wrap_are_exact() {
    let mut counter = Extended::start(32, 0xFFFF_FFF0);
    assert_eq!(counter.update(0x0000_0010), 0x20);
    assert_eq!(counter.update(0xFFFF_FFFF), 0x1_0000_000F);
    assert_eq!(counter.update(0x5), 0x1_0000_0015);
    assert_eq!(counter.total(), 0x1_0000_0015);
    // A 64-bit counter is its difference.
    let mut wide = Extended::start(64, u64::MAX - 1);
    assert_eq!(wide.update(3), 5);
}

/// Polls a 32-bit counter counting `bytes_per_second` every `period_s` seconds for `seconds`; returns
/// the extended count and the true one.
fn poll(bytes_per_second: u64, period_s: u64, seconds: u64) -> (u64, u64) {
    let lines = |t: u64| t * bytes_per_second / BYTES_PER_COUNT;
    let raw = |t: u64| lines(t) & 0xFFFF_FFFF;
    let mut counter = Extended::start(32, raw(0));
    let mut t = 0;
    while t < seconds {
        t += period_s;
        counter.update(raw(t));
    }
    (counter.total(), lines(t))
}

#[test]
fn sixty_gigabytes_a_second_for_ten_minutes_is_exact_at_the_period() {
    // 600 s at 60 GB/s: 36 TB, 130 wraps of the 32-bit counter, every one seen.
    let (extended, exact) = poll(60_000_000_000, POLL_PERIOD_100NS as u64 / SECOND_100NS, 600);
    assert_eq!(extended, exact);
    assert!(exact >> 32 >= 130);
}

#[test]
fn polling_slower_than_a_wrap_loses_counts() {
    // The same traffic polled every 5 s advances 4.69e9 lines per poll, more than 2^32: wraps go
    // unseen, which is why the period is computed and checked above.
    let (extended, exact) = poll(60_000_000_000, 5, 600);
    assert_ne!(extended, exact);
}
