//! The real pmupcw.sys on a hybrid Core i9-12900K: 16 performance-core threads (8 GP and 4 fixed
//! counters, IA32_PERF_METRICS) and 8 efficient cores (6 GP, 3 fixed), each presenting its own CPUID.
//! The driver must describe every processor, program each with its own core type's counters (the
//! double faults, as the hardware does, on a counter MSR or enable bit a core lacks), publish each
//! processor's Core Type, and sum each core type in "Hardware Counters by Core Type".

use crate::common::{self, BY_CORE_TYPE, DRIVER_STATUS, HARDWARE_COUNTERS};

use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

/// Manifest ids: Hardware Counters' Core Type; by core type: Core Type, Processors, the two totals.
const CORE_TYPE: usize = 52;
const BY_TYPE_CORE_TYPE: usize = 0;
const BY_TYPE_PROCESSORS: usize = 1;
const BY_TYPE_INSTRUCTIONS_TOTAL: usize = 10;
const BY_TYPE_CYCLES_TOTAL: usize = 11;
/// Status counterset position of Top-down Source, and its value for "per core type".
const TOPDOWN_SOURCE: usize = 9;
const TOPDOWN_PER_CORE_TYPE: u64 = 6;
const PROCESSORS: u32 = 24;
const PERFORMANCE_THREADS: u32 = cpuid::ALDER_LAKE_PERFORMANCE_THREADS;
/// IA32_FIXED_CTR3 (top-down slots), which only the performance cores have.
const IA32_FIXED_CTR3: u32 = 0x30C;

/// Loads the driver on `model` with 24 processors, collects (which acquires the counters), runs a
/// different amount of work on each processor, and collects again. Panics with the violations if
/// anything the hardware would refuse happened.
fn load_and_count(model: &'static cpuid::CpuModel) -> kernel_double::driver::Driver {
    topology::configure(PROCESSORS, PROCESSORS);
    cpuid::set_model(model);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    common::collect_by_id(HARDWARE_COUNTERS);
    for vp in 0..PROCESSORS {
        pmu::step(vp, 100_000 * u64::from(vp + 1));
    }
    common::collect_by_id(HARDWARE_COUNTERS);
    let violations = violations::all();
    assert!(violations.is_empty(), "the hardware would have refused: {violations:#?}");
    driver
}

/// The ground truth of `event` summed over `processors`.
fn counted(processors: std::ops::Range<u32>, event: usize) -> u64 {
    processors.map(|vp| pmu::counted(vp, event)).sum()
}

#[test]
fn alder_lake_hybrid_publishes_core_types_and_sums_each_type() {
    let mut driver = load_and_count(&cpuid::ALDER_LAKE_HYBRID);
    let processors = common::collect_by_id(HARDWARE_COUNTERS);
    let core_types: Vec<u64> = processors.iter().map(|(_, _, values)| values[CORE_TYPE]).collect();
    let expected: Vec<u64> = (0..PROCESSORS).map(|vp| if vp < PERFORMANCE_THREADS { 1 } else { 2 }).collect();
    assert_eq!(core_types, expected);

    let by_type = common::collect_by_id(BY_CORE_TYPE);
    let names: Vec<(&str, u32)> = by_type.iter().map(|(name, id, _)| (name.as_str(), *id)).collect();
    assert_eq!(names, [("Performance", 1), ("Efficient", 2)]);
    for ((_, core_type, values), range) in
        by_type.iter().zip([0..PERFORMANCE_THREADS, PERFORMANCE_THREADS..PROCESSORS])
    {
        assert_eq!(values[BY_TYPE_CORE_TYPE], u64::from(*core_type));
        assert_eq!(values[BY_TYPE_PROCESSORS], u64::from(range.end - range.start));
        assert_eq!(values[BY_TYPE_INSTRUCTIONS_TOTAL], counted(range.clone(), pmu::INSTRUCTIONS));
        assert_eq!(values[BY_TYPE_CYCLES_TOTAL], counted(range.clone(), pmu::CORE_CYCLES));
        let per_processor: u64 = processors[range.start as usize..range.end as usize]
            .iter()
            .map(|(_, _, values)| values[common::FIRST_TOTAL])
            .sum();
        assert_eq!(values[BY_TYPE_INSTRUCTIONS_TOTAL], per_processor, "the sum of the type's instances");
    }
    // Every core reports the same leaf 0xA (6 GP, 3 fixed), but the performance cores have fixed
    // counter 3 and IA32_PERF_METRICS (Linux's Alder Lake rule): top-down there, not on the others.
    assert_eq!(common::driver_status()[TOPDOWN_SOURCE], TOPDOWN_PER_CORE_TYPE);
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn a_hybrid_whose_cores_report_their_own_counters_gets_each_types_own() {
    let mut driver = load_and_count(&cpuid::HYBRID_OWN_LEAF_A);
    // The performance cores count top-down with fixed counter 3; the efficient cores, which lack it,
    // are never given it, and the status says the source differs by core type.
    for vp in 0..PROCESSORS {
        let programmed = pmu::programmed_counters(vp);
        let fixed_3 = programmed.iter().any(|&(msr, _)| msr == IA32_FIXED_CTR3);
        assert_eq!(fixed_3, vp < PERFORMANCE_THREADS, "processor {vp}: {programmed:x?}");
    }
    assert_eq!(common::driver_status()[TOPDOWN_SOURCE], TOPDOWN_PER_CORE_TYPE);
    let totals = common::collect_totals();
    assert_eq!(totals.iter().map(|(totals, _)| *totals).collect::<Vec<_>>(), common::true_totals(PROCESSORS));
    assert!(pcw::collect(DRIVER_STATUS, &pcw::Query::default()).is_some());
    assert!(driver.unload());
    common::assert_clean();
}
