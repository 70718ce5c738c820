//! The session's state: the HAL ownership while one is open, and each core type's part (its plan,
//! programming and way of reading), which a read finds by the processor's core type.

use super::super::platform::Platform;
use super::super::read::{Reading, TopdownReading};
use crate::block::fields::Paired;
use crate::pmu::fold::OwnedMask;
use crate::pmu::hybrid::{CORE_TYPES, Machine};
use crate::pmu::placement::CounterPlan;
use crate::pmu::program::Programming;

/// Where each core type's entry is in a table with one per core type the machine has (the session's
/// parts, the last plans): the machine's core types take the slots in order.
#[derive(Clone, Copy)]
pub(super) struct Slots {
    /// Each core type's slot ([`Slots::NONE`]: the machine has no such processor).
    slots: [u8; CORE_TYPES],
    /// How many core types the machine has.
    present: u8,
}

impl Slots {
    const NONE: u8 = u8::MAX;

    pub(super) fn of(machine: &Machine) -> Slots {
        let mut slots = Slots { slots: [Self::NONE; CORE_TYPES], present: 0 };
        for (core_type, _) in machine.models() {
            slots.slots[core_type] = slots.present;
            slots.present += 1;
        }
        slots
    }

    /// The table length this needs.
    pub(super) fn len(self) -> usize {
        usize::from(self.present)
    }

    /// Core type `core_type`'s slot (none for a type the machine lacks: out of any table's bounds).
    #[inline(always)]
    pub(super) fn get(self, core_type: usize) -> usize {
        usize::from(self.slots.get(core_type).copied().unwrap_or(Self::NONE))
    }
}

/// The session: the HAL ownership while one is open, and how the counters of each core type run.
/// Kept in place between sessions (so that its parts, a kilobyte each, are written where they live
/// rather than built on the consumer's stack and moved).
pub(super) struct Session<P: Platform> {
    /// `Some` while a session is open.
    pub(super) ownership: Option<P::Ownership>,
    /// One part per core type the machine has (the platform allocates them: one on a machine of one
    /// core type), `None` while closed.
    pub(super) parts: P::Parts,
    /// Each core type's index in `parts`. Only a hybrid machine's reads look a part up by core type
    /// (the others find theirs once per read: [`Session::uniform_part`]).
    slots: Slots,
}

impl<P: Platform> Session<P> {
    /// A closed session over `parts`, indexed by `slots`.
    pub(super) fn closed(parts: P::Parts, slots: Slots) -> Self {
        debug_assert!(slots.len() <= parts.len(), "one part per core type");
        Session { ownership: None, parts, slots }
    }

    /// The part of a processor of core type `core_type`.
    #[inline(always)]
    pub(super) fn part(&self, core_type: u8) -> Option<&Part> {
        self.parts.get(self.slots.get(usize::from(core_type)))?.as_ref()
    }

    /// Where core type `core_type`'s part goes, if the machine has that type.
    pub(super) fn part_mut(&mut self, core_type: usize) -> Option<&mut Option<Part>> {
        self.parts.get_mut(self.slots.get(core_type))
    }

    /// The part of every processor, where all are of one core type.
    pub(super) fn uniform_part(&self) -> Option<&Part> {
        if self.slots.len() == 1 { self.parts.first()?.as_ref() } else { None }
    }

    /// The session, if one is open.
    pub(super) fn open(&self) -> Option<(&Self, &P::Ownership)> {
        self.ownership.as_ref().map(|ownership| (self, ownership))
    }
}

/// How the counters of one core type's processors run (public so that a platform can hold the
/// session's parts: [`Platform::Parts`]).
pub struct Part {
    pub(super) plan: CounterPlan,
    /// The plan's global bits when the overflow handler folds them; empty when polled.
    pub(super) owned: OwnedMask,
    /// What every read checks is still programmed.
    pub(super) programming: Programming,
    /// How a read takes the counters.
    pub(super) reading: Reading,
    /// How a read takes the top-down totals.
    pub(super) topdown: TopdownReading,
    /// Every read also takes IA32_APERF and IA32_MPERF ([`crate::pmu::model::PmuModel::aperf_mperf`]).
    pub(super) aperf_mperf: bool,
    /// The plan's events counted with their ratio partner, whose paired copies the reads store.
    pub(super) paired: Paired,
}
