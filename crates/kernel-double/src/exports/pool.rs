//! ExAllocatePool2, ExAllocatePoolWithTag and ExFreePoolWithTag with Driver Verifier's pool tracking:
//! every allocation's tag and size, frees with the wrong tag, double frees and frees of unknown
//! addresses, and a leak report; both allocation routines share it, and fault injection.
//!
//! **Special pool** (Driver Verifier's, for every allocation): each block gets its own mapping whose
//! last page is a no-access guard page, and the block ends against it: a block below a page is placed
//! at the end of its page, at the 16-byte alignment both routines give, so at most 15 bytes of slack lie
//! between its end and the guard; a block of a page or more starts on a page boundary. Touching the
//! guard page faults, and the trap handler reports it ([`guard_fault`]) as an access past the end of
//! the allocation, naming its tag, size and the driver's instruction, then aborts the process (Verifier's
//! bug check 0xCD). The slack is filled with a pattern checked on free, which catches writes past the
//! end that stop short of the guard page (a violation, as Verifier's 0xC1).
//!
//! [`guard_fault`]: control::guard_fault

use super::call::{Call, enter};
use super::faults::FaultPlan;
use crate::cpu::{APC_LEVEL, DISPATCH_LEVEL};
use crate::poison::IgnorePoison;
use crate::status::STATUS_INSUFFICIENT_RESOURCES;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

const POOL_FLAG_UNINITIALIZED: u64 = 0x2;
const POOL_FLAG_NON_PAGED: u64 = 0x40;
const POOL_FLAG_NON_PAGED_EXECUTE: u64 = 0x80;
const POOL_FLAG_PAGED: u64 = 0x100;
/// Every flag ExAllocatePool2 documents (wdm.h POOL_FLAG_*, required and optional).
const POOL_FLAG_KNOWN: u64 = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100;
const PAGE: usize = 4096;
/// What the slack between a block's end and its guard page holds until the block is freed.
const SLACK_PATTERN: u8 = 0xCD;
/// What an allocation the routine does not zero holds when the driver gets it.
const UNINITIALIZED_PATTERN: u8 = 0xA5;

/// One live allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub address: usize,
    pub size: usize,
    pub tag: u32,
    /// The routine that made it (ExAllocatePool2 or ExAllocatePoolWithTag).
    pub allocator: &'static str,
}

impl Allocation {
    /// The tag as the four characters pool tools show.
    pub fn tag_text(&self) -> String {
        String::from_utf8_lossy(&self.tag.to_le_bytes()).into_owned()
    }

    /// The special pool mapping holding the block: (start, length including the guard page).
    fn mapping(&self) -> (usize, usize) {
        let pages = self.size.max(1).div_ceil(PAGE);
        let guard = self.guard_page();
        (guard - pages * PAGE, (pages + 1) * PAGE)
    }

    /// The no-access page right after the block (and its slack).
    pub fn guard_page(&self) -> usize {
        if self.size >= PAGE {
            self.address + self.size.div_ceil(PAGE) * PAGE
        } else {
            self.address + self.size.max(1).next_multiple_of(16)
        }
    }

    /// The slack bytes between the block's end and its guard page.
    fn slack(&self) -> std::ops::Range<usize> {
        self.address + self.size..self.guard_page()
    }
}

#[derive(Default)]
struct Pool {
    live: HashMap<usize, Allocation>,
    /// Addresses freed and not reused since, to tell a double free from a wild pointer.
    freed: HashSet<usize>,
    /// Allocations so far by the routine that was called.
    made_by: HashMap<&'static str, u64>,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);
/// Both allocation routines' calls with valid arguments, in one sequence, and the injected failures.
static ALLOCATIONS: FaultPlan = FaultPlan::new();

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    f(POOL.lock().ignore_poison().get_or_insert_with(Pool::default))
}

/// Maps a special pool block of `size` bytes (ExAllocatePool2's alignment: 16 bytes below a page, a
/// page from a page up) ending against a guard page; returns its address, or null.
fn map_block(size: usize) -> *mut u8 {
    let pages = size.max(1).div_ceil(PAGE);
    let length = (pages + 1) * PAGE;
    // SAFETY: an anonymous private mapping with no address hint: touches no existing memory.
    let start = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            length,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if start == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let guard = start as usize + pages * PAGE;
    // SAFETY: the last page of the mapping just made.
    if unsafe { libc::mprotect(guard as *mut libc::c_void, PAGE, libc::PROT_NONE) } != 0 {
        // SAFETY: the mapping just made, which nothing else refers to.
        unsafe { libc::munmap(start, length) };
        return std::ptr::null_mut();
    }
    let address = if size >= PAGE { start as usize } else { guard - size.max(1).next_multiple_of(16) };
    address as *mut u8
}

/// `PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag)`: IRQL <= DISPATCH_LEVEL
/// (APC_LEVEL for paged pool). Zeroed unless POOL_FLAG_UNINITIALIZED. Exported from Windows 10 version
/// 2004 on ([`crate::kernel_build`]).
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
    allocate(&call, size, tag, flags & POOL_FLAG_UNINITIALIZED == 0)
}

/// POOL_TYPE values (wdm.h) a driver may pass to ExAllocatePoolWithTag and the double models.
const NON_PAGED_POOL: u32 = 0;
const PAGED_POOL: u32 = 1;
const NON_PAGED_POOL_NX: u32 = 512;
/// POOL_COLD_ALLOCATION (wdm.h): an advisory hint, ignored.
const POOL_COLD_ALLOCATION: u32 = 256;

/// `PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag)`: IRQL <=
/// DISPATCH_LEVEL (APC_LEVEL for paged pool); the memory is not zeroed
/// (<https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-exallocatepoolwithtag>). Its
/// alignment (16 bytes below a page, a page from a page up) is ExAllocatePool2's, so both share the
/// special pool, tracking and fault injection. The double takes NonPagedPool, NonPagedPoolNx and
/// PagedPool, optionally with POOL_COLD_ALLOCATION; any other type is a violation: the must-succeed and
/// session types are for the system only (POOL_TYPE on Microsoft Learn), and the cache-aligned types and
/// POOL_RAISE_IF_ALLOCATION_FAILURE are not modelled. The tag must be non-zero, as for ExAllocatePool2.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ex_allocate_pool_with_tag(pool_type: u32, size: usize, tag: u32) -> *mut u8 {
    let base_type = pool_type & !POOL_COLD_ALLOCATION;
    let call =
        enter("ExAllocatePoolWithTag", if base_type == PAGED_POOL { APC_LEVEL } else { DISPATCH_LEVEL });
    if ![NON_PAGED_POOL, PAGED_POOL, NON_PAGED_POOL_NX].contains(&base_type) {
        call.violation(format!(
            "pool type {pool_type:#x} is not one a driver may pass (or the double models)"
        ));
        return std::ptr::null_mut();
    }
    allocate(&call, size, tag, false)
}

/// What both allocation routines do once their pool type is checked: the tag check, fault injection,
/// then a special pool block, zeroed or filled with a pattern that makes reliance on zeroes visible
/// (uninitialised pool is not zero on Windows), and its tracking.
fn allocate(call: &Call, size: usize, tag: u32, zeroed: bool) -> *mut u8 {
    if tag == 0 {
        call.violation("pool tag 0".into());
        return std::ptr::null_mut();
    }
    let fail = ALLOCATIONS.next().is_some();
    with_pool(|pool| *pool.made_by.entry(call.export).or_default() += 1);
    if fail || size > (1 << 32) {
        return std::ptr::null_mut();
    }
    let memory = map_block(size);
    if !memory.is_null() {
        let allocation = Allocation { address: memory as usize, size, tag, allocator: call.export };
        // The mapping is zeroed.
        if !zeroed {
            // SAFETY: the block's `size` bytes lie in the writable part of the new mapping.
            unsafe { memory.write_bytes(UNINITIALIZED_PATTERN, size) };
        }
        let slack = allocation.slack();
        // SAFETY: the slack lies between the block and the guard page, in the writable mapping.
        unsafe { (slack.start as *mut u8).write_bytes(SLACK_PATTERN, slack.len()) };
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
            let slack = allocation.slack();
            // SAFETY: the slack is mapped and readable until the munmap below.
            let slack_bytes = unsafe { std::slice::from_raw_parts(slack.start as *const u8, slack.len()) };
            if let Some(first) = slack_bytes.iter().position(|&byte| byte != SLACK_PATTERN) {
                call.violation(format!(
                    "special pool: the {}-byte allocation tagged {:?} at {address:#x} was written past its \
                     end (at +{:#x}), found when it was freed",
                    allocation.size,
                    allocation.tag_text(),
                    allocation.size + first
                ));
            }
            let (start, length) = allocation.mapping();
            // SAFETY: the block's own mapping, freed once (removed from the live set above); the driver
            // must not touch it again (if it does, the fault is reported as a crash).
            unsafe { libc::munmap(start as *mut libc::c_void, length) };
        }
        Err(true) => call.violation(format!("double free of {address:#x}")),
        Err(false) => call.violation(format!("free of {address:#x}, which is not a pool allocation")),
    }
}

#[cfg(test)]
mod tests {
    use super::control::*;
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

            // Special pool: a 24-byte block ends 8 bytes before its guard page (16-byte alignment).
            let block = ex_allocate_pool2(POOL_FLAG_NON_PAGED, 24, TAG);
            let guard = block as u64 + 32;
            assert_eq!(guard % 4096, 0);
            assert_eq!(guard_fault(guard + 100).map(|allocation| allocation.size), Some(24));
            assert!(guard_fault(guard - 1).is_none());
            let described = describe_guard_fault(guard).unwrap();
            assert!(described.contains("24-byte allocation tagged \"Test\""), "{described}");
            assert!(described.contains("8 bytes past its end"), "{described}");
            assert!(!readable(guard), "the guard page is no-access");
            assert!(readable(guard - 1));
            // A write into the slack is found when the block is freed.
            block.add(26).write(0);
            ex_free_pool_with_tag(block, TAG);

            // ExAllocatePoolWithTag: the same tracking and special pool, memory not zeroed.
            let before_with_tag = allocation_count_by("ExAllocatePoolWithTag");
            let old = ex_allocate_pool_with_tag(NON_PAGED_POOL_NX, 40, TAG);
            assert!(!old.is_null() && (old as usize).is_multiple_of(16));
            assert!(std::slice::from_raw_parts(old, 40).iter().all(|&byte| byte == UNINITIALIZED_PATTERN));
            assert_eq!(
                guard_fault(old as u64 + 48).map(|allocation| allocation.allocator),
                Some("ExAllocatePoolWithTag")
            );
            assert!(ex_allocate_pool_with_tag(2, 8, TAG).is_null(), "NonPagedPoolMustSucceed");
            assert!(ex_allocate_pool_with_tag(NON_PAGED_POOL_NX, 8, 0).is_null(), "tag 0");
            assert_eq!(allocation_count_by("ExAllocatePoolWithTag"), before_with_tag + 1);
            ex_free_pool_with_tag(old, u32::from_le_bytes(*b"Othr"));
        }
        // all(), not take(): other unit tests of this process record violations of their own.
        let messages: Vec<String> = violations::all()
            .into_iter()
            .filter(|violation| violation.at.starts_with("Ex"))
            .map(|violation| violation.message)
            .collect();
        assert_eq!(messages.len(), 9, "{messages:#?}");
        assert!(messages[0].contains("invalid pool flags"));
        assert!(messages[1].contains("pool tag 0"));
        assert!(messages[2].contains("double free"));
        assert!(messages[3].contains("not a pool allocation"));
        assert!(messages[4].contains("allocated with tag") && messages[4].contains("Test"));
        assert!(messages[5].contains("24-byte allocation tagged \"Test\""), "{}", messages[5]);
        assert!(messages[5].contains("written past its end (at +0x1a)"), "{}", messages[5]);
        assert!(messages[6].contains("pool type 0x2"), "{}", messages[6]);
        assert!(messages[7].contains("pool tag 0"), "{}", messages[7]);
        assert!(
            messages[8].contains("allocated with tag") && messages[8].contains("Test"),
            "{}",
            messages[8]
        );
    }

    /// Whether this process can read the byte at `address` (without faulting).
    fn readable(address: u64) -> bool {
        let mut byte = 0u8;
        let local = libc::iovec { iov_base: (&raw mut byte).cast(), iov_len: 1 };
        let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: 1 };
        // SAFETY: reads one byte of this process into `byte`; an unreadable address fails the call.
        unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) == 1 }
    }
}
