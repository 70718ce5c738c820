//! Single-stepping the driver: a run with EFLAGS.TF set raises SIGTRAP before every instruction; the
//! handler counts those whose next RIP lies in the driver image (driver instructions), and can run a
//! hook at a chosen driver instruction (a test's way to act *between* two driver instructions).
//!
//! An instruction the double emulates (rdmsr, wrmsr, cr8, cpuid) faults instead of trapping, and the one
//! after it runs before the next trap, so [`single_stepped`] adds one per emulated instruction (the
//! KPCR's emulation counter) to its count. Shared by tests/scenarios/pmi_at_every_instruction.rs and
//! benches/double.rs.

#![allow(dead_code)]

use kernel_double::cpu;
use kernel_double::driver::Driver;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

static IMAGE_START: AtomicUsize = AtomicUsize::new(0);
static IMAGE_END: AtomicUsize = AtomicUsize::new(0);
static IN_IMAGE: AtomicU64 = AtomicU64::new(0);
static ALL: AtomicU64 = AtomicU64::new(0);
/// The driver instruction (0-based, in trap order) before which [`HOOK`] runs; u64::MAX for none.
static HOOK_AT: AtomicU64 = AtomicU64::new(u64::MAX);
/// A `fn()` run from the trap handler at [`HOOK_AT`]; 0 for none.
static HOOK: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_trap(_signal: libc::c_int, _info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: an SA_SIGINFO handler's context is this thread's interrupted ucontext_t.
    let rip = unsafe { (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RIP as usize] };
    let rip = rip as usize;
    ALL.fetch_add(1, Ordering::Relaxed);
    if rip >= IMAGE_START.load(Ordering::Relaxed) && rip < IMAGE_END.load(Ordering::Relaxed) {
        let index = IN_IMAGE.fetch_add(1, Ordering::Relaxed);
        let hook = HOOK.load(Ordering::Relaxed);
        if index == HOOK_AT.load(Ordering::Relaxed) && hook != 0 {
            // SAFETY: HOOK holds a `fn()` stored by `single_stepped_with_hook`.
            let hook: fn() = unsafe { std::mem::transmute(hook) };
            hook();
        }
    }
}

/// Installs the SIGTRAP handler that counts `driver`'s instructions.
pub fn install(driver: &Driver) {
    IMAGE_START.store(driver.image().base(), Ordering::SeqCst);
    IMAGE_END.store(driver.image().base() + driver.image().size(), Ordering::SeqCst);
    // SAFETY: a zeroed sigaction with an SA_SIGINFO handler that touches atomics and runs the hook.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_trap as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGTRAP, &action, std::ptr::null_mut()), 0);
    }
}

/// Runs `f` single-stepped on this thread; returns (driver instructions, all instructions traced).
pub fn single_stepped(f: impl FnOnce()) -> (u64, u64) {
    single_stepped_with_hook(f, None)
}

/// Resets the counts and arms `hook` to run just before driver instruction `at` (0-based).
fn arm(hook: Option<(u64, fn())>) {
    IN_IMAGE.store(0, Ordering::SeqCst);
    ALL.store(0, Ordering::SeqCst);
    let (at, hook) = hook.map_or((u64::MAX, 0), |(at, hook)| (at, hook as usize));
    HOOK.store(hook, Ordering::SeqCst);
    HOOK_AT.store(at, Ordering::SeqCst);
}

/// Runs `f` with only the broadcast workers (KeIpiGenericCall) single-stepped, running `hook` from the
/// trap handler just before the workers' driver instruction `at` (0-based, across every worker call of
/// the run), if they get that far. Returns the driver instructions the workers trapped on (emulated
/// instructions and the one after each are not among them).
pub fn workers_stepped_with_hook(f: impl FnOnce(), hook: Option<(u64, fn())>) -> u64 {
    arm(hook);
    kernel_double::control::ke::trace_broadcast_workers(true);
    f();
    kernel_double::control::ke::trace_broadcast_workers(false);
    HOOK.store(0, Ordering::SeqCst);
    IN_IMAGE.load(Ordering::SeqCst)
}

/// As [`single_stepped`], running `hook` from the trap handler just before driver instruction `at`
/// (0-based) executes, if the run gets that far.
#[inline(never)]
pub fn single_stepped_with_hook(f: impl FnOnce(), hook: Option<(u64, fn())>) -> (u64, u64) {
    let kpcr = cpu::current();
    let emulated = kpcr.emulated_instructions();
    arm(hook);
    // SIGTRAP is handled by on_trap (`install`), which resumes.
    cpu::set_trap_flag(true);
    f();
    cpu::set_trap_flag(false);
    HOOK.store(0, Ordering::SeqCst);
    let emulated = kpcr.emulated_instructions() - emulated;
    (IN_IMAGE.load(Ordering::SeqCst) + emulated, ALL.load(Ordering::SeqCst))
}
