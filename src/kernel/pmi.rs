//! Support for the overflow interrupt handler (PHYSICAL_COUNTER_OVERFLOW_HANDLER, in pmu/client.rs).
//!
//! The HAL calls the handler at PROFILE_LEVEL on the processor whose counters overflowed, with the
//! overflow bits in IA32_PERF_GLOBAL_STATUS layout, and clears the status itself afterwards. At that
//! level the handler may not take or release locks, call pageable code or touch pageable memory. It
//! lives alone in the `.pmi` section, which build.rs marks not pageable and which the binary checks
//! disassemble to prove it makes no call; everything it uses here is inlined.

use core::sync::atomic::{AtomicPtr, Ordering};

/// What the handler folds into: published while the driver owns counters with an overflow
/// interrupt, null otherwise.
pub struct Target<T: 'static>(AtomicPtr<T>);

impl<T> Target<T> {
    pub const fn new() -> Self {
        Target(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// Publishes `target` to the handler. The caller must [`Target::withdraw`] it, after the counters
    /// are freed, before `target` is dropped (pmu/client.rs: release, which Drop runs).
    pub fn publish(&self, target: &T) {
        self.0.store((target as *const T).cast_mut(), Ordering::Release);
    }

    pub fn withdraw(&self) {
        self.0.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// The published target, if any.
    #[inline(always)]
    pub fn get(&self) -> Option<&T> {
        // SAFETY: a non-null pointer was published from a live `&T`, and is withdrawn before that value
        // is dropped (see publish); the HAL calls no handler after HalFreeHardwareCounters returns.
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }
}

/// The current processor's system-wide index across groups, as KeGetCurrentProcessorIndex reads it
/// on x64 (wdm.h, Windows 7 and later: `__readgsdword(0x1a4)`, the KPRCB's Number): a load from the
/// processor's own control region, no call. (`gs:[0x184]` is the pre-group LegacyNumber byte, wrong
/// beyond 256 processors.)
#[inline(always)]
pub fn current_processor_index() -> u32 {
    let index: u32;
    // SAFETY: in kernel mode on x64 Windows, GS points at the current processor's KPCR, whose dword at
    // 0x1a4 is the processor index. Reading it has no side effects.
    unsafe {
        core::arch::asm!("mov {0:e}, gs:[0x1a4]", out(reg) index, options(nostack, readonly, preserves_flags))
    };
    index
}
