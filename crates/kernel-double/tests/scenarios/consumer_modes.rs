//! Ownership that does not depend on AddCounter. The PCW callback documentation (PCW_CALLBACK_TYPE on
//! Microsoft Learn) describes AddCounter/RemoveCounter only as "a consumer added/removed an instance
//! filter" and promises no pairing; consumers that read through the registry (HKEY_PERFORMANCE_DATA,
//! WMI's raw performance classes) may only ever send CollectData. Each consumer mode here must get
//! real, exact counts from its second sample on (the first may read 0: it is the one that takes the
//! counters), and the driver must give the counters back once the consumer stops collecting, whatever
//! the AddCounter/RemoveCounter balance. Plus: an AddCounter above PASSIVE_LEVEL hands the acquisition
//! to the housekeeping thread, which must take the counters at once, not after its release delay.

use crate::common;

use common::cpu_models::ACTIVE;
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{APC_LEVEL, PASSIVE_LEVEL, cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;
use std::time::{Duration, Instant};

/// How a consumer announces itself before collecting.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Registry-style: CollectData only, never AddCounter.
    Registry,
    /// More AddCounters than RemoveCounters: the balance never returns to zero.
    ExtraAdds,
    /// More RemoveCounters than AddCounters.
    ExtraRemoves,
}

fn owned() -> bool {
    matches!(hal::owner(), Some(hal::Owner::Driver { .. }))
}

fn run(mode: Mode) {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let (adds, removes) = match mode {
        Mode::Registry => (0, 0),
        Mode::ExtraAdds => (3, 1),
        Mode::ExtraRemoves => (1, 3),
    };
    for _ in 0..adds {
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    }
    for _ in 0..removes {
        assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    }

    // First sample: takes the counters if nothing took them yet.
    let _ = collect_totals();
    assert!(owned(), "{mode:?}: the first CollectData did not take the counters");
    assert_eq!(driver_status()[0], ACTIVE, "{mode:?}: PMU State");
    for vp in 0..4 {
        pmu::step(vp, 2_000 + u64::from(vp));
    }
    let second: Vec<[u64; 7]> = collect_totals().into_iter().map(|(totals, _)| totals).collect();
    assert_eq!(second, true_totals(4), "{mode:?}: the second sample is not the workload's counts");
    assert!(second.iter().all(|totals| totals[pmu::INSTRUCTIONS] >= 16 * 2_000), "{mode:?}: {second:?}");

    // The consumer stops collecting: the counters go back after the idle period.
    let released_after = until_released(|| !owned(), Duration::from_secs(8));
    assert!(released_after >= Duration::from_millis(1900), "{mode:?}: released after {released_after:?}");
    println!("{mode:?}: released {released_after:?} after the last collect");
    assert!(driver.unload());
    assert_clean();
}

#[test]
fn registry_consumer_collects_without_add_counter() {
    run(Mode::Registry);
}

#[test]
fn unbalanced_extra_adds_do_not_hold_the_pmu_forever() {
    run(Mode::ExtraAdds);
}

#[test]
fn unbalanced_extra_removes_do_not_drop_the_pmu_mid_query() {
    run(Mode::ExtraRemoves);
}

#[test]
fn add_counter_above_passive_level_takes_the_counters_at_once() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    pcw::set_callback_irql(APC_LEVEL);
    let added = Instant::now();
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    pcw::set_callback_irql(PASSIVE_LEVEL);
    // Active once the housekeeping thread has programmed every processor and a collect can read them.
    while driver_status()[0] != ACTIVE {
        assert!(added.elapsed() < Duration::from_millis(1500), "the deferred acquisition waited");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(owned());
    println!("owned {:?} after an AddCounter at APC_LEVEL", added.elapsed());
    for vp in 0..4 {
        pmu::step(vp, 1_000);
    }
    let collected: Vec<[u64; 7]> = collect_totals().into_iter().map(|(totals, _)| totals).collect();
    assert_eq!(collected, true_totals(4));
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}
