//! ExAllocatePool2 / ExFreePoolWithTag with Driver Verifier's pool tracking: every allocation's tag and
//! size, frees with the wrong tag, double frees and frees of unknown addresses, and a leak report.

use super::enter;
use crate::cpu::{APC_LEVEL, DISPATCH_LEVEL};
use std::alloc::Layout;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

const POOL_FLAG_UNINITIALIZED: u64 = 0x2;
const POOL_FLAG_NON_PAGED: u64 = 0x40;
const POOL_FLAG_NON_PAGED_EXECUTE: u64 = 0x80;
const POOL_FLAG_PAGED: u64 = 0x100;
/// Every flag ExAllocatePool2 documents (wdm.h POOL_FLAG_*, required and optional).
const POOL_FLAG_KNOWN: u64 = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100;

/// One live allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub address: usize,
    pub size: usize,
    pub tag: u32,
    pub flags: u64,
}

impl Allocation {
    /// The tag as the four characters pool tools show.
    pub fn tag_text(&self) -> String {
        String::from_utf8_lossy(&self.tag.to_le_bytes()).into_owned()
    }

    fn layout(&self) -> Layout {
        layout(self.size)
    }
}

#[derive(Default)]
struct Pool {
    live: HashMap<usize, Allocation>,
    /// Addresses freed and not reused since, to tell a double free from a wild pointer.
    freed: HashSet<usize>,
    allocations: u64,
    /// Fail the allocation with this 0-based sequence number (fault injection), if set.
    fail_at: Option<u64>,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    f(POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get_or_insert_with(Pool::default))
}

/// ExAllocatePool2's alignment: 16 bytes below a page, a page from a page up.
fn layout(size: usize) -> Layout {
    let align = if size >= 4096 { 4096 } else { 16 };
    Layout::from_size_align(size.max(1), align).expect("pool size overflow")
}

/// Every allocation not yet freed (the leak report at unload).
pub fn outstanding() -> Vec<Allocation> {
    let mut live: Vec<_> = with_pool(|pool| pool.live.values().copied().collect());
    live.sort_by_key(|allocation| allocation.address);
    live
}

/// Allocations made so far.
pub fn allocation_count() -> u64 {
    with_pool(|pool| pool.allocations)
}

/// Makes the allocation with 0-based sequence number `index` fail (NULL), for fault injection.
pub fn fail_allocation(index: Option<u64>) {
    with_pool(|pool| pool.fail_at = index);
}

/// `PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag)`: IRQL <= DISPATCH_LEVEL
/// (APC_LEVEL for paged pool). Zeroed unless POOL_FLAG_UNINITIALIZED.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ex_allocate_pool2(flags: u64, size: usize, tag: u32) -> *mut u8 {
    let paged = flags & POOL_FLAG_PAGED != 0;
    let call = enter("ExAllocatePool2", if paged { APC_LEVEL } else { DISPATCH_LEVEL });
    let kinds = [POOL_FLAG_NON_PAGED, POOL_FLAG_NON_PAGED_EXECUTE, POOL_FLAG_PAGED]
        .iter()
        .filter(|&&kind| flags & kind != 0)
        .count();
    if kinds != 1 || flags & !POOL_FLAG_KNOWN != 0 {
        call.violation(format!("invalid pool flags {flags:#x}: exactly one pool type is required"));
        return std::ptr::null_mut();
    }
    if tag == 0 {
        call.violation("pool tag 0".into());
        return std::ptr::null_mut();
    }
    let fail = with_pool(|pool| {
        let index = pool.allocations;
        pool.allocations += 1;
        pool.fail_at == Some(index)
    });
    if fail || size > (1 << 32) {
        return std::ptr::null_mut();
    }
    let layout = layout(size);
    // SAFETY: the layout has a non-zero size.
    let memory = unsafe {
        if flags & POOL_FLAG_UNINITIALIZED != 0 {
            let memory = std::alloc::alloc(layout);
            if !memory.is_null() {
                // Uninitialised pool is not zero on Windows: make reliance on zeroes visible.
                memory.write_bytes(0xA5, layout.size());
            }
            memory
        } else {
            std::alloc::alloc_zeroed(layout)
        }
    };
    if !memory.is_null() {
        let allocation = Allocation { address: memory as usize, size, tag, flags };
        with_pool(|pool| {
            pool.freed.remove(&allocation.address);
            pool.live.insert(allocation.address, allocation);
        });
    }
    memory
}

/// `VOID ExFreePoolWithTag(PVOID P, ULONG Tag)`: IRQL <= DISPATCH_LEVEL. The tag must be the one the
/// allocation was made with; freeing twice or freeing what was never allocated is a violation (Driver
/// Verifier bug checks 0xC2 / 0xC4).
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ex_free_pool_with_tag(address: *mut u8, tag: u32) {
    let call = enter("ExFreePoolWithTag", DISPATCH_LEVEL);
    let address = address as usize;
    let found = with_pool(|pool| match pool.live.remove(&address) {
        Some(allocation) => {
            pool.freed.insert(address);
            Ok(allocation)
        }
        None => Err(pool.freed.contains(&address)),
    });
    match found {
        Ok(allocation) => {
            if allocation.tag != tag {
                call.violation(format!(
                    "freed {address:#x} with tag {tag:#x}, allocated with tag {:#x} ({})",
                    allocation.tag,
                    allocation.tag_text()
                ));
            }
            // SAFETY: the address came from the allocator with exactly this layout and is freed once
            // (removed from the live set above).
            unsafe { std::alloc::dealloc(address as *mut u8, allocation.layout()) };
        }
        Err(true) => call.violation(format!("double free of {address:#x}")),
        Err(false) => call.violation(format!("free of {address:#x}, which is not a pool allocation")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::violations;

    const TAG: u32 = u32::from_le_bytes(*b"Test");

    #[test]
    fn tracks_tags_double_frees_and_leaks() {
        // SAFETY: the exports are called as the driver would, with valid arguments except where a
        // violation is the point (which the double records instead of corrupting memory).
        unsafe {
            let before = outstanding().len();
            let zeroed = ex_allocate_pool2(POOL_FLAG_NON_PAGED, 100, TAG);
            assert!(!zeroed.is_null() && (zeroed as usize).is_multiple_of(16));
            assert!(std::slice::from_raw_parts(zeroed, 100).iter().all(|&byte| byte == 0));
            let page = ex_allocate_pool2(POOL_FLAG_NON_PAGED, 5000, TAG);
            assert!((page as usize).is_multiple_of(4096));
            assert_eq!(outstanding().len(), before + 2);
            assert!(ex_allocate_pool2(0, 8, TAG).is_null(), "no pool type");
            assert!(ex_allocate_pool2(POOL_FLAG_NON_PAGED, 8, 0).is_null(), "tag 0");

            ex_free_pool_with_tag(zeroed, TAG);
            ex_free_pool_with_tag(zeroed, TAG);
            ex_free_pool_with_tag(0x1234 as *mut u8, TAG);
            ex_free_pool_with_tag(page, u32::from_le_bytes(*b"Othr"));
            assert_eq!(outstanding().len(), before);
        }
        let messages: Vec<String> = violations::take()
            .into_iter()
            .filter(|violation| violation.at.starts_with("Ex"))
            .map(|violation| violation.message)
            .collect();
        assert_eq!(messages.len(), 5, "{messages:#?}");
        assert!(messages[0].contains("invalid pool flags"));
        assert!(messages[1].contains("pool tag 0"));
        assert!(messages[2].contains("double free"));
        assert!(messages[3].contains("not a pool allocation"));
        assert!(messages[4].contains("allocated with tag") && messages[4].contains("Test"));
    }
}
