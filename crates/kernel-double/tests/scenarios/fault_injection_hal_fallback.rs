//! The HAL refuses the driver's resource list (STATUS_NOT_SUPPORTED, as a HAL before Windows 10 1903
//! does, or STATUS_INVALID_PARAMETER for the list or its Overflow descriptor): the driver must ask for
//! the whole PMU without an overflow interrupt and extend its counters by polling. On the Skylake
//! model, each case checks: two HAL calls, the second with no list (so no overflow handler), PMU State
//! active with every counter owned, counts exact across a counter wrap that no interrupt reports
//! (polling sees it), no overflow interrupt delivered or counted, and a clean unload.

use crate::common;

use common::cpu_models::{ACTIVE, IDLE};
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu};
use kernel_double::status::{NtStatus, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS};

const PROCESSORS: u32 = 4;

#[test]
fn fault_injection_hal_fallback() {
    cpuid::set_model(&cpuid::SKYLAKE);
    for status in [STATUS_NOT_SUPPORTED, STATUS_INVALID_PARAMETER] {
        let what = format!("resource list refused with {status:#x}");
        let refused: NtStatus = status;
        let mut driver = load();
        assert_eq!(driver.driver_entry(), STATUS_SUCCESS, "{what}");
        assert_eq!(driver_status()[0], IDLE);
        let base = true_totals(PROCESSORS);
        let delivered = pmu::delivered();

        let first = hal::allocation_calls();
        hal::fail_allocation(first, refused);
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
        assert_eq!(hal::allocation_calls() - first, 2, "{what}: the list, then the whole PMU");
        assert!(
            matches!(hal::owner(), Some(hal::Owner::Driver { overflow_handler: None, .. })),
            "{what}: {:?}",
            hal::owner()
        );
        let status = driver_status();
        assert_eq!((status[0], status[1]), (ACTIVE, 7), "{what}: PMU State, Counters Owned");
        assert_eq!(status[7], 0, "{what}: a fallback that succeeds is no ownership failure");
        for vp in 0..PROCESSORS {
            assert_eq!(pmu::programmed_counters(vp).len(), 7, "{what}: processor {vp}");
        }

        // Processor 1's instructions counter two events before its wrap: no interrupt will report it.
        let instructions = pmu::counter_of(1, pmu::INSTRUCTIONS).expect("instructions are counted");
        pmu::preload(1, instructions, (1 << 48) - 2);
        // A poll between the preload and the wrap, as a real poller would make long before a real
        // counter counted that far.
        let _ = collect_totals();
        for vp in 0..PROCESSORS {
            pmu::step(vp, 1000 * u64::from(vp + 1));
        }
        assert_eq!(pmu::delivered(), delivered, "{what}: an overflow interrupt without a handler");
        let collected = collect_totals();
        let truth = true_totals(PROCESSORS);
        for (vp, (totals, overflows)) in collected.iter().enumerate() {
            let expected: [u64; 7] = std::array::from_fn(|event| truth[vp][event] - base[vp][event]);
            assert_eq!(*totals, expected, "{what}: processor {vp}");
            assert_eq!(*overflows, 0, "{what}: processor {vp}'s overflow interrupts");
        }
        assert_eq!(collected[1].0[pmu::INSTRUCTIONS], (1 << 48) - 2 + 16 * 2000, "{what}: across the wrap");
        assert_eq!(driver_status()[2], 0, "{what}: overflow interrupts");

        assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
        assert!(driver.unload());
        assert!(msr::writes().iter().all(|write| write.pmu_owned), "{what}");
        for vp in 0..PROCESSORS {
            assert!(pmu::at_power_on(vp), "{what}: processor {vp}'s PMU left programmed");
        }
        assert_clean();
        eprintln!("{what}: whole-PMU fallback, polled, exact across a wrap");
    }
}
