use super::*;
use std::collections::HashMap;

#[derive(Default)]
struct MsrFile(HashMap<u32, u64>);

impl Msrs for MsrFile {
    fn read(&self, msr: u32) -> u64 {
        self.0.get(&msr).copied().unwrap_or(0)
    }
    fn write(&mut self, msr: u32, value: u64) {
        self.0.insert(msr, value);
    }
}

#[test]
fn split_follows_the_metric_bytes() {
    // Retiring 0x66 (40%), bad speculation 0x19, frontend 0x33, backend 0x4D: 0xFF in all.
    let metrics = 0x4D_33_19_66;
    assert_eq!(split(255_000, metrics), [102_000, 25_000, 51_000, 77_000]);
    assert_eq!(split(0, metrics), [0; 4]);
    assert_eq!(split(1 << 47, 0xFF), [1 << 47, 0, 0, 0]);
    // Bytes above the four categories are ignored.
    assert_eq!(split(255, 0xFFFF_FFFF_0000_0000), [0; 4]);
}

#[test]
fn a_read_returns_the_new_slots_and_zeroes_both_registers() {
    let mut msrs = MsrFile::default();
    msrs.write(msr::IA32_FIXED_CTR3, 2_550);
    msrs.write(msr::IA32_PERF_METRICS, 0x33_33_33_66);
    let first = read_and_zero(&mut msrs);
    assert_eq!(msrs.read(msr::IA32_FIXED_CTR3), 0);
    assert_eq!(msrs.read(msr::IA32_PERF_METRICS), 0);
    msrs.write(msr::IA32_FIXED_CTR3, 510);
    msrs.write(msr::IA32_PERF_METRICS, 0xFF_00_00_00);
    let second = read_and_zero(&mut msrs);
    assert_eq!((second.slots, second.categories), (510, [0, 0, 0, 510]));
    let totals = first.plus(&second);
    assert_eq!(totals.slots, 3_060);
    assert_eq!(totals.categories, [1_020, 510, 510, 510 + 510]);
    let wrapping = Topdown { slots: u64::MAX, categories: [u64::MAX; 4] }.plus(&second);
    assert_eq!((wrapping.slots, wrapping.categories[3]), (509, 509));
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
    let topdown = from_events(4, count);
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
    assert_eq!(from_events(6, count).categories, [50, 0, 30, 0]);
}
