//! Non-paged pool allocations, owned: freed exactly once, when the owner drops. They come from
//! ExAllocatePool2 where the kernel exports it, else from ExAllocatePoolWithTag (see [`find_allocator`]).

use crate::text::ascii_to_utf16;
use core::ffi::c_void;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use windows_sys::Wdk::Foundation::NonPagedPoolNx;
use windows_sys::Wdk::System::SystemServices::{
    ExAllocatePoolWithTag, ExFreePoolWithTag, MmGetSystemRoutineAddress,
};

/// POOL_FLAG_NON_PAGED (wdm.h): resident, non-executable memory, usable at any IRQL; what
/// NonPagedPoolNx is to ExAllocatePoolWithTag. ExAllocatePool2 zeroes it.
const POOL_FLAG_NON_PAGED: u64 = 0x40;

/// The page size: both allocation routines return page-aligned memory for allocations of at least a
/// page.
const PAGE_SIZE: usize = 4096;

/// `PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag)` (wdm.h).
type ExAllocatePool2 = unsafe extern "system" fn(flags: u64, bytes: usize, tag: u32) -> *mut c_void;

/// ExAllocatePool2 when this kernel exports it, else null. Set once by [`find_allocator`] in
/// DriverEntry, before the first allocation and before any other thread of the driver runs.
static EX_ALLOCATE_POOL2: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

/// "ExAllocatePool2" as MmGetSystemRoutineAddress takes names: UTF-16.
const EX_ALLOCATE_POOL2_NAME: [u16; 15] = ascii_to_utf16(b"ExAllocatePool2");

/// Chooses the allocation routine. ExAllocatePool2 exists only from Windows 10 version 2004 (build
/// 19041; its Microsoft Learn page, Requirements), and the kernel refuses to load an image with an
/// import it does not export, so the driver does not import it: it looks it up with
/// MmGetSystemRoutineAddress, and on Windows 10 1903 and 1909, where it is missing, allocates with
/// ExAllocatePoolWithTag(NonPagedPoolNx) and zeroes the memory itself.
///
/// # Safety
/// Call only from DriverEntry: this routine lives in its discardable INIT section. DriverEntry runs
/// at PASSIVE_LEVEL, as MmGetSystemRoutineAddress requires, and must call it before anything
/// allocates.
#[unsafe(link_section = "INIT")]
pub(super) unsafe fn find_allocator() {
    let name = super::unicode_string(&EX_ALLOCATE_POOL2_NAME);
    // SAFETY: a valid UNICODE_STRING over a static buffer, passed at PASSIVE_LEVEL (the contract).
    let routine = unsafe { MmGetSystemRoutineAddress(&name) };
    EX_ALLOCATE_POOL2.store(routine, Ordering::Release);
}

/// `bytes` of zeroed non-paged pool aligned to `align`. Both allocation routines align small
/// allocations to 16 bytes and those of a page or more to a page, so a type aligned beyond 16
/// (per-processor state on its own cache lines) gets at least a page.
fn allocate(bytes: usize, align: usize) -> Option<NonNull<u8>> {
    assert!(align <= PAGE_SIZE, "no pool allocation is aligned beyond a page");
    let bytes = if align > 16 { bytes.max(PAGE_SIZE) } else { bytes.max(1) };
    let ex_allocate_pool2 = EX_ALLOCATE_POOL2.load(Ordering::Acquire);
    if !ex_allocate_pool2.is_null() {
        // SAFETY: a non-null value is the address MmGetSystemRoutineAddress gave for ExAllocatePool2,
        // whose signature is ExAllocatePool2's.
        let ex_allocate_pool2: ExAllocatePool2 = unsafe { core::mem::transmute(ex_allocate_pool2) };
        // SAFETY: plain allocation call; the result is checked for NULL.
        let memory = unsafe { ex_allocate_pool2(POOL_FLAG_NON_PAGED, bytes, crate::POOL_TAG) };
        return NonNull::new(memory.cast());
    }
    // SAFETY: plain allocation call; the result is checked for NULL.
    let memory = NonNull::new(unsafe { ExAllocatePoolWithTag(NonPagedPoolNx, bytes, crate::POOL_TAG) })?;
    // SAFETY: `bytes` fresh, writable bytes nothing else references; ExAllocatePoolWithTag leaves
    // whatever they held before.
    unsafe { memory.cast::<u8>().write_bytes(0, bytes) };
    Some(memory.cast())
}

/// A slice of `T` in non-paged pool, tagged with [`crate::POOL_TAG`]: zero-initialised
/// ([`PoolSlice::zeroed`]) or filled with values ([`PoolSlice::filled`]).
///
/// Allocation happens only at IRQL <= DISPATCH_LEVEL, in practice at PASSIVE_LEVEL from DriverEntry
/// and the first-query path, never from a collect or an interrupt.
pub struct PoolSlice<T> {
    start: NonNull<T>,
    len: usize,
}

/// Types for which all-zero bytes are a valid value, so zeroed pool memory is a valid `T`.
///
/// # Safety
/// Implementors must have no niche or invariant that zero bytes violate (no references, no NonNull,
/// no enums without a zero discriminant).
pub unsafe trait Zeroable {}

// SAFETY: every bit pattern is a u16.
unsafe impl Zeroable for u16 {}

// SAFETY: PoolSlice owns its elements like a Box<[T]> does.
unsafe impl<T: Send> Send for PoolSlice<T> {}
// SAFETY: shared access only hands out &T.
unsafe impl<T: Sync> Sync for PoolSlice<T> {}

impl<T: Zeroable> PoolSlice<T> {
    /// Allocates `len` zeroed elements; `None` if the pool is exhausted or the size overflows.
    pub fn zeroed(len: usize) -> Option<Self> {
        let start = allocate(core::mem::size_of::<T>().checked_mul(len)?, core::mem::align_of::<T>())?;
        Some(PoolSlice { start: start.cast(), len })
    }
}

impl<T> PoolSlice<T> {
    /// Allocates `len` elements, each `fill()`: for a `T` that all-zero bytes need not be (an
    /// `Option` of a type without a niche at zero); `None` if the pool is exhausted or the size
    /// overflows.
    pub fn filled(len: usize, mut fill: impl FnMut() -> T) -> Option<Self> {
        let start = allocate(core::mem::size_of::<T>().checked_mul(len)?, core::mem::align_of::<T>())?;
        let start = start.cast::<T>();
        for index in 0..len {
            let element = start.as_ptr().wrapping_add(index);
            let value = fill();
            // SAFETY: element `index < len` lies within the fresh allocation, which is aligned for
            // `T` and referenced by nothing else; each element is written once, before any is read.
            unsafe { element.write(value) };
        }
        Some(PoolSlice { start, len })
    }
}

impl<T> Deref for PoolSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `start` points to `len` initialised elements (zeroed and Zeroable, or written by
        // `filled`) owned by self.
        unsafe { core::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for PoolSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in deref, and &mut self guarantees exclusive access.
        unsafe { core::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl<T> Drop for PoolSlice<T> {
    fn drop(&mut self) {
        // SAFETY: the elements are initialised and owned by nothing else; dropped once, here.
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(self.start.as_ptr(), self.len))
        };
        // SAFETY: the memory came from the pool with this tag and holds nothing live any more.
        unsafe { ExFreePoolWithTag(self.start.as_ptr().cast(), crate::POOL_TAG) };
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
        let Some(memory) = allocate(core::mem::size_of::<T>(), core::mem::align_of::<T>()) else {
            return Err(value);
        };
        let memory = memory.cast::<T>();
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
        // SAFETY: the value is initialised and owned by nothing else; dropped once, here.
        unsafe { core::ptr::drop_in_place(self.value.as_ptr()) };
        // SAFETY: the memory came from the pool with this tag and holds nothing live any more.
        unsafe { ExFreePoolWithTag(self.value.as_ptr().cast(), crate::POOL_TAG) };
    }
}

/// A reference-counted `T` in non-paged pool: the value lives until the last owner drops. Used where
/// two independent owners (a counterset's callback and the housekeeping thread) read the same state
/// and neither may outlive it.
pub struct PoolArc<T: Sync> {
    inner: NonNull<ArcInner<T>>,
}

struct ArcInner<T> {
    owners: core::sync::atomic::AtomicUsize,
    value: T,
}

// SAFETY: shared ownership of a Sync value, like alloc::sync::Arc.
unsafe impl<T: Sync + Send> Send for PoolArc<T> {}
// SAFETY: as above.
unsafe impl<T: Sync + Send> Sync for PoolArc<T> {}

impl<T: Sync> PoolArc<T> {
    /// Moves `value` into pool memory with one owner; gives it back if the pool is exhausted.
    pub fn new(value: T) -> Result<Self, T> {
        let Some(memory) =
            allocate(core::mem::size_of::<ArcInner<T>>(), core::mem::align_of::<ArcInner<T>>())
        else {
            return Err(value);
        };
        let inner = memory.cast::<ArcInner<T>>();
        // SAFETY: fresh, suitably sized and aligned memory that nothing else references.
        unsafe { inner.as_ptr().write(ArcInner { owners: core::sync::atomic::AtomicUsize::new(1), value }) };
        Ok(PoolArc { inner })
    }
}

impl<T: Sync> Clone for PoolArc<T> {
    fn clone(&self) -> Self {
        // SAFETY: self keeps the allocation alive.
        unsafe { self.inner.as_ref() }.owners.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        PoolArc { inner: self.inner }
    }
}

impl<T: Sync> Deref for PoolArc<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the allocation lives while any owner does.
        &unsafe { self.inner.as_ref() }.value
    }
}

impl<T: Sync> Drop for PoolArc<T> {
    fn drop(&mut self) {
        use core::sync::atomic::Ordering;
        // SAFETY: self keeps the allocation alive until this decrement.
        if unsafe { self.inner.as_ref() }.owners.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        core::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: the last owner: nothing else references the value; dropped once, here.
        unsafe { core::ptr::drop_in_place(self.inner.as_ptr()) };
        // SAFETY: the memory came from the pool with this tag and holds nothing live any more.
        unsafe { ExFreePoolWithTag(self.inner.as_ptr().cast(), crate::POOL_TAG) };
    }
}
