//! Runs the driver's `__chkstk` stack probe on the host, from the very text the driver assembles
//! (src/kernel/chkstk.asm), against a stack whose pages start out inaccessible.
//!
//! Every probe of an inaccessible page faults; a SIGSEGV handler records the page and makes it
//! accessible, so the recorded list is exactly the pages the probe touched, in the order it touched
//! them. A correct probe touches every page of the new frame, from the caller's stack pointer
//! downward, without skipping one (a skipped page is how a large frame jumps over a guard page), and
//! returns with RAX, RSP and every register other than R10 and R11 unchanged.
// Host test plumbing (mmap, signal handlers), not driver code: the driver's one-operation-per-unsafe-block
// rule is not applied here.
#![allow(clippy::multiple_unsafe_ops_per_block)]
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

core::arch::global_asm!(include_str!("../src/kernel/chkstk.asm"));

unsafe extern "C" {
    // Not callable from Rust: its calling convention is special (RAX in, no stack frame).
    fn __chkstk();
}

const PAGE: usize = 4096;
const STACK_PAGES: usize = 40;

/// Pages whose first access faulted, in order.
static FAULTS: [AtomicUsize; STACK_PAGES] = [const { AtomicUsize::new(0) }; STACK_PAGES];
static FAULT_COUNT: AtomicUsize = AtomicUsize::new(0);
/// The guarded region [start, end); faults elsewhere are real crashes.
static REGION: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// The signal handler and the region are process-wide: one probe at a time.
static SERIAL: Mutex<()> = Mutex::new(());

extern "C" fn on_fault(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t for a SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    let (start, end) = (REGION[0].load(Ordering::SeqCst), REGION[1].load(Ordering::SeqCst));
    let page = address & !(PAGE - 1);
    let index = FAULT_COUNT.fetch_add(1, Ordering::SeqCst);
    if address < start || address >= end || index >= STACK_PAGES {
        // Not a probe of the test stack: restore the default action so the fault kills the process.
        // SAFETY: resetting a signal disposition is async-signal-safe.
        unsafe { libc::signal(libc::SIGSEGV, libc::SIG_DFL) };
        return;
    }
    FAULTS[index].store(page, Ordering::SeqCst);
    // SAFETY: `page` lies inside the test's own mapping; mprotect is async-signal-safe.
    unsafe { libc::mprotect(page as *mut libc::c_void, PAGE, libc::PROT_READ | libc::PROT_WRITE) };
}

struct ProbeResult {
    touched_pages: Vec<usize>,
    rax: u64,
    rsp_after: u64,
    preserved: [u64; 8],
}

const SENTINELS: [u64; 8] = [
    0x1111_2222_3333_4444,
    0x5555_6666_7777_8888,
    0x9999_aaaa_bbbb_cccc,
    0xdddd_eeee_ffff_0000,
    0x0123_4567_89ab_cdef,
    0xfedc_ba98_7654_3210,
    0x0f0f_0f0f_f0f0_f0f0,
    0x1357_9bdf_2468_ace0,
];

/// Calls `__chkstk` with RAX = `frame_size` on a fresh stack of STACK_PAGES pages, all inaccessible
/// except the top one, where the caller's RSP sits 64 bytes below the end.
fn probe(frame_size: u64) -> (ProbeResult, usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let length = STACK_PAGES * PAGE;
    // SAFETY: an anonymous private mapping owned by this function.
    let region = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            length,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(region, libc::MAP_FAILED);
    let start = region as usize;
    let top_page = start + length - PAGE;
    // SAFETY: the top page of our own mapping.
    assert_eq!(unsafe { libc::mprotect(top_page as *mut _, PAGE, libc::PROT_READ | libc::PROT_WRITE) }, 0);
    REGION[0].store(start, Ordering::SeqCst);
    REGION[1].store(start + length, Ordering::SeqCst);
    FAULT_COUNT.store(0, Ordering::SeqCst);

    // The handler must run on its own stack: the test stack has a single accessible page.
    let mut alt_stack = vec![0u8; 64 * 1024];
    let alt = libc::stack_t { ss_sp: alt_stack.as_mut_ptr().cast(), ss_flags: 0, ss_size: alt_stack.len() };
    // SAFETY: alt_stack outlives its use (it is disabled again below before being freed).
    assert_eq!(unsafe { libc::sigaltstack(&alt, std::ptr::null_mut()) }, 0);
    // SAFETY: installing a handler with a zeroed, then filled, sigaction.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut()), 0);
    }

    let caller_rsp = (start + length - 64) as u64;
    let (rax, rsp_after, rcx, rdx, rsi, rdi, r8, r9, r14, r15): (
        u64,
        u64,
        u64,
        u64,
        u64,
        u64,
        u64,
        u64,
        u64,
        u64,
    );
    // SAFETY: switches to the test stack (r12 keeps the real RSP, restored right after), calls the probe
    // and switches back. The probe only reads the test stack; every register it may change is declared.
    unsafe {
        core::arch::asm!(
            "mov r12, rsp",
            "mov rsp, r13",
            "call {chkstk}",
            "mov r13, rsp",
            "mov rsp, r12",
            chkstk = sym __chkstk,
            inout("rax") frame_size => rax,
            inout("r13") caller_rsp => rsp_after,
            inout("rcx") SENTINELS[0] => rcx,
            inout("rdx") SENTINELS[1] => rdx,
            inout("rsi") SENTINELS[2] => rsi,
            inout("rdi") SENTINELS[3] => rdi,
            inout("r8") SENTINELS[4] => r8,
            inout("r9") SENTINELS[5] => r9,
            inout("r14") SENTINELS[6] => r14,
            inout("r15") SENTINELS[7] => r15,
            out("r10") _,
            out("r11") _,
            out("r12") _,
        );
    }

    let disable = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
    // SAFETY: turning the alternate stack off and restoring the default SIGSEGV action.
    unsafe {
        libc::sigaltstack(&disable, std::ptr::null_mut());
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
    }
    let count = FAULT_COUNT.load(Ordering::SeqCst);
    let touched_pages =
        FAULTS[..count.min(STACK_PAGES)].iter().map(|page| page.load(Ordering::SeqCst)).collect();
    // SAFETY: unmapping our own region.
    unsafe { libc::munmap(region, length) };
    drop(alt_stack);
    (
        ProbeResult { touched_pages, rax, rsp_after, preserved: [rcx, rdx, rsi, rdi, r8, r9, r14, r15] },
        top_page,
    )
}

/// Every page strictly below the caller's page, down to and including the page of the frame's lowest
/// byte, in descending order.
fn expected_pages(top_page: usize, frame_size: u64) -> Vec<usize> {
    let caller_rsp = top_page + PAGE - 64;
    let lowest_page = (caller_rsp - frame_size as usize) & !(PAGE - 1);
    (lowest_page..top_page).step_by(PAGE).rev().collect()
}

fn check(frame_size: u64) {
    let (result, top_page) = probe(frame_size);
    assert_eq!(
        result.touched_pages,
        expected_pages(top_page, frame_size),
        "frame of {frame_size:#x} bytes: pages touched (top page {top_page:#x})"
    );
    assert_eq!(result.rax, frame_size, "RAX must come back unchanged");
    assert_eq!(result.rsp_after, (top_page + PAGE - 64) as u64, "RSP must come back unchanged");
    assert_eq!(result.preserved, SENTINELS, "only R10 and R11 may change");
}

#[test]
fn frames_within_the_current_page_touch_nothing_new() {
    for size in [0, 1, 8, 0x40] {
        check(size);
    }
}

#[test]
fn a_frame_crossing_into_the_next_page_touches_it() {
    check(0x41);
    check(0xfff);
}

#[test]
fn page_sized_and_larger_frames_touch_every_page_in_order() {
    for size in [0x1000, 0x1001, 0x1fc0, 0x2000, 0x5432, 0x10000, 0x1f000] {
        check(size);
    }
}

#[test]
fn expected_pages_reference_is_not_vacuous() {
    // The reference itself must demand faults for a multi-page frame.
    assert_eq!(expected_pages(0x10_0000, 0x3000).len(), 3);
    assert!(expected_pages(0x10_0000, 0x10).is_empty());
}
