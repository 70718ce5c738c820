//! `_Total` of the ratio counters (Instructions per Cycle, % LLC Misses, % Branch Mispredicts) from the
//! real pmupcw.sys and its manifest, checked against the virtual PMU's exact counts.
//!
//! Perflib builds `_Total` of a `multipleAggregate` counterset by applying each counter's `aggregate`
//! function to the instances' raw values ("sum: The sum of the counter values is returned. undefined:
//! Do not aggregate this counter.", the counter element of the counter manifest schema,
//! https://learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-element). PDH then
//! computes `_Total`'s displayed value from those raw values like any instance's: PERF_PRECISION_100NS_TIMER
//! is 100 (N1 - N0) / (D1 - D0), D its PERF_PRECISION_TIMESTAMP base, both 64-bit ("Calculating
//! Counter Values", https://learn.microsoft.com/windows/win32/perfctrs/calculating-counter-values). With the
//! numerator and the base both summed, `_Total` is sum(numerator deltas) / sum(base deltas): the
//! machine-wide ratio, cycle weighted for IPC, not the mean of the processors' ratios. Processors here
//! run different IPCs, so the two differ. The counts and bases are the 64-bit counts themselves, so
//! the ratios are exact, and a processor's cycles passing 2^32 (or 2^42) changes nothing. Instructions
//! per Cycle's base is 100 x the cycles, so PDH's 100 (N1 - N0) / (D1 - D0) is the IPC itself.

use crate::common;

use kernel_double::consumer::pdh::Value;
use kernel_double::consumer::{self, Column, TOTAL};
use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// (manifest counter id, numerator event, base event, the base's multiple of its event) of each ratio
/// counter: instructions per cycle (over 100 x the cycles), % LLC misses, % branch mispredicts. PDH
/// shows 100 x numerator / base.
const RATIOS: [(u32, usize, usize, f64); 3] =
    [(IPC, pmu::INSTRUCTIONS, pmu::CORE_CYCLES, 100.0), (16, 4, 3, 1.0), (18, 6, 5, 1.0)];
/// Instructions per Cycle's manifest id.
const IPC: u32 = 60;

#[test]
fn total_ratios_are_sums_of_numerators_over_sums_of_bases() {
    let (mut driver, hardware) = common::query_hardware_counters(&cpuid::SKYLAKE);

    let first = consumer::sample(&hardware).unwrap();
    let truth_first = common::true_totals(PROCESSORS);
    for vp in 0..PROCESSORS {
        pmu::step(vp, 100_000 * u64::from(vp + 1));
        // Extra unhalted cycles without instructions (a processor stalled on memory): processor n
        // runs at IPC 16 (n + 1) / (20 (n + 1) + 30 n), so the processors' IPCs differ.
        let cycles = pmu::counter_of(vp, pmu::CORE_CYCLES).expect("core cycles are counted");
        let before = pmu::counted(vp, pmu::CORE_CYCLES);
        let extra = 3_000_000 * u64::from(vp);
        pmu::preload(vp, cycles, before + extra);
        assert_eq!(pmu::counted(vp, pmu::CORE_CYCLES), before + extra, "the counter read {before}");
    }
    let second = consumer::sample(&hardware).unwrap();
    let truth_second = common::true_totals(PROCESSORS);

    let column = |instance: &str, id: u32| Column {
        instance: Some(instance.to_string()),
        counter: hardware.index_of(id).unwrap(),
    };
    let shown = |instance: &str, id: u32| {
        consumer::values(
            &hardware,
            &[column(instance, id)],
            Some(&first),
            &second,
            consumer::Formatter::Uncapped,
        )[0]
    };
    let delta = |vp: usize, event: usize| truth_second[vp][event] - truth_first[vp][event];
    for (id, numerator, base, base_multiple) in RATIOS {
        let name = &hardware.counters[hardware.index_of(id).unwrap()].name;
        // The exact counts' ratio: sum of the processors' deltas over sum of their deltas.
        let sum = |event| (0..PROCESSORS as usize).map(|vp| delta(vp, event)).sum::<u64>() as f64;
        let expected = 100.0 * (sum(numerator) / (base_multiple * sum(base)));
        assert_eq!(shown(TOTAL, id), Value::Value(expected), "{name}");
        for vp in 0..PROCESSORS as usize {
            let exact = 100.0 * (delta(vp, numerator) as f64 / (base_multiple * delta(vp, base) as f64));
            assert_eq!(shown(&format!("0,{vp}"), id), Value::Value(exact), "{name} of 0,{vp}");
        }
        assert!(
            consumer::columns(&hardware, &first).contains(&column(TOTAL, id)),
            "typeperf \\Hardware Counters(*)\\* lists {TOTAL} {name}"
        );
    }

    // Cycle weighted, not the mean of the processors' IPCs.
    let ipc = |instance: &str| match shown(instance, IPC) {
        Value::Value(value) => value,
        other => panic!("{instance}: Instructions per Cycle is {other:?}"),
    };
    let mean = (0..PROCESSORS).map(|vp| ipc(&format!("0,{vp}"))).sum::<f64>() / f64::from(PROCESSORS);
    let total = ipc(TOTAL);
    assert!((mean - total).abs() > 0.05, "_Total {total} is the mean {mean} of the processors' IPCs");

    // Where a 32-bit base (a count, or a count / 1024) would wrap, a 64-bit one does not: processor
    // 0's cycles pass 2^42 between two samples, and its value and _Total's stay exact.
    let cycles = pmu::counter_of(0, pmu::CORE_CYCLES).expect("core cycles are counted");
    let counted = pmu::counted(0, pmu::CORE_CYCLES);
    pmu::preload(0, cycles, counted.next_multiple_of(1 << 42) - 1000);
    let before_wrap = consumer::sample(&hardware).unwrap();
    let truth_before = common::true_totals(PROCESSORS);
    for vp in 0..PROCESSORS {
        pmu::step(vp, 100_000);
    }
    let after_wrap = consumer::sample(&hardware).unwrap();
    let truth_after = common::true_totals(PROCESSORS);
    let across = |instance: &str| {
        consumer::values(
            &hardware,
            &[column(instance, IPC)],
            Some(&before_wrap),
            &after_wrap,
            consumer::Formatter::Uncapped,
        )[0]
    };
    let moved = |vps: std::ops::Range<usize>, event: usize| {
        vps.map(|vp| truth_after[vp][event] - truth_before[vp][event]).sum::<u64>() as f64
    };
    let ipc = |vps: std::ops::Range<usize>| {
        Value::Value(100.0 * (moved(vps.clone(), pmu::INSTRUCTIONS) / (100.0 * moved(vps, pmu::CORE_CYCLES))))
    };
    assert_eq!(across("0,0"), ipc(0..1));
    assert_eq!(across(TOTAL), ipc(0..PROCESSORS as usize));

    assert_eq!(pcw::remove_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}
