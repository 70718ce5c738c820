//! Lazy ownership: the counters are owned from the first AddCounter, released (HAL owner cleared, every
//! PMU register back at its power-on value) once the last query has gone for the driver's 2 s hysteresis (its housekeeping
//! thread ticks every 2 s, so within about 4 s), and taken back by the next AddCounter; the counts a
//! consumer sees stay monotonic and exact across the release and the re-acquisition.

use crate::common;

use common::cpu_models::{ACTIVE, IDLE};
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;
use std::time::Duration;

fn check_exact_and_monotonic(previous: &mut Vec<[u64; 7]>, when: &str) {
    let collected: Vec<[u64; 7]> = collect_totals().into_iter().map(|(totals, _)| totals).collect();
    assert_eq!(collected, true_totals(4), "{when}: reported totals are not the workload's");
    for (vp, (now, before)) in collected.iter().zip(previous.iter()).enumerate() {
        for event in 0..7 {
            assert!(now[event] >= before[event], "processor {vp} event {event} went backwards");
        }
    }
    *previous = collected;
}

#[test]
fn counters_are_released_after_the_hysteresis_and_counts_stay_monotonic() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(hal::owner(), None, "nothing owned before a query");
    let mut previous = vec![[0u64; 7]; 4];

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })));
    assert_eq!(driver_status()[0], ACTIVE);
    // One counter near its wrap, so the first session also ends with an overflow folded in.
    let (cycles, _) =
        *pmu::programmed_counters(2).iter().find(|(_, event)| *event == pmu::CORE_CYCLES).unwrap();
    pmu::preload(2, cycles, (1 << 48) - 100);
    for vp in 0..4 {
        pmu::step(vp, 10_000);
    }
    check_exact_and_monotonic(&mut previous, "first session");

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let released_after = until_released(|| hal::owner().is_none(), Duration::from_secs(6));
    assert!(released_after >= Duration::from_millis(1900), "released before the hysteresis");
    println!("released {released_after:?} after the last RemoveCounter");
    let status = driver_status();
    assert_eq!((status[0], status[1]), (IDLE, 0));
    for vp in 0..4 {
        assert!(pmu::at_power_on(vp), "processor {vp}'s PMU registers not cleared at release");
        pmu::step(vp, 777); // not counted: nothing is enabled
    }
    // Between sessions a consumer must still see the last counts, not zeros (a driver whose
    // PmuClient::counts maps values through the open session's plan only reports 0 here).
    check_exact_and_monotonic(&mut previous, "between sessions");

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })));
    for vp in 0..4 {
        pmu::step(vp, 3_000 + u64::from(vp));
    }
    check_exact_and_monotonic(&mut previous, "second session");
    assert_eq!(previous[2][pmu::CORE_CYCLES], (1 << 48) - 100 + 20 * 13_002);

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_eq!(hal::owner(), None);
    assert_clean();
}
