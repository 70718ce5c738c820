//! What an event select register says: the bits of Intel IA32_PERFEVTSELx / AMD PerfCtl and of
//! IA32_FIXED_CTR_CTRL (Intel SDM Vol. 3B, "Architectural Performance Monitoring"; AMD APM Vol. 2,
//! "Performance Event-Select Registers"), and the [`Encoding`] of one event.

use super::model::Vendor;

/// PERFEVTSEL / PerfCtl bit 16: count at CPL > 0.
pub const EVTSEL_USR: u64 = 1 << 16;
/// Bit 17: count at CPL 0.
pub const EVTSEL_OS: u64 = 1 << 17;
/// Bit 20: interrupt (PMI) on overflow.
pub const EVTSEL_INT: u64 = 1 << 20;
/// Bit 22: enable the counter.
pub const EVTSEL_EN: u64 = 1 << 22;
/// AMD PerfCtl bits 35:32 hold event select bits 11:8 (reserved on Intel, where bits 32 and 33 are
/// the TSX qualifiers IN_TX/IN_TXCP on some parts: Intel encodings never reach them).
const AMD_EVENT_HIGH_SHIFT: u32 = 32;

/// IA32_FIXED_CTR_CTRL field bit 0: count at CPL 0.
pub const FIXED_CTRL_OS: u64 = 1 << 0;
/// Field bit 1: count at CPL > 0.
pub const FIXED_CTRL_USR: u64 = 1 << 1;
/// Field bit 3: PMI on overflow.
pub const FIXED_CTRL_PMI: u64 = 1 << 3;
/// Width of one counter's field in IA32_FIXED_CTR_CTRL.
const FIXED_CTRL_FIELD_BITS: u8 = 4;

/// The value of an event select register (Intel IA32_PERFEVTSELx, AMD PerfEvtSel/PerfCtl) counting
/// `event`/`umask` in user and kernel mode, enabled, with INT when `pmi`. `event` bits 11:8 (AMD only)
/// go to bits 35:32; Intel events are below 100H.
pub const fn evtsel(event: u16, umask: u8, pmi: bool) -> u64 {
    let event = event as u64;
    let int = if pmi { EVTSEL_INT } else { 0 };
    (event & 0xFF)
        | ((umask as u64) << 8)
        | EVTSEL_USR
        | EVTSEL_OS
        | int
        | EVTSEL_EN
        | (((event >> 8) & 0xF) << AMD_EVENT_HIGH_SHIFT)
}

/// PERFEVTSEL / PerfCtl bit 18: count rising edges.
pub const EVTSEL_EDGE: u64 = 1 << 18;
/// Bit 23: invert the counter-mask comparison.
pub const EVTSEL_INV: u64 = 1 << 23;
/// Bits 31:24: counter mask.
const EVTSEL_CMASK_SHIFT: u32 = 24;

/// The event select value counting `encoding` on a `vendor` processor (in the privilege levels it
/// names), with INT when `pmi`. Only
/// fields the vendor defines are set: on Intel, event bits past 7 are dropped (bits 35:32 are reserved
/// there), so no encoding can produce a reserved bit.
pub const fn evtsel_for(vendor: Vendor, encoding: Encoding, pmi: bool) -> u64 {
    let event = match vendor {
        Vendor::Intel => encoding.event & 0xFF,
        Vendor::Amd => encoding.event & 0xFFF,
    };
    let edge = if encoding.edge { EVTSEL_EDGE } else { 0 };
    let inv = if encoding.inv { EVTSEL_INV } else { 0 };
    let usr = if encoding.usr { 0 } else { EVTSEL_USR };
    let os = if encoding.os { 0 } else { EVTSEL_OS };
    (evtsel(event, encoding.umask, pmi) & !usr & !os)
        | edge
        | inv
        | ((encoding.cmask as u64) << EVTSEL_CMASK_SHIFT)
}

/// Fixed counter `index`'s field of IA32_FIXED_CTR_CTRL, already shifted: count in OS and user mode,
/// PMI on overflow when `pmi`, AnyThread clear.
pub const fn fixed_ctrl_field(index: u8, pmi: bool) -> u64 {
    let pmi = if pmi { FIXED_CTRL_PMI } else { 0 };
    (FIXED_CTRL_OS | FIXED_CTRL_USR | pmi) << (FIXED_CTRL_FIELD_BITS as u32 * index as u32)
}

/// What an event select counts: event number (12 bits on AMD, 8 on Intel), unit mask, the
/// counter-mask, invert and edge qualifiers and the privilege levels (every table event: no
/// qualifier, both levels; a custom event may set them), and the general-purpose counters it may
/// run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    pub event: u16,
    pub umask: u8,
    pub cmask: u8,
    pub inv: bool,
    pub edge: bool,
    /// Count at CPL > 0 (USR, perf's `:u`).
    pub usr: bool,
    /// Count at CPL 0 (OS, perf's `:k`).
    pub os: bool,
    /// The general-purpose counters the event may use, bit i for counter i: all for the table's
    /// events; a custom event restricts it as Intel's event lists restrict some events (the
    /// "Counter" field of perfmon's JSON files, which Linux turns into event constraints).
    pub counters: u8,
    /// The core types of a hybrid processor the event may run on, bit t for core type t
    /// (`crate::pmu::hybrid::CoreType`): all for the table's events; a custom event's `core=` key
    /// names one. A processor that is not hybrid runs every event whatever this says.
    pub core_types: u8,
}

/// Every core type (bits 0-2 of [`Encoding::core_types`]).
pub const ALL_CORE_TYPES: u8 = 0b111;

impl Encoding {
    /// `event`/`umask` with no qualifier, in both privilege levels, on any counter and core type.
    pub const fn new(event: u16, umask: u8) -> Self {
        Encoding {
            event,
            umask,
            cmask: 0,
            inv: false,
            edge: false,
            usr: true,
            os: true,
            counters: u8::MAX,
            core_types: ALL_CORE_TYPES,
        }
    }
}
