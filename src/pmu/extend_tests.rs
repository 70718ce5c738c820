//! Host tests of the extension arithmetic: wraps near 2^48, the legacy sign-extended write, Linux's
//! polling delta, and totals across release and re-acquire.

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
    assert_eq!(legacy_write_result(u64::MAX, 0), 1);
    assert_eq!(preload_for_headroom(u64::MAX, 255, false), 1);
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

    #[test]
    fn preload_gives_the_headroom_asked_or_less(headroom in 1..=W48, full_width: bool) {
        let written = preload_for_headroom(headroom, 48, full_width);
        let held = if full_width { written & counter_mask(48) } else { legacy_write_result(written, 48) };
        let until_wrap = W48 - held;
        if full_width || headroom <= 1 << 31 || headroom > W48 - (1 << 31) {
            prop_assert_eq!(until_wrap, headroom);
        } else {
            prop_assert_eq!(until_wrap, 1 << 31);
        }
        if !full_width {
            prop_assert!(written <= 0xFFFF_FFFF);
        }
    }
}

#[test]
fn legacy_write_of_zero_is_zero_everywhere() {
    for width in [32, 40, 48, 64] {
        assert_eq!(legacy_write_result(0, width), 0);
        assert_eq!(preload_for_headroom(0, width, false), 0);
        assert_eq!(preload_for_headroom(0, width, true), 0);
    }
}

#[test]
fn legacy_write_sign_extends_bit_31() {
    // Just below the wrap: the low 32 bits of 2^48 - 1000 have bit 31 set, and sign extension
    // rebuilds the value, so this one is written exactly (that is how Linux arms sampling periods).
    assert_eq!(legacy_write_result(W48 - 1000, 48), W48 - 1000);
    // A value whose low 32 bits do not have bit 31 set loses its upper bits...
    assert_eq!(legacy_write_result(1 << 40, 48), 0);
    assert_eq!(legacy_write_result((1 << 40) + 12, 48), 12);
    // ...and one in the upper half of the low 32 bits gains them: 2^31 becomes 2^48 - 2^31.
    assert_eq!(legacy_write_result(1 << 31, 48), W48 - (1 << 31));
    // 2^48 - 2^32 - 5 becomes 2^48 - 5: 2^32 fewer events until the wrap than asked.
    assert_eq!(legacy_write_result(W48 - (1 << 32) - 5, 48), W48 - 5);
    // A 32-bit counter holds exactly the low 32 bits.
    assert_eq!(legacy_write_result(0xDEAD_BEEF_8000_0001, 32), 0x8000_0001);
}

#[test]
fn preload_for_headroom_examples() {
    assert_eq!(preload_for_headroom(1000, 48, true), W48 - 1000);
    assert_eq!(preload_for_headroom(1000, 48, false), 0xFFFF_FC18);
    assert_eq!(legacy_write_result(0xFFFF_FC18, 48), W48 - 1000);
    // Through the legacy MSR 2^40 of headroom is unreachable: 2^31 instead (wraps sooner).
    assert_eq!(preload_for_headroom(1 << 40, 48, true), W48 - (1 << 40));
    assert_eq!(preload_for_headroom(1 << 40, 48, false), 0x8000_0000);
    assert_eq!(legacy_write_result(0x8000_0000, 48), W48 - (1 << 31));
    // Small test widths.
    assert_eq!(preload_for_headroom(2, 4, true), 14);
    assert_eq!(preload_for_headroom(2, 4, false), 14);
    // A 64-bit counter.
    assert_eq!(preload_for_headroom(1, 64, true), u64::MAX);
    assert_eq!(preload_for_headroom(1, 64, false), 0xFFFF_FFFF);
    assert_eq!(legacy_write_result(0xFFFF_FFFF, 64), u64::MAX);
}

#[test]
fn monotonic_clamps() {
    let mut m = Monotonic::new();
    assert_eq!(m.observe(10), 10);
    assert_eq!(m.observe(7), 10);
    assert_eq!(m.observe(10), 10);
    assert_eq!(m.observe(11), 11);
    assert_eq!(m.last(), 11);
    assert_eq!(Monotonic::starting_at(50).observe(3), 50);
}

#[test]
fn base_is_monotonic_across_release_and_reacquire() {
    let mut total = Base::new();
    let mut reports = Vec::new();
    // Session 1: the counter wraps once.
    for extended in [5, 1000, W48 - 1, W48 + 20] {
        reports.push(total.report(extended));
    }
    assert_eq!(total.release(W48 + 25), W48 + 25);
    assert_eq!(total.base(), W48 + 25);
    // Session 2: the hardware counts from 0 again.
    for extended in [0, 3, 400] {
        reports.push(total.report(extended));
    }
    assert_eq!(total.release(410), W48 + 435);
    // Session 3.
    reports.push(total.report(1));
    assert!(reports.windows(2).all(|pair| pair[0] <= pair[1]), "{reports:?}");
    assert_eq!(*reports.last().unwrap(), W48 + 436);
    assert_eq!(reports, [5, 1000, W48 - 1, W48 + 20, W48 + 25, W48 + 28, W48 + 425, W48 + 436]);
}

#[test]
fn base_never_goes_back_even_if_the_final_read_was_stale() {
    let mut total = Base::from_parts(100, 100);
    assert_eq!(total.report(50), 150);
    // The final read fell back to something older: the base is still what consumers already saw.
    assert_eq!(total.release(40), 150);
    assert_eq!(total.report(0), 150);
    assert_eq!(total.report(1), 151);
    assert_eq!(total.last_reported(), 151);
}
