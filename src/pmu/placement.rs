//! The counter plan: which counter counts which event on every processor of a [`PmuModel`], and
//! which events go uncounted, with every register the plan names.
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
//!    it takes no core counter where MPERF exists ([`CounterPlan::reference_from_mperf`]), and
//!    yields to the branch pair where it does not (Zen 4 and 5 in a guest without MPERF: 6 counters
//!    for 7 events).
//!
//! AMD family 15h constraints, Intel events taken as unconstrained, and the HAL counter indices: `docs/pmu.md`.

use super::encoding::{Encoding, evtsel_for, fixed_ctrl_field};
use super::events::{CUSTOM_EVENTS, Event, EventSet, Group, encoding, topdown_width};
use super::layout::{MAX_GENERAL_PURPOSE, RegisterLayout};
use super::model::{PmuModel, Vendor};
use super::msr;
use super::profile::{Profile, Selection};

/// IA32_PERF_GLOBAL_CTRL/STATUS bit of fixed counter 0.
const INTEL_FIXED_GLOBAL_BIT0: u8 = 32;

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

    /// What a processor of core type `core_type` counts: the custom events whose `core=` names
    /// another core type are left out (on a processor that is not hybrid, none is).
    pub fn for_core_type(&self, core_type: usize) -> Wanted {
        let runs_here = |encoding: &Encoding| core_type == 0 || encoding.core_types & (1 << core_type) != 0;
        Wanted { events: self.events, custom: self.custom.map(|custom| custom.filter(runs_here)) }
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

/// Fixed counters that count table events: 0 instructions, 1 core cycles, 2 reference cycles. Fixed
/// counter 3 (top-down slots) is zeroed at every read and is not an [`Assignment`].
const MAX_FIXED_ASSIGNED: usize = 3;
/// The most counters a plan uses, fixed and general-purpose together: every counter a processor can
/// have that the driver names, the general-purpose ones the layout allows ([`MAX_GENERAL_PURPOSE`],
/// IA32_PMC0-7) and fixed counters 0-2, so that a core with 8 general-purpose counters (Ice Lake and
/// later, Sapphire Rapids, Skylake without hyper-threading) counts 8 events besides the fixed ones.
/// Each costs 24 bytes of per-processor state (`crate::pmu::fold`).
pub const MAX_ASSIGNMENTS: usize = MAX_GENERAL_PURPOSE + MAX_FIXED_ASSIGNED;

/// Every event with a fixed counter has one of fixed counters 0-2 ([`place`] keeps fixed counters in
/// an array of that size; [`MAX_ASSIGNMENTS`] leaves every general-purpose counter beside them).
const _: () = {
    let mut index = 0;
    while index < Event::COUNT {
        if let Some(fixed) = Event::ALL[index].intel_fixed_counter() {
            assert!((fixed as usize) < MAX_FIXED_ASSIGNED, "a table event on a fixed counter past 2");
        }
        index += 1;
    }
};

/// The general-purpose counters `encoding` may run on, bit i for counter i: the first `counters`
/// (those the plan may use) that the encoding allows, and on AMD family 15h only counters 0-2 for a
/// "CU" event (see the module docs).
const fn counter_mask(model: &PmuModel, encoding: Encoding, counters: u8) -> u8 {
    let f15h_cu_event = matches!(model.vendor, Vendor::Amd)
        && model.family == 0x15
        && encoding.event >= 0x60
        && encoding.event <= 0x7F;
    let counters = if f15h_cu_event && counters > 3 { 3 } else { counters };
    let present = if counters as usize >= MAX_GENERAL_PURPOSE { u8::MAX } else { (1u8 << counters) - 1 };
    present & encoding.counters
}

/// A kind of counter and its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HardwareCounter {
    /// Intel fixed-function counter j.
    Fixed(u8),
    /// General-purpose counter i (Intel IA32_PMCi, AMD PerfCtr i).
    General(u8),
}

/// One event on one counter, with everything the PMU client writes and reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub event: Event,
    pub hardware: HardwareCounter,
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
    /// Intel (unverified, see the module comment), the counter number on AMD. A byte (both are
    /// below 64), widened to the descriptor's ULONG when the request is built: with it, an
    /// assignment fits 32 bytes.
    pub hal_index: u8,
    /// Counter width in bits.
    pub width: u8,
}

// A plan holds eleven: kept to 32 bytes each, as a session keeps a plan per core type in
// non-paged pool (and the last plan beside it).
const _: () = assert!(core::mem::size_of::<Assignment>() <= 32);

impl Assignment {
    /// A placeholder for the unused places of a [`CounterPlan`]; never iterated.
    const UNUSED: Assignment = Assignment {
        event: Event::Instructions,
        hardware: HardwareCounter::General(0),
        counter_msr: 0,
        rdpmc: None,
        control_msr: 0,
        control: 0,
        global_bit: None,
        hal_index: 0,
        width: 0,
    };
}

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
    /// Those inputs are an Atom core's, which count the categories themselves
    /// ([`crate::pmu::topdown::from_events`]).
    topdown_atom: bool,
    /// Reference cycles come from MPERF, not a counter ([`CounterPlan::reference_from_mperf`]).
    reference_from_mperf: bool,
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

impl CounterPlan {
    const EMPTY: Self = Self {
        assignments: [Assignment::UNUSED; MAX_ASSIGNMENTS],
        len: 0,
        unavailable: EventSet::EMPTY,
        dropped: EventSet::EMPTY,
        topdown_metrics: false,
        topdown_width: None,
        topdown_atom: false,
        reference_from_mperf: false,
    };

    /// Adds `assignment`, or gives it back when the plan is full (which [`MAX_ASSIGNMENTS`] says
    /// cannot happen; the caller drops the event rather than write past the storage).
    fn push(&mut self, assignment: Assignment) -> Result<(), Assignment> {
        let entry = self.assignments.get_mut(self.len).ok_or(assignment)?;
        *entry = assignment;
        self.len += 1;
        Ok(())
    }

    /// The assignments: fixed counters first, then general-purpose counters, each by number.
    pub fn iter(&self) -> impl Iterator<Item = &Assignment> {
        self.as_slice().iter()
    }

    /// The assignments as a slice (counter i is element i).
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

    /// The events that are counted: by a counter, or reference cycles from MPERF.
    pub fn counted(&self) -> EventSet {
        let by_counters = self.iter().fold(EventSet::EMPTY, |set, assignment| set.with(assignment.event));
        if self.reference_from_mperf { by_counters.with(Event::ReferenceCycles) } else { by_counters }
    }

    /// Events this processor cannot count (marked unavailable by CPUID, or no encoding on this vendor).
    pub fn unavailable(&self) -> EventSet {
        self.unavailable
    }

    /// Events the processor could count but that found no free counter.
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

    /// Whether the top-down inputs are an Atom core's (see [`CounterPlan::topdown_width`]).
    pub fn topdown_atom(&self) -> bool {
        self.topdown_atom
    }

    /// Whether reference cycles are counted from MPERF instead of a core counter: on AMD wherever
    /// CPUID.06H:ECX\[0\] reports it. AMD documents MPERF as counting at the P0 frequency while the
    /// core is in C0 (AMD64 APM Vol. 2, "Effective Frequency Interface"), which is what unhalted
    /// reference cycles are; event 120H (Zen 4 and later) would take one of six core counters, which
    /// the default profile's other six events need, and earlier Zen cores have no such event.
    pub fn reference_from_mperf(&self) -> bool {
        self.reference_from_mperf
    }

    /// The IA32_PERF_GLOBAL_CTRL (Intel) or PerfCntrGlobalCtl (AMD PerfMonV2) value enabling exactly
    /// this plan's counters (fixed counter 3 included); 0 on AMD without PerfMonV2.
    pub fn global_ctrl(&self) -> u64 {
        self.assigned_global_bits() | self.topdown_global_bit()
    }

    /// The global status bits of the plan's [`Assignment`]s: the counters extended with their overflow
    /// counts (fixed counter 3, zeroed at every read, is in [`CounterPlan::overflow_bits`] only).
    pub fn assigned_global_bits(&self) -> u64 {
        self.iter().filter_map(|assignment| assignment.global_bit).fold(0, |mask, bit| mask | (1 << bit))
    }

    /// The global status bits whose overflows the overflow handler counts: the assignments' and,
    /// where top-down comes from IA32_PERF_METRICS, fixed counter 3's (bit 35, above every
    /// assignment's, so that its overflow rank is the one after the plan's; the read adds its wraps to
    /// the slots, crate::pmu::topdown::read_and_zero).
    pub fn overflow_bits(&self) -> u64 {
        let topdown =
            if self.topdown_metrics { 1 << (INTEL_FIXED_GLOBAL_BIT0 + TOPDOWN_FIXED_COUNTER) } else { 0 };
        self.assigned_global_bits() | topdown
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
            .filter(|assignment| matches!(assignment.hardware, HardwareCounter::Fixed(_)))
            .fold(topdown, |value, assignment| value | assignment.control)
    }

    /// The fixed counter numbers the plan uses (fixed counter 3 included).
    pub fn fixed_counters(&self) -> impl Iterator<Item = u8> + '_ {
        let topdown = self.topdown_metrics.then_some(TOPDOWN_FIXED_COUNTER);
        self.iter()
            .filter_map(|assignment| match assignment.hardware {
                HardwareCounter::Fixed(index) => Some(index),
                HardwareCounter::General(_) => None,
            })
            .chain(topdown)
    }

    /// HalAllocateHardwareCounters CounterIndex values of every counter the plan uses, fixed counter
    /// 3 only if `fixed_counter_3` (a HAL whose counter table lacks it refuses a list naming it; see
    /// `crate::session::core_pmu::request`).
    pub fn hal_indexes(&self, fixed_counter_3: bool) -> impl Iterator<Item = u32> + '_ {
        let topdown = (self.topdown_metrics && fixed_counter_3)
            .then_some(u32::from(INTEL_FIXED_GLOBAL_BIT0 + TOPDOWN_FIXED_COUNTER));
        self.iter().map(|assignment| u32::from(assignment.hal_index)).chain(topdown)
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

/// The plan counting the events of `wanted` that `model` has, by priority.
#[inline(never)]
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
        plan.topdown_atom = model.atom;
    }
    plan
}

fn place(model: &PmuModel, wanted: &Wanted, pmi: bool) -> CounterPlan {
    let mut plan = CounterPlan::EMPTY;
    plan.topdown_metrics = model.topdown_metrics();
    let mut placed = EventSet::EMPTY;
    if model.vendor == Vendor::Amd && model.aperf_mperf && wanted.events.contains(Event::ReferenceCycles) {
        plan.reference_from_mperf = true;
        placed = placed.with(Event::ReferenceCycles);
    }
    for event in wanted.events.iter() {
        if !placed.contains(event) && wanted.encoding(model, event).is_none() {
            plan.unavailable = plan.unavailable.with(event);
        }
    }
    // Fixed counters are placed first but go in the plan after the general-purpose ones, in counter
    // order: the plan's counters then follow their global status bits (general-purpose i = bit i, fixed j
    // = bit 32 + j), so each counter is its own overflow rank (crate::pmu::fold's rank of the
    // status bit among the owned ones).
    let mut fixed_events: [Option<Event>; MAX_FIXED_ASSIGNED] = [None; MAX_FIXED_ASSIGNED];
    if model.vendor == Vendor::Intel {
        for event in wanted.events.iter() {
            let Some(fixed) = event.intel_fixed_counter() else { continue };
            if fixed < model.fixed_counters && !plan.unavailable.contains(event) {
                if let Some(entry) = fixed_events.get_mut(usize::from(fixed)) {
                    *entry = Some(event);
                }
                placed = placed.with(event);
            }
        }
    }

    // General-purpose counters: those the model has (the plan's storage holds them all beside the
    // fixed ones). Take events in priority order while the chosen set can still give each a
    // distinct counter it allows, then place them (see `assign_counters`).
    let fixed_used = fixed_events.iter().flatten().count() as u8;
    let layout = RegisterLayout::of(model);
    let general = layout.general_purpose.min(MAX_ASSIGNMENTS as u8 - fixed_used);
    let mut chosen: [(Event, Encoding, u8); MAX_GENERAL_PURPOSE] =
        [(Event::Instructions, Encoding::new(0, 0), 0); MAX_GENERAL_PURPOSE];
    let mut chosen_len = 0;
    for event in wanted.events.iter() {
        if placed.contains(event) {
            continue;
        }
        let Some(encoding) = wanted.encoding(model, event) else { continue };
        let candidate = (event, encoding, counter_mask(model, encoding, general));
        let fits = chosen_len < MAX_GENERAL_PURPOSE && {
            chosen[chosen_len] = candidate;
            assign_counters(&chosen[..=chosen_len]).is_some()
        };
        if fits {
            chosen_len += 1;
        } else {
            plan.dropped = plan.dropped.with(event);
        }
    }
    let chosen = &mut chosen[..chosen_len];
    // Most constrained first (ties in priority order), so that with nested constraints each event
    // takes the lowest counter left that it allows.
    // (An insertion sort: core has no stable sort without an allocator; at most 8 elements.)
    for i in 1..chosen.len() {
        let mut j = i;
        while j > 0 && chosen[j - 1].2.count_ones() > chosen[j].2.count_ones() {
            chosen.swap(j - 1, j);
            j -= 1;
        }
    }
    let counters = assign_counters(chosen).unwrap_or_default();
    // Pushed in counter order (built one at a time: a plan-sized array of assignments here would
    // double the stack this function needs).
    let general = (0..MAX_GENERAL_PURPOSE as u8).filter_map(|counter| {
        let chosen = chosen.iter().zip(&counters).find(|&(_, &assigned)| assigned == counter)?.0;
        Some(general_purpose(model, &layout, chosen.0, chosen.1, counter, pmi))
    });
    let fixed = (0..MAX_FIXED_ASSIGNED as u8)
        .filter_map(|fixed| Some(intel_fixed(model, fixed_events[usize::from(fixed)]?, fixed, pmi)));
    for assignment in general.chain(fixed) {
        if plan.push(assignment).is_err() {
            plan.dropped = plan.dropped.with(assignment.event);
        }
    }
    plan
}

/// A distinct counter for each of `candidates` from its mask, in the candidates' order (augmenting
/// paths, Kuhn's bipartite matching: at most 8 general-purpose counters); `None` when there is none.
fn assign_counters(candidates: &[(Event, Encoding, u8)]) -> Option<[u8; MAX_GENERAL_PURPOSE]> {
    let masks: [u8; MAX_GENERAL_PURPOSE] = core::array::from_fn(|i| candidates.get(i).map_or(0, |c| c.2));
    let mut owner: [Option<u8>; MAX_GENERAL_PURPOSE] = [None; MAX_GENERAL_PURPOSE];
    for candidate in 0..candidates.len() as u8 {
        if !augment(candidate, &masks, &mut owner, &mut 0) {
            return None;
        }
    }
    let mut counters = [0u8; MAX_GENERAL_PURPOSE];
    for (counter, owner) in owner.iter().enumerate() {
        if let Some(candidate) = owner {
            counters[usize::from(*candidate)] = counter as u8;
        }
    }
    Some(counters)
}

/// Finds `candidate` a counter: its lowest free one, else one freed by moving earlier candidates
/// to other counters they allow. `visited` holds the counters this search has tried (so the depth is
/// at most [`MAX_GENERAL_PURPOSE`]).
fn augment(
    candidate: u8,
    masks: &[u8; MAX_GENERAL_PURPOSE],
    owner: &mut [Option<u8>; MAX_GENERAL_PURPOSE],
    visited: &mut u8,
) -> bool {
    let allowed = masks[usize::from(candidate)] & !*visited;
    let free =
        (0..MAX_GENERAL_PURPOSE).find(|&counter| allowed & (1 << counter) != 0 && owner[counter].is_none());
    if let Some(counter) = free {
        owner[counter] = Some(candidate);
        return true;
    }
    *visited |= allowed;
    for counter in (0..MAX_GENERAL_PURPOSE).filter(|&counter| allowed & (1 << counter) != 0) {
        if owner[counter].is_some_and(|other| augment(other, masks, owner, visited)) {
            owner[counter] = Some(candidate);
            return true;
        }
    }
    false
}

fn intel_fixed(model: &PmuModel, event: Event, fixed: u8, pmi: bool) -> Assignment {
    Assignment {
        event,
        hardware: HardwareCounter::Fixed(fixed),
        counter_msr: msr::IA32_FIXED_CTR0 + u32::from(fixed),
        rdpmc: Some(RDPMC_FIXED | u32::from(fixed)),
        control_msr: msr::IA32_FIXED_CTR_CTRL,
        control: fixed_ctrl_field(fixed, pmi),
        global_bit: Some(INTEL_FIXED_GLOBAL_BIT0 + fixed),
        hal_index: INTEL_FIXED_GLOBAL_BIT0 + fixed,
        width: model.fixed_width,
    }
}

fn general_purpose(
    model: &PmuModel,
    layout: &RegisterLayout,
    event: Event,
    encoding: Encoding,
    counter: u8,
    pmi: bool,
) -> Assignment {
    let (counter_msr, control_msr) = layout.general_purpose_registers(counter);
    Assignment {
        event,
        hardware: HardwareCounter::General(counter),
        counter_msr,
        rdpmc: layout.rdpmc(counter),
        control_msr,
        control: evtsel_for(model.vendor, encoding, pmi),
        global_bit: layout.global_bit(counter),
        hal_index: counter,
        width: model.gp_width,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod property_tests;
