//! The virtual PMU's Intel architectural semantics, through real faulting rdmsr/wrmsr executed as
//! Windows x64 code (as in cr8_emulation.rs), on the Skylake model (4 GP and 3 fixed counters, 48 bits):
//! legacy IA32_PMCx writes sign-extended from bit 31 and IA32_A_PMCx full-width writes; a counter
//! counts only with its enable bit, a privilege level and its IA32_PERF_GLOBAL_CTRL bit; a wrap sets
//! IA32_PERF_GLOBAL_STATUS, which is read-only (a write is a violation) and cleared through
//! IA32_PERF_GLOBAL_OVF_CTRL; a counter the model lacks and its global bits do not exist (#GP);
//! IA32_FIXED_CTR_CTRL fields; and a write without owning the PMU stays a violation.

use crate::common;

use common::machine_code::function;
use kernel_double::cpu::{self, cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

const IA32_PMC0: u64 = 0xC1;
const IA32_A_PMC0: u64 = 0x4C1;
const IA32_PERFEVTSEL0: u64 = 0x186;
const IA32_FIXED_CTR1: u64 = 0x30A;
const IA32_FIXED_CTR_CTRL: u64 = 0x38D;
const IA32_PERF_GLOBAL_STATUS: u64 = 0x38E;
const IA32_PERF_GLOBAL_CTRL: u64 = 0x38F;
const IA32_PERF_GLOBAL_OVF_CTRL: u64 = 0x390;
/// Instructions retired (C0H), USR | OS | INT | EN.
const INSTRUCTIONS_EVTSEL: u64 = 0xC0 | 1 << 16 | 1 << 17 | 1 << 20 | 1 << 22;

#[test]
fn intel_architectural_semantics() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let _kpcr = cpu::enter(0);
    // rdmsr (ecx) ; shl rdx, 32 ; or rax, rdx ; ret
    let rdmsr = function(&[0x0F, 0x32, 0x48, 0xC1, 0xE2, 0x20, 0x48, 0x09, 0xD0, 0xC3]);
    // mov rax, rdx ; shr rdx, 32 ; wrmsr (ecx, edx:eax) ; ret
    let wrmsr = function(&[0x48, 0x89, 0xD0, 0x48, 0xC1, 0xEA, 0x20, 0x0F, 0x30, 0xC3]);
    let mut handle = 0usize;
    // SAFETY: whole-PMU allocation (no affinity, no list, so no overflow handler) with a valid output.
    let status = unsafe {
        kernel_double::exports::hal::hal_allocate_hardware_counters(0, 0, std::ptr::null(), &mut handle)
    };
    assert_eq!(status, STATUS_SUCCESS);

    // Legacy writes sign-extend from bit 31 to the 48-bit width; the full-width alias does not.
    wrmsr(IA32_PMC0, 0x8000_0000);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0xFFFF_8000_0000);
    wrmsr(IA32_PMC0, 0x1_7FFF_FFFF);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0x7FFF_FFFF);
    wrmsr(IA32_A_PMC0, 0xFFFF_1234_5678_9ABC);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0x1234_5678_9ABC, "masked to 48 bits");
    wrmsr(IA32_A_PMC0, 0);

    // IA32_PERF_GLOBAL_CTRL comes up with every general-purpose enable set and the fixed ones clear.
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_CTRL, 0), 0xF, "power-on value");
    wrmsr(IA32_PERF_GLOBAL_CTRL, 0);
    // Counting needs EN, a privilege level and the global enable.
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL);
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0, "counted without its IA32_PERF_GLOBAL_CTRL bit");
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1);
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_PMC0, 0), 160);
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL & !(3 << 16));
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_PMC0, 0), 160, "counted with neither USR nor OS");
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL);

    // A wrap sets the status bit (no overflow handler is registered, so it stays set).
    wrmsr(IA32_A_PMC0, (1 << 48) - 5);
    pmu::step(0, 1);
    assert_eq!(rdmsr(IA32_PMC0, 0), 11);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS, 0), 1);
    assert_eq!(pmu::delivered(), 0);
    // Its INT bit asked for an interrupt that no handler receives.
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("no overflow handler"), "{}", found[0]);
    wrmsr(IA32_PERF_GLOBAL_STATUS, 0);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("read-only global status"), "{}", found[0]);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS, 0), 1, "a refused write changed the status");
    wrmsr(IA32_PERF_GLOBAL_OVF_CTRL, 1);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS, 0), 0, "OVF_CTRL clears the status bit");
    // Four counters per logical processor: IA32_PMC4 does not exist, nor do its global bits.
    wrmsr(IA32_PERF_GLOBAL_OVF_CTRL, 1 << 4);
    wrmsr(IA32_PMC0 + 4, 0);
    let found = violations::take();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].message.contains("counters this processor lacks"), "{}", found[0]);
    assert!(found[1].message.contains("does not exist"), "{}", found[1]);

    // Fixed counter 1 (core cycles): its 4-bit field (OS = bit 0) and global bit 33.
    wrmsr(IA32_FIXED_CTR_CTRL, 0b0001 << 4);
    pmu::step(0, 3);
    assert_eq!(rdmsr(IA32_FIXED_CTR1, 0), 0, "counted without global bit 33");
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1 | 1 << 33);
    pmu::step(0, 3);
    assert_eq!(rdmsr(IA32_FIXED_CTR1, 0), 60);
    assert_eq!(pmu::counted(0, pmu::CORE_CYCLES), 60);
    // Other processors have their own PMU.
    cpu::current().set_processor(1);
    assert_eq!(rdmsr(IA32_FIXED_CTR1, 0), 0);
    cpu::current().set_processor(0);

    // Given back with general-purpose enables 1-3 clear: the HAL's view of a foreign modification.
    // SAFETY: the handle just allocated.
    assert_eq!(unsafe { kernel_double::exports::hal::hal_free_hardware_counters(handle) }, STATUS_SUCCESS);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("processor 0") && found[0].message.contains("bits 0xe cleared"),
        "{}",
        found[0]
    );
    wrmsr(IA32_PERF_GLOBAL_CTRL, 0);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("without owning the PMU"), "{}", found[0]);
}
