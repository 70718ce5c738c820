//! The scenario every CPU model runs (one test file per model, each its own process): load the real
//! driver presenting the model through the rewritten CPUID sites, AddCounter, run a workload, collect,
//! and check PMU State, Counters Owned, exact totals across a wrap (taken by an overflow interrupt, or
//! by polling on AMD without PerfMonV2) for usable models, or that no MSR was ever touched (unusable
//! models), then unload clean.

use super::*;
use kernel_double::cpu::cpuid::{self, CpuModel, PmuKind};
use kernel_double::cpu::{msr, pmu};
use kernel_double::exports::{hal, pcw};
use kernel_double::status::STATUS_SUCCESS;

/// PMU State values (src/pcw/driver_status.rs).
pub const IDLE: u64 = 0;
pub const ACTIVE: u64 = 1;
pub const UNSUPPORTED_HYPERVISOR: u64 = 3;
pub const NO_ARCHITECTURAL_PERFMON: u64 = 5;

/// Runs the scenario for `model`; `usable` says what the driver must make of it: `Ok(counters owned)`
/// or `Err(PMU State)` for an unusable PMU.
pub fn run(model: &'static CpuModel, usable: Result<u64, u64>) {
    cpuid::set_model(model);
    let mut driver = load();
    let sites = driver.image().cpuid_sites().len();
    assert!(sites > 0, "no cpuid instruction found through .pdata");
    assert_eq!(driver.image().cpuid_bytes_left(), 0, "a cpuid byte pair was left in executable code");
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let processors = 4;

    let before = driver_status();
    assert_eq!(before[0], usable.map_or_else(|state| state, |_| IDLE), "PMU State after DriverEntry");
    assert_eq!(before[1], 0, "counters owned before any query");

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let status = driver_status();
    match usable {
        Ok(owned) => {
            // AMD without PerfMonV2 has no overflow interrupt: the driver extends its counters by polling.
            let interrupt = !matches!(model.pmu, PmuKind::Amd { perfmon_v2: false, .. });
            assert_eq!(status[0], ACTIVE, "PMU State after AddCounter");
            assert_eq!(status[1], owned, "Counters Owned");
            assert!(
                matches!(
                    hal::owner(),
                    Some(hal::Owner::Driver { overflow_handler, .. }) if overflow_handler.is_some() == interrupt
                ),
                "{:?}",
                hal::owner()
            );
            assert_eq!(pmu::programmed_counters(0).len() as u64, owned);
            // Start the instructions counter of processor 1 two events before its wrap.
            let instructions = pmu::counter_of(1, pmu::INSTRUCTIONS).expect("instructions are counted");
            pmu::preload(1, instructions, (1 << 48) - 2);
            // A poller must see the counter between the preload (2^48 - 2 events at once) and the wrap,
            // as it would with a real counter, which takes longer than a poll period to count that far.
            let _ = collect_totals();
            for vp in 0..processors {
                pmu::step(vp, 1000 * u64::from(vp + 1));
            }
            let interrupts = u64::from(interrupt);
            assert_eq!(pmu::delivered(), interrupts, "overflow interrupts delivered");
            let collected = collect_totals();
            let expected = true_totals(processors);
            for (vp, ((totals, overflows), expected)) in collected.iter().zip(&expected).enumerate() {
                assert_eq!(totals, expected, "processor {vp}");
                assert_eq!(
                    *overflows,
                    u64::from(vp == 1) * interrupts,
                    "processor {vp}'s overflow interrupts"
                );
            }
            assert_eq!(expected[1][pmu::INSTRUCTIONS], (1 << 48) - 2 + 16 * 2000);
            assert_eq!(driver_status()[2], interrupts, "the status counterset's overflow interrupts");
        }
        Err(state) => {
            assert_eq!(status[0], state, "PMU State after AddCounter");
            assert_eq!(status[1], 0, "Counters Owned");
            assert_eq!(hal::owner(), None, "an unusable PMU is never allocated");
            for vp in 0..processors {
                pmu::step(vp, 1000);
            }
            for (totals, overflows) in collect_totals() {
                assert_eq!((totals, overflows), ([0; 7], 0));
            }
        }
    }
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    if usable.is_err() {
        assert_eq!(msr::reads(), 0, "an unsupported model's MSRs were read");
        assert_eq!(msr::writes(), [], "an unsupported model's MSRs were written");
    } else {
        assert!(msr::writes().iter().all(|write| write.pmu_owned));
        for vp in 0..processors {
            assert!(pmu::all_zero(vp), "processor {vp}'s PMU left programmed after unload");
        }
    }
    println!("{}: {sites} cpuid sites rewritten, {} MSR writes", model.name, msr::writes().len());
    assert_clean();
}
