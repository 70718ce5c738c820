//! Which counter counts which event: the event encodings per vendor and the counter plan for a
//! [`PmuModel`], with every MSR the plan names.
//!
//! # Encodings and their sources
//!
//! Intel: the seven architectural events (Intel SDM Vol. 3B, "Architectural Performance Monitoring",
//! pre-defined architectural performance events): core cycles 3CH/00H, instructions C0H/00H, reference
//! cycles 3CH/01H, LLC references 2EH/4FH, LLC misses 2EH/41H, branches retired C4H/00H, branch
//! mispredicts retired C5H/00H. Instructions, core cycles and reference cycles are what fixed
//! counters 0, 1 and 2 count, and are placed there when the processor has them.
//!
//! AMD (core PMU; the generic-event maps of Linux arch/x86/events/amd/core.c, whose cycles,
//! instructions and branch events match AMD's own CodeXL event list and the perf JSON event tables
//! "ls_not_halted_cyc" 0x76, "ex_ret_instr" 0xC0):
//!
//! | event | family 10h-16h (`amd_perfmon_event_map`) | 17h+ (`amd_zen1/zen2/zen4_perfmon_event_map`) |
//! |---|---|---|
//! | instructions | C0H | C0H |
//! | core cycles (cycles not in halt) | 76H | 76H |
//! | "LLC" references | 7DH/07H (L2 requests) | 60H/FFH (L2 cache requests, all) |
//! | "LLC" misses | 7EH/07H (L2 misses) | 64H/09H (core-to-L2 requests that miss) |
//! | branches retired | C2H | C2H |
//! | mispredicted branches retired | C3H | C3H |
//! | reference cycles | none | 120H, Zen 4 and later only |
//!
//! On AMD the L3 sits behind its own L3 PMU, so the "LLC" pair counts L2 traffic, exactly as Linux's
//! cache-references/cache-misses do on the same processors. Reference cycles: PMCx120 counts cycles
//! not in halt at the P0 frequency (like MPERF); Linux maps ref-cycles to it on Zen 4 and later
//! ("perf/x86/amd/core: Define a proper ref-cycles event for Zen 4 and later", 2024), choosing that
//! map for family 19h models 10h-1Fh and 60h-AFh (X86_FEATURE_ZEN4 in arch/x86/kernel/cpu/amd.c) and
//! every family from 1Ah. Earlier AMD processors have no core event for it: not counted.
//!
//! # The plan
//!
//! Events the processor cannot count are *unavailable* (Intel: CPUID.0AH marks them, [`PmuModel::
//! unavailable`]; AMD: no encoding). Intel instructions, core cycles and reference cycles take fixed
//! counters 0, 1, 2 (those that exist). The remaining events take general-purpose counters in the
//! order of [`Event::ALL`] (the table's order); those that find none are *dropped*:
//!
//! 1. instructions and core cycles: instructions per cycle, the one ratio every consumer wants;
//! 2. LLC misses before LLC references, branch mispredicts before branches: with instructions, a
//!    miss or mispredict count alone already gives misses per kilo-instruction, whereas a reference
//!    or branch count alone only feeds a percentage that also needs its partner;
//! 3. reference cycles last: on Intel it normally sits on fixed counter 2 and never competes; on AMD
//!    Zen 4 (6 counters for 7 events) it yields to the branch pair.
//!
//! AMD family 15h runs the events of its "CU" group, 060H-07FH (here cycles 76H, L2 requests 7DH and
//! L2 misses 7EH), only on counters 0-2, while the EX_LS group 0C0H-0CFH (instructions and branches)
//! may use all six (Linux `amd_get_event_constraints_f15h`: AMD_EVENT_CU -> `amd_f15_PMC20`,
//! AMD_EVENT_EX_LS -> `amd_f15_PMC50`); the plan honours that by placing the most constrained events
//! first. The other AMD families are unconstrained for these events (Linux: `unconstrained` before
//! family 15h; family 17h+ constrains only "pair" and BRS sampling events). Intel architectural events
//! are taken as unconstrained: the SDM defines them for any IA32_PMCx (not checked against every
//! model's constraint table or errata).
//!
//! HAL counter indices ([`Assignment::hal_index`]): on Intel the IA32_PERF_GLOBAL_CTRL bit number
//! (GP i = i, fixed j = 32 + j), which is *unverified*: ntddk.h's PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR
//! and its Microsoft Learn page name a CounterIndex without saying how fixed counters are numbered. On
//! AMD the counter number.

use super::model::{ArchEvents, PmuModel, Vendor};
use super::profile::{CUSTOM_EVENTS, Profile, Selection};

/// Model-specific registers the plan names.
pub mod msr {
    /// IA32_PMC0, the first Intel general-purpose counter; counter i is `IA32_PMC0 + i`. A read returns
    /// the full counter width; a write is sign-extended from bit 31 (a full-width write needs the
    /// IA32_A_PMCi alias, available when `IA32_PERF_CAPABILITIES[13]` is set).
    pub const IA32_PMC0: u32 = 0xC1;
    /// IA32_PERFEVTSEL0, the event select of IA32_PMC0; counter i is `IA32_PERFEVTSEL0 + i`.
    pub const IA32_PERFEVTSEL0: u32 = 0x186;
    /// IA32_FIXED_CTR0 (instructions retired); fixed counter j is `IA32_FIXED_CTR0 + j` (j = 1 core
    /// cycles, j = 2 reference cycles).
    pub const IA32_FIXED_CTR0: u32 = 0x309;
    /// IA32_FIXED_CTR_CTRL: one 4-bit field per fixed counter (OS, USR, AnyThread, PMI).
    pub const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
    /// IA32_PERF_GLOBAL_STATUS: overflow bits, GP i = bit i, fixed j = bit 32 + j.
    pub const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
    /// IA32_PERF_GLOBAL_CTRL: enable bits, GP i = bit i, fixed j = bit 32 + j.
    pub const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
    /// IA32_PERF_GLOBAL_OVF_CTRL (IA32_PERF_GLOBAL_STATUS_RESET from version 4): writing 1 clears the
    /// matching IA32_PERF_GLOBAL_STATUS bit.
    pub const IA32_PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
    /// IA32_FIXED_CTR3: TOPDOWN.SLOTS, the pipeline slots IA32_PERF_METRICS divides (Intel SDM Vol. 3B,
    /// "Performance Monitoring (Topdown Microarchitecture Analysis)").
    pub const IA32_FIXED_CTR3: u32 = 0x30C;
    /// IA32_PERF_METRICS: four 8-bit fractions (of 0xFF) of the slots fixed counter 3 counted since
    /// both were last zeroed: bits 7:0 retiring, 15:8 bad speculation, 23:16 frontend bound, 31:24
    /// backend bound (Linux `arch/x86/events/intel/core.c`, `icl_get_metrics_event_value`).
    pub const IA32_PERF_METRICS: u32 = 0x329;
    /// IA32_PERF_CAPABILITIES: read-only capabilities, present when `CPUID.01H:ECX[15]` (PDCM).
    pub const IA32_PERF_CAPABILITIES: u32 = 0x345;
    /// IA32_MPERF (AMD MPERF, same number): counts at a fixed frequency while in C0. Read only: the
    /// operating system owns it.
    pub const IA32_MPERF: u32 = 0xE7;
    /// IA32_APERF (AMD APERF): counts at the actual frequency while in C0. Read only, like IA32_MPERF.
    pub const IA32_APERF: u32 = 0xE8;
    /// AMD legacy PerfEvtSel0 (MSRC001_0000, Linux MSR_K7_EVNTSEL0); counter i is `+ i`, i < 4.
    pub const AMD_PERF_EVT_SEL0: u32 = 0xC001_0000;
    /// AMD legacy PerfCtr0 (MSRC001_0004, Linux MSR_K7_PERFCTR0); counter i is `+ i`, i < 4.
    pub const AMD_PERF_CTR0: u32 = 0xC001_0004;
    /// AMD core PerfCtl0 with PerfCtrExtCore (MSRC001_0200, Linux MSR_F15H_PERF_CTL); counter i is
    /// `+ 2 * i`.
    pub const AMD_PERF_CTL_CORE0: u32 = 0xC001_0200;
    /// AMD core PerfCtr0 with PerfCtrExtCore (MSRC001_0201, Linux MSR_F15H_PERF_CTR); counter i is
    /// `+ 2 * i`.
    pub const AMD_PERF_CTR_CORE0: u32 = 0xC001_0201;
    /// AMD PerfMonV2 PerfCntrGlobalStatus (Linux MSR_AMD64_PERF_CNTR_GLOBAL_STATUS): overflow bit i
    /// for counter i.
    pub const AMD_PERF_CNTR_GLOBAL_STATUS: u32 = 0xC000_0300;
    /// AMD PerfMonV2 PerfCntrGlobalCtl (Linux MSR_AMD64_PERF_CNTR_GLOBAL_CTL): enable bit i for counter
    /// i, ANDed with each PerfCtl's EN bit.
    pub const AMD_PERF_CNTR_GLOBAL_CTL: u32 = 0xC000_0301;
    /// AMD PerfMonV2 PerfCntrGlobalStatusClr (Linux MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR): writing 1
    /// clears the matching status bit.
    pub const AMD_PERF_CNTR_GLOBAL_STATUS_CLR: u32 = 0xC000_0302;
}

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
/// IA32_PERF_GLOBAL_CTRL/STATUS bit of fixed counter 0.
const INTEL_FIXED_GLOBAL_BIT0: u8 = 32;

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

/// The event select value counting `encoding` on a `vendor` processor, with INT when `pmi`. Only
/// fields the vendor defines are set: on Intel, event bits past 7 are dropped (bits 35:32 are reserved
/// there), so no encoding can produce a reserved bit.
pub const fn evtsel_for(vendor: Vendor, encoding: Encoding, pmi: bool) -> u64 {
    let event = match vendor {
        Vendor::Intel => encoding.event & 0xFF,
        Vendor::Amd => encoding.event & 0xFFF,
    };
    let edge = if encoding.edge { EVTSEL_EDGE } else { 0 };
    let inv = if encoding.inv { EVTSEL_INV } else { 0 };
    evtsel(event, encoding.umask, pmi) | edge | inv | ((encoding.cmask as u64) << EVTSEL_CMASK_SHIFT)
}

/// Fixed counter `index`'s field of IA32_FIXED_CTR_CTRL, already shifted: count in OS and user mode,
/// PMI on overflow when `pmi`, AnyThread clear.
pub const fn fixed_ctrl_field(index: u8, pmi: bool) -> u64 {
    let pmi = if pmi { FIXED_CTRL_PMI } else { 0 };
    (FIXED_CTRL_OS | FIXED_CTRL_USR | pmi) << (FIXED_CTRL_FIELD_BITS as u32 * index as u32)
}

/// How an AMD core PMU counts an event (see the table in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmdEncoding {
    /// The same encoding on every family.
    Always(Encoding),
    /// One encoding from family 17h (Zen), another before it.
    ZenOrEarlier { zen: Encoding, earlier: Encoding },
    /// Only on Zen 4 and later (Linux's X86_FEATURE_ZEN4 test: family 19h models 10h-1Fh and 60h-AFh, or
    /// family 1Ah and later).
    Zen4OrLater(Encoding),
}

/// How an Intel processor counts an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntelEncoding {
    /// An architectural event (CPUID.0AH:EBX marks it unavailable), with the fixed counter that counts
    /// it, if one does.
    Architectural { arch_event: ArchEvents, encoding: Encoding, fixed_counter: Option<u8> },
    /// A model-specific event of the 4-wide cores from Sandy Bridge to Comet Lake
    /// ([`intel_four_wide_core`]), which share its encoding.
    FourWideCore(Encoding),
}

/// Which profiles count an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The published events every profile counts when counters allow.
    Default,
    /// Inputs of top-down level 1 on processors without IA32_PERF_METRICS (`crate::pmu::topdown`),
    /// counted by the topdown profile; not published themselves.
    TopdownInputs,
    /// The custom profile's raw events (`crate::pmu::profile`), whose encodings come from the
    /// registry: row n counts the n-th accepted `CustomEvents` line.
    Custom,
}

/// One row of the event table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// The counter manifest's `field` that holds the event's 64-bit count (a field named this plus
    /// `Scaled` holds the count divided by 2^10 for ratio counters); `None` for an unpublished input.
    pub field: Option<&'static str>,
    pub intel: IntelEncoding,
    pub amd: Option<AmdEncoding>,
    pub group: Group,
}

const fn enc(event: u16, umask: u8) -> Encoding {
    Encoding { event, umask, cmask: 0, inv: false, edge: false }
}

const fn intel(arch_event: ArchEvents, event: u8, umask: u8, fixed_counter: Option<u8>) -> IntelEncoding {
    IntelEncoding::Architectural { arch_event, encoding: enc(event as u16, umask), fixed_counter }
}

const fn published(field: &'static str, intel: IntelEncoding, amd: AmdEncoding) -> EventInfo {
    EventInfo { field: Some(field), intel, amd: Some(amd), group: Group::Default }
}

/// A top-down input: Intel 4-wide core encoding, AMD Zen 4 and later encoding (if any).
const fn topdown_input(intel: Encoding, amd: Option<Encoding>) -> EventInfo {
    let amd = match amd {
        Some(encoding) => Some(AmdEncoding::Zen4OrLater(encoding)),
        None => None,
    };
    EventInfo { field: None, intel: IntelEncoding::FourWideCore(intel), amd, group: Group::TopdownInputs }
}

/// Custom event `n` (its encoding comes from the profile, so the Intel and AMD columns are unused).
const fn custom(field: &'static str) -> EventInfo {
    EventInfo {
        field: Some(field),
        intel: IntelEncoding::FourWideCore(enc(0, 0)),
        amd: None,
        group: Group::Custom,
    }
}

/// Declares [`Event`] and its table from one list, so that the two cannot disagree.
macro_rules! event_table {
    ($($(#[$doc:meta])* $event:ident => $info:expr,)*) => {
        /// The events the driver counts and publishes. Declared in priority order: the order in which
        /// events get general-purpose counters (see the module docs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Event {
            $($(#[$doc])* $event,)*
        }

        impl Event {
            /// Every event, in priority order.
            pub const ALL: [Event; [$(Event::$event),*].len()] = [$(Event::$event),*];
            /// How many events there are.
            pub const COUNT: usize = Self::ALL.len();
            const TABLE: [EventInfo; Self::COUNT] = [$($info),*];

            /// Calls `visitor` with this event's [`Event::index`] as a const parameter, so that what
            /// the visitor looks up per event is a constant in each arm (one jump per call, where a
            /// table looked up at run time costs a load and a test per entry).
            #[inline(always)]
            pub fn visit<V: EventVisitor>(self, visitor: V) {
                match self {
                    $(Event::$event => visitor.visit::<{ Event::$event as usize }>(),)*
                }
            }
        }
    };
}

/// Work done per event with the event known at compile time: [`Event::visit`].
pub trait EventVisitor {
    /// Called for the event whose [`Event::index`] is `EVENT`.
    fn visit<const EVENT: usize>(self);
}

// The event table: adding an event is a row here and a counter (with the row's `field`) in the
// manifest. Encodings: see the module docs.
event_table! {
    /// Instructions retired.
    Instructions => published(
        "InstructionsRetired",
        intel(ArchEvents::INSTRUCTIONS, 0xC0, 0x00, Some(0)),
        AmdEncoding::Always(enc(0xC0, 0x00)),
    ),
    /// Core cycles while not halted.
    CoreCycles => published(
        "CoreCycles",
        intel(ArchEvents::CORE_CYCLES, 0x3C, 0x00, Some(1)),
        AmdEncoding::Always(enc(0x76, 0x00)),
    ),
    /// Issue slots the frontend delivered no micro-operation to: Intel IDQ_UOPS_NOT_DELIVERED.CORE,
    /// AMD de_no_dispatch_per_slot.no_ops_from_frontend.
    SlotsNotDelivered => topdown_input(enc(0x9C, 0x01), Some(enc(0x1A0, 0x01))),
    /// Micro-operations issued (AMD: dispatched): Intel UOPS_ISSUED.ANY, AMD de_src_op_disp.all.
    SlotsIssued => topdown_input(enc(0x0E, 0x01), Some(enc(0xAA, 0x07))),
    /// Retirement slots used: Intel UOPS_RETIRED.RETIRE_SLOTS, AMD ex_ret_ops.
    SlotsRetired => topdown_input(enc(0xC2, 0x02), Some(enc(0xC1, 0x00))),
    /// Cycles the allocator stalled recovering from a misprediction or machine clear: Intel
    /// INT_MISC.RECOVERY_CYCLES (no AMD counterpart).
    RecoveryCycles => topdown_input(enc(0x0D, 0x01), None),
    /// The custom profile's events, in `CustomEvents` order.
    Custom0 => custom("CustomEvent0"),
    Custom1 => custom("CustomEvent1"),
    Custom2 => custom("CustomEvent2"),
    Custom3 => custom("CustomEvent3"),
    Custom4 => custom("CustomEvent4"),
    Custom5 => custom("CustomEvent5"),
    Custom6 => custom("CustomEvent6"),
    Custom7 => custom("CustomEvent7"),
    /// Last-level cache misses (AMD: L2 misses).
    LlcMisses => published(
        "LlcMisses",
        intel(ArchEvents::LLC_MISSES, 0x2E, 0x41, None),
        AmdEncoding::ZenOrEarlier { zen: enc(0x64, 0x09), earlier: enc(0x7E, 0x07) },
    ),
    /// Last-level cache references (AMD: L2 requests).
    LlcReferences => published(
        "LlcReferences",
        intel(ArchEvents::LLC_REFERENCES, 0x2E, 0x4F, None),
        AmdEncoding::ZenOrEarlier { zen: enc(0x60, 0xFF), earlier: enc(0x7D, 0x07) },
    ),
    /// Mispredicted branch instructions retired.
    BranchMispredicts => published(
        "BranchMispredicts",
        intel(ArchEvents::BRANCH_MISPREDICTS, 0xC5, 0x00, None),
        AmdEncoding::Always(enc(0xC3, 0x00)),
    ),
    /// Branch instructions retired.
    Branches => published(
        "Branches",
        intel(ArchEvents::BRANCHES, 0xC4, 0x00, None),
        AmdEncoding::Always(enc(0xC2, 0x00)),
    ),
    /// Reference (constant-rate) cycles while not halted.
    ReferenceCycles => published(
        "ReferenceCycles",
        intel(ArchEvents::REFERENCE_CYCLES, 0x3C, 0x01, Some(2)),
        AmdEncoding::Zen4OrLater(enc(0x120, 0x00)),
    ),
}

impl Event {
    /// Position in [`Event::ALL`] (and in per-event arrays).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The event's row of the table.
    pub const fn info(self) -> &'static EventInfo {
        &Self::TABLE[self as usize]
    }

    /// The custom events, in order.
    pub const CUSTOM: [Event; CUSTOM_EVENTS] = [
        Event::Custom0,
        Event::Custom1,
        Event::Custom2,
        Event::Custom3,
        Event::Custom4,
        Event::Custom5,
        Event::Custom6,
        Event::Custom7,
    ];

    /// Which custom event this is, if it is one.
    pub const fn custom_index(self) -> Option<usize> {
        let mut index = 0;
        while index < CUSTOM_EVENTS {
            if Self::CUSTOM[index] as u8 == self as u8 {
                return Some(index);
            }
            index += 1;
        }
        None
    }

    /// The Intel fixed counter that counts this event, if one does.
    pub const fn intel_fixed_counter(self) -> Option<u8> {
        match self.info().intel {
            IntelEncoding::Architectural { fixed_counter, .. } => fixed_counter,
            IntelEncoding::FourWideCore(_) => None,
        }
    }

    /// The event whose table `field` is `field`, if any (a `const fn`, so that a manifest field is
    /// matched to its event at compile time).
    pub const fn with_field(field: &str) -> Option<Event> {
        let mut index = 0;
        while index < Self::COUNT {
            if let Some(name) = Self::TABLE[index].field
                && str_eq(name, field)
            {
                return Some(Self::ALL[index]);
            }
            index += 1;
        }
        None
    }
}

/// `a == b` in a `const fn`.
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A set of [`Event`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventSet(u32);

const _: () = assert!(Event::COUNT <= u32::BITS as usize, "EventSet holds one bit per event");

impl EventSet {
    pub const EMPTY: Self = Self(0);
    /// The events of the default profile.
    pub const DEFAULT: Self = Self::of_group(Group::Default);
    /// The published events and the top-down inputs: the topdown profile.
    pub const TOPDOWN: Self = Self(Self::DEFAULT.0 | Self::of_group(Group::TopdownInputs).0);

    /// The events of the table in `group`.
    pub const fn of_group(group: Group) -> Self {
        let mut set = Self::EMPTY;
        let mut index = 0;
        while index < Event::COUNT {
            if Event::TABLE[index].group as u8 == group as u8 {
                set = set.with(Event::ALL[index]);
            }
            index += 1;
        }
        set
    }

    pub const fn contains(self, event: Event) -> bool {
        self.0 & (1 << event as u8) != 0
    }

    pub const fn with(self, event: Event) -> Self {
        Self(self.0 | (1 << event as u8))
    }

    #[cfg(test)]
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The events of the set, in priority order.
    pub fn iter(self) -> impl Iterator<Item = Event> {
        Event::ALL.into_iter().filter(move |&event| self.contains(event))
    }
}

/// What an event select counts: event number (12 bits on AMD, 8 on Intel), unit mask, and the
/// counter-mask, invert and edge qualifiers (0 for every table event; a custom event may set them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    pub event: u16,
    pub umask: u8,
    pub cmask: u8,
    pub inv: bool,
    pub edge: bool,
}

/// The Intel encoding of `event` on display family `family`, model `model`, if the processor has
/// one; architectural events also need CPUID's say-so ([`encoding`]).
pub const fn intel_encoding(event: Event, family: u8, model: u8) -> Option<Encoding> {
    match event.info().intel {
        IntelEncoding::Architectural { encoding, .. } => Some(encoding),
        IntelEncoding::FourWideCore(encoding) if family == 6 && intel_four_wide_core(model) => Some(encoding),
        IntelEncoding::FourWideCore(_) => None,
    }
}

/// The 4-wide Intel cores whose top-down level 1 Linux computes from IDQ_UOPS_NOT_DELIVERED.CORE,
/// UOPS_ISSUED.ANY, UOPS_RETIRED.RETIRE_SLOTS and INT_MISC.RECOVERY_CYCLES over 4 slots per cycle
/// (the TopdownL1 metrics of `tools/perf/pmu-events/arch/x86/` sandybridge, jaketown, ivybridge,
/// ivytown, haswell, haswellx, broadwell, broadwellx, broadwellde, skylake, skylakex, cascadelakex):
/// family 6 display models 2AH, 2DH, 3AH, 3EH, 3CH, 3FH, 45H, 46H, 3DH, 47H, 4FH, 56H, 4EH, 5EH, 55H,
/// 8EH, 9EH, A5H, A6H. Ice Lake and later cores have IA32_PERF_METRICS instead.
pub const fn intel_four_wide_core(model: u8) -> bool {
    matches!(
        model,
        0x2A | 0x2D
            | 0x3A
            | 0x3E
            | 0x3C
            | 0x3F
            | 0x45
            | 0x46
            | 0x3D
            | 0x47
            | 0x4F
            | 0x56
            | 0x4E
            | 0x5E
            | 0x55
            | 0x8E
            | 0x9E
            | 0xA5
            | 0xA6
    )
}

/// The AMD core-PMU encoding of `event` on display family `family`, model `model`, if the processor
/// has one (see the table in the module docs).
pub const fn amd_encoding(event: Event, family: u8, model: u8) -> Option<Encoding> {
    match event.info().amd {
        Some(AmdEncoding::Always(encoding)) => Some(encoding),
        Some(AmdEncoding::ZenOrEarlier { zen, .. }) if family >= 0x17 => Some(zen),
        Some(AmdEncoding::ZenOrEarlier { earlier, .. }) => Some(earlier),
        Some(AmdEncoding::Zen4OrLater(encoding)) if amd_zen4_or_later(family, model) => Some(encoding),
        Some(AmdEncoding::Zen4OrLater(_)) | None => None,
    }
}

/// Linux's test for the Zen 4 event map: X86_FEATURE_ZEN4 (family 19h, models 10h-1Fh and
/// 60h-AFh) or family 1Ah and later.
const fn amd_zen4_or_later(family: u8, model: u8) -> bool {
    family >= 0x1A || (family == 0x19 && matches!(model, 0x10..=0x1F | 0x60..=0xAF))
}

/// The encoding `model`'s processor counts table `event` with, or `None` if it cannot count it (a
/// custom event has no table encoding: see [`Wanted::encoding`]).
pub const fn encoding(model: &PmuModel, event: Event) -> Option<Encoding> {
    if matches!(event.info().group, Group::Custom) {
        return None;
    }
    match (model.vendor, event.info().intel) {
        (Vendor::Intel, IntelEncoding::Architectural { arch_event, .. })
            if model.unavailable.contains(arch_event) =>
        {
            None
        }
        (Vendor::Intel, _) => intel_encoding(event, model.family, model.model),
        (Vendor::Amd, _) => amd_encoding(event, model.family, model.model),
    }
}

/// What a profile asks the counters for: a set of events, and the custom events' encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub events: EventSet,
    pub custom: [Option<Encoding>; CUSTOM_EVENTS],
}

impl Wanted {
    /// The default profile.
    #[cfg(test)]
    pub const DEFAULT: Wanted = Wanted { events: EventSet::DEFAULT, custom: [None; CUSTOM_EVENTS] };

    /// What `selection` asks for: the published events; with the topdown inputs for `topdown`;
    /// instructions, both cycle counts and the accepted custom events for `custom`.
    pub fn of(selection: &Selection) -> Wanted {
        let events = match selection.profile {
            Profile::Default => EventSet::DEFAULT,
            Profile::Topdown => EventSet::TOPDOWN,
            Profile::Custom => {
                Event::CUSTOM.iter().zip(&selection.custom).filter(|(_, encoding)| encoding.is_some()).fold(
                    EventSet::EMPTY
                        .with(Event::Instructions)
                        .with(Event::CoreCycles)
                        .with(Event::ReferenceCycles),
                    |set, (&event, _)| set.with(event),
                )
            }
        };
        Wanted { events, custom: selection.custom }
    }

    /// The encoding `event` is counted with on `model`: the table's, or the profile's for a custom
    /// event.
    pub fn encoding(&self, model: &PmuModel, event: Event) -> Option<Encoding> {
        match event.custom_index() {
            Some(index) => self.custom[index],
            None => encoding(model, event),
        }
    }
}

/// The general-purpose counters `encoding` may run on: counters `0..limit` (see the module docs on
/// AMD family 15h).
const fn counter_limit(model: &PmuModel, encoding: Encoding) -> u8 {
    let f15h_cu_event = matches!(model.vendor, Vendor::Amd)
        && model.family == 0x15
        && encoding.event >= 0x60
        && encoding.event <= 0x7F;
    if f15h_cu_event && model.gp_counters > 3 { 3 } else { model.gp_counters }
}

/// A kind of counter and its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Intel fixed-function counter j.
    Fixed(u8),
    /// General-purpose counter i (Intel IA32_PMCi, AMD PerfCtr i).
    General(u8),
}

/// One event on one counter, with everything the PMU client writes and reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub event: Event,
    pub slot: Slot,
    /// The counter to read (and zero).
    pub counter_msr: u32,
    /// The `rdpmc` index that reads the counter, where there is one: Intel general-purpose counter i
    /// is i, fixed counter j is 2^30 + j (Intel SDM Vol. 2B, RDPMC); AMD core counter i is i for
    /// i < 6 (AMD APM Vol. 3, RDPMC: indexes 6 and up read other units' counters).
    pub rdpmc: Option<u32>,
    /// The event select (IA32_PERFEVTSELi, AMD PerfEvtSel/PerfCtl) or, for a fixed counter,
    /// IA32_FIXED_CTR_CTRL, which all fixed counters share.
    pub control_msr: u32,
    /// The value to write to `control_msr`; for a fixed counter only this counter's field, already
    /// shifted (OR the fields of all fixed counters, [`CounterPlan::fixed_ctrl`]).
    pub control: u64,
    /// Bit in IA32_PERF_GLOBAL_CTRL/STATUS (Intel: GP i = i, fixed j = 32 + j) or in AMD PerfMonV2's
    /// PerfCntrGlobalCtl/Status (counter i = i); `None` on AMD without PerfMonV2.
    pub global_bit: Option<u8>,
    /// CounterIndex for HalAllocateHardwareCounters' ResourceTypeSingle descriptor: the global bit on
    /// Intel (unverified, see the module comment), the counter number on AMD.
    pub hal_index: u32,
    /// Counter width in bits.
    pub width: u8,
}

impl Assignment {
    /// A placeholder for the unused places of a [`CounterPlan`]; never iterated.
    const UNUSED: Assignment = Assignment {
        event: Event::Instructions,
        slot: Slot::General(0),
        counter_msr: 0,
        rdpmc: None,
        control_msr: 0,
        control: 0,
        global_bit: None,
        hal_index: 0,
        width: 0,
    };
}

/// Most counters a plan uses: the seven events, and one spare.
pub const MAX_ASSIGNMENTS: usize = 8;

/// Which counter counts which event on every processor of a model, and which events go uncounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterPlan {
    /// Fixed counters first (by number), then general-purpose counters (by number).
    /// The first `len` are the plan's; the rest are [`Assignment::UNUSED`] (no `Option`: the read
    /// path iterates these once per counter per collect, and unwrapping costs instructions there).
    assignments: [Assignment; MAX_ASSIGNMENTS],
    len: usize,
    unavailable: EventSet,
    dropped: EventSet,
    /// Fixed counter 3 and IA32_PERF_METRICS count top-down level 1 ([`PmuModel::topdown_metrics`]);
    /// they are zeroed at every read, so they are not an [`Assignment`] (which is extended to 64 bits).
    topdown_metrics: bool,
    /// Every top-down input the processor has is counted: top-down level 1 comes from them, with
    /// this many issue slots per cycle.
    topdown_width: Option<u8>,
}

/// Fixed counter 3, TOPDOWN.SLOTS.
const TOPDOWN_FIXED_COUNTER: u8 = 3;
/// IA32_PERF_GLOBAL_CTRL bit 48, EN_PERF_METRICS.
pub const GLOBAL_CTRL_EN_PERF_METRICS: u64 = 1 << 48;
/// RDPMC ECX bit 30: read the fixed counter that ECX bits 29:0 number (Intel SDM Vol. 2B, RDPMC).
pub const RDPMC_FIXED: u32 = 1 << 30;
/// RDPMC ECX bit 29: read IA32_PERF_METRICS (Intel SDM Vol. 2B, RDPMC; Linux
/// `INTEL_PMC_FIXED_RDPMC_METRICS`).
pub const RDPMC_PERF_METRICS: u32 = 1 << 29;
/// RDPMC reads AMD core counters 0-5 by number.
const AMD_RDPMC_CORE_COUNTERS: u32 = 6;

impl CounterPlan {
    const EMPTY: Self = Self {
        assignments: [Assignment::UNUSED; MAX_ASSIGNMENTS],
        len: 0,
        unavailable: EventSet::EMPTY,
        dropped: EventSet::EMPTY,
        topdown_metrics: false,
        topdown_width: None,
    };

    fn push(&mut self, assignment: Assignment) {
        self.assignments[self.len] = assignment;
        self.len += 1;
    }

    /// The assignments: fixed counters first, then general-purpose counters, each by number.
    pub fn iter(&self) -> impl Iterator<Item = &Assignment> {
        self.as_slice().iter()
    }

    /// The assignments as a slice (slot i is element i).
    #[inline(always)]
    pub fn as_slice(&self) -> &[Assignment] {
        &self.assignments[..self.len.min(MAX_ASSIGNMENTS)]
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The assignment counting `event`, if it is counted.
    #[cfg(test)]
    pub fn get(&self, event: Event) -> Option<&Assignment> {
        self.iter().find(|assignment| assignment.event == event)
    }

    /// The events that are counted.
    pub fn counted(&self) -> EventSet {
        self.iter().fold(EventSet::EMPTY, |set, assignment| set.with(assignment.event))
    }

    /// Events this processor cannot count (marked unavailable by CPUID, or no encoding on this vendor).
    #[cfg(test)]
    pub fn unavailable(&self) -> EventSet {
        self.unavailable
    }

    /// Events the processor could count but that found no free counter.
    #[cfg(test)]
    pub fn dropped(&self) -> EventSet {
        self.dropped
    }

    /// Whether fixed counter 3 and IA32_PERF_METRICS count top-down level 1 (Intel, PERF_METRICS).
    pub fn topdown_metrics(&self) -> bool {
        self.topdown_metrics
    }

    /// The issue slots per cycle, when top-down level 1 comes from counted input events.
    pub fn topdown_width(&self) -> Option<u8> {
        self.topdown_width
    }

    /// The IA32_PERF_GLOBAL_CTRL (Intel) or PerfCntrGlobalCtl (AMD PerfMonV2) value enabling exactly
    /// this plan's counters (fixed counter 3 included); 0 on AMD without PerfMonV2.
    pub fn global_ctrl(&self) -> u64 {
        self.assigned_global_bits() | self.topdown_global_bit()
    }

    /// The global status bits of the plan's [`Assignment`]s: the counters whose overflows are folded.
    /// Fixed counter 3 is zeroed at every read and never wraps between two (see `crate::pmu::topdown`).
    pub fn assigned_global_bits(&self) -> u64 {
        self.iter().filter_map(|assignment| assignment.global_bit).fold(0, |mask, bit| mask | (1 << bit))
    }

    /// Fixed counter 3's enable and EN_PERF_METRICS (bit 48), without which IA32_PERF_METRICS does
    /// not split the slots (Intel SDM Vol. 3B, "Performance Metrics"; Linux
    /// `GLOBAL_CTRL_EN_PERF_METRICS`).
    fn topdown_global_bit(&self) -> u64 {
        if self.topdown_metrics {
            (1 << (INTEL_FIXED_GLOBAL_BIT0 + TOPDOWN_FIXED_COUNTER)) | GLOBAL_CTRL_EN_PERF_METRICS
        } else {
            0
        }
    }

    /// The IA32_FIXED_CTR_CTRL value for this plan's fixed counters (0 when it uses none). Fixed
    /// counter 3 counts in both modes with no PMI.
    pub fn fixed_ctrl(&self) -> u64 {
        let topdown = if self.topdown_metrics { fixed_ctrl_field(TOPDOWN_FIXED_COUNTER, false) } else { 0 };
        self.iter()
            .filter(|assignment| matches!(assignment.slot, Slot::Fixed(_)))
            .fold(topdown, |value, assignment| value | assignment.control)
    }

    /// The fixed counter numbers the plan uses (fixed counter 3 included).
    pub fn fixed_counters(&self) -> impl Iterator<Item = u8> + '_ {
        let topdown = self.topdown_metrics.then_some(TOPDOWN_FIXED_COUNTER);
        self.iter()
            .filter_map(|assignment| match assignment.slot {
                Slot::Fixed(index) => Some(index),
                Slot::General(_) => None,
            })
            .chain(topdown)
    }

    /// HalAllocateHardwareCounters CounterIndex values of every counter the plan uses.
    pub fn hal_indexes(&self) -> impl Iterator<Item = u32> + '_ {
        let topdown =
            self.topdown_metrics.then_some(u32::from(INTEL_FIXED_GLOBAL_BIT0 + TOPDOWN_FIXED_COUNTER));
        self.iter().map(|assignment| assignment.hal_index).chain(topdown)
    }
}

/// The plan for `model`, with overflow interrupts enabled exactly when the model can deliver them
/// ([`PmuModel::overflow_interrupt`]).
#[cfg(test)]
pub fn plan(model: &PmuModel) -> CounterPlan {
    plan_with_pmi(model, model.overflow_interrupt)
}

/// The default profile's plan for `model`, with the INT/PMI bits of every control value set when
/// `pmi` (a client that could not register an overflow handler polls instead and passes `false`).
#[cfg(test)]
pub fn plan_with_pmi(model: &PmuModel, pmi: bool) -> CounterPlan {
    plan_for(model, &Wanted::DEFAULT, pmi)
}

/// Issue slots per cycle of the cores whose top-down level 1 comes from input events: 4 on Intel's
/// 4-wide cores ([`intel_four_wide_core`]); AMD dispatch slots, 6 on Zen 4 and 8 on Zen 5 (Linux
/// `tools/perf/pmu-events/arch/x86/amdzen4` and `amdzen5` pipeline utilisation: total dispatch slots
/// are 6 and 8 times ls_not_halted_cyc).
pub const fn topdown_width(model: &PmuModel) -> Option<u8> {
    match model.vendor {
        Vendor::Intel if model.family == 6 && intel_four_wide_core(model.model) => Some(4),
        Vendor::Amd if model.family >= 0x1A => Some(8),
        Vendor::Amd if amd_zen4_or_later(model.family, model.model) => Some(6),
        _ => None,
    }
}

/// The plan counting the events of `wanted` that `model` has, by priority.
pub fn plan_for(model: &PmuModel, wanted: &Wanted, pmi: bool) -> CounterPlan {
    let mut plan = place(model, wanted, pmi);
    let inputs = EventSet::of_group(Group::TopdownInputs);
    let available = inputs
        .iter()
        .filter(|&event| wanted.events.contains(event) && encoding(model, event).is_some())
        .fold(EventSet::EMPTY, EventSet::with);
    let counted = plan.counted();
    if counted.contains(Event::CoreCycles)
        && !available.is_empty()
        && available.iter().all(|event| counted.contains(event))
    {
        plan.topdown_width = topdown_width(model);
    }
    plan
}

fn place(model: &PmuModel, wanted: &Wanted, pmi: bool) -> CounterPlan {
    let mut plan = CounterPlan::EMPTY;
    plan.topdown_metrics = model.topdown_metrics();
    let mut placed = EventSet::EMPTY;
    for event in wanted.events.iter() {
        if wanted.encoding(model, event).is_none() {
            plan.unavailable = plan.unavailable.with(event);
        }
    }
    // Fixed counters are placed first but go in the plan after the general-purpose ones, in counter
    // order: the plan's slots then follow their global status bits (general-purpose i = bit i, fixed j
    // = bit 32 + j), so each slot is its counter's overflow slot (crate::pmu::fold's rank of the
    // status bit among the owned ones).
    let mut fixed_assignments: [Option<Assignment>; MAX_ASSIGNMENTS] = [None; MAX_ASSIGNMENTS];
    if model.vendor == Vendor::Intel {
        for event in wanted.events.iter() {
            let Some(fixed) = event.intel_fixed_counter() else { continue };
            if fixed < model.fixed_counters && !plan.unavailable.contains(event) {
                if let Some(entry) = fixed_assignments.get_mut(usize::from(fixed)) {
                    *entry = Some(intel_fixed(model, event, fixed, pmi));
                }
                placed = placed.with(event);
            }
        }
    }

    // General-purpose counters: take events in priority order while the chosen set still fits the
    // counters' constraints, then place the most constrained first, each on its lowest free counter.
    let mut chosen: [Option<(Event, Encoding, u8)>; MAX_ASSIGNMENTS] = [None; MAX_ASSIGNMENTS];
    let mut chosen_len = 0;
    for event in wanted.events.iter() {
        if placed.contains(event) {
            continue;
        }
        let Some(encoding) = wanted.encoding(model, event) else { continue };
        let candidate = (event, encoding, counter_limit(model, encoding));
        if chosen_len < MAX_ASSIGNMENTS && fits(&chosen[..chosen_len], candidate.2, model.gp_counters) {
            chosen[chosen_len] = Some(candidate);
            chosen_len += 1;
        } else {
            plan.dropped = plan.dropped.with(event);
        }
    }
    let chosen = &mut chosen[..chosen_len];
    // Stable insertion sort by limit, ties kept in priority order (no stable sort in core without alloc;
    // at most MAX_ASSIGNMENTS elements).
    let limit = |candidate: &Option<(Event, Encoding, u8)>| candidate.map_or(u8::MAX, |(_, _, limit)| limit);
    for i in 1..chosen.len() {
        let mut j = i;
        while j > 0 && limit(&chosen[j - 1]) > limit(&chosen[j]) {
            chosen.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut general: [Option<Assignment>; MAX_ASSIGNMENTS] = [None; MAX_ASSIGNMENTS];
    for (counter, (event, encoding, _)) in chosen.iter().flatten().enumerate() {
        // `fits` guarantees that the k-th most constrained event may use counter k.
        general[counter] = Some(general_purpose(model, *event, *encoding, counter as u8, pmi));
    }
    for assignment in general.into_iter().chain(fixed_assignments).flatten() {
        plan.push(assignment);
    }
    plan
}

/// Whether the events in `chosen` plus one allowed on counters `0..limit` can each get a distinct
/// counter among `0..counters`. Allowed sets are prefixes of the counters, so sorted by limit the
/// k-th event (from 0) must allow counter k.
fn fits(chosen: &[Option<(Event, Encoding, u8)>], limit: u8, counters: u8) -> bool {
    let mut limits = [0u8; MAX_ASSIGNMENTS + 1];
    let mut len = 0;
    for (_, _, chosen_limit) in chosen.iter().flatten() {
        limits[len] = *chosen_limit;
        len += 1;
    }
    limits[len] = limit;
    len += 1;
    let limits = &mut limits[..len];
    limits.sort_unstable();
    len <= usize::from(counters) && limits.iter().enumerate().all(|(k, &limit)| k < usize::from(limit))
}

fn intel_fixed(model: &PmuModel, event: Event, fixed: u8, pmi: bool) -> Assignment {
    Assignment {
        event,
        slot: Slot::Fixed(fixed),
        counter_msr: msr::IA32_FIXED_CTR0 + u32::from(fixed),
        rdpmc: Some(RDPMC_FIXED | u32::from(fixed)),
        control_msr: msr::IA32_FIXED_CTR_CTRL,
        control: fixed_ctrl_field(fixed, pmi),
        global_bit: Some(INTEL_FIXED_GLOBAL_BIT0 + fixed),
        hal_index: u32::from(INTEL_FIXED_GLOBAL_BIT0 + fixed),
        width: model.fixed_width,
    }
}

fn general_purpose(model: &PmuModel, event: Event, encoding: Encoding, counter: u8, pmi: bool) -> Assignment {
    let index = u32::from(counter);
    let (counter_msr, control_msr, global_bit) = match model.vendor {
        Vendor::Intel => (msr::IA32_PMC0 + index, msr::IA32_PERFEVTSEL0 + index, Some(counter)),
        // PerfMonV2 is defined on the PerfCtrExtCore registers.
        Vendor::Amd if model.amd_core_extended || model.amd_perfmon_v2 => (
            msr::AMD_PERF_CTR_CORE0 + 2 * index,
            msr::AMD_PERF_CTL_CORE0 + 2 * index,
            model.amd_perfmon_v2.then_some(counter),
        ),
        Vendor::Amd => (msr::AMD_PERF_CTR0 + index, msr::AMD_PERF_EVT_SEL0 + index, None),
    };
    let rdpmc = match model.vendor {
        Vendor::Intel => Some(index),
        Vendor::Amd => (index < AMD_RDPMC_CORE_COUNTERS).then_some(index),
    };
    Assignment {
        event,
        slot: Slot::General(counter),
        counter_msr,
        rdpmc,
        control_msr,
        control: evtsel_for(model.vendor, encoding, pmi),
        global_bit,
        hal_index: index,
        width: model.gp_width,
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
