//! Another client (WPR, VTune) owns the PMU when the first query arrives: HalAllocateHardwareCounters
//! returns STATUS_INSUFFICIENT_RESOURCES, the driver reports PMU State busy with no counters owned and
//! writes no MSR; once the other client lets go, the next AddCounter takes the counters and they count.

use crate::common;

use common::cpu_models::{ACTIVE, IDLE};
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu};
use kernel_double::status::STATUS_SUCCESS;

/// PMU State "busy" (src/pcw/driver_status.rs).
const BUSY: u64 = 2;

#[test]
fn busy_pmu_is_retried_on_the_next_add_counter() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(driver_status()[0], IDLE);

    hal::set_other_client_owns(true);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let status = driver_status();
    assert_eq!((status[0], status[1]), (BUSY, 0), "PMU State and Counters Owned: {status:?}");
    assert_eq!(status[7], 1, "Ownership Failures");
    assert_eq!(hal::owner(), Some(hal::Owner::OtherClient));
    assert_eq!(msr::writes(), [], "MSRs written without ownership");
    for vp in 0..4 {
        pmu::step(vp, 1000);
    }
    for (totals, overflows) in collect_totals() {
        assert_eq!((totals, overflows), ([0; 7], 0), "counts while another client owns the PMU");
    }
    // The housekeeping thread does not poll a busy PMU; the next AddCounter retries.
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    hal::set_other_client_owns(false);
    assert_eq!(driver_status()[0], BUSY, "still busy until a query comes back");

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let status = driver_status();
    assert_eq!((status[0], status[1]), (ACTIVE, 7), "after the retry: {status:?}");
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })));
    for vp in 0..4 {
        pmu::step(vp, 500 + u64::from(vp));
    }
    let collected = collect_totals();
    for (vp, ((totals, _), expected)) in collected.iter().zip(true_totals(4)).enumerate() {
        assert_eq!(*totals, expected, "processor {vp}");
        assert_eq!(totals[pmu::INSTRUCTIONS], 16 * (500 + vp as u64));
    }
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert!(msr::writes().iter().all(|write| write.pmu_owned));
    assert_clean();
}
