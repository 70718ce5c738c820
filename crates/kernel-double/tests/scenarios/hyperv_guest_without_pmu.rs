//! A Hyper-V guest without PMU passthrough, where HalAllocateHardwareCounters would succeed with no
//! counters behind the handle: the driver must see from CPUID (leaf 0xA zero, 0x40000003 EDX bit 2
//! clear) that there is no PMU before it ever asks the HAL, so it never calls
//! HalAllocateHardwareCounters, never reads or writes an MSR, reports PMU State 3 (no PMU under this
//! hypervisor) with Counters Owned 0 and every counter 0, through queries coming and going, and
//! unloads clean.

use crate::common;

use common::cpu_models::UNSUPPORTED_HYPERVISOR;
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu};
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn hyperv_guest_without_pmu_never_asks_the_hal() {
    cpuid::set_model(&cpuid::HYPERV_GUEST_NO_PMU);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    for round in 0..3 {
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, 1), Some(STATUS_SUCCESS));
        let status = driver_status();
        assert_eq!((status[0], status[1]), (UNSUPPORTED_HYPERVISOR, 0), "round {round}: {status:?}");
        assert_eq!(status[7], 0, "round {round}: an ownership failure was recorded");
        for vp in 0..4 {
            pmu::step(vp, 1000);
        }
        for (totals, overflows) in collect_totals() {
            assert_eq!((totals, overflows), ([0; 7], 0), "round {round}");
        }
        for _ in 0..2 {
            assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
        }
    }
    // The housekeeping thread has nothing to do either (it would acquire on a deferred AddCounter).
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(driver.unload());
    assert_eq!(hal::allocation_calls(), 0, "HalAllocateHardwareCounters called in a guest without PMU");
    assert_eq!(hal::owner(), None);
    assert_eq!(msr::reads(), 0, "an MSR was read in a guest without PMU");
    assert_eq!(msr::writes(), [], "an MSR was written in a guest without PMU");
    assert_clean();
}
