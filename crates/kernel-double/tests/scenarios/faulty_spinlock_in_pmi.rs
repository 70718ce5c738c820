//! The spin lock IRQL checker catches a purpose-built faulty driver (tests/faulty-drivers/
//! spinlock-in-pmi): it owns the PMU with an overflow handler and programs fixed counter 0 with its PMI
//! bit; the test starts the virtual counter one event below its wrap and steps the virtual processor,
//! so the virtual PMU delivers an overflow interrupt, which runs the handler at PROFILE_LEVEL, where it
//! takes and releases an ordinary spin lock. The double records exactly those two calls, naming the
//! exports and the handler's call sites, and nothing else.

use crate::faulty_support;

use faulty_support::*;
use kernel_double::control::hal;
use kernel_double::cpu::{cpuid, pmu};
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

const IA32_FIXED_CTR0: u32 = 0x309;

#[test]
fn faulty_spin_lock_in_the_overflow_handler_is_a_violation_with_its_rva() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load(SPINLOCK_IN_PMI);
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { overflow_handler: Some(_), .. })));
    assert_eq!(pmu::programmed_counters(0), [(IA32_FIXED_CTR0, pmu::INSTRUCTIONS)]);
    assert_eq!(violations::all(), [], "owning the PMU, the driver's MSR writes are fine");

    pmu::preload(0, IA32_FIXED_CTR0, (1 << 48) - 1);
    pmu::step(0, 1);
    assert_eq!(pmu::delivered(), 1, "the overflow interrupt reached the handler");

    let found = violations::take();
    assert_eq!(found.len(), 2, "{found:#?}");
    let text = section(&driver, ".text");
    for (violation, export) in found.iter().zip(["KeAcquireSpinLockRaiseToDpc", "KeReleaseSpinLock"]) {
        assert_eq!(violation.at, export, "{violation}");
        assert!(violation.message.contains("called at IRQL 15, above its maximum 2"), "{violation}");
        let rva = violation.caller_rva.expect("the call site") as usize;
        assert!(contains(&text, rva as u64), "{violation}: the handler is in .text {text:?}");
        // SAFETY: rva - 6 lies in the mapped, readable .text: the `call [rip+disp32]` through the
        // import table that returns to rva.
        let call = unsafe { std::slice::from_raw_parts((driver.image().base() + rva - 6) as *const u8, 2) };
        assert_eq!(call, [0xFF, 0x15], "{violation}: no `call [rip+disp32]` before the return address");
    }

    assert!(driver.unload());
    let report = Report::now();
    assert!(report.is_clean(), "{report}");
}
