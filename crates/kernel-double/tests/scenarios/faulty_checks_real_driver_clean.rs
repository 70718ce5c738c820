//! The checkers the faulty drivers trip (special pool, Force IRQL Checking, spin lock IRQL rules, MSR
//! ownership, the leak report) do not trip on the real release pmupcw.sys: every pool block it holds
//! sits against a guard page, its overflow handler runs at PROFILE_LEVEL and its broadcast workers at
//! IPI_LEVEL (raises that trim pageable sections, had it any), and load, collect and unload leave no
//! violation and nothing behind.

use crate::common;

use common::*;
use kernel_double::control::{pcw, pool};
use kernel_double::cpu::{cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn faulty_checks_pass_the_real_driver() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let held = pool::outstanding();
    assert!(!held.is_empty(), "the driver holds pool after DriverEntry");
    for allocation in &held {
        let guard = allocation.guard_page();
        assert!(guard - (allocation.address + allocation.size) < 16 || allocation.size >= 4096);
        assert!(!readable(guard) && readable(guard - 1), "{allocation:?} is not against a guard page");
    }

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    for vp in 0..4 {
        for (msr, _) in pmu::programmed_counters(vp) {
            pmu::preload(vp, msr, (1 << 48) - 10);
        }
    }
    for round in 1..=3 {
        for vp in 0..4 {
            pmu::step(vp, 100);
        }
        let collected = collect_totals();
        assert_eq!(collected.len(), 4, "round {round}");
    }
    assert!(pmu::delivered() >= 4, "overflow interrupts: {}", pmu::delivered());
    let collected = collect_totals();
    for (vp, ((totals, _), expected)) in collected.iter().zip(true_totals(4)).enumerate() {
        assert_eq!(*totals, expected, "processor {vp}");
    }
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert!(pool::allocation_count() > 0);
    println!(
        "{} pool allocations in special pool; pageable sections trimmed/paged in: {:?}",
        pool::allocation_count(),
        kernel_double::image_map::pageable_statistics()
    );
    assert_clean();
}
