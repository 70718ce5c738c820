//! The event table: every event the driver counts, the manifest field that publishes it, the
//! profiles that count it, and how each vendor encodes it (Intel's architectural events and the
//! fixed counters that count three of them; AMD's core-PMU events per family). Adding an event is a
//! row here and a counter in the manifest; the row's position is its priority for a general-purpose
//! counter (`crate::pmu::placement`).
//!
//! The encodings and their sources (Intel SDM, Linux, AMD): `docs/pmu.md`.

use super::encoding::Encoding;
use super::model::{ArchEvents, PmuModel, Vendor};

/// Custom events a profile can name: the table's custom rows (the most general-purpose counters any
/// supported processor has).
pub const CUSTOM_EVENTS: usize = 8;

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
    /// A top-down input: on the 4-wide cores, and on the Atom cores of hybrid processors, Gracemont
    /// (Alder and Raptor Lake) and Crestmont (Meteor Lake) ([`IntelAtom`]), each where it has one.
    TopdownInput { four_wide: Option<Encoding>, gracemont: Option<Encoding>, crestmont: Option<Encoding> },
}

/// The Atom cores of hybrid processors whose top-down inputs the driver knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntelAtom {
    /// Alder Lake and Raptor Lake efficient cores (family 6 models 97H, 9AH, B7H, BAH, BFH).
    Gracemont,
    /// Meteor Lake efficient cores (family 6 models AAH, ACH).
    Crestmont,
}

impl IntelAtom {
    /// The Atom core of an efficient core of `model`, if the driver knows its events.
    pub const fn of(model: &PmuModel) -> Option<IntelAtom> {
        if !model.atom || model.family != 6 {
            return None;
        }
        match model.model {
            0x97 | 0x9A | 0xB7 | 0xBA | 0xBF => Some(IntelAtom::Gracemont),
            0xAA | 0xAC => Some(IntelAtom::Crestmont),
            _ => None,
        }
    }

    /// Allocation slots per cycle: Intel's `#Pipeline_Width` (intel/perfmon E-core_TMA_Metrics.csv:
    /// 5 on Gracemont, 6 on Crestmont).
    pub const fn width(self) -> u8 {
        match self {
            IntelAtom::Gracemont => 5,
            IntelAtom::Crestmont => 6,
        }
    }
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
    /// registry: row n counts line n (from 0) of `CustomEvents`, empty while that line is rejected.
    Custom,
}

/// One row of the event table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// The counter manifest's `field` that holds the event's 64-bit count (read by its rate, its
    /// total and the ratio counters it is part of); `None` for an unpublished input.
    pub field: Option<&'static str>,
    pub intel: IntelEncoding,
    pub amd: Option<AmdEncoding>,
    pub group: Group,
}

const fn enc(event: u16, umask: u8) -> Encoding {
    Encoding::new(event, umask)
}

const fn intel(arch_event: ArchEvents, event: u8, umask: u8, fixed_counter: Option<u8>) -> IntelEncoding {
    IntelEncoding::Architectural { arch_event, encoding: enc(event as u16, umask), fixed_counter }
}

const fn published(field: &'static str, intel: IntelEncoding, amd: AmdEncoding) -> EventInfo {
    EventInfo { field: Some(field), intel, amd: Some(amd), group: Group::Default }
}

/// A top-down input: Intel 4-wide core, Gracemont and Crestmont encodings, AMD Zen 4 and later
/// encoding (each if any).
const fn topdown_input(
    four_wide: Option<Encoding>,
    [gracemont, crestmont]: [Option<Encoding>; 2],
    amd: Option<Encoding>,
) -> EventInfo {
    let amd = match amd {
        Some(encoding) => Some(AmdEncoding::Zen4OrLater(encoding)),
        None => None,
    };
    let intel = IntelEncoding::TopdownInput { four_wide, gracemont, crestmont };
    EventInfo { field: None, intel, amd, group: Group::TopdownInputs }
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
        }
    };
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
    /// Atom TOPDOWN_FE_BOUND.ALL, AMD de_no_dispatch_per_slot.no_ops_from_frontend.
    SlotsNotDelivered => topdown_input(
        Some(enc(0x9C, 0x01)),
        [Some(enc(0x71, 0x00)), Some(enc(0x71, 0x00))],
        Some(enc(0x1A0, 0x01)),
    ),
    /// Micro-operations issued (AMD: dispatched): Intel UOPS_ISSUED.ANY, AMD de_src_op_disp.all.
    SlotsIssued => topdown_input(Some(enc(0x0E, 0x01)), [None, None], Some(enc(0xAA, 0x07))),
    /// Retirement slots used: Intel UOPS_RETIRED.RETIRE_SLOTS, Atom TOPDOWN_RETIRING.ALL (C2H on
    /// Gracemont, 72H on Crestmont), AMD ex_ret_ops.
    SlotsRetired => topdown_input(
        Some(enc(0xC2, 0x02)),
        [Some(enc(0xC2, 0x00)), Some(enc(0x72, 0x00))],
        Some(enc(0xC1, 0x00)),
    ),
    /// Cycles the allocator stalled recovering from a misprediction or machine clear: Intel
    /// INT_MISC.RECOVERY_CYCLES (no Atom or AMD counterpart).
    RecoveryCycles => topdown_input(Some(enc(0x0D, 0x01)), [None, None], None),
    /// Atom TOPDOWN_BE_BOUND.ALL: slots the backend could not accept.
    SlotsBackendBound => topdown_input(None, [Some(enc(0x74, 0x00)), Some(enc(0x74, 0x00))], None),
    /// Atom TOPDOWN_BAD_SPECULATION.ALL: slots lost to bad speculation (Crestmont; on Gracemont
    /// Intel's level 1 takes the slots the other three leave).
    SlotsBadSpeculation => topdown_input(None, [None, Some(enc(0x73, 0x00))], None),
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
            IntelEncoding::FourWideCore(_) | IntelEncoding::TopdownInput { .. } => None,
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

/// The events in the order of their bits in the status counters Events Without a Counter and Events
/// Not Supported (documented in the manifest): published events first, in the order users see them,
/// so that a row added to the table does not move a documented bit.
pub const STATUS_BIT_ORDER: [Event; Event::COUNT] = {
    let head = [
        Event::Instructions,
        Event::CoreCycles,
        Event::ReferenceCycles,
        Event::LlcReferences,
        Event::LlcMisses,
        Event::Branches,
        Event::BranchMispredicts,
        Event::SlotsNotDelivered,
        Event::SlotsIssued,
        Event::SlotsRetired,
        Event::RecoveryCycles,
    ];
    let mut order = [Event::Instructions; Event::COUNT];
    let mut bit = 0;
    while bit < head.len() {
        order[bit] = head[bit];
        bit += 1;
    }
    // Then the custom events, in order (bits 11-18).
    let mut custom = 0;
    while custom < CUSTOM_EVENTS {
        order[bit + custom] = Event::CUSTOM[custom];
        custom += 1;
    }
    // Then the Atom cores' own top-down inputs (bits 19-20).
    order[bit + CUSTOM_EVENTS] = Event::SlotsBackendBound;
    order[bit + CUSTOM_EVENTS + 1] = Event::SlotsBadSpeculation;
    order
};

/// A set of [`Event`]s.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct EventSet(u32);

/// The events by name, for the debug output.
impl core::fmt::Debug for EventSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

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

    /// The events of either set.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The set as status bits, bit i for [`STATUS_BIT_ORDER`]'s event i.
    pub fn status_bits(self) -> u32 {
        STATUS_BIT_ORDER
            .iter()
            .enumerate()
            .filter(|&(_, &event)| self.contains(event))
            .fold(0, |bits, (i, _)| bits | 1 << i)
    }

    /// The events of the set, in priority order.
    pub fn iter(self) -> impl Iterator<Item = Event> {
        Event::ALL.into_iter().filter(move |&event| self.contains(event))
    }
}

/// The Intel encoding of `event` on display family `family`, model `model`, if the processor has
/// one; architectural events also need CPUID's say-so ([`encoding`]).
pub const fn intel_encoding(event: Event, family: u8, model: u8) -> Option<Encoding> {
    match event.info().intel {
        IntelEncoding::Architectural { encoding, .. } => Some(encoding),
        IntelEncoding::FourWideCore(encoding) if family == 6 && intel_four_wide_core(model) => Some(encoding),
        IntelEncoding::TopdownInput { four_wide, .. } if family == 6 && intel_four_wide_core(model) => {
            four_wide
        }
        IntelEncoding::FourWideCore(_) | IntelEncoding::TopdownInput { .. } => None,
    }
}

/// The encoding of `event` on the Atom core `atom` of a hybrid processor: its architectural
/// encoding, or its top-down input encoding (intel/perfmon `ADL/events/alderlake_gracemont_core.json`,
/// `MTL/events/meteorlake_crestmont_core.json`).
const fn intel_atom_encoding(event: Event, atom: IntelAtom) -> Option<Encoding> {
    match (event.info().intel, atom) {
        (IntelEncoding::Architectural { encoding, .. }, _) => Some(encoding),
        (IntelEncoding::TopdownInput { gracemont, .. }, IntelAtom::Gracemont) => gracemont,
        (IntelEncoding::TopdownInput { crestmont, .. }, IntelAtom::Crestmont) => crestmont,
        (IntelEncoding::FourWideCore(_), _) => None,
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
/// custom event has no table encoding: see [`Wanted::encoding`](super::placement::Wanted::encoding)).
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
        (Vendor::Intel, _) => match IntelAtom::of(model) {
            Some(atom) => intel_atom_encoding(event, atom),
            None if model.atom => None,
            None => intel_encoding(event, model.family, model.model),
        },
        (Vendor::Amd, _) => amd_encoding(event, model.family, model.model),
    }
}

/// Issue slots per cycle of the cores whose top-down level 1 comes from input events: 4 on Intel's
/// 4-wide cores ([`intel_four_wide_core`]); the Atom cores' allocation width ([`IntelAtom::width`]);
/// AMD dispatch slots, 6 on Zen 4 and 8 on Zen 5 (Linux
/// `tools/perf/pmu-events/arch/x86/amdzen4` and `amdzen5` pipeline utilisation: total dispatch slots
/// are 6 and 8 times ls_not_halted_cyc).
pub const fn topdown_width(model: &PmuModel) -> Option<u8> {
    if let Some(atom) = IntelAtom::of(model) {
        return Some(atom.width());
    }
    match model.vendor {
        Vendor::Intel if model.family == 6 && intel_four_wide_core(model.model) => Some(4),
        Vendor::Amd if model.family >= 0x1A => Some(8),
        Vendor::Amd if amd_zen4_or_later(model.family, model.model) => Some(6),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
