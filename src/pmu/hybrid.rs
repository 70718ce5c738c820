//! Hybrid processors: which kind of core each logical processor is, and what each kind can count.
//!
//! A hybrid Intel processor (Alder Lake and later client parts) mixes performance cores and efficient
//! cores whose PMUs differ: an i9-12900K's Golden Cove cores have 8 general-purpose and 4 fixed
//! counters with IA32_PERF_METRICS, its Gracemont cores 6 and 3 without it. The driver describes every
//! processor on that processor (CPUID and IA32_PERF_CAPABILITIES are per logical processor), completes
//! what leaf 0xA leaves out ([`own_counters`]: leaf 0x23 where the processor has it, Linux's Alder and
//! Raptor Lake rule where not), and keeps one model per core type ([`Machine::of`]): each type gets
//! its own plan, HAL allocation (on its processors) and programming, so no core is given a counter it
//! lacks and none is denied one it has. What every processor has (the intersection) still decides
//! whether the PMU is usable at all. Sources and the reasoning: `docs/hybrid.md`.
//!
//! Sources: hybrid flag `CPUID.(EAX=07H,ECX=0):EDX[15]`, core type `CPUID.1AH:EAX[31:24]` (20H Intel Atom,
//! 40H Intel Core), Intel SDM Vol. 2A, CPUID, "Hybrid Information Enumeration Leaf (EAX = 1AH)".

use super::model::{Detection, PmuModel};
use core::ops::{Deref, DerefMut};
use raw_cpuid::CpuIdReader;

/// Which kind of core a logical processor is: the value of the "Core Type" counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum CoreType {
    /// Not a hybrid processor, or a core type this driver does not know.
    #[default]
    Uniform = 0,
    /// A performance core (Intel Core, leaf 1AH core type 40H).
    Performance = 1,
    /// An efficient core (Intel Atom, leaf 1AH core type 20H).
    Efficient = 2,
}

/// `CPUID.1AH:EAX[31:24]` of an Intel Atom core.
const CORE_TYPE_ATOM: u32 = 0x20;
/// `CPUID.1AH:EAX[31:24]` of an Intel Core core.
const CORE_TYPE_CORE: u32 = 0x40;
/// `CPUID.(EAX=07H,ECX=0):EDX[15]`, Hybrid.
const HYBRID_FLAG: u32 = 1 << 15;
/// The hybrid information leaf.
const HYBRID_INFORMATION_LEAF: u32 = 0x1A;

impl CoreType {
    /// The core type of the processor `reader` executes CPUID on. raw-cpuid 11 decodes neither the
    /// hybrid flag nor leaf 1AH, so both are read raw, once the maximum basic leaf covers them.
    pub fn detect<R: CpuIdReader>(reader: R) -> CoreType {
        let max_leaf = reader.cpuid1(0).eax;
        if max_leaf < HYBRID_INFORMATION_LEAF || reader.cpuid2(7, 0).edx & HYBRID_FLAG == 0 {
            return CoreType::Uniform;
        }
        match reader.cpuid2(HYBRID_INFORMATION_LEAF, 0).eax >> 24 {
            CORE_TYPE_CORE => CoreType::Performance,
            CORE_TYPE_ATOM => CoreType::Efficient,
            _ => CoreType::Uniform,
        }
    }

    /// Every core type, in the order of their counter values.
    #[cfg(test)]
    pub const ALL: [CoreType; 3] = [CoreType::Uniform, CoreType::Performance, CoreType::Efficient];
}

/// One logical processor as it describes itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessorDescription {
    pub core_type: CoreType,
    /// Its PMU, with IA32_PERF_CAPABILITIES read on it.
    pub detection: Detection,
}

/// How many [`CoreType`] values there are: the length of per-core-type arrays.
pub const CORE_TYPES: usize = 3;

/// The machine's PMU: what every processor has, and what each core type has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// What every processor can count: the first unusable detection, or the intersection of all.
    pub detection: Detection,
    /// Each core type's PMU (indexed by `CoreType as usize`): the intersection of that type's
    /// processors; `None` where no processor is of that type.
    pub types: [Option<Detection>; CORE_TYPES],
}

impl Machine {
    /// The machine of `processors` (at least one; with none, nothing is usable).
    pub fn of(processors: impl IntoIterator<Item = ProcessorDescription>) -> Machine {
        let mut detection = None;
        let mut types = [None; CORE_TYPES];
        for processor in processors {
            let of_type = &mut types[processor.core_type as usize];
            *of_type =
                Some(of_type.map_or(processor.detection, |so_far| common(so_far, processor.detection)));
            detection =
                Some(detection.map_or(processor.detection, |so_far| common(so_far, processor.detection)));
        }
        let detection = detection.unwrap_or(Detection::Unusable(super::model::Unusable::UnknownVendor));
        Machine { detection, types }
    }

    /// The PMU of `core_type`'s processors, when the machine's PMU is usable and there are some.
    pub fn model_of(&self, core_type: usize) -> Option<PmuModel> {
        match (self.detection, self.types.get(core_type).copied().flatten()) {
            (Detection::Usable(_), Some(Detection::Usable(model))) => Some(model),
            _ => None,
        }
    }

    /// Each core type present, with its PMU, when the machine's PMU is usable.
    pub fn models(&self) -> impl Iterator<Item = (usize, PmuModel)> + '_ {
        (0..CORE_TYPES).filter_map(|core_type| self.model_of(core_type).map(|model| (core_type, model)))
    }

    /// More than one core type: each gets its own HAL allocation, on its own processors.
    pub fn hybrid(&self) -> bool {
        self.models().count() > 1
    }
}

/// [`PerCoreType`]'s core type index: [`CORE_TYPES`] rounded up to a power of two, so that a core
/// type is masked into range (the overflow handler looks its mask up with no bounds test).
pub const CORE_TYPE_PLACES: usize = CORE_TYPES.next_power_of_two();

/// One entry per core type the machine has, found by core type: the session's core type sessions,
/// the last plans and the overflow handler's masks (in the manner of Linux's `hybrid(pmu, field)`
/// accessor, arch/x86/events/perf_event.h, which finds a hybrid PMU's own copy of a field). `E`
/// holds the entries: an allocation with one per core type present, in the order of the machine's
/// core types ([`Machine::models`]), or [`Inline`], a place for every core type. A machine of one
/// core type has one entry, which [`PerCoreType::uniform`] gives without a lookup by core type.
pub struct PerCoreType<E> {
    /// Each core type's entry (`u8::MAX`: the machine has no processor of that type).
    index: [u8; CORE_TYPE_PLACES],
    /// The entry of every processor where all are of one core type, else `u8::MAX`.
    uniform: u8,
    entries: E,
}

impl<T, E: Deref<Target = [T]>> PerCoreType<E> {
    /// The table of `machine`'s core types over `entries`, one per type present, in order.
    pub fn new(machine: &Machine, entries: E) -> Self {
        let mut index = [u8::MAX; CORE_TYPE_PLACES];
        let mut present = 0;
        for (core_type, _) in machine.models() {
            index[core_type] = present;
            present += 1;
        }
        debug_assert!(usize::from(present) <= entries.len(), "one entry per core type");
        PerCoreType { index, uniform: if present == 1 { 0 } else { u8::MAX }, entries }
    }

    /// The entry of core type `core_type` (`None` for a type the machine lacks).
    #[inline]
    pub fn get(&self, core_type: u8) -> Option<&T> {
        self.entries.get(usize::from(self.index[usize::from(core_type) & (CORE_TYPE_PLACES - 1)]))
    }

    /// The entry of every processor, where all are of one core type.
    pub fn uniform(&self) -> Option<&T> {
        self.entries.get(usize::from(self.uniform))
    }

    /// Each core type the machine has, with its entry.
    pub fn iter<'a>(&'a self) -> impl Iterator<Item = (usize, &'a T)>
    where
        T: 'a,
    {
        (0..CORE_TYPES).filter_map(|core_type| Some((core_type, self.get(core_type as u8)?)))
    }
}

impl<T, E: DerefMut<Target = [T]>> PerCoreType<E> {
    /// The entry of core type `core_type`, to change.
    pub fn get_mut(&mut self, core_type: u8) -> Option<&mut T> {
        let at = usize::from(self.index[usize::from(core_type) & (CORE_TYPE_PLACES - 1)]);
        self.entries.get_mut(at)
    }

    /// Calls `change` with each core type's entry.
    pub fn for_each_mut(&mut self, mut change: impl FnMut(&mut T)) {
        for core_type in 0..CORE_TYPES {
            if let Some(entry) = self.get_mut(core_type as u8) {
                change(entry);
            }
        }
    }
}

/// [`PerCoreType`] entries kept in place, a place for each core type (and for the one value past
/// them that a masked core type can take), whether the machine has it or not: for entries too small
/// to be worth an allocation (the overflow handler's masks).
pub struct Inline<T>(pub [T; CORE_TYPE_PLACES]);

impl<T> PerCoreType<Inline<T>> {
    /// The table of `machine`'s core types over `entries`, each core type at its own place.
    pub fn inline(machine: &Machine, entries: [T; CORE_TYPE_PLACES]) -> Self {
        let mut index = [u8::MAX; CORE_TYPE_PLACES];
        let mut present = 0;
        for (core_type, _) in machine.models() {
            index[core_type] = core_type as u8;
            present += 1;
        }
        let uniform = if present == 1 { index.into_iter().find(|&at| at != u8::MAX) } else { None };
        PerCoreType { index, uniform: uniform.unwrap_or(u8::MAX), entries: Inline(entries) }
    }

    /// The place of core type `core_type`, present or not, for a reader that may not branch (the
    /// overflow handler): a place no core type the machine lacks has ever had written, so it holds
    /// what the entries were made with. Always inlined: the overflow handler makes no call.
    #[inline(always)]
    pub fn place(&self, core_type: u8) -> &T {
        &self.entries.0[usize::from(core_type) & (CORE_TYPE_PLACES - 1)]
    }
}

impl<T> Deref for Inline<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> DerefMut for Inline<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// A machine whose processors all detected the same PMU.
impl From<Detection> for Machine {
    fn from(detection: Detection) -> Machine {
        let mut types = [None; CORE_TYPES];
        types[CoreType::Uniform as usize] = Some(detection);
        Machine { detection, types }
    }
}

/// Architectural performance monitoring extended leaf (Intel SDM Vol. 2A, CPUID, "Architectural
/// Performance Monitoring Extended Leaf (EAX = 23H)").
const EXTENDED_PERFMON_LEAF: u32 = 0x23;
/// Its subleaf 0 EAX bits: subleaf 1 (counter bitmaps) and subleaf 3 (architectural events) are valid.
const COUNTERS_SUBLEAF_VALID: u32 = 1 << 0;
const EVENTS_SUBLEAF_VALID: u32 = 1 << 3;
/// Architectural event bit of top-down slots (leaf 0xA EBX and leaf 0x23 subleaf 3 EAX bit 7).
const TOPDOWN_SLOTS_EVENT: u32 = 1 << 7;

/// `model` (this processor's leaf 0xA decoding) with the counters this core type really has, where
/// leaf 0xA reports only those every core type has:
///
/// * leaf 0x23 (Meteor Lake and later): subleaf 1 EAX/EBX are bitmaps of the general-purpose and
///   fixed counters of the core executing CPUID, subleaf 3 EAX its architectural events (Linux
///   `update_pmu_cap`, read on a processor of each type). The plan numbers counters from 0, so the
///   counters are those up to the first gap in each bitmap;
/// * a performance core of Alder Lake or Raptor Lake (family 6 models 97H, 9AH, B7H, BAH, BFH), which
///   has no leaf 0x23: one fixed counter (top-down slots) more than leaf 0xA says, unless leaf 0xA
///   already reports more than 3 (Linux `intel_pmu_init`, the Alder Lake case:
///   `cntr_mask64 <<= 2 ... fixed_cntr_mask64 <<= 1`, and its correction for firmware that reports the
///   performance core's counters). Linux also counts the core's two general-purpose counters beyond
///   leaf 0xA's six; the driver leaves them out. The Windows HAL builds its counter table from leaf
///   0xA there, and refuses a resource list naming a counter outside it (`EmonReserveProfileResources`
///   and `EmonReserveProfileResourcesEnhanced`, decompiled in nohuto/decompiled-pseudocode), so no HAL
///   client can be given IA32_PMC6-7. Unlike fixed counter 3, which has no interrupt and is zeroed at
///   every read, a general-purpose counter programmed unrequested would wrap with its overflow status
///   bit in the HAL's acknowledge mask, out of the overflow handler's sight (docs/hybrid.md).
pub fn own_counters<R: CpuIdReader>(reader: &R, core_type: CoreType, model: PmuModel) -> PmuModel {
    if model.vendor != super::model::Vendor::Intel || core_type == CoreType::Uniform {
        return model;
    }
    let model = PmuModel { atom: core_type == CoreType::Efficient, ..model };
    let max_leaf = reader.cpuid1(0).eax;
    let extended =
        if max_leaf >= EXTENDED_PERFMON_LEAF { reader.cpuid2(EXTENDED_PERFMON_LEAF, 0).eax } else { 0 };
    if extended & COUNTERS_SUBLEAF_VALID != 0 {
        let bitmaps = reader.cpuid2(EXTENDED_PERFMON_LEAF, 1);
        let mut own = PmuModel {
            gp_counters: bitmaps.eax.trailing_ones() as u8,
            fixed_counters: bitmaps.ebx.trailing_ones() as u8,
            ..model
        };
        let events = if extended & EVENTS_SUBLEAF_VALID != 0 {
            reader.cpuid2(EXTENDED_PERFMON_LEAF, 3).eax
        } else {
            0
        };
        own.topdown_slots = own.fixed_counters > 3 && events & TOPDOWN_SLOTS_EVENT != 0;
        return own;
    }
    let alder_or_raptor_lake = model.family == 6 && matches!(model.model, 0x97 | 0x9A | 0xB7 | 0xBA | 0xBF);
    if core_type == CoreType::Performance && alder_or_raptor_lake && model.fixed_counters <= 3 {
        return PmuModel { fixed_counters: model.fixed_counters + 1, topdown_slots: true, ..model };
    }
    model
}

/// What two processors can both do.
fn common(left: Detection, right: Detection) -> Detection {
    match (left, right) {
        (Detection::Usable(left), Detection::Usable(right)) => Detection::Usable(common_model(left, right)),
        (Detection::Unusable(reason), _) | (_, Detection::Unusable(reason)) => Detection::Unusable(reason),
    }
}

/// The PMU two processors of one machine share: as many counters as the smaller has, as wide as the
/// narrower, the events either lacks marked unavailable, a feature only where both have it. Vendor,
/// family, model and version are the first's (one package reports the same signature on every core).
fn common_model(left: PmuModel, right: PmuModel) -> PmuModel {
    PmuModel {
        gp_counters: left.gp_counters.min(right.gp_counters),
        gp_width: left.gp_width.min(right.gp_width),
        fixed_counters: left.fixed_counters.min(right.fixed_counters),
        fixed_width: left.fixed_width.min(right.fixed_width),
        unavailable: left.unavailable.union(right.unavailable),
        amd_core_extended: left.amd_core_extended && right.amd_core_extended,
        amd_perfmon_v2: left.amd_perfmon_v2 && right.amd_perfmon_v2,
        overflow_interrupt: left.overflow_interrupt && right.overflow_interrupt,
        topdown_slots: left.topdown_slots && right.topdown_slots,
        perf_capabilities: left.perf_capabilities && right.perf_capabilities,
        perf_metrics: left.perf_metrics && right.perf_metrics,
        aperf_mperf: left.aperf_mperf && right.aperf_mperf,
        ..left
    }
}

#[cfg(test)]
mod tests;
