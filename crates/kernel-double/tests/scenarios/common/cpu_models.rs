//! The scenario every CPU model runs (one test per model, each its own process): load the real
//! driver presenting the model through the rewritten CPUID sites, AddCounter, run a workload, collect,
//! and check PMU State, Counters Owned (the list's counters, or every counter of the whole PMU), exact and monotonic totals across three wraps (taken by an
//! overflow interrupt on Intel, by polling on AMD, whose HAL takes no resource list) for usable models, or that no MSR was ever touched (unusable
//! models), then unload clean.

use super::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::{frequency, msr, pmu};
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
            // Only the Intel HAL (perfmon version 2 or later) takes an Overflow descriptor; on AMD the
            // driver owns the whole PMU and extends its counters by polling.
            let interrupt = hal::takes_resource_lists();
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
            // Counters Owned: what the resource list names (the programmed counters), or, for the
            // whole PMU (AMD), every counter the processor has.
            let whole_pmu = hal::allocations().iter().any(|allocation| allocation.counters.is_none());
            let every_counter = match model.pmu {
                cpuid::PmuKind::Intel { gp, fixed, .. } => u64::from(gp + fixed),
                cpuid::PmuKind::Amd { counters, .. } => u64::from(counters),
                cpuid::PmuKind::None => 0,
            };
            let programmed = pmu::programmed_counters(0).len() as u64;
            assert_eq!(owned, if whole_pmu { every_counter } else { programmed }, "Counters Owned");
            // Processor 1's instructions counter wraps three times: each time it starts two events
            // before its wrap. A poller must see the counter between the preload (2^48 - 2 events at
            // once) and the wrap, as it would with a real counter, which takes longer than a poll
            // period to count that far: the collect in between is that poll.
            let instructions = pmu::counter_of(1, pmu::INSTRUCTIONS).expect("instructions are counted");
            const WRAPS: u64 = 3;
            let mut previous = vec![[0u64; 7]; processors as usize];
            for wrap in 1..=WRAPS {
                pmu::preload(1, instructions, (1 << 48) - 2);
                let _ = collect_totals();
                for vp in 0..processors {
                    pmu::step(vp, 1000 * u64::from(vp + 1));
                }
                let interrupts = wrap * u64::from(interrupt);
                assert_eq!(pmu::delivered(), interrupts, "overflow interrupts delivered");
                let collected = collect_totals();
                let expected = true_totals(processors);
                if matches!(model.pmu, cpuid::PmuKind::Amd { .. }) && frequency::present(1) {
                    assert!(expected[1][pmu::REFERENCE_CYCLES] > 0, "reference cycles from MPERF");
                }
                for (vp, ((totals, overflows), expected)) in collected.iter().zip(&expected).enumerate() {
                    assert_eq!(totals, expected, "processor {vp} after wrap {wrap}");
                    assert!(
                        totals.iter().zip(&previous[vp]).all(|(now, before)| now >= before),
                        "processor {vp} went backwards"
                    );
                    previous[vp] = *totals;
                    assert_eq!(
                        *overflows,
                        u64::from(vp == 1) * interrupts,
                        "processor {vp}'s overflow interrupts"
                    );
                }
            }
            let interrupts = WRAPS * u64::from(interrupt);
            assert!(previous[1][pmu::INSTRUCTIONS] > WRAPS << 48, "three 48-bit wraps counted");
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
            assert!(pmu::at_power_on(vp), "processor {vp}'s PMU left programmed after unload");
        }
    }
    println!("{}: {sites} cpuid sites rewritten, {} MSR writes", model.name, msr::writes().len());
    assert_clean();
}
