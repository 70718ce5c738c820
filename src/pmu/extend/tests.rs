//! Host tests of the extension arithmetic: wraps near 2^48, every width, and Linux's polling delta.

use super::*;
use proptest::prelude::*;

const W48: u64 = 1 << 48;

#[test]
fn extend_combines_overflows_raw_and_pending() {
    assert_eq!(extend(0, 5, false, 48), 5);
    assert_eq!(extend(1, 0, false, 48), W48);
    assert_eq!(extend(3, 7, false, 48), 3 * W48 + 7);
    assert_eq!(extend(3, 7, true, 48), 4 * W48 + 7);
    // Bits above W are not part of the counter.
    assert_eq!(extend(0, (1 << 50) | 9, false, 48), 9);
}

#[test]
fn extend_across_a_wrap_near_2_pow_48() {
    // The counter's last value before the wrap, then the wrapped values with the status bit pending
    // (the interrupt not delivered yet), then the same after the handler folded it and the HAL
    // cleared the status: one increasing sequence, with no gap and no repeat.
    let sequence = [
        extend(0, W48 - 2, false, 48),
        extend(0, W48 - 1, false, 48),
        extend(0, 0, true, 48),
        extend(0, 1, true, 48),
        extend(1, 2, false, 48),
        extend(1, 3, false, 48),
    ];
    let expected: Vec<u64> = (W48 - 2..W48 + 4).collect();
    assert_eq!(sequence.to_vec(), expected);
}

#[test]
fn extend_with_every_width() {
    for width in 1..=64u8 {
        let mask = counter_mask(width);
        assert_eq!(mask.count_ones(), u32::from(width));
        if width < 64 {
            assert_eq!(extend(1, 0, false, width), 1 << width);
            assert_eq!(extend(0, mask, true, width), (1 << width) + mask);
        } else {
            // A 64-bit counter needs no extension: wraps are wraps of the u64 itself.
            assert_eq!(extend(5, 123, true, width), 123);
        }
    }
}

#[test]
fn bad_widths_are_clamped_not_panics() {
    assert_eq!(clamp_width(0), 1);
    assert_eq!(clamp_width(200), 64);
    assert_eq!(counter_mask(0), 1);
    assert_eq!(counter_mask(255), u64::MAX);
    assert_eq!(extend(u64::MAX, u64::MAX, true, 0), 1);
    assert_eq!(extend(u64::MAX, u64::MAX, true, 255), u64::MAX);
    assert_eq!(advance(u64::MAX, 0, 0), 1);
}

#[test]
fn extend_wraps_at_2_pow_64() {
    // 2^16 wraps of a 48-bit counter are 2^64 events: the documented wrap (12 years at 48e9/s).
    assert_eq!(extend(1 << 16, 5, false, 48), 5);
    assert_eq!(extend(u64::MAX >> 48, W48 - 1, false, 48), u64::MAX);
}

#[test]
fn advance_across_a_wrap() {
    assert_eq!(advance(100, 150, 48), 50);
    assert_eq!(advance(W48 - 10, 5, 48), 15);
    assert_eq!(advance(W48 - 1, 0, 48), 1);
    assert_eq!(advance(7, 7, 48), 0);
    // A full 2^W between reads is indistinguishable from none: why poll.rs polls faster than that.
    assert_eq!(advance(7, 7 + W48, 48), 0);
    assert_eq!(advance(u64::MAX, 1, 64), 2);
    assert_eq!(advance(0xFFFF_FFF0, 0x10, 32), 0x20);
}

/// Linux's form, arch/x86/events/core.c x86_perf_event_update.
fn linux_delta(prev: u64, new: u64, width: u8) -> u64 {
    let shift = 64 - u32::from(width);
    (new << shift).wrapping_sub(prev << shift) >> shift
}

proptest! {
    #[test]
    fn advance_matches_linux(prev in any::<u64>(), new in any::<u64>(), width in 1..=64u8) {
        prop_assert_eq!(advance(prev, new, width), linux_delta(prev, new, width));
    }

    #[test]
    fn extend_matches_wide_arithmetic(overflows in any::<u64>(), raw in any::<u64>(), pending: bool,
                                      width in 1..=64u8) {
        let wraps = u128::from(overflows) + u128::from(pending);
        let exact = (wraps << width) + u128::from(raw & counter_mask(width));
        prop_assert_eq!(u128::from(extend(overflows, raw, pending, width)), exact & u128::from(u64::MAX));
    }

    #[test]
    fn extend_then_advance_is_the_event_count(start in any::<u64>(), events in 0..(1u64 << 47)) {
        // Polling from the raw value of any 64-bit value recovers the events in between.
        let end = start.wrapping_add(events);
        prop_assert_eq!(advance(start & counter_mask(48), end & counter_mask(48), 48), events);
    }
}
