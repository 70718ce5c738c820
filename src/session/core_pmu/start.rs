//! Starting a session on one processor, inside the all-processor call that opens it: its counts
//! carried over to the new plan's counters, and its counters programmed.

use super::processor_state::ProcessorState;
use crate::block::publish;
use crate::pmu::fold::COUNTERS;
use crate::pmu::frequency;
use crate::pmu::model::Vendor;
use crate::pmu::placement::CounterPlan;
use crate::pmu::processor::ProcessorPmu;
use crate::pmu::program::{self, Msrs};

/// Moves each event's total to the counter `plan` gives it, from the counter `previous` (the last
/// session's plan) gave it: a profile change between sessions can place events differently. An
/// event `plan` counts that `previous` did not starts from 0; one it no longer counts is dropped.
pub(in crate::session) fn carry_over(
    processor: &ProcessorPmu,
    previous: Option<&CounterPlan>,
    plan: &CounterPlan,
) {
    let reported = processor.counters.snapshot().values;
    let mut totals = [0u64; COUNTERS];
    for (total, assignment) in totals.iter_mut().zip(plan.iter()) {
        let before = previous.and_then(|previous| previous.iter().position(|a| a.event == assignment.event));
        *total = before.map_or(0, |counter| reported[counter]);
    }
    processor.counters.rebase(totals);
}

/// Starts a session on this processor: its overflow tallies and polls restart from 0 (bases and
/// reported values carry on) and the plan's counters are programmed, counting from 0.
pub(in crate::session) fn start_counting(
    state: &ProcessorState,
    vendor: Vendor,
    plan: &CounterPlan,
    msrs: &mut impl Msrs,
) {
    let processor = &state.pmu;
    processor.counters.acquire();
    processor.restart_checks();
    for (counter, assignment) in plan.iter().enumerate() {
        let _ = processor.poll().start(counter, 0, assignment.width);
    }
    program::start(vendor, plan, msrs);
    // Reference cycles from MPERF count from here: its advance while nothing was owned is not the
    // session's (as no counter counted then).
    if plan.reference_from_mperf() {
        let (aperf, mperf) = frequency::read(msrs);
        publish::frequency(&state.published, aperf, mperf);
    }
}
