//! The KPCR of a virtual processor: the page GS points at while a host thread runs driver code, with the
//! fields the driver reads at their Windows offsets (the KPRCB's Number, LegacyNumber and
//! CurrentThread) and the double's per-thread state after them (IRQL, interrupt flag, processor,
//! system affinity, the driver's last kernel call). Every module of `cpu` that needs the calling
//! thread's processor or IRQL finds it here; `super::enter` adds installing the trap handler, which
//! the driver's load has already done before any driver code runs (`crate::driver`).

use super::topology;
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

pub const PASSIVE_LEVEL: u8 = 0;
pub const APC_LEVEL: u8 = 1;
pub const DISPATCH_LEVEL: u8 = 2;
/// The highest device IRQL on x64 (DIRQL).
pub const MAX_DEVICE_LEVEL: u8 = 12;
pub const IPI_LEVEL: u8 = 14;
pub const PROFILE_LEVEL: u8 = 15;
pub const HIGH_LEVEL: u8 = 15;

/// Offset of the KPRCB's LegacyNumber byte (`KeGetCurrentProcessorNumber` before Windows 7:
/// `__readgsbyte(0x184)`).
pub const KPCR_LEGACY_NUMBER: usize = 0x184;
/// Offset of the KPRCB's CurrentThread (`KeGetCurrentThread` in wdm.h: `__readgsqword(0x188)`).
pub const KPCR_CURRENT_THREAD: usize = 0x188;
/// Offset of the KPRCB's Number, the system-wide processor index (`KeGetCurrentProcessorIndex` in
/// wdm.h: `__readgsdword(0x1a4)`), which the driver's overflow handler reads.
pub const KPCR_PROCESSOR_INDEX: usize = 0x1A4;
/// Offset where each export trampoline stores the driver's return address (`mov gs:[0x200], r11`).
pub const KPCR_LAST_CALLER: usize = 0x200;

/// One page that GS points at: the fields the driver reads at their Windows offsets, and the double's
/// own per-thread state after them. Fields are atomics because the SIGSEGV handler updates them on the
/// same thread (never concurrently with other threads).
#[repr(C, align(4096))]
pub struct Kpcr {
    _reserved: [u8; KPCR_LEGACY_NUMBER],
    /// KPRCB.LegacyNumber: the index, as a byte (meaningful below 256 processors).
    legacy_number: AtomicU8,
    _reserved1: [u8; KPCR_CURRENT_THREAD - KPCR_LEGACY_NUMBER - 1],
    /// KPRCB.CurrentThread: this thread's KTHREAD (a thread dispatcher object).
    current_thread: AtomicU64,
    _reserved1b: [u8; KPCR_PROCESSOR_INDEX - KPCR_CURRENT_THREAD - 8],
    /// KPRCB.Number: the current processor's system index.
    processor_index: AtomicU32,
    _reserved2: [u8; KPCR_LAST_CALLER - KPCR_PROCESSOR_INDEX - 4],
    /// Written by the export trampolines: the return address of the driver's last kernel call.
    last_caller: AtomicU64,
    irql: AtomicU8,
    interrupts_enabled: AtomicBool,
    group: AtomicU16,
    number: AtomicU8,
    index: AtomicU32,
    /// Privileged instructions emulated on this thread (the SIGSEGV handler counts them).
    emulated: AtomicU64,
    /// The thread's system affinity (KeSetSystemGroupAffinityThread): group and mask, mask 0 for none.
    affinity_group: AtomicU16,
    affinity_mask: AtomicU64,
    /// Where the thread ran before its first system affinity; KeRevertToUserGroupAffinityThread with a
    /// zero mask returns it there.
    home_processor: AtomicU32,
    /// A processor change requested at DISPATCH_LEVEL, made when the IRQL drops below it.
    pending_processor: AtomicU32,
}

const _: () = {
    assert!(std::mem::offset_of!(Kpcr, legacy_number) == KPCR_LEGACY_NUMBER);
    assert!(std::mem::offset_of!(Kpcr, current_thread) == KPCR_CURRENT_THREAD);
    assert!(std::mem::offset_of!(Kpcr, processor_index) == KPCR_PROCESSOR_INDEX);
    assert!(std::mem::offset_of!(Kpcr, last_caller) == KPCR_LAST_CALLER);
    assert!(std::mem::size_of::<Kpcr>() == 4096);
};

impl Kpcr {
    fn new() -> Kpcr {
        Kpcr {
            _reserved: [0; KPCR_LEGACY_NUMBER],
            legacy_number: AtomicU8::new(0),
            _reserved1: [0; KPCR_CURRENT_THREAD - KPCR_LEGACY_NUMBER - 1],
            current_thread: AtomicU64::new(0),
            _reserved1b: [0; KPCR_PROCESSOR_INDEX - KPCR_CURRENT_THREAD - 8],
            processor_index: AtomicU32::new(0),
            _reserved2: [0; KPCR_LAST_CALLER - KPCR_PROCESSOR_INDEX - 4],
            last_caller: AtomicU64::new(0),
            irql: AtomicU8::new(PASSIVE_LEVEL),
            interrupts_enabled: AtomicBool::new(true),
            group: AtomicU16::new(0),
            number: AtomicU8::new(0),
            index: AtomicU32::new(0),
            emulated: AtomicU64::new(0),
            affinity_group: AtomicU16::new(0),
            affinity_mask: AtomicU64::new(0),
            home_processor: AtomicU32::new(0),
            pending_processor: AtomicU32::new(NO_PROCESSOR),
        }
    }

    pub fn irql(&self) -> u8 {
        self.irql.load(Ordering::Relaxed)
    }

    /// Sets the IRQL. Every change goes through here or [`Kpcr::raise_irql`], which tell the loader
    /// (Force IRQL Checking trims pageable sections at DISPATCH_LEVEL and above).
    pub fn set_irql(&self, irql: u8) {
        self.raise_irql(irql);
    }

    /// Raises (or sets) the IRQL, returning the previous one.
    pub fn raise_irql(&self, irql: u8) -> u8 {
        let previous = self.irql.swap(irql, Ordering::Relaxed);
        crate::image_map::raised_changed(previous >= DISPATCH_LEVEL, irql >= DISPATCH_LEVEL);
        if irql < DISPATCH_LEVEL {
            // An affinity change made at DISPATCH_LEVEL takes effect once the IRQL drops below it.
            let pending = self.pending_processor.swap(NO_PROCESSOR, Ordering::Relaxed);
            if pending != NO_PROCESSOR {
                self.set_processor(pending);
            }
        }
        previous
    }

    pub fn interrupts_enabled(&self) -> bool {
        self.interrupts_enabled.load(Ordering::Relaxed)
    }

    pub fn set_interrupts_enabled(&self, enabled: bool) {
        self.interrupts_enabled.store(enabled, Ordering::Relaxed);
    }

    /// The current virtual processor's system index.
    pub fn processor_index(&self) -> u32 {
        self.index.load(Ordering::Relaxed)
    }

    /// (group, number within the group) of the current virtual processor.
    pub fn processor_number(&self) -> (u16, u8) {
        (self.group.load(Ordering::Relaxed), self.number.load(Ordering::Relaxed))
    }

    /// Moves this thread to virtual processor `index` (of the configured topology).
    pub fn set_processor(&self, index: u32) {
        let (group, number) = topology::number_from_index(index)
            .unwrap_or_else(|| panic!("virtual processor {index} does not exist"));
        self.index.store(index, Ordering::Relaxed);
        self.legacy_number.store(index.min(255) as u8, Ordering::Relaxed);
        self.processor_index.store(index, Ordering::Relaxed);
        self.group.store(group, Ordering::Relaxed);
        self.number.store(number, Ordering::Relaxed);
    }

    /// This thread's KTHREAD, as `gs:[0x188]` gives it to the driver.
    pub fn current_thread(&self) -> usize {
        self.current_thread.load(Ordering::Relaxed) as usize
    }

    /// Makes `thread` (a thread dispatcher object) this thread's KTHREAD.
    pub(crate) fn set_current_thread(&self, thread: usize) {
        self.current_thread.store(thread as u64, Ordering::Relaxed);
    }

    /// The thread's system affinity as (group, mask); mask 0 when it has none.
    pub fn system_affinity(&self) -> (u16, u64) {
        (self.affinity_group.load(Ordering::Relaxed), self.affinity_mask.load(Ordering::Relaxed))
    }

    /// Sets the system affinity (mask 0: none) and moves the thread to `processor` if given: now below
    /// DISPATCH_LEVEL, else when the IRQL drops below it (replacing any move still pending).
    pub(crate) fn set_system_affinity(&self, group: u16, mask: u64, processor: Option<u32>) {
        if mask != 0 && self.affinity_mask.load(Ordering::Relaxed) == 0 {
            self.home_processor.store(self.processor_index(), Ordering::Relaxed);
        }
        self.affinity_group.store(group, Ordering::Relaxed);
        self.affinity_mask.store(mask, Ordering::Relaxed);
        match processor {
            Some(index) if self.irql() < DISPATCH_LEVEL => self.set_processor(index),
            Some(index) => self.pending_processor.store(index, Ordering::Relaxed),
            // The thread may stay where it is: a move still pending from an earlier call is void.
            None => self.pending_processor.store(NO_PROCESSOR, Ordering::Relaxed),
        }
    }

    /// The processor the thread ran on before its first system affinity.
    pub(crate) fn home_processor(&self) -> u32 {
        self.home_processor.load(Ordering::Relaxed)
    }

    /// The return address the last export trampoline saw on this thread.
    pub fn last_caller(&self) -> u64 {
        self.last_caller.load(Ordering::Relaxed)
    }

    pub fn emulated_instructions(&self) -> u64 {
        self.emulated.load(Ordering::Relaxed)
    }

    pub(crate) fn count_emulated(&self) {
        self.emulated.fetch_add(1, Ordering::Relaxed);
    }
}

/// No pending processor change.
const NO_PROCESSOR: u32 = u32::MAX;

thread_local! {
    /// This thread's KPCR (leaked: a page per thread that ever ran driver code). `const` initialised with
    /// no destructor, so the signal handler may read it.
    static KPCR: Cell<*const Kpcr> = const { Cell::new(std::ptr::null()) };
}

const ARCH_SET_GS: libc::c_int = 0x1001;
const ARCH_GET_GS: libc::c_int = 0x1004;

/// Gives this thread a KPCR on virtual processor `index` at PASSIVE_LEVEL (creating the KPCR and
/// pointing GS at it the first time). Returns the KPCR. `super::enter` also installs the trap handler.
pub(super) fn attach(index: u32) -> &'static Kpcr {
    let kpcr = KPCR.with(|slot| {
        if slot.get().is_null() {
            let page: &'static Kpcr = Box::leak(Box::new(Kpcr::new()));
            set_gs_base(page as *const Kpcr as u64);
            slot.set(page);
        }
        // SAFETY: the pointer is a leaked, never freed Kpcr.
        unsafe { &*slot.get() }
    });
    kpcr.set_processor(index);
    kpcr.set_system_affinity(0, 0, None); // Also voids a processor change still pending.
    kpcr.set_irql(PASSIVE_LEVEL);
    give_thread_object(kpcr);
    kpcr
}

/// Where a host thread's KTHREAD comes from: the thread objects are the fake kernel's
/// (`crate::exports::ps`), which says so here before any driver code runs
/// ([`set_thread_object_source`]), so that the processors below it need not know it.
static THREAD_OBJECT_SOURCE: OnceLock<fn() -> usize> = OnceLock::new();

/// Registers the maker of host threads' KTHREADs (once; later calls are ignored).
pub fn set_thread_object_source(source: fn() -> usize) {
    let _ = THREAD_OBJECT_SOURCE.set(source);
}

/// Gives `kpcr`'s thread its KTHREAD (`gs:[0x188]`) if it has none yet and a source is registered.
fn give_thread_object(kpcr: &Kpcr) {
    if kpcr.current_thread() == 0
        && let Some(source) = THREAD_OBJECT_SOURCE.get()
    {
        kpcr.set_current_thread(source());
    }
}

/// This thread's KPCR, created on virtual processor 0 if the thread has none yet.
pub fn current() -> &'static Kpcr {
    match current_if_any() {
        Some(kpcr) => {
            give_thread_object(kpcr);
            kpcr
        }
        None => attach(0),
    }
}

/// This thread's KPCR, if it has one. Safe to call from the signal handler.
pub fn current_if_any() -> Option<&'static Kpcr> {
    let pointer = KPCR.with(Cell::get);
    // SAFETY: non-null pointers in the slot are leaked, never freed Kpcr pages.
    unsafe { pointer.as_ref() }
}

fn set_gs_base(base: u64) {
    // SAFETY: arch_prctl(ARCH_SET_GS) only changes this thread's GS base; nothing in this process uses
    // GS otherwise (see the module comment).
    let result = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_GS, base) };
    assert_eq!(result, 0, "arch_prctl(ARCH_SET_GS) failed: {}", std::io::Error::last_os_error());
}

/// This thread's GS base.
pub fn gs_base() -> u64 {
    let mut base = 0u64;
    // SAFETY: ARCH_GET_GS writes the base to the valid u64 passed.
    let result = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_GET_GS, &mut base as *mut u64) };
    assert_eq!(result, 0, "arch_prctl(ARCH_GET_GS) failed");
    base
}
