//! The MSR ownership checker catches a purpose-built faulty driver (tests/faulty-drivers/
//! msr-without-ownership): DriverEntry writes IA32_PERF_GLOBAL_CTRL without having called
//! HalAllocateHardwareCounters. The double records exactly one violation, naming the MSR and the RVA
//! of the driver's `wrmsr`.

use crate::faulty_support;

use faulty_support::*;
use kernel_double::cpu::cpuid;
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

#[test]
fn faulty_msr_write_without_ownership_is_a_violation_with_its_rva() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load(MSR_WITHOUT_OWNERSHIP);
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:#?}");
    let violation = &found[0];
    assert_eq!(violation.at, "wrmsr", "{violation}");
    assert!(
        violation.message.contains("MSR 0x38f written on processor 0 without owning the PMU"),
        "{violation}"
    );
    let rva = violation.caller_rva.expect("the wrmsr's RVA");
    let text = section(&driver, ".text");
    assert!(contains(&text, rva), "{violation}: not in .text {text:?}");
    // SAFETY: rva lies in the mapped, readable .text (checked just above).
    let bytes = unsafe { std::slice::from_raw_parts((driver.image().base() + rva as usize) as *const u8, 2) };
    assert_eq!(bytes, [0x0F, 0x30], "{violation}: the RVA is not a wrmsr");

    assert!(driver.unload());
    let report = Report::now();
    assert!(report.is_clean(), "{report}");
}
