//! Hybrid processors counted per core type (docs/hybrid.md): on a Core i9-12900K (Alder Lake, whose
//! leaf 0xA reports only the counters every core has) and a Meteor Lake part (leaf 0x23 enumerates
//! each core type's own), the driver must ask the HAL once per core type, each time for that type's
//! counters on that type's processors (GroupAffinity), and program each processor with its own type's
//! plan: the performance cores count top-down level 1 with fixed counter 3 and IA32_PERF_METRICS,
//! the efficient cores never see a counter they lack (the double faults on that, as the hardware does),
//! and with the topdown profile the efficient cores count it with their TOPDOWN_* events.

use crate::common::{self, BY_CORE_TYPE, DRIVER_STATUS, HARDWARE_COUNTERS};

use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_MULTI_SZ, REG_SZ};
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;
use std::collections::BTreeSet;

/// Manifest ids of Hardware Counters' slot totals: all slots, then the four categories.
const SLOTS_TOTAL: usize = 29;
const CATEGORY_TOTALS: [usize; 4] = [30, 31, 32, 33];
/// IA32_PERF_GLOBAL_CTRL bit of fixed counter 3 (the HAL's CounterIndex for it).
const FIXED_COUNTER_3: u64 = 1 << 35;
/// Status counterset position of Top-down Source, and its value "differs by core type".
const TOPDOWN_SOURCE: usize = 9;
const TOPDOWN_PER_CORE_TYPE: u64 = 6;

/// Manifest ids of Top-down Source in Hardware Counters and in Hardware Counters by Core Type, and
/// the values it takes here (the status counterset's numbering).
const PROCESSOR_TOPDOWN_SOURCE: usize = 53;
const CORE_TYPE_TOPDOWN_SOURCE: usize = 25;
const UNAVAILABLE: u64 = 0;
const FROM_PERF_METRICS: u64 = 1;
const FROM_PROFILE_EVENTS: u64 = 2;

/// Every processor's Top-down Source is its core type's, `performance` or `efficient`, and so is
/// each core type instance's.
fn assert_topdown_sources(values: &[Vec<u64>], performance_threads: u32, performance: u64, efficient: u64) {
    for (vp, at) in values.iter().enumerate() {
        let expected = if (vp as u32) < performance_threads { performance } else { efficient };
        assert_eq!(at[PROCESSOR_TOPDOWN_SOURCE], expected, "processor {vp}'s Top-down Source");
    }
    let by_core_type: Vec<(String, u64)> = common::collect_by_id(BY_CORE_TYPE)
        .into_iter()
        .map(|(name, _, values)| (name, values[CORE_TYPE_TOPDOWN_SOURCE]))
        .collect();
    assert_eq!(by_core_type, [("Performance".into(), performance), ("Efficient".into(), efficient)]);
}

/// Every processor's Hardware Counters values, by manifest id, from a fresh read.
fn collect() -> Vec<Vec<u64>> {
    common::collect_by_id(HARDWARE_COUNTERS).into_iter().map(|(_, _, values)| values).collect()
}

/// A first collect (the counters are owned and programmed), then some work on every processor, then
/// every processor's values from a second collect; no register touched that the hardware lacks.
fn work_and_collect(processors: u32) -> Vec<Vec<u64>> {
    collect();
    for vp in 0..processors {
        pmu::step(vp, 10_000 * u64::from(vp + 1));
    }
    let values = collect();
    let found = violations::all();
    assert!(found.is_empty(), "the hardware would have refused: {found:#?}");
    values
}

fn scenario(model: &'static cpuid::CpuModel, performance_threads: u32, processors: u32) {
    topology::configure(processors, processors);
    cpuid::set_model(model);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let values = work_and_collect(processors);

    let log = hal::allocation_log();
    let held: Vec<_> =
        log.iter().map(|allocation| (allocation.processors.clone(), allocation.counters)).collect();
    assert_eq!(log.len(), 2, "one HAL allocation per core type, each on its processors: {held:x?}");
    let performance: BTreeSet<u32> = (0..performance_threads).collect();
    let efficient: BTreeSet<u32> = (performance_threads..processors).collect();
    assert_eq!(log[0].processors.as_ref(), Some(&performance), "{held:x?}");
    assert_eq!(log[1].processors.as_ref(), Some(&efficient), "{held:x?}");
    // Fixed counter 3 is in the performance cores' list only where the HAL's counter table has it
    // (Meteor Lake's leaf 0x23, on 24H2, the build presented); on Alder Lake no table has it and the
    // driver programs it without asking (hal_as_decompiled.rs covers each build and caller).
    let listed = std::ptr::eq(model, &cpuid::METEOR_LAKE_HYBRID);
    assert_eq!(
        log[0].counters.unwrap_or(0) & FIXED_COUNTER_3 != 0,
        listed,
        "the performance cores' fixed counter 3"
    );
    assert_eq!(
        log[1].counters.unwrap_or(0) & FIXED_COUNTER_3,
        0,
        "the efficient cores have no fixed counter 3"
    );

    for vp in 0..performance_threads {
        let at = &values[vp as usize];
        let categories = CATEGORY_TOTALS.map(|id| at[id]);
        assert!(at[SLOTS_TOTAL] > 0, "processor {vp}: no top-down slots");
        assert_eq!(categories.iter().sum::<u64>(), at[SLOTS_TOTAL], "processor {vp}: the split");
        assert_eq!(at[SLOTS_TOTAL], pmu::counted(vp, pmu::TOPDOWN_SLOTS), "processor {vp}: every slot");
    }
    assert_eq!(common::driver_status()[TOPDOWN_SOURCE], TOPDOWN_PER_CORE_TYPE);
    // The default profile has no room for the efficient cores' top-down events: theirs says so.
    assert_topdown_sources(&values, performance_threads, FROM_PERF_METRICS, UNAVAILABLE);
    assert!(pcw::collect(DRIVER_STATUS, &pcw::Query::default()).is_some());
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn alder_lake_hybrid_allocates_and_counts_per_core_type() {
    scenario(&cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, 24);
}

#[test]
fn meteor_lake_hybrid_allocates_and_counts_per_core_type() {
    scenario(&cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, 18);
}

/// The topdown profile on `model`: every efficient core's top-down slots are its width times its core
/// cycles, split exactly as its TOPDOWN_* events counted them (bad speculation the slots the others
/// leave), while the performance cores keep IA32_PERF_METRICS.
fn efficient_cores_count_top_down_with_the_topdown_profile(
    model: &'static cpuid::CpuModel,
    performance_threads: u32,
    processors: u32,
) {
    topology::configure(processors, processors);
    cpuid::set_model(model);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("topdown"));
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let values = work_and_collect(processors);
    for vp in performance_threads..processors {
        let at = &values[vp as usize];
        let width = pmu::atom_width(vp).expect("an efficient core");
        let slots = width * pmu::counted(vp, pmu::CORE_CYCLES);
        let [retiring, frontend, backend] =
            [pmu::ATOM_RETIRING, pmu::ATOM_FRONTEND_BOUND, pmu::ATOM_BACKEND_BOUND]
                .map(|e| pmu::counted(vp, e));
        assert!(slots > 0 && retiring > 0, "processor {vp}: nothing counted");
        let expected = [retiring, slots - retiring - frontend - backend, frontend, backend];
        assert_eq!(at[SLOTS_TOTAL], slots, "processor {vp}: width x core cycles");
        assert_eq!(CATEGORY_TOTALS.map(|id| at[id]), expected, "processor {vp}: the TOPDOWN_* events");
    }
    for vp in 0..performance_threads {
        assert_eq!(values[vp as usize][SLOTS_TOTAL], pmu::counted(vp, pmu::TOPDOWN_SLOTS), "processor {vp}");
    }
    assert_eq!(common::driver_status()[TOPDOWN_SOURCE], TOPDOWN_PER_CORE_TYPE);
    assert_topdown_sources(&values, performance_threads, FROM_PERF_METRICS, FROM_PROFILE_EVENTS);
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn alder_lake_hybrid_efficient_cores_count_top_down_with_the_topdown_profile() {
    efficient_cores_count_top_down_with_the_topdown_profile(
        &cpuid::ALDER_LAKE_HYBRID,
        cpuid::ALDER_LAKE_PERFORMANCE_THREADS,
        24,
    );
}

#[test]
fn meteor_lake_hybrid_efficient_cores_count_top_down_with_the_topdown_profile() {
    efficient_cores_count_top_down_with_the_topdown_profile(
        &cpuid::METEOR_LAKE_HYBRID,
        cpuid::METEOR_LAKE_PERFORMANCE_THREADS,
        18,
    );
}

/// Hardware Counters' Custom Event n 64-bit total (manifest id), and the status position of Rejected
/// Custom Events.
const fn custom_total(n: usize) -> usize {
    37 + 2 * n
}
const REJECTED_CUSTOM_EVENTS: usize = 11;
/// The workload's branches (`pmu::RATES` order).
const BRANCHES: usize = 5;

/// The custom profile on the i9-12900K: an architectural event counts on every core type; a
/// model-specific event (the efficient cores' TOPDOWN_FE_BOUND.ALL, 71H) is refused without `core=`
/// and, with `core=efficient`, counts on the efficient cores alone and is never programmed on the
/// performance cores, whose 71H means something else.
#[test]
fn alder_lake_hybrid_custom_events_run_on_the_core_type_they_name() {
    let processors = 24;
    topology::configure(processors, processors);
    cpuid::set_model(&cpuid::ALDER_LAKE_HYBRID);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("custom"));
    let lines = [
        "event=0xC4,umask=0x00,name=branches",
        "event=0x71,umask=0x00,name=fe bound",
        "event=0x71,umask=0x00,core=efficient,name=fe bound",
    ];
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let values = work_and_collect(processors);
    assert_eq!(common::driver_status()[REJECTED_CUSTOM_EVENTS], 1, "the model-specific line without core=");
    let performance_threads = cpuid::ALDER_LAKE_PERFORMANCE_THREADS;
    for vp in 0..processors {
        let at = &values[vp as usize];
        assert_eq!(at[custom_total(0)], pmu::counted(vp, BRANCHES), "processor {vp}: branches");
        let efficient = vp >= performance_threads;
        let expected = if efficient { pmu::counted(vp, pmu::ATOM_FRONTEND_BOUND) } else { 0 };
        // Line n is Custom Event n: the refused line 1 reads 0, line 2 keeps its number.
        assert_eq!(at[custom_total(1)], 0, "processor {vp}: the refused line");
        assert_eq!(at[custom_total(2)], expected, "processor {vp}: the efficient cores' event");
        assert_eq!(expected > 0, efficient, "processor {vp}");
        // IA32_PERFEVTSEL0-7 written with event 71H, unit mask 0, enabled (bit 22).
        let programmed_71 = msr::writes().iter().any(|write| {
            write.processor == vp
                && (0x186..0x18E).contains(&write.msr)
                && write.value & 0x40_FFFF == 0x40_0071
        });
        assert_eq!(programmed_71, efficient, "processor {vp}: event 71H programmed");
    }
    assert!(driver.unload());
    common::assert_clean();
}
