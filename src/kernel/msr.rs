//! Model-specific registers: the only place the driver executes rdmsr and wrmsr.
//!
//! Writing a PMU MSR is only allowed while the driver owns the counters (HalAllocateHardwareCounters);
//! [`super::platform::OwnedMsrs`], the only caller, is lent only under a [`super::platform::KernelOwnership`].

/// Reads `msr` on the current processor.
///
/// # Safety
/// `msr` must exist on this processor (reading an unimplemented MSR raises #GP, a bug check in the
/// kernel). The PMU plan only names MSRs that CPUID reported.
#[inline(always)]
pub unsafe fn read(msr: u32) -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: the caller guarantees the MSR exists. Not marked `nomem`: the read protocol orders MSR
    // reads against loads of the overflow counts (pmu/fold.rs), so the compiler must not move them.
    unsafe {
        core::arch::asm!("rdmsr", in("ecx") msr, out("eax") low, out("edx") high, options(nostack, preserves_flags))
    };
    (u64::from(high) << 32) | u64::from(low)
}

/// Writes `value` to `msr` on the current processor.
///
/// # Safety
/// `msr` must exist and the driver must own it: writes change machine state other software relies on.
#[inline(always)]
pub unsafe fn write(msr: u32, value: u64) {
    // SAFETY: the caller guarantees the MSR exists and is ours. Not `nomem`, like `read`: programming is
    // ordered against the stores that publish the session to the overflow handler.
    unsafe {
        core::arch::asm!(
            "wrmsr",
            in("ecx") msr,
            in("eax") value as u32,
            in("edx") (value >> 32) as u32,
            options(nostack, preserves_flags)
        )
    };
}

/// IA32_PERF_CAPABILITIES of the current processor, or 0 where `model` says it does not exist
/// (`CPUID.01H:ECX[15]` PDCM clear). A read-only capability register: reading it needs no ownership.
pub fn perf_capabilities(model: &crate::pmu::model::PmuModel) -> u64 {
    if !model.perf_capabilities {
        return 0;
    }
    // SAFETY: PDCM is set, so IA32_PERF_CAPABILITIES exists (Intel SDM Vol. 4, MSR 345H, "If
    // CPUID.01H:ECX[15] = 1").
    unsafe { read(crate::pmu::msr::IA32_PERF_CAPABILITIES) }
}

/// Reads performance counter `index` (RDPMC's ECX) on the current processor.
///
/// # Safety
/// `index` must name a counter this processor has (an invalid index raises #GP, a bug check in the
/// kernel). The plan names only counters CPUID reported.
#[inline(always)]
pub unsafe fn read_pmc(index: u32) -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: the caller guarantees the counter exists; RDPMC is always allowed at CPL 0. Not `nomem`:
    // the read protocol (pmu/fold.rs) orders it before the status read, which the compiler must keep.
    unsafe {
        core::arch::asm!("rdpmc", in("ecx") index, out("eax") low, out("edx") high, options(nostack, preserves_flags))
    };
    (u64::from(high) << 32) | u64::from(low)
}
