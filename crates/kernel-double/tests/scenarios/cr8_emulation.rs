//! The SIGSEGV trap-and-emulate path on real faulting machine code: cr8 reads and writes (the IRQL),
//! rdmsr/wrmsr (the virtual processor's MSR file; a write without PMU ownership is a violation) and
//! cli/sti, each executed as Windows x64 code from an executable mapping, as driver code would be.
//!
//! The shipped pmupcw.sys reads cr8 only in its panic handler (before DbgPrintEx in a bug check), and
//! touches MSRs only while a query is active; so this test drives the same instruction forms directly,
//! on the Skylake model (a PMU register the model lacks would be a violation of its own), then checks
//! the real driver loads and unloads clean in the same process.

use crate::common;

use common::machine_code::{self, function};

use kernel_double::cpu::{self, cpuid, msr};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

/// Copies `code` into a fresh read+execute page and returns its address.

#[test]
fn privileged_instructions_fault_and_are_emulated() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let kpcr = cpu::enter(1);
    // mov rax, cr8 ; ret
    let read_cr8 = function(&[0x44, 0x0F, 0x20, 0xC0, 0xC3]);
    // mov cr8, rcx ; ret
    let write_cr8 = function(&[0x44, 0x0F, 0x22, 0xC1, 0xC3]);
    let rdmsr = machine_code::rdmsr();
    let wrmsr = machine_code::wrmsr();
    // cli ; ret   and   sti ; ret
    let cli = function(&[0xFA, 0xC3]);
    let sti = function(&[0xFB, 0xC3]);

    assert_eq!(read_cr8(0, 0), 0);
    write_cr8(2, 0);
    assert_eq!(kpcr.irql(), 2);
    assert_eq!(read_cr8(0, 0), 2);
    write_cr8(0, 0);
    assert_eq!(kpcr.irql(), 0);

    cli(0, 0);
    assert!(!kpcr.interrupts_enabled());
    sti(0, 0);
    assert!(kpcr.interrupts_enabled());

    // A write without owning the PMU is stored but recorded as a violation.
    wrmsr(0x38F, 0x7_0000_000F);
    assert_eq!(rdmsr(0x38F, 0), 0x7_0000_000F);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].at, "wrmsr");
    assert!(found[0].message.contains("without owning the PMU"), "{}", found[0]);

    // Owned through the HAL, the same write is clean, and MSRs are per virtual processor.
    let handle = common::own_whole_pmu();
    wrmsr(0x186, 0x43_003C);
    kpcr.set_processor(2);
    assert_eq!(rdmsr(0x186, 0), 0);
    kpcr.set_processor(1);
    assert_eq!(rdmsr(0x186, 0), 0x43_003C);
    common::free_pmu(handle);
    let writes = msr::writes();
    assert_eq!(
        writes.iter().map(|w| (w.processor, w.msr, w.pmu_owned)).collect::<Vec<_>>(),
        [(1, 0x38F, false), (1, 0x186, true)]
    );
    assert!(kpcr.emulated_instructions() >= 11, "{}", kpcr.emulated_instructions());
    assert!(violations::all().is_empty());

    // The real driver runs clean in the same process.
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert!(driver.unload());
    common::assert_clean();
}
