//! The HAL as decompiled Windows builds implement it (crates/kernel-double/src/exports/hal/table.rs):
//! a resource list is checked against the counter table of the processor the *caller* runs on (24H2)
//! or against counts read on processor 0 (older builds), never against the affinity's processors; and
//! reservations are per processor and per counter. On the hybrid models, with the consumer's query
//! made from an efficient core and from a performance core, on Windows 10 2004, 11 22H2 and 11 24H2:
//! the driver must own each core type's counters with its own resource list (never the whole PMU,
//! which would lock WPR/xperf out), count exactly, leave a general-purpose counter free for another
//! HAL client on every processor (which then counts exactly beside it), touch no register a core
//! lacks, and say in its status which ownership it holds and how many counters.

use crate::common::{self, DRIVER_STATUS, HARDWARE_COUNTERS};

use kernel_double::control::hal;
use kernel_double::cpu::{self, cpuid, pmu, topology};
use kernel_double::kernel_build::{self, WINDOWS_10_2004, WINDOWS_11_22H2, WINDOWS_11_24H2};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;
use std::collections::BTreeSet;

/// IA32_PERF_GLOBAL_CTRL bit of fixed counter 3 (the HAL's CounterIndex for it).
const FIXED_COUNTER_3: u64 = 1 << 35;
/// The general-purpose counters' bits of a counter mask.
const GENERAL_PURPOSE: u64 = 0xFFFF_FFFF;
/// Hardware Counters ids: the seven event totals (instructions first, in the virtual PMU's event
/// order), core cycles total, and all top-down slots.
const TOTALS: usize = 7;
const CYCLES_TOTAL: usize = 8;
const SLOTS_TOTAL: usize = 29;
/// Hardware Counters Driver ids: Counters Owned, and PMU Ownership with its "resource lists" value.
const COUNTERS_OWNED: usize = 1;
const PMU_OWNERSHIP: usize = 30;
const OWNERSHIP_RESOURCE_LISTS: u64 = 1;
/// IA32_PERFEVTSELx of the first general-purpose counter, and IA32_PMC0; unhalted core cycles (event
/// 3CH, umask 0) in both rings, enabled: what a profiling client programs.
const PERFEVTSEL0: u32 = 0x186;
const PMC0: u32 = 0xC1;
const CORE_CYCLES_USR_OS_EN: u64 = 0x3C | (1 << 16) | (1 << 17) | (1 << 22);

#[derive(Clone, Copy)]
enum Caller {
    Performance,
    Efficient,
}

/// Every processor's Hardware Counters values, by manifest id, from a fresh read.
fn collect() -> Vec<Vec<u64>> {
    common::collect_by_id(HARDWARE_COUNTERS).into_iter().map(|(_, _, values)| values).collect()
}

/// The counters some allocation holds on processor `vp`.
fn held_on(vp: u32) -> u64 {
    hal::allocations()
        .iter()
        .filter(|allocation| allocation.processors.as_ref().is_none_or(|set| set.contains(&vp)))
        .map(|allocation| allocation.counters.unwrap_or(u64::MAX))
        .fold(0, |held, counters| held | counters)
}

/// Another HAL client takes, on each core type's processors (asking from the first of them), the
/// highest general-purpose counter its table has that nobody holds there, and programs it to count
/// core cycles on each; returns (handle, counter, processors) per core type.
fn another_client_takes_a_free_counter(types: &[BTreeSet<u32>]) -> Vec<(usize, u32, BTreeSet<u32>)> {
    let mut taken = Vec::new();
    for processors in types {
        let caller = *processors.first().expect("a processor of the type");
        let held = processors.iter().fold(0, |held, &vp| held | held_on(vp));
        let free = hal::counter_table(caller) & GENERAL_PURPOSE & !held;
        assert_ne!(free, 0, "no general-purpose counter left free on processors {processors:?}: {held:#x}");
        let counter = 63 - free.leading_zeros();
        let handle = hal::allocate_for_another_client(caller, Some(processors.clone()), 1 << counter)
            .unwrap_or_else(|status| panic!("another client refused counter {counter}: {status:#x}"));
        for &vp in processors {
            pmu::foreign_write(vp, PERFEVTSEL0 + counter, 0);
            pmu::foreign_write(vp, PMC0 + counter, 0);
            pmu::foreign_write(vp, PERFEVTSEL0 + counter, CORE_CYCLES_USR_OS_EN);
        }
        taken.push((handle, counter, processors.clone()));
    }
    taken
}

fn scenario(model: &'static cpuid::CpuModel, performance_threads: u32, build: u32, caller: Caller) {
    scenario_with(model, performance_threads, build, caller, hal::Interface::Enhanced);
}

fn scenario_with(
    model: &'static cpuid::CpuModel,
    performance_threads: u32,
    build: u32,
    caller: Caller,
    interface: hal::Interface,
) {
    let processors = performance_threads + 8;
    kernel_build::set(build);
    hal::set_interface(interface);
    topology::configure(processors, processors);
    cpuid::set_model(model);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    // The consumer's thread runs on the chosen core, where its first collect owns the counters.
    let caller_vp = match caller {
        Caller::Performance => 1,
        Caller::Efficient => performance_threads + 1,
    };
    cpu::enter(caller_vp);
    let before = collect();

    let log = hal::allocation_log();
    let granted: Vec<_> =
        log.iter().map(|allocation| (&allocation.processors, allocation.counters)).collect();
    let performance: BTreeSet<u32> = (0..performance_threads).collect();
    let efficient: BTreeSet<u32> = (performance_threads..processors).collect();
    assert!(
        log.len() == 2
            && log[0].processors.as_ref() == Some(&performance)
            && log[1].processors.as_ref() == Some(&efficient)
            && log.iter().all(|allocation| allocation.counters.is_some()),
        "expected one resource list per core type on its own processors, never the whole PMU; the HAL \
         granted {granted:x?}"
    );
    // The performance cores' fixed counter 3 is requested only where the HAL's table on a performance
    // core has it: Meteor Lake's leaf 0x23, read by 24H2's Enhanced interface alone.
    let fixed_3_requested = std::ptr::eq(model, &cpuid::METEOR_LAKE_HYBRID)
        && build >= WINDOWS_11_24H2
        && interface == hal::Interface::Enhanced;
    assert_eq!(log[0].counters.unwrap() & FIXED_COUNTER_3 != 0, fixed_3_requested, "{granted:x?}");
    let status = &common::collect_by_id(DRIVER_STATUS)[0].2;
    assert_eq!(status[PMU_OWNERSHIP], OWNERSHIP_RESOURCE_LISTS, "PMU Ownership");
    let owned: u32 = log.iter().map(|allocation| allocation.counters.unwrap().count_ones()).sum();
    assert_eq!(status[COUNTERS_OWNED], u64::from(owned), "Counters Owned: the counters the lists name");

    let taken = another_client_takes_a_free_counter(&[performance.clone(), efficient.clone()]);
    let units = |vp: u32| 10_000 * u64::from(vp + 1);
    for vp in 0..processors {
        pmu::step(vp, units(vp));
    }
    let after = collect();
    let found = violations::all();
    assert!(found.is_empty(), "the hardware or the HAL would have refused: {found:#?}");
    // Every one of the seven events, exactly what the workload made (the virtual PMU's own tally
    // would count the other client's cycles too).
    for vp in 0..processors {
        let counted: Vec<u64> = (0..7)
            .map(|event| after[vp as usize][TOTALS + event] - before[vp as usize][TOTALS + event])
            .collect();
        let made: Vec<u64> = (0..7).map(|event| pmu::RATES[event] * units(vp)).collect();
        assert_eq!(counted, made, "processor {vp}: not the workload's events");
    }
    for (handle, counter, processors) in taken {
        for vp in processors {
            let cycles = after[vp as usize][CYCLES_TOTAL] - before[vp as usize][CYCLES_TOTAL];
            assert!(cycles > 0, "processor {vp} counted no cycles");
            assert_eq!(
                pmu::foreign_read(vp, PMC0 + counter),
                cycles,
                "processor {vp}: the other client's counter"
            );
            pmu::foreign_write(vp, PERFEVTSEL0 + counter, 0);
            pmu::foreign_write(vp, PMC0 + counter, 0);
        }
        hal::free_for_another_client(handle);
    }
    for vp in 0..performance_threads {
        let slots = after[vp as usize][SLOTS_TOTAL];
        assert!(slots > 0, "processor {vp}: fixed counter 3 counted nothing");
        assert_eq!(slots, pmu::counted(vp, pmu::TOPDOWN_SLOTS), "processor {vp}: every top-down slot");
    }
    assert!(driver.unload());
    common::assert_clean();
}

macro_rules! cases {
    ($($name:ident: $model:expr, $threads:expr, $build:expr, $caller:expr;)*) => {
        $(#[test]
        fn $name() {
            scenario($model, $threads, $build, $caller);
        })*
    };
}

cases! {
    alder_lake_2004_from_an_efficient_core: &cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, WINDOWS_10_2004, Caller::Efficient;
    alder_lake_2004_from_a_performance_core: &cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, WINDOWS_10_2004, Caller::Performance;
    alder_lake_22h2_from_an_efficient_core: &cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, WINDOWS_11_22H2, Caller::Efficient;
    alder_lake_22h2_from_a_performance_core: &cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, WINDOWS_11_22H2, Caller::Performance;
    alder_lake_24h2_from_an_efficient_core: &cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, WINDOWS_11_24H2, Caller::Efficient;
    alder_lake_24h2_from_a_performance_core: &cpuid::ALDER_LAKE_HYBRID, cpuid::ALDER_LAKE_PERFORMANCE_THREADS, WINDOWS_11_24H2, Caller::Performance;
    meteor_lake_2004_from_an_efficient_core: &cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, WINDOWS_10_2004, Caller::Efficient;
    meteor_lake_2004_from_a_performance_core: &cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, WINDOWS_10_2004, Caller::Performance;
    meteor_lake_22h2_from_an_efficient_core: &cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, WINDOWS_11_22H2, Caller::Efficient;
    meteor_lake_22h2_from_a_performance_core: &cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, WINDOWS_11_22H2, Caller::Performance;
    meteor_lake_24h2_from_an_efficient_core: &cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, WINDOWS_11_24H2, Caller::Efficient;
    meteor_lake_24h2_from_a_performance_core: &cpuid::METEOR_LAKE_HYBRID, cpuid::METEOR_LAKE_PERFORMANCE_THREADS, WINDOWS_11_24H2, Caller::Performance;
}

/// 24H2 with the Original interface its feature flag may choose: every table from processor 0's leaf
/// 0xA, as on older builds.
#[test]
fn meteor_lake_24h2_original_interface_from_an_efficient_core() {
    let threads = cpuid::METEOR_LAKE_PERFORMANCE_THREADS;
    scenario_with(
        &cpuid::METEOR_LAKE_HYBRID,
        threads,
        WINDOWS_11_24H2,
        Caller::Efficient,
        hal::Interface::Original,
    );
}

#[test]
fn alder_lake_24h2_original_interface_from_a_performance_core() {
    let threads = cpuid::ALDER_LAKE_PERFORMANCE_THREADS;
    scenario_with(
        &cpuid::ALDER_LAKE_HYBRID,
        threads,
        WINDOWS_11_24H2,
        Caller::Performance,
        hal::Interface::Original,
    );
}
