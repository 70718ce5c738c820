//! Non-paged pool allocations, owned: freed exactly once, when the owner drops.

use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use windows_sys::Wdk::System::SystemServices::{ExAllocatePool2, ExFreePoolWithTag};

/// POOL_FLAG_NON_PAGED (wdm.h): resident memory, usable at any IRQL. ExAllocatePool2 zeroes it.
const POOL_FLAG_NON_PAGED: u64 = 0x40;

/// A zero-initialised slice of `T` in non-paged pool, tagged with [`crate::POOL_TAG`].
///
/// Allocation happens only at IRQL <= DISPATCH_LEVEL, in practice at PASSIVE_LEVEL from DriverEntry
/// and the first-query path, never from a collect or an interrupt.
pub struct PoolSlice<T: Zeroable> {
    start: NonNull<T>,
    len: usize,
}

/// Types for which all-zero bytes are a valid value, so zeroed pool memory is a valid `T`.
///
/// # Safety
/// Implementors must have no niche or invariant that zero bytes violate (no references, no NonNull,
/// no enums without a zero discriminant).
pub unsafe trait Zeroable {}

// SAFETY: PoolSlice owns its elements like a Box<[T]> does.
unsafe impl<T: Zeroable + Send> Send for PoolSlice<T> {}
// SAFETY: shared access only hands out &T.
unsafe impl<T: Zeroable + Sync> Sync for PoolSlice<T> {}

impl<T: Zeroable> PoolSlice<T> {
    /// Allocates `len` zeroed elements; `None` if the pool is exhausted or the size overflows.
    pub fn zeroed(len: usize) -> Option<Self> {
        let bytes = core::mem::size_of::<T>().checked_mul(len)?.max(1);
        // ExAllocatePool2 aligns to 16 bytes, which covers every type used here.
        const { assert!(core::mem::align_of::<T>() <= 16) };
        // SAFETY: plain allocation call; the result is checked for NULL below.
        let start = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, bytes, crate::POOL_TAG) };
        Some(PoolSlice { start: NonNull::new(start.cast())?, len })
    }
}

impl<T: Zeroable> Deref for PoolSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `start` points to `len` initialised (zeroed, Zeroable) elements owned by self.
        unsafe { core::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> DerefMut for PoolSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in deref, and &mut self guarantees exclusive access.
        unsafe { core::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> Drop for PoolSlice<T> {
    fn drop(&mut self) {
        // SAFETY: the elements are dropped in place before their memory is returned with the tag it was
        // allocated with; nothing else owns them.
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(self.start.as_ptr(), self.len));
            ExFreePoolWithTag(self.start.as_ptr().cast(), crate::POOL_TAG);
        }
    }
}

/// One `T` in non-paged pool, tagged with [`crate::POOL_TAG`]: a Box for the kernel.
pub struct PoolBox<T> {
    value: NonNull<T>,
}

// SAFETY: PoolBox owns its value like a Box does.
unsafe impl<T: Send> Send for PoolBox<T> {}
// SAFETY: shared access only hands out &T.
unsafe impl<T: Sync> Sync for PoolBox<T> {}

impl<T> PoolBox<T> {
    /// Moves `value` into pool memory; gives it back if the pool is exhausted.
    pub fn new(value: T) -> Result<Self, T> {
        const { assert!(core::mem::align_of::<T>() <= 16) };
        // SAFETY: plain allocation call; the result is checked for NULL below.
        let memory = unsafe {
            ExAllocatePool2(POOL_FLAG_NON_PAGED, core::mem::size_of::<T>().max(1), crate::POOL_TAG)
        };
        let Some(memory) = NonNull::new(memory.cast::<T>()) else {
            return Err(value);
        };
        // SAFETY: fresh, suitably sized and aligned memory that nothing else references.
        unsafe { memory.as_ptr().write(value) };
        Ok(PoolBox { value: memory })
    }
}

impl<T> Deref for PoolBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `value` points to an initialised T owned by self.
        unsafe { self.value.as_ref() }
    }
}

impl<T> Drop for PoolBox<T> {
    fn drop(&mut self) {
        // SAFETY: the value is dropped in place, then its memory returned with the tag it was allocated
        // with; nothing else owns it.
        unsafe {
            core::ptr::drop_in_place(self.value.as_ptr());
            ExFreePoolWithTag(self.value.as_ptr().cast(), crate::POOL_TAG);
        }
    }
}
