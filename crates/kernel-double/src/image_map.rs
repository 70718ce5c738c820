//! Where the loaded image is and what of it is paged out: its address map (for RVAs in violation
//! reports and fault messages) and Driver Verifier's Force IRQL Checking state (the `PAGE*` sections
//! made inaccessible while any processor is at DISPATCH_LEVEL or above; Microsoft Learn, "Force IRQL
//! Checking"). Below both the loader, which fills it, and the virtual processors, which consult it
//! on every IRQL change and fault.

use crate::poison::IgnorePoison;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};

/// One mapped section.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub rva: usize,
    /// Mapped length, rounded up to whole pages.
    pub length: usize,
    pub protection: libc::c_int,
    pub discarded: bool,
}

/// Where the loaded image is, for RVAs in violation reports and for the trap handler.
#[derive(Clone)]
struct Layout {
    base: usize,
    size: usize,
    sections: Vec<Section>,
}

static LAYOUT: RwLock<Option<Layout>> = RwLock::new(None);

/// Force IRQL Checking's state: the pageable sections of the loaded image and whether they are trimmed.
struct Pageable {
    /// (address, length, protection when paged in) of every `PAGE*` section.
    regions: Vec<(usize, usize, libc::c_int)>,
    trimmed: bool,
}

static PAGEABLE: Mutex<Pageable> = Mutex::new(Pageable { regions: Vec::new(), trimmed: false });
/// Whether the loaded image has pageable sections (the fast path of [`irql_changed`] without).
static HAS_PAGEABLE: AtomicBool = AtomicBool::new(false);
/// Threads whose virtual IRQL is DISPATCH_LEVEL or above.
static RAISED: AtomicUsize = AtomicUsize::new(0);
/// Times pageable sections were trimmed, and paged back in after a fault below DISPATCH_LEVEL.
static TRIMS: AtomicUsize = AtomicUsize::new(0);
static PAGE_INS: AtomicUsize = AtomicUsize::new(0);

fn pageable() -> std::sync::MutexGuard<'static, Pageable> {
    PAGEABLE.lock().ignore_poison()
}

impl Pageable {
    fn set_trimmed(&mut self, trimmed: bool) {
        if self.trimmed == trimmed {
            return;
        }
        for &(address, length, protection) in &self.regions {
            let protection = if trimmed { libc::PROT_NONE } else { protection };
            // SAFETY: a section of the loaded image's mapping, page-aligned and rounded to pages.
            unsafe { libc::mprotect(address as *mut libc::c_void, length, protection) };
        }
        self.trimmed = trimmed;
        if trimmed {
            TRIMS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Called on every change of a thread's virtual IRQL (by `crate::cpu::Kpcr`), with whether it was
/// and is at DISPATCH_LEVEL or above: trims the pageable sections when a processor reaches
/// DISPATCH_LEVEL, pages them back in when none is there any more.
pub fn raised_changed(was: bool, is: bool) {
    if was == is {
        return;
    }
    let raised = if is {
        RAISED.fetch_add(1, Ordering::AcqRel) + 1
    } else {
        RAISED.fetch_sub(1, Ordering::AcqRel).saturating_sub(1)
    };
    if !HAS_PAGEABLE.load(Ordering::Acquire) {
        return;
    }
    let mut state = pageable();
    if is {
        state.set_trimmed(true);
    } else if raised == 0 && RAISED.load(Ordering::Acquire) == 0 {
        state.set_trimmed(false);
    }
}

/// What a fault at an address in the image's pageable sections means.
#[derive(Debug, PartialEq, Eq)]
pub enum PageableFault {
    /// Not on a trimmed pageable page: some other fault.
    NotPageable,
    /// Below DISPATCH_LEVEL: paged back in; retry the instruction.
    PagedIn,
    /// At DISPATCH_LEVEL or above: what to report.
    Violation(String),
}

/// The trap handler's question for a SIGSEGV at `address` on a thread at `irql`, `raised` when that
/// is DISPATCH_LEVEL or above.
pub fn pageable_fault(address: u64, irql: u8, raised: bool) -> PageableFault {
    if !HAS_PAGEABLE.load(Ordering::Acquire) {
        return PageableFault::NotPageable;
    }
    let address = address as usize;
    let mut state = pageable();
    let inside = state.regions.iter().any(|&(start, length, _)| address >= start && address < start + length);
    if !inside || !state.trimmed {
        return PageableFault::NotPageable;
    }
    if raised {
        return PageableFault::Violation(format!("pageable code/data touched at IRQL {irql}"));
    }
    state.set_trimmed(false);
    PAGE_INS.fetch_add(1, Ordering::Relaxed);
    PageableFault::PagedIn
}

/// (times the pageable sections were trimmed, times they were paged back in on a fault below
/// DISPATCH_LEVEL), since the process started.
pub fn pageable_statistics() -> (usize, usize) {
    (TRIMS.load(Ordering::Relaxed), PAGE_INS.load(Ordering::Relaxed))
}

/// Registers the pageable sections of the image at `base`, trimmed at once if a processor is raised.
fn set_pageable(base: usize, sections: &[Section]) {
    let mut state = pageable();
    state.trimmed = false;
    state.regions = sections
        .iter()
        .filter(|section| section.name.starts_with("PAGE"))
        .map(|section| (base + section.rva, section.length, section.protection))
        .collect();
    HAS_PAGEABLE.store(!state.regions.is_empty(), Ordering::Release);
    if !state.regions.is_empty() && RAISED.load(Ordering::Acquire) > 0 {
        state.set_trimmed(true);
    }
}

/// Forgets the pageable sections of the image at `base` (unloaded).
fn clear_pageable(base: usize) {
    let mut state = pageable();
    if state.regions.first().is_some_and(|&(address, _, _)| address >= base) {
        HAS_PAGEABLE.store(false, Ordering::Release);
        state.regions.clear();
        state.trimmed = false;
    }
}

/// Records the image mapped at `base`, `size` bytes, with `sections`; its pageable sections are
/// trimmed at once if a processor is raised.
pub(crate) fn install(base: usize, size: usize, sections: &[Section]) {
    *LAYOUT.write().ignore_poison() = Some(Layout { base, size, sections: sections.to_vec() });
    set_pageable(base, sections);
}

/// The sections of the image at `base` after a change (INIT discarded).
pub(crate) fn update_sections(base: usize, sections: &[Section]) {
    if let Some(layout) = LAYOUT.write().ignore_poison().as_mut().filter(|layout| layout.base == base) {
        layout.sections = sections.to_vec();
    }
}

/// Forgets the image at `base` (unmapped).
pub(crate) fn remove(base: usize) {
    let mut layout = LAYOUT.write().ignore_poison();
    if layout.as_ref().is_some_and(|layout| layout.base == base) {
        *layout = None;
        clear_pageable(base);
    }
}

/// `address` as an RVA of the loaded image, if it lies in it.
pub fn rva_of(address: u64) -> Option<u64> {
    let layout = LAYOUT.try_read().ok()?;
    let layout = layout.as_ref()?;
    let base = layout.base as u64;
    (address >= base && address < base + layout.size as u64).then(|| address - base)
}

/// " in SECTION" (and ", discarded") for an address in the image, for fault reports.
pub fn section_note(address: u64) -> String {
    let Ok(layout) = LAYOUT.try_read() else { return String::new() };
    let Some(layout) = layout.as_ref() else { return String::new() };
    let rva = address.wrapping_sub(layout.base as u64) as usize;
    layout
        .sections
        .iter()
        .find(|section| rva >= section.rva && rva < section.rva + section.length)
        .map(|section| {
            format!(
                " in {}{}",
                section.name,
                if section.discarded { ", discarded after DriverEntry" } else { "" }
            )
        })
        .unwrap_or_default()
}
