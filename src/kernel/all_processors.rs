//! Running code on every processor at once.
//!
//! KeIpiGenericCall runs a function on all processors of all groups simultaneously, at IPI_LEVEL, and
//! returns when every processor has finished. The driver uses it to program, read and stop the PMU:
//! * one call reaches every processor (also beyond 64, in several groups), so one collect costs one
//!   call, whatever the processor count;
//! * it runs above DISPATCH_LEVEL on every processor at once, so no thread can be scheduled between
//!   two processors' reads. On x64 IPI_LEVEL (14) is *below* PROFILE_LEVEL (15, wdm.h), so the
//!   overflow interrupt can still arrive in the middle of a read: the read protocol (pmu/fold.rs)
//!   detects that and retries;
//! * nothing is allocated and no thread is moved between processors (per-processor DPCs would need a
//!   DPC object per processor and a wait; changing thread affinity would take a context switch per
//!   processor).
//!
//! The work must therefore be short, resident and must not wait, allocate or touch pageable memory.

use windows_sys::Wdk::System::SystemServices::KeIpiGenericCall;

/// Runs `work` on every processor at IPI_LEVEL and returns when all have finished. Call at IRQL <=
/// DISPATCH_LEVEL.
pub fn run_on_every_processor<F: Fn() + Sync>(work: &F) {
    unsafe extern "system" fn broadcast<F: Fn() + Sync>(context: usize) -> usize {
        // SAFETY: `context` is the `&F` passed below, alive until KeIpiGenericCall returns.
        let work = unsafe { &*(context as *const F) };
        work();
        0
    }
    // windows-sys declares PKIPI_BROADCAST_WORKER without its ULONG_PTR argument; the real signature is
    // `ULONG_PTR (*)(ULONG_PTR Argument)`.
    let worker: unsafe extern "system" fn(usize) -> usize = broadcast::<F>;
    // SAFETY: the transmute only restores the documented parameter (same ABI, one integer argument).
    let worker = unsafe {
        core::mem::transmute::<unsafe extern "system" fn(usize) -> usize, unsafe extern "system" fn() -> usize>(
            worker,
        )
    };
    // SAFETY: `work` outlives the call, which returns only after every processor ran the worker.
    unsafe { KeIpiGenericCall(Some(worker), work as *const F as usize) };
}
