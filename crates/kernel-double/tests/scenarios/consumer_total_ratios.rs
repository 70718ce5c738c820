//! `_Total` of the ratio counters (Instructions per Cycle, % LLC Misses, % Branch Mispredicts) from the
//! real pmupcw.sys and its manifest, checked against the virtual PMU's exact counts.
//!
//! Perflib builds `_Total` of a `multipleAggregate` counterset by applying each counter's `aggregate`
//! function to the instances' raw values ("sum: The sum of the counter values is returned. undefined:
//! Do not aggregate this counter.", the counter element of the counter manifest schema,
//! https://learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-element). PDH then
//! computes `_Total`'s displayed value from those raw values like any instance's: PERF_AVERAGE_BULK is
//! the difference of the data over the difference of its PERF_AVERAGE_BASE
//! (https://learn.microsoft.com/windows/win32/wmisdk/counter-algorithm-counter-types) and
//! PERF_SAMPLE_FRACTION 100 (X1 - X0) / (B1 - B0)
//! (https://learn.microsoft.com/previous-versions/windows/embedded/ms901187(v=msdn.10)). With the
//! numerator and the base both summed, `_Total` is sum(numerator deltas) / sum(base deltas): the
//! machine-wide ratio, cycle weighted for IPC, not the mean of the processors' ratios. Processors here
//! run different IPCs, so the two differ. The base is 32-bit, so a wrap of any one processor's base is
//! a wrap of `_Total`'s.

use crate::common;

use kernel_double::consumer::pdh::{PDH_CALC_NEGATIVE_DENOMINATOR, Value};
use kernel_double::consumer::{self, Column, Counterset, TOTAL};
use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// The ratio counters read counts / 1024 (the manifest: "unhalted core cycles / 1024, kept to 32
/// bits"), so the exact expectation scales the true counts the same way.
const RATIO_SCALE_SHIFT: u32 = 10;

/// (manifest counter id, numerator event, base event, display multiplier) of each ratio counter.
const RATIOS: [(u32, usize, usize, f64); 3] =
    [(14, pmu::INSTRUCTIONS, pmu::CORE_CYCLES, 1.0), (16, 4, 3, 100.0), (18, 6, 5, 100.0)];

#[test]
fn total_ratios_are_sums_of_numerators_over_sums_of_bases() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let manifest = consumer::manifest();
    let hardware = Counterset::open(&manifest, "Hardware Counters").unwrap();
    assert_eq!(pcw::add_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));

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
        consumer::values(&hardware, &[column(instance, id)], Some(&first), &second)[0]
    };
    let scaled_delta = |vp: usize, event: usize| {
        (truth_second[vp][event] >> RATIO_SCALE_SHIFT) - (truth_first[vp][event] >> RATIO_SCALE_SHIFT)
    };
    for (id, numerator, base, multiplier) in RATIOS {
        let name = &hardware.counters[hardware.index_of(id).unwrap()].name;
        let sum = |event| (0..PROCESSORS as usize).map(|vp| scaled_delta(vp, event)).sum::<u64>() as f64;
        let expected = multiplier * sum(numerator) / sum(base);
        assert_eq!(shown(TOTAL, id), Value::Value(expected), "{name}");
        // The same ratio of the unscaled counts, within the scaling's rounding: each processor's
        // scaled delta is off by less than one unit, in the numerator and in the base.
        let exact = |event| {
            (0..PROCESSORS as usize).map(|vp| truth_second[vp][event] - truth_first[vp][event]).sum::<u64>()
        };
        let unscaled = multiplier * exact(numerator) as f64 / exact(base) as f64;
        let rounding = f64::from(PROCESSORS) * (1.0 / sum(numerator) + 1.0 / sum(base));
        assert!((expected - unscaled).abs() <= rounding * unscaled, "{name}: {expected} vs {unscaled}");
        assert!(
            consumer::columns(&hardware, &first).contains(&column(TOTAL, id)),
            "typeperf \\Hardware Counters(*)\\* lists {TOTAL} {name}"
        );
    }

    // Cycle weighted, not the mean of the processors' IPCs.
    let ipc = |instance: &str| match shown(instance, 14) {
        Value::Value(value) => value,
        other => panic!("{instance}: Instructions per Cycle is {other:?}"),
    };
    let mean = (0..PROCESSORS).map(|vp| ipc(&format!("0,{vp}"))).sum::<f64>() / f64::from(PROCESSORS);
    let total = ipc(TOTAL);
    assert!((mean - total).abs() > 0.05, "_Total {total} is the mean {mean} of the processors' IPCs");

    // The cost of a summed 32-bit base: when one processor's base wraps (2^32 scaled cycles, ~15
    // minutes of a 5 GHz core), _Total's base goes backwards too, and that sample has no _Total value.
    let cycles = pmu::counter_of(0, pmu::CORE_CYCLES).expect("core cycles are counted");
    let wrap = 1u64 << (32 + RATIO_SCALE_SHIFT);
    let counted = pmu::counted(0, pmu::CORE_CYCLES);
    pmu::preload(0, cycles, counted.next_multiple_of(wrap) - 1000);
    let before_wrap = consumer::sample(&hardware).unwrap();
    for vp in 0..PROCESSORS {
        pmu::step(vp, 100_000);
    }
    let after_wrap = consumer::sample(&hardware).unwrap();
    let across = |instance: &str| {
        consumer::values(&hardware, &[column(instance, 14)], Some(&before_wrap), &after_wrap)[0]
    };
    let negative = Value::Status(PDH_CALC_NEGATIVE_DENOMINATOR);
    assert_eq!((across("0,0"), across(TOTAL)), (negative, negative));
    assert!(matches!(across("0,1"), Value::Value(ipc) if ipc > 0.0), "{:?}", across("0,1"));

    assert_eq!(pcw::remove_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}
