//! Host tests of the polling period and of the polled extension, including a poll interrupted by
//! another poll of the same counter.

use super::*;
use core::time::Duration;
use proptest::prelude::*;
use std::cell::Cell;

/// Cells for one processor's polled counters, all 0.
fn cells() -> [AtomicU64; TABLE] {
    core::array::from_fn(|_| AtomicU64::new(0))
}

#[test]
fn forty_eight_bits_at_the_maximum_rate_is_hours() {
    // 2^48 / 48e9 = 5864 s: 1.6 hours before a wrap could be missed.
    let unguarded = poll_period(48, MAX_EVENT_HZ, 1);
    assert!(unguarded > Duration::from_secs(3600), "{unguarded:?}");
    assert_eq!(unguarded.as_secs(), 5864);
    // With the default safety factor: every 24 minutes.
    let period = poll_period(48, MAX_EVENT_HZ, DEFAULT_SAFETY);
    assert_eq!(period.as_secs(), 1466);
    assert_eq!(poll_period_100ns(48, MAX_EVENT_HZ, DEFAULT_SAFETY), 14_660_155_037);
}

#[test]
fn thirty_two_bits_is_well_under_a_second() {
    let period = poll_period(32, MAX_EVENT_HZ, DEFAULT_SAFETY);
    assert!(period < Duration::from_millis(100), "{period:?}");
    assert_eq!(period.as_micros(), 22_369);
    // Even a lone 6 GHz cycle counter must be read more than once a second.
    assert!(poll_period(32, MAX_CLOCK_HZ, 1) < Duration::from_secs(1));
}

#[test]
fn the_period_is_never_zero_and_never_panics() {
    for width in [0, 1, 4, 32, 48, 64, 65, 255] {
        for rate in [0, 1, MAX_EVENT_HZ, u64::MAX] {
            for safety in [0, 1, DEFAULT_SAFETY, u32::MAX] {
                assert!(poll_period(width, rate, safety) > Duration::ZERO);
                assert!(poll_period_100ns(width, rate, safety) >= 1);
            }
        }
    }
    // The longest: a 64-bit counter counting once a second.
    assert_eq!(poll_period(64, 1, 1), Duration::from_secs(u64::MAX));
    assert_eq!(poll_period_100ns(64, 1, 1), i64::MAX);
}

proptest! {
    #[test]
    fn a_period_never_lets_the_counter_advance_2_pow_w(width in 32..=63u8, rate in 1..=u64::MAX,
                                                      safety in 1..=64u32) {
        let period = poll_period(width, rate, safety);
        let nanos = period.as_nanos();
        // Events in one period at the maximum rate: below 2^W (unless the period was rounded up to
        // the 1 ns minimum).
        if nanos > 1 {
            prop_assert!(nanos * u128::from(rate) / 1_000_000_000 < 1u128 << width);
        }
        // And it is the largest such period up to the safety factor: (period + 1 ns) * safety, plus
        // the nanosecond floor() dropped, already holds 2^W - 1 events.
        let longer = ((nanos + 1) * u128::from(safety) + 1) * u128::from(rate);
        prop_assert!(longer > ((1u128 << width) - 1) * 1_000_000_000);
    }
}

#[test]
fn polling_extends_across_wraps() {
    let cells = cells();
    let counters = PollCounters::over(&cells);
    // A 48-bit counter started 100 events before its wrap.
    let held = (1 << 48) - 100;
    counters.start(3, held, 48).unwrap();
    let mut truth = held;
    for step in [1u64, 98, 1, 1, 1 << 47, (1 << 48) - 1, 12] {
        truth += step;
        let raw = truth & ((1 << 48) - 1);
        assert_eq!(counters.poll(3, 48, || raw), Some(truth));
        assert_eq!(counters.last(3), Some(truth));
    }
    assert_eq!(truth, (1 << 48) - 100 + 98 + 3 + 12 + (1 << 47) + (1 << 48) - 1);
}

#[test]
fn counters_out_of_range_are_refused() {
    let cells = cells();
    let counters = PollCounters::over(&cells);
    assert_eq!(counters.start(TABLE, 0, 48), None);
    let called = Cell::new(false);
    assert_eq!(
        counters.poll(TABLE, 48, || {
            called.set(true);
            0
        }),
        None
    );
    assert!(!called.get());
    assert_eq!(counters.last(TABLE), None);
}

/// A timer poll (DISPATCH_LEVEL) interrupted by a collect's poll (IPI_LEVEL) on the same processor,
/// before or after its raw read: both return the exact value at their own raw read, and the state
/// keeps the later one.
#[test]
fn an_interrupting_poll_neither_tears_nor_rewinds_the_state() {
    for interrupt_after_raw in [false, true] {
        let cells = cells();
        let counters = PollCounters::over(&cells);
        counters.start(0, (1 << 32) - 5, 32).unwrap();
        let truth = Cell::new((1u64 << 32) - 5);
        let interrupt = || {
            truth.set(truth.get() + 7); // the counter wraps during the interrupt
            assert_eq!(counters.poll(0, 32, || truth.get() & 0xFFFF_FFFF), Some((1 << 32) + 5));
        };
        let value = counters.poll(0, 32, || {
            truth.set(truth.get() + 3);
            if !interrupt_after_raw {
                interrupt();
            }
            let raw = truth.get() & 0xFFFF_FFFF;
            if interrupt_after_raw {
                interrupt();
            }
            raw
        });
        let expected = if interrupt_after_raw { (1 << 32) - 2 } else { (1 << 32) + 5 };
        assert_eq!(value, Some(expected));
        assert_eq!(counters.last(0), Some((1 << 32) + 5));
    }
}

/// A raw value below the last one is put to the confirmation, and only then: confirmed, it is a wrap;
/// refused (a reset counter), the state stays as it was and the poll says so.
#[test]
fn a_wrap_counts_only_when_confirmed() {
    let cells = cells();
    let poll = PollCounters::over(&cells);
    poll.start(0, (1 << 48) - 10, 48).unwrap();
    let asked = Cell::new(0);
    let confirm = |answer: bool| {
        let asked = &asked;
        move || {
            asked.set(asked.get() + 1);
            answer
        }
    };
    assert_eq!(poll.poll_unless_reset(0, 48, || (1 << 48) - 4, confirm(false)), Some(Ok((1 << 48) - 4)));
    assert_eq!(asked.get(), 0, "no wrap, no question");
    assert_eq!(poll.poll_unless_reset(0, 48, || 3, confirm(false)), Some(Err(NotAWrap)));
    assert_eq!(poll.last(0), Some((1 << 48) - 4), "a refused wrap leaves the state");
    assert_eq!(poll.poll_unless_reset(0, 48, || 3, confirm(true)), Some(Ok((1 << 48) + 3)));
    assert_eq!(asked.get(), 2);
    assert_eq!(poll.poll_unless_reset(TABLE, 48, || 3, confirm(true)), None);
}
