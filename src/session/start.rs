//! Starting a session, out of [`super::PmuClient::open`]: each processor's counts carried over to
//! the new plan's slots, its counters programmed, and the session installed under the lock.

use super::{Part, Platform, Session};
use crate::block::publish;
use crate::pmu::fold::{OwnedMask, SLOTS};
use crate::pmu::frequency;
use crate::pmu::hybrid::{CORE_TYPES, Machine};
use crate::pmu::model::{PmuModel, Vendor};
use crate::pmu::placement::CounterPlan;
use crate::pmu::processor::ProcessorPmu;
use crate::pmu::program::{self, Msrs, Programming};
use crate::session::processor_state::ProcessorState;
use crate::session::read::{Reading, TopdownReading, paired};
use crate::sync::Ordering;
use crate::sync::unmodelled::AtomicU64;

/// Opens the session in `session`, one part per core type with a plan (`owned` holds each type's
/// overflow-handler bits): out of line, so that its parts are built only after
/// [`PmuClient::open`](super::PmuClient::open)'s calls have returned, one at a time, each straight
/// into its place ([`install_part`]).
#[inline(never)]
pub(super) fn install<P: Platform>(
    session: &mut Session<P>,
    ownership: P::Ownership,
    plans: &[Option<CounterPlan>; CORE_TYPES],
    owned: &[AtomicU64],
    machine: Machine,
) {
    session.ownership = Some(ownership);
    for (core_type, plan) in plans.iter().enumerate() {
        if let (Some(plan), Some(model), Some(owned), Some(part)) =
            (plan, machine.model_of(core_type), owned.get(core_type), session.part_mut(core_type))
        {
            install_part(part, plan, OwnedMask::from_bits(owned.load(Ordering::Relaxed)), &model);
        }
    }
}

/// One core type's part of a session, written into `part`.
#[inline(never)]
fn install_part(part: &mut Option<Part>, plan: &CounterPlan, owned: OwnedMask, model: &PmuModel) {
    *part = Some(Part {
        plan: *plan,
        owned,
        programming: Programming::of(model.vendor, plan),
        reading: Reading::of(model.vendor, plan, owned),
        topdown: TopdownReading::of(plan),
        aperf_mperf: model.aperf_mperf,
        paired: paired(plan),
    });
}

/// Moves each event's total to the slot `plan` gives it, from the slot `previous` (the last
/// session's plan) gave it: a profile change between sessions can place events differently. An
/// event `plan` counts that `previous` did not starts from 0; one it no longer counts is dropped.
pub(super) fn carry_over(processor: &ProcessorPmu, previous: Option<&CounterPlan>, plan: &CounterPlan) {
    let reported = processor.counters.snapshot().values;
    let mut totals = [0u64; SLOTS];
    for (total, assignment) in totals.iter_mut().zip(plan.iter()) {
        let before = previous.and_then(|previous| previous.iter().position(|a| a.event == assignment.event));
        *total = before.map_or(0, |slot| reported[slot]);
    }
    processor.counters.rebase(totals);
}

/// Starts a session on this processor: its overflow tallies and polls restart from 0 (bases and
/// reported values carry on) and the plan's counters are programmed, counting from 0.
pub(super) fn start_counting(
    state: &ProcessorState,
    vendor: Vendor,
    plan: &CounterPlan,
    msrs: &mut impl Msrs,
) {
    let processor = &state.pmu;
    processor.counters.acquire();
    processor.restart_checks();
    for (slot, assignment) in plan.iter().enumerate() {
        let _ = processor.poll().start(slot, 0, assignment.width);
    }
    program::start(vendor, plan, msrs);
    // Reference cycles from MPERF count from here: its advance while nothing was owned is not the
    // session's (as no counter counted then).
    if plan.reference_from_mperf() {
        let (aperf, mperf) = frequency::read(msrs);
        publish::frequency(&state.published, aperf, mperf);
    }
}
