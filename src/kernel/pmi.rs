//! The overflow interrupt handler (PHYSICAL_COUNTER_OVERFLOW_HANDLER) and what it reaches.
//!
//! The HAL calls the handler at PROFILE_LEVEL on the processor whose counters overflowed, with the
//! overflow bits in IA32_PERF_GLOBAL_STATUS layout, and clears the status itself afterwards. At that
//! level the handler may not take or release locks, call pageable code or touch pageable memory. It
//! lives alone in the `.pmi` section, which build.rs marks not pageable and which the binary checks
//! disassemble to prove it makes no call; everything it uses is inlined.

use core::sync::atomic::{AtomicPtr, Ordering};
use windows_sys::Win32::Foundation::HANDLE;

/// What the handler folds overflows into.
pub trait OverflowSink: Sync + Sized + 'static {
    /// Where the sink is published while the HAL may call the handler.
    fn target() -> &'static Target<Self>;
    /// Folds `overflow_bits` into processor `processor`'s counts. Must inline to resident,
    /// lock-free, call-free code.
    fn fold(&self, processor: u32, overflow_bits: u64);
}

/// PHYSICAL_COUNTER_OVERFLOW_HANDLER for the sink `S`. Resident, lock-free, no calls.
#[unsafe(link_section = ".pmi")]
pub unsafe extern "system" fn overflow_handler<S: OverflowSink>(overflow_bits: u64, _owning_handle: HANDLE) {
    if let Some(sink) = S::target().get() {
        sink.fold(current_processor_index(), overflow_bits);
    }
}

/// What the handler folds into: published while the driver owns counters with an overflow
/// interrupt, null otherwise.
pub struct Target<T: 'static>(AtomicPtr<T>);

impl<T> Target<T> {
    pub const fn new() -> Self {
        Target(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// Publishes `target` to the handler.
    ///
    /// # Safety
    /// The caller must [`Target::withdraw`] it, after the counters are freed (no handler runs after
    /// HalFreeHardwareCounters returns), before `target` is dropped or moved.
    pub unsafe fn publish(&self, target: &T) {
        self.0.store((target as *const T).cast_mut(), Ordering::Release);
    }

    pub fn withdraw(&self) {
        self.0.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// The published target, if any.
    #[inline(always)]
    pub fn get(&self) -> Option<&T> {
        // SAFETY: a non-null pointer was published from a live `&T`, and is withdrawn before that value
        // is dropped (publish's contract); the HAL calls no handler after HalFreeHardwareCounters.
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
