//! Repairing one processor's programming after it was lost: a resume reset the PMU (the HAL
//! reprograms no client's counters), or another tool rewrote an event select or the global enables
//! without asking the HAL. Runs inside the all-processor call, on that processor, with interrupts
//! held off.
//!
//! Only the control registers are rewritten: the counters keep their values, so another tool reading
//! them never sees them go back to 0, and each logical count goes on from its last report. What each
//! counter counted since the last read is kept where it can be known exactly: a counter whose own
//! registers (event select or fixed-counter field, and global enable) still say what the plan has it
//! count counted its event all along and is read as usual; one whose registers changed counted under
//! someone else's programming (a reset's event select counts nothing, another tool's counts its own
//! event), so its events since its last read are not reported. Nothing is invented, nothing goes
//! backwards, and no reset counter is taken for a wrap.

use super::core_type_session::CoreTypeSession;
use crate::block::publish;
use crate::counters::hardware_counters::AtomicCells;
use crate::pmu::extend::counter_mask;
use crate::pmu::fold::COUNTERS;
use crate::pmu::model::Vendor;
use crate::pmu::processor::ProcessorPmu;
use crate::pmu::program::{self, Msrs};

/// Repairs this processor's programming (see the module comment): stops the plan's counters, reads
/// them, reports those that kept counting their events, clears their overflow status, restarts the
/// session's cells and bases from the values read, then writes the control registers, which start
/// them again from those values.
#[cold]
#[inline(never)]
pub(in crate::session) fn repair<M: Msrs>(
    processor: &ProcessorPmu,
    published: &AtomicCells,
    vendor: Vendor,
    session: &CoreTypeSession,
    msrs: &mut M,
) {
    let (plan, reading, table) = (&session.plan, session.reading, &session.counters);
    let mut kept = [false; COUNTERS];
    for (kept, assignment) in kept.iter_mut().zip(plan.iter()) {
        *kept = program::counts_as_planned(vendor, plan, assignment, msrs);
    }
    // Stopped, the counters hold still while they are read and their status is cleared: no event
    // falls between the read and the restart, and no wrap between the status read and its clear.
    program::stop(vendor, plan, msrs);
    let mut raws = [0u64; COUNTERS];
    for (counter, raw) in raws.iter_mut().enumerate().take(table.len()) {
        *raw = table.read(msrs, counter) & counter_mask(table.width(counter));
    }
    let status = reading.status(msrs);
    for counter in 0..plan.as_slice().len() {
        if kept[counter] {
            reading.report_stopped(processor, published, table, counter, raws[counter], status);
        }
    }
    publish::hundredfold_cycles(published);
    program::clear_status(vendor, plan, msrs);
    processor.counters.acquire();
    for (counter, assignment) in plan.iter().enumerate() {
        reading.restart(processor, counter, raws[counter], assignment.width);
        processor.counters.rebase_at(counter, raws[counter]);
    }
    program::program_controls(vendor, plan, msrs);
}
