//! The session's mechanics: the HAL ownership while one is open, and each core type's
//! [`CoreTypeSession`] (its plan, programming and way of reading), installed when a session opens,
//! found by a processor's core type while it runs ([`PerCoreType`]) and cleared when it closes.

use super::count_table::CountTable;
use super::read::{Reading, TopdownReading, paired};
use crate::pmu::fold::OwnedMask;
use crate::pmu::hybrid::{CORE_TYPES, Machine, PerCoreType};
use crate::pmu::model::PmuModel;
use crate::pmu::placement::CounterPlan;
use crate::pmu::program::Programming;
use crate::session::platform::Platform;

/// The session: the HAL ownership while one is open, and how the counters of each core type run.
/// Kept in place between sessions (so that its core types' sessions, a kilobyte each, are written
/// where they live rather than built on the consumer's stack and moved).
pub(in crate::session) struct Session<P: Platform> {
    /// `Some` while a session is open.
    pub(in crate::session) ownership: Option<P::Ownership>,
    /// One per core type the machine has (the platform allocates them: one on a machine of one
    /// core type), `None` while closed. Only a hybrid machine's reads look one up by core type (the
    /// others find theirs once per read: [`PerCoreType::uniform`]).
    pub(in crate::session) core_types: PerCoreType<P::Table<CoreTypeSession>>,
}

impl<P: Platform> Session<P> {
    /// A closed session over `sessions`, one per core type of `machine`.
    pub(in crate::session) fn closed(machine: &Machine, sessions: P::Table<CoreTypeSession>) -> Self {
        Session { ownership: None, core_types: PerCoreType::new(machine, sessions) }
    }

    /// The session of a processor of core type `core_type`.
    #[inline]
    pub(in crate::session) fn of_core_type(&self, core_type: u8) -> Option<&CoreTypeSession> {
        self.core_types.get(core_type)?.as_ref()
    }

    /// The session of every processor, where all are of one core type ([`PerCoreType::uniform`]):
    /// a read finds it once, instead of on every processor.
    pub(in crate::session) fn uniform(&self) -> Option<&CoreTypeSession> {
        self.core_types.uniform()?.as_ref()
    }

    /// Each core type's session, while one is open.
    pub(in crate::session) fn each(&self) -> impl Iterator<Item = &CoreTypeSession> + '_ {
        self.core_types.iter().filter_map(|(_, part)| part.as_ref())
    }

    /// The session, if one is open.
    pub(in crate::session) fn open(&self) -> Option<(&Self, &P::Ownership)> {
        self.ownership.as_ref().map(|ownership| (self, ownership))
    }

    /// Opens the session under `ownership`, one [`CoreTypeSession`] per core type with a plan
    /// (`owned` gives each type's overflow-handler bits): out of line, so that its parts are built
    /// only after the opening's calls have returned, one at a time, each straight into its place
    /// ([`install_core_type`]).
    #[inline(never)]
    pub(in crate::session) fn install(
        &mut self,
        ownership: P::Ownership,
        plans: &[Option<CounterPlan>; CORE_TYPES],
        owned: impl Fn(u8) -> OwnedMask,
        machine: Machine,
    ) {
        self.ownership = Some(ownership);
        for (core_type, plan) in plans.iter().enumerate() {
            if let (Some(plan), Some(model), Some(part)) =
                (plan, machine.model_of(core_type), self.core_types.get_mut(core_type as u8))
            {
                install_core_type(part, plan, owned(core_type as u8), &model);
            }
        }
    }

    /// Closes the session: every core type's session cleared, the ownership returned for the caller
    /// to drop after stopping the counters.
    pub(in crate::session) fn clear(&mut self) {
        self.core_types.for_each_mut(|part| *part = None);
    }
}

/// One core type's session, written into `part`.
#[inline(never)]
fn install_core_type(
    part: &mut Option<CoreTypeSession>,
    plan: &CounterPlan,
    owned: OwnedMask,
    model: &PmuModel,
) {
    let counters = CountTable::of(plan, owned, paired(plan));
    *part = Some(CoreTypeSession {
        plan: *plan,
        programming: Programming::of(model.vendor, plan),
        reading: Reading::of(model.vendor, plan, owned, &counters),
        counters,
        topdown: TopdownReading::of(plan),
        aperf_mperf: model.aperf_mperf,
    });
}

/// How the counters of one core type's processors run in a session (public so that a platform can
/// hold them: [`Platform::Table`]).
pub struct CoreTypeSession {
    pub(in crate::session) plan: CounterPlan,
    /// What every read checks is still programmed.
    pub(in crate::session) programming: Programming,
    /// How a read takes the counters ([`Reading::Polled`] where the overflow handler folds nothing:
    /// the plan's global bits are what it folds otherwise).
    pub(in crate::session) reading: Reading,
    /// What a read takes each counter with and stores its count in.
    pub(in crate::session) counters: CountTable,
    /// How a read takes the top-down totals.
    pub(in crate::session) topdown: TopdownReading,
    /// Every read also takes IA32_APERF and IA32_MPERF ([`crate::pmu::model::PmuModel::aperf_mperf`]).
    pub(in crate::session) aperf_mperf: bool,
}
