//! The session's state: the HAL ownership while one is open, and each core type's part (its plan,
//! programming and way of reading), which a read finds by the processor's core type.

use super::super::platform::Platform;
use super::super::read::{Reading, TopdownReading};
use crate::pmu::fold::OwnedMask;
use crate::pmu::hybrid::CORE_TYPES;
use crate::pmu::placement::CounterPlan;
use crate::pmu::program::Programming;

/// [`Session::parts`]'s length: one part per core type.
pub(super) const PARTS: usize = CORE_TYPES;

/// The session: the HAL ownership while one is open, and how the counters of each core type run.
/// Kept in place between sessions (so that its parts, a kilobyte each, are written where they live
/// rather than built on the consumer's stack and moved).
pub(super) struct Session<P: Platform> {
    /// `Some` while a session is open.
    pub(super) ownership: Option<P::Ownership>,
    /// Each core type's part (indexed by core type), `None` for a type no processor has. Only a
    /// hybrid machine's reads look a part up by core type (the others find theirs once per read:
    /// [`Session::uniform_part`]), so the bounds check costs a machine of one core type nothing.
    pub(super) parts: [Option<Part>; PARTS],
}

impl<P: Platform> Session<P> {
    pub(super) const CLOSED: Self = Session { ownership: None, parts: [const { None }; PARTS] };

    /// The part of a processor of core type `core_type`.
    #[inline(always)]
    pub(super) fn part(&self, core_type: u8) -> Option<&Part> {
        self.parts.get(usize::from(core_type))?.as_ref()
    }

    /// The part of every processor, where all are of one type: core type 0 (not hybrid) alone.
    pub(super) fn uniform_part(&self) -> Option<&Part> {
        self.parts[1..].iter().all(Option::is_none).then(|| self.parts[0].as_ref()).flatten()
    }

    /// The session, if one is open.
    pub(super) fn open(&self) -> Option<(&Self, &P::Ownership)> {
        self.ownership.as_ref().map(|ownership| (self, ownership))
    }
}

/// How the counters of one core type's processors run.
pub(super) struct Part {
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
}
