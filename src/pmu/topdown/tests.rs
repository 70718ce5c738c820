use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// An MSR file that also records the IA32_PERF_GLOBAL_CTRL value at every access to fixed counter 3
/// or IA32_PERF_METRICS.
#[derive(Default)]
struct MsrFile(HashMap<u32, u64>, std::cell::RefCell<Vec<(u32, u64)>>);

impl Msrs for MsrFile {
    fn read(&self, msr: u32) -> u64 {
        self.note(msr);
        self.0.get(&msr).copied().unwrap_or(0)
    }
    fn write(&mut self, msr: u32, value: u64) {
        self.note(msr);
        self.0.insert(msr, value);
    }
}

impl MsrFile {
    fn note(&self, msr: u32) {
        if msr == msr::IA32_FIXED_CTR3 || msr == msr::IA32_PERF_METRICS {
            let control = self.0.get(&msr::IA32_PERF_GLOBAL_CTRL).copied().unwrap_or(0);
            self.1.borrow_mut().push((msr, control));
        }
    }
}

#[test]
fn a_split_of_whole_shares_is_exact() {
    // Retiring 0x66 (40%), bad speculation 0x19, frontend 0x33, backend 0x4D: 0xFF in all.
    let metrics = 0x4D_33_19_66;
    assert_eq!(fractions(metrics), [0x66, 0x19, 0x33, 0x4D]);
    assert_eq!(
        split_carrying(255_000, fractions(metrics), [0; 4]),
        ([102_000, 25_000, 51_000, 77_000], [0; 4])
    );
    assert_eq!(split_carrying(1 << 47, [0xFF, 0, 0, 0], [0; 4]), ([1 << 47, 0, 0, 0], [0; 4]));
    // Bytes above the four categories are ignored.
    assert_eq!(fractions(0xFFFF_FFFF_0000_0000), [0; 4]);
}

#[test]
fn remainders_carry_to_the_next_read() {
    // 100 slots at 0x55 (a third) each: 33 1/3 slots, so one category gets 34 and the remainders
    // carry; three such reads give each category exactly 100.
    let remainders = Remainders::default();
    let mut totals = [0; 4];
    for _ in 0..3 {
        let split = remainders.split(100, [0x55, 0x55, 0x55, 0]);
        assert_eq!(split.iter().sum::<u64>(), 100, "{split:?}");
        for (total, slots) in totals.iter_mut().zip(split) {
            *total += slots;
        }
    }
    assert_eq!(totals, [100, 100, 100, 0]);
    // Rounding each read down, as Linux does, would give 3 x 33 each, 297 of the 300 slots.
}

#[test]
fn fractions_off_0xff_still_split_every_slot() {
    let (split, carried) = split_carrying(1_000, [100, 100, 100, 0], [0; 4]);
    assert_eq!(split.iter().sum::<u64>(), 1_000);
    assert_eq!(split[3], 0);
    assert_eq!(carried.iter().sum::<i64>(), 0);
}

#[test]
fn a_read_stops_fixed_counter_3_returns_the_new_slots_and_zeroes_both_registers() {
    let mut msrs = MsrFile::default();
    let remainders = Remainders::default();
    let control = 0x1_0000_000F_00FF; // EN_PERF_METRICS, fixed counters 0-3, 8 general-purpose
    msrs.write(msr::IA32_PERF_GLOBAL_CTRL, control);
    msrs.write(msr::IA32_FIXED_CTR3, 2_550);
    msrs.write(msr::IA32_PERF_METRICS, 0x33_33_33_66);
    msrs.1.borrow_mut().clear();
    let first = read_and_zero(&mut msrs, &remainders, &AtomicU64::new(0));
    // Both read, then zeroed (fixed counter 3 first), with fixed counter 3 and the split stopped and
    // the other counters counting; the global control put back.
    let accesses = msrs.1.borrow().clone();
    let order: Vec<u32> = accesses.iter().map(|&(msr, _)| msr).collect();
    let (slots, metrics) = (msr::IA32_FIXED_CTR3, msr::IA32_PERF_METRICS);
    assert_eq!(order, [slots, metrics, slots, metrics]);
    let stopped = control & !(1 << 35) & !(1 << 48);
    assert!(accesses.iter().all(|&(_, during)| during == stopped), "{accesses:x?}");
    assert_eq!(msrs.read(msr::IA32_FIXED_CTR3), 0);
    assert_eq!(msrs.read(msr::IA32_PERF_METRICS), 0);
    assert_eq!(msrs.read(msr::IA32_PERF_GLOBAL_CTRL), control);
    assert_eq!((first.slots, first.categories), (2_550, [1_020, 510, 510, 510]));
    msrs.write(msr::IA32_FIXED_CTR3, 510);
    msrs.write(msr::IA32_PERF_METRICS, 0xFF_00_00_00);
    let second = read_and_zero(&mut msrs, &remainders, &AtomicU64::new(0));
    assert_eq!((second.slots, second.categories), (510, [0, 0, 0, 510]));
    let totals = first.plus(&second);
    assert_eq!(totals.slots, 3_060);
    assert_eq!(totals.categories, [1_020, 510, 510, 510 + 510]);
    let wrapping = Topdown { slots: u64::MAX, categories: [u64::MAX; 4] }.plus(&second);
    assert_eq!((wrapping.slots, wrapping.categories[3]), (509, 509));
}

#[test]
fn slots_without_a_split_wait_for_a_later_read() {
    let mut msrs = MsrFile::default();
    let remainders = Remainders::default();
    msrs.write(msr::IA32_FIXED_CTR3, 700);
    assert_eq!(read_and_zero(&mut msrs, &remainders, &AtomicU64::new(0)), Topdown::default());
    assert_eq!(msrs.read(msr::IA32_FIXED_CTR3), 700, "left for a later read");
    msrs.write(msr::IA32_PERF_METRICS, 0xFF);
    assert_eq!(read_and_zero(&mut msrs, &remainders, &AtomicU64::new(0)).categories, [700, 0, 0, 0]);
}

/// A read's fractions: four bytes summing to 0xFF (as IA32_PERF_METRICS gives them), or, now and
/// then, any four not all 0 (off by rounding, or worse).
fn any_fractions() -> impl Strategy<Value = [u64; 4]> {
    let summing = (0u64..=255, 0u64..=255, 0u64..=255).prop_map(|(a, b, c)| {
        let mut cuts = [a, b, c];
        cuts.sort_unstable();
        [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], 255 - cuts[2]]
    });
    let any = prop::array::uniform4(0u64..=255).prop_filter("not all 0", |fractions| fractions != &[0; 4]);
    prop_oneof![4 => summing, 1 => any]
}

proptest! {
    /// Over any sequence of reads, every read's slots are split exactly among the four categories,
    /// and each category's total stays within 3 slots of the exact sum of its shares (plus 1/255 of a
    /// slot per read whose fractions do not sum to 0xFF).
    #[test]
    fn the_carried_split_is_exact_and_close(
        reads in prop::collection::vec((0u64..1 << 20, any_fractions()), 1..300),
    ) {
        let remainders = Remainders::default();
        let mut totals = [0u64; 4];
        let mut exact = [0f64; 4];
        let mut off_0xff = 0;
        for &(slots, fractions) in &reads {
            let split = remainders.split(slots, fractions);
            prop_assert_eq!(split.iter().sum::<u64>(), slots, "{:?} of {} by {:?}", split, slots, fractions);
            let sum: u64 = fractions.iter().sum();
            off_0xff += u32::from(sum != 0xFF);
            for category in 0..4 {
                totals[category] += split[category];
                exact[category] += slots as f64 * fractions[category] as f64 / sum as f64;
            }
        }
        let bound = 3.0 + f64::from(off_0xff) / 255.0 + 1e-6;
        for category in 0..4 {
            let error = totals[category] as f64 - exact[category];
            prop_assert!(error.abs() < bound, "category {}: {} vs exact {}", category, totals[category], exact[category]);
        }
    }

    /// The remainders stay where 16 bits hold them, and sum to 0.
    #[test]
    fn remainders_stay_bounded(reads in prop::collection::vec((0u64..1 << 50, any_fractions()), 1..200)) {
        let mut carried = [0i64; 4];
        for &(slots, fractions) in &reads {
            let (split, next) = split_carrying(slots, fractions, carried);
            prop_assert_eq!(split.iter().sum::<u64>(), slots);
            prop_assert_eq!(next.iter().sum::<i64>(), 0);
            prop_assert!(next.iter().all(|&remainder| (-255 < remainder) && (remainder < 3 * 255)), "{:?}", next);
            carried = next;
        }
    }
}

#[test]
fn level_1_from_input_events() {
    let count = |event: Event| match event {
        Event::CoreCycles => 1_000,
        Event::SlotsRetired => 1_600,
        Event::SlotsIssued => 1_900,
        Event::RecoveryCycles => 25,
        Event::SlotsNotDelivered => 700,
        _ => 0,
    };
    let topdown = from_events(4, false, |event| Some(count(event)));
    assert_eq!(topdown.slots, 4_000);
    // Retiring 1600, bad speculation 1900 - 1600 + 4 x 25 = 400, frontend 700, backend the rest.
    assert_eq!(topdown.categories, [1_600, 400, 700, 1_300]);
    assert_eq!(topdown.categories.iter().sum::<u64>(), topdown.slots);
}

#[test]
fn level_1_never_underflows() {
    // More retired than issued (counters read at slightly different times) and more categories than
    // slots: every category stays at or above zero.
    let count = |event: Event| match event {
        Event::CoreCycles => 10,
        Event::SlotsRetired => 50,
        Event::SlotsIssued => 40,
        Event::SlotsNotDelivered => 30,
        _ => 0,
    };
    assert_eq!(from_events(6, false, |event| Some(count(event))).categories, [50, 0, 30, 0]);
}

#[test]
fn a_read_counts_fixed_counter_3_wraps_and_clears_the_perf_metrics_overflow() {
    let mut msrs = MsrFile::default();
    let remainders = Remainders::default();
    let control = 0x1_0000_000F_00FF;
    msrs.write(msr::IA32_PERF_GLOBAL_CTRL, control);
    // One wrap the overflow handler counted (its status bits cleared by the HAL since), one pending
    // with PERF_METRICS overflow (bits 35 and 48), and 2,550 slots in the counter.
    let wraps = AtomicU64::new(1);
    msrs.write(msr::IA32_PERF_GLOBAL_STATUS, SLOTS_OVERFLOW | PERF_METRICS_OVERFLOW | 1);
    msrs.write(msr::IA32_FIXED_CTR3, 2_550);
    msrs.write(msr::IA32_PERF_METRICS, 0x33_33_33_66);
    let read = read_and_zero(&mut msrs, &remainders, &wraps);
    let slots = (2 << 48) + 2_550;
    assert_eq!(read.slots, slots);
    assert_eq!(read.categories.iter().sum::<u64>(), slots);
    assert!(read.categories[0].abs_diff(slots / 5 * 2) <= 1, "0x66 of 0xFF: {:?}", read.categories);
    assert_eq!(wraps.load(Ordering::Relaxed), 0, "the wraps restart with the zeroed counter");
    assert_eq!(msrs.read(msr::IA32_PERF_GLOBAL_OVF_CTRL), SLOTS_OVERFLOW | PERF_METRICS_OVERFLOW);
    assert_eq!((msrs.read(msr::IA32_FIXED_CTR3), msrs.read(msr::IA32_PERF_METRICS)), (0, 0));
    // Without a pending bit, no acknowledgement is written.
    msrs.write(msr::IA32_PERF_GLOBAL_OVF_CTRL, 0);
    msrs.write(msr::IA32_PERF_GLOBAL_STATUS, 1);
    msrs.write(msr::IA32_FIXED_CTR3, 255);
    msrs.write(msr::IA32_PERF_METRICS, 0xFF);
    assert_eq!(read_and_zero(&mut msrs, &remainders, &wraps).slots, 255);
    assert_eq!(msrs.read(msr::IA32_PERF_GLOBAL_OVF_CTRL), 0);
}
