//! Fault injection at the ownership call the first AddCounter makes (HalAllocateHardwareCounters, on
//! the Skylake model): every way the driver's request can end without counters.
//!
//! * STATUS_DEVICE_BUSY on the resource-list request: the HAL's arbiter has another PMU actor, so no
//!   fallback; PMU State busy.
//! * Any refusal of the list (STATUS_INSUFFICIENT_RESOURCES, which is also how a HAL without
//!   resource lists answers; STATUS_NOT_SUPPORTED; STATUS_INVALID_PARAMETER; STATUS_NO_MEMORY), then
//!   the whole-PMU fallback failing too: busy if it says STATUS_INSUFFICIENT_RESOURCES (another
//!   client owns the counters), failed otherwise.
//!
//! Each must leave the counters unowned, PMU State busy or failed with Counters Owned 0 and one more
//! ownership failure, every counter reading 0 however much the processors run, and no MSR read or
//! written; a later AddCounter (a second query) must then own and program the counters, which count
//! exactly. Each case runs on a freshly loaded driver and ends with a clean unload.
//! (The fallbacks that succeed are in fault_injection_hal_fallback.rs.)

use crate::common;

use common::cpu_models::{ACTIVE, IDLE};
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu};
use kernel_double::status::{
    NtStatus, STATUS_DEVICE_BUSY, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY,
    STATUS_NOT_SUPPORTED, STATUS_SUCCESS,
};

/// PMU State values (src/pcw/driver_status.rs).
const BUSY: u64 = 2;
const FAILED: u64 = 4;
/// Index of Ownership Failures in the status counterset's values.
const OWNERSHIP_FAILURES: usize = 7;
const PROCESSORS: u32 = 4;

/// The statuses of successive HalAllocateHardwareCounters calls, and the PMU State they must leave.
const CASES: [(&[NtStatus], u64); 7] = [
    (&[STATUS_DEVICE_BUSY], BUSY),
    (&[STATUS_INSUFFICIENT_RESOURCES, STATUS_INSUFFICIENT_RESOURCES], BUSY),
    (&[STATUS_NOT_SUPPORTED, STATUS_INSUFFICIENT_RESOURCES], BUSY),
    (&[STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES], BUSY),
    (&[STATUS_NOT_SUPPORTED, STATUS_NOT_SUPPORTED], FAILED),
    (&[STATUS_INVALID_PARAMETER, STATUS_INVALID_PARAMETER], FAILED),
    (&[STATUS_NO_MEMORY, STATUS_NO_MEMORY], FAILED),
];

fn minus(now: &[[u64; 7]], base: &[[u64; 7]]) -> Vec<[u64; 7]> {
    now.iter().zip(base).map(|(now, base)| std::array::from_fn(|event| now[event] - base[event])).collect()
}

#[test]
fn fault_injection_add_counter() {
    cpuid::set_model(&cpuid::SKYLAKE);
    for (statuses, state) in CASES {
        let what = format!("HalAllocateHardwareCounters failing with {statuses:x?}");
        let mut driver = load();
        assert_eq!(driver.driver_entry(), STATUS_SUCCESS, "{what}");
        let before = driver_status();
        assert_eq!(before[0], IDLE, "{what}");
        let base = true_totals(PROCESSORS);
        let (writes, reads) = (msr::writes().len(), msr::reads());

        let first = hal::allocation_calls();
        for (index, &status) in statuses.iter().enumerate() {
            hal::fail_allocation(first + index as u64, status);
        }
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS), "{what}");
        assert_eq!(hal::allocation_calls() - first, statuses.len() as u64, "{what}: HAL calls made");
        let status = driver_status();
        assert_eq!((status[0], status[1]), (state, 0), "{what}: PMU State, Counters Owned");
        assert_eq!(status[OWNERSHIP_FAILURES], before[OWNERSHIP_FAILURES] + 1, "{what}: Ownership Failures");
        assert_eq!(hal::owner(), None, "{what}");
        for vp in 0..PROCESSORS {
            pmu::step(vp, 1000);
        }
        for (vp, (totals, overflows)) in collect_totals().into_iter().enumerate() {
            assert_eq!((totals, overflows), ([0; 7], 0), "{what}: processor {vp} counts without counters");
        }
        assert_eq!(msr::writes().len(), writes, "{what}: MSRs written without ownership");
        assert_eq!(msr::reads(), reads, "{what}: MSRs read without ownership");
        assert_eq!(true_totals(PROCESSORS), base, "{what}: counters counted while unowned");

        // A second query's AddCounter tries again, and this time the HAL says yes.
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS), "{what}");
        let status = driver_status();
        assert_eq!((status[0], status[1]), (ACTIVE, 7), "{what}: after the retry");
        assert!(
            matches!(hal::owner(), Some(hal::Owner::Driver { overflow_handler: Some(_), .. })),
            "{what}: {:?}",
            hal::owner()
        );
        for vp in 0..PROCESSORS {
            pmu::step(vp, 500 + u64::from(vp));
        }
        let collected: Vec<[u64; 7]> = collect_totals().into_iter().map(|(totals, _)| totals).collect();
        let counted = minus(&true_totals(PROCESSORS), &base);
        assert_eq!(collected, counted, "{what}: counts after the recovery");
        for (vp, totals) in collected.iter().enumerate() {
            assert_eq!(totals[pmu::INSTRUCTIONS], 16 * (500 + vp as u64), "{what}: processor {vp}");
        }

        for _ in 0..2 {
            assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
        }
        assert!(driver.unload(), "{what}");
        assert!(msr::writes().iter().all(|write| write.pmu_owned), "{what}");
        for vp in 0..PROCESSORS {
            assert!(pmu::at_power_on(vp), "{what}: processor {vp}'s PMU left programmed");
        }
        assert_clean();
        eprintln!("{what}: PMU State {state}, then recovered");
    }
}
