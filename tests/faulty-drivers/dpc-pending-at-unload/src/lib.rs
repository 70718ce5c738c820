//! Fault: a DPC still queued when the driver unloads. DriverEntry starts a polling DPC on processor 1
//! (the last one if there is only one) whose routine queues itself again each time it runs, and
//! DriverUnload forgets to stop it (no stop flag, no KeRemoveQueueDpc, no KeFlushQueuedDpcs). On Windows
//! the DPC would run code of an unloaded image; Driver Verifier bug-checks 0xCE
//! (DRIVER_UNLOADED_WITHOUT_CANCELLING_PENDING_OPERATIONS).
#![no_std]

#[path = "../../kernel.rs"]
mod kernel;

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::*;

/// The DPC object, resident for the driver's lifetime.
struct DpcCell(UnsafeCell<Kdpc>);
// SAFETY: the kernel serialises access to a KDPC; the driver only passes its address.
unsafe impl Sync for DpcCell {}

static POLL: DpcCell = DpcCell(UnsafeCell::new(Kdpc::new()));
static POLLS: AtomicU64 = AtomicU64::new(0);

unsafe extern "system" fn poll(dpc: *mut Kdpc, _context: usize, _argument1: usize, _argument2: usize) {
    POLLS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: our initialised DPC; any IRQL. The fault: nothing ever stops this.
    unsafe { KeInsertQueueDpc(dpc, 0, 0) };
}

/// # Safety
/// Called by the I/O manager with a valid driver object.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(driver: *mut u8, _registry_path: *const u8) -> NtStatus {
    // SAFETY: any IRQL; valid objects and outputs.
    unsafe {
        let count = KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS);
        let mut number = ProcessorNumber::default();
        if KeGetProcessorNumberFromIndex(1.min(count - 1), &mut number) != STATUS_SUCCESS {
            return STATUS_INVALID_PARAMETER;
        }
        KeInitializeDpc(POLL.0.get(), poll, 0);
        KeSetTargetProcessorDpcEx(POLL.0.get(), &number);
        KeInsertQueueDpc(POLL.0.get(), 0, 0);
        set_unload(driver, unload);
    }
    STATUS_SUCCESS
}

/// The fault: returns with the polling DPC still going.
unsafe extern "system" fn unload(_driver: *mut u8) {}
