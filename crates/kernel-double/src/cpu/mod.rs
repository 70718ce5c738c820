//! Virtual processors: every host thread that runs driver code has a current virtual processor
//! (system index, group, number) and IRQL, kept in a fake KPCR that GS points at, as on x64 Windows.
//!
//! The driver reads its processor index with `mov r32, gs:[0x1a4]` (the KPRCB's Number), its current
//! thread with `mov r64, gs:[0x188]` (KeGetCurrentThread: the KPRCB's CurrentThread, a thread dispatcher
//! object, the same one PsCreateSystemThread's handle refers to) and its IRQL with `mov r64, cr8`
//! (emulated by [`trap`]). The KPCR also keeps the thread's system affinity
//! (KeSetSystemGroupAffinityThread), since a host thread is one kernel thread. Rust's std and glibc on
//! x86_64 Linux use FS for thread-local storage and never touch GS, so setting GS's base with
//! `arch_prctl(ARCH_SET_GS)` is safe (the `gs_is_free_for_the_kpcr` unit test checks it). A thread
//! created by `clone` inherits its parent's GS base, so every thread that runs driver code installs its
//! own KPCR with [`enter`].
//!
//! The processors present the CPU model chosen with [`cpuid::set_model`] (CPUID sites rewritten at load
//! time and emulated by [`trap`]) and each has a virtual PMU behind its MSRs ([`pmu`], [`msr`]), whose
//! counters advance when a test steps the processor's workload and whose overflow interrupts reach the
//! handler the driver registered with HalAllocateHardwareCounters.

pub mod atom;
pub mod cpuid;
pub mod frequency;
pub mod kpcr;
pub mod mmio;
pub mod msr;
pub mod pmu;
pub mod topology;
pub mod trap;

pub use kpcr::*;

/// Gives this thread a KPCR on virtual processor `index` at PASSIVE_LEVEL (creating the KPCR and
/// pointing GS at it the first time) and installs the trap handler. Returns the KPCR.
pub fn enter(index: u32) -> &'static Kpcr {
    trap::install();
    kpcr::attach(index)
}

/// Sets or clears this thread's trap flag (EFLAGS.TF): while it is set every instruction raises SIGTRAP,
/// which the caller must handle (tests single-step driver code this way, tests/scenarios/common/single_step.rs).
#[inline(always)]
pub fn set_trap_flag(on: bool) {
    // SAFETY: changes only EFLAGS.TF of this thread; the SIGTRAP handler the caller installed resumes
    // after each instruction. pushfq/popfq use the stack below rsp, which asm! without `nostack` allows.
    unsafe {
        if on {
            std::arch::asm!("pushfq", "or qword ptr [rsp], 0x100", "popfq");
        } else {
            std::arch::asm!("pushfq", "and qword ptr [rsp], -0x101", "popfq");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn gs_is_free_for_the_kpcr() {
        let kpcr = enter(0);
        assert_eq!(gs_base(), kpcr as *const Kpcr as u64);
        // std's thread-locals, allocation, formatting and threads keep working with GS moved.
        thread_local!(static VALUE: Cell<u32> = const { Cell::new(7) });
        VALUE.with(|value| value.set(value.get() + 1));
        let text = format!("{}", VALUE.with(Cell::get));
        let joined = std::thread::spawn(move || text.len()).join().unwrap();
        assert_eq!(joined, 1);
        let index: u32;
        // SAFETY: GS points at this thread's KPCR page; 0x1a4 is inside it.
        unsafe { std::arch::asm!("mov {0:e}, gs:[0x1a4]", out(reg) index, options(nostack, readonly)) };
        assert_eq!(index, 0);
        assert_eq!(gs_base(), kpcr as *const Kpcr as u64);
    }
}
