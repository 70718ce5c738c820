//! Which counters the HAL's Intel profile interface lets a resource list name, as each Windows build
//! computes them (decompiled Windows 11 ntoskrnl builds, in the public repository
//! nohuto/decompiled-pseudocode): before 24H2, the general-purpose and fixed counter counts of
//! processor 0's CPUID leaf 0xA, whatever processor calls; on 24H2, the counter table of the processor
//! the caller runs on, from CPUID leaf 0x23 where CPUID.(EAX=7,ECX=1):EAX\[8\] says it is valid, else
//! from that processor's leaf 0xA; or, with 24H2's Original interface ([`set_interface`]), processor
//! 0's leaf 0xA counts again. Reservation itself is per processor and per counter:
//! [`super::Allocation::conflicts`]. The decompiled functions and what they compute, build by build:
//! `docs/kernel-double.md`, "The HAL's counter tables by Windows build".

use crate::cpu::cpuid;
use crate::kernel_build::{self, WINDOWS_11_24H2};
use std::sync::atomic::{AtomicBool, Ordering};

/// CPUID.(EAX=7,ECX=1):EAX\[8\], ArchPerfmonExt: leaf 0x23 is valid.
const ARCH_PERFMON_EXT: u32 = 1 << 8;
/// Leaf 0x23 subleaf 0 EAX bit 1: subleaf 1 (the counter bitmaps) is valid, as the HAL tests it.
const COUNTER_BITMAPS_VALID: u32 = 1 << 1;

/// The 24H2 HAL's two Intel profile interfaces, which a feature flag chooses between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// `EmonProfileInterfaceEnhanced`: each processor's own table.
    Enhanced,
    /// `EmonProfileInterfaceOriginal`: every table from processor 0's leaf 0xA.
    Original,
}

static ORIGINAL: AtomicBool = AtomicBool::new(false);

/// Chooses the 24H2 HAL's Intel profile interface (the Enhanced one unless chosen); older builds have
/// only the original checks.
pub fn set_interface(interface: Interface) {
    ORIGINAL.store(interface == Interface::Original, Ordering::SeqCst);
}

/// The counters (IA32_PERF_GLOBAL_CTRL bit numbers, as CounterIndex names them) a resource list may
/// name when HalAllocateHardwareCounters is called on processor `caller`, on the build in effect.
pub fn allowed(caller: u32) -> u64 {
    if kernel_build::current() >= WINDOWS_11_24H2 && !ORIGINAL.load(Ordering::SeqCst) {
        enhanced_table(|leaf, subleaf| cpuid::cpuid_on(caller, leaf, subleaf))
    } else {
        leaf_a_counts(|leaf, subleaf| cpuid::cpuid_on(0, leaf, subleaf))
    }
}

/// `EmonInitializeProfilingEnhanced`'s table of the processor whose CPUID `cpuid` answers.
fn enhanced_table(cpuid: impl Fn(u32, u32) -> [u32; 4]) -> u64 {
    let extended = cpuid(0, 0)[0] >= 7 && cpuid(7, 0)[0] >= 1 && cpuid(7, 1)[0] & ARCH_PERFMON_EXT != 0;
    if !extended {
        return leaf_a_counts(cpuid);
    }
    if cpuid(0x23, 0)[0] & COUNTER_BITMAPS_VALID == 0 {
        return 0;
    }
    let [general, fixed, ..] = cpuid(0x23, 1);
    u64::from(general) | u64::from(fixed) << 32
}

/// The counters CPUID.0AH reports, as contiguous masks: EAX\[15:8\] general-purpose counters and,
/// from perfmon version 2, EDX\[3:0\] fixed ones (the HAL masks EDX with 0xF).
fn leaf_a_counts(cpuid: impl Fn(u32, u32) -> [u32; 4]) -> u64 {
    let [eax, _, _, edx] = cpuid(0xA, 0);
    let general = (eax >> 8) & 0xFF;
    let fixed = if eax & 0xFF >= 2 { edx & 0xF } else { 0 };
    low_bits(general) | low_bits(fixed) << 32
}

fn low_bits(count: u32) -> u64 {
    if count >= 64 { u64::MAX } else { (1u64 << count) - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpuid_dumps as dumps;

    fn of(cpu: &dumps::Cpu) -> impl Fn(u32, u32) -> [u32; 4] + '_ {
        move |leaf, subleaf| dumps::lookup(cpu.leaves, leaf, subleaf)
    }

    #[test]
    fn each_processor_has_the_table_its_cpuid_gives() {
        // Alder Lake: leaf 0xA on every core, 6 + 3; no leaf 0x23.
        assert_eq!(enhanced_table(of(&dumps::ALDER_LAKE_I9_12900K_P)), 0x7_0000_003F);
        assert_eq!(enhanced_table(of(&dumps::ALDER_LAKE_I9_12900K_E)), 0x7_0000_003F);
        // Meteor Lake: leaf 0x23 per core type, 8 + 4 and 8 + 3; leaf 0xA 8 + 3 on every core.
        assert_eq!(enhanced_table(of(&dumps::METEOR_LAKE_P)), 0xF_0000_00FF);
        assert_eq!(enhanced_table(of(&dumps::METEOR_LAKE_E)), 0x7_0000_00FF);
        assert_eq!(leaf_a_counts(of(&dumps::METEOR_LAKE_P)), 0x7_0000_00FF);
        assert_eq!(enhanced_table(of(&dumps::SKYLAKE_I7_6700K)), 0x7_0000_000F);
    }
}
