//! One processor's read, inside the all-processor call with interrupts held off: how a session reads
//! its counters ([`Reading`], decided once per session, each counter through the session's
//! [`CountTable`]) and its top-down totals ([`TopdownReading`]), and the read itself, which stores
//! what it reads into the processor's published block (`crate::block::publish`); and one
//! processor's values as the reads left them ([`counts_under`]).

use super::count_table::CountTable;
use super::processor_state::ProcessorState;
use super::topdown_source;
use crate::block::fields::{EventCounts, Paired};
use crate::block::publish;
use crate::counters::hardware_counters::AtomicCells;
use crate::pcw::driver_status::TopdownSource;
use crate::pmu::events::Event;
use crate::pmu::fold::{OwnedMask, TABLE};
use crate::pmu::hybrid::Machine;
use crate::pmu::model::Vendor;
use crate::pmu::placement::CounterPlan;
use crate::pmu::poll::NotAWrap;
use crate::pmu::processor::ProcessorPmu;
use crate::pmu::program::{self, Msrs, Programming};
use crate::pmu::topdown;

/// Polls each counter (no overflow interrupt). A counter below its last value is taken for a wrap
/// only while the programming is intact: a resume's reset zeroes the counters (and AMD PerfMonV2's
/// global enables come back set, so only the event selects show it), and a counter back at 0 read as
/// a wrap would jump by 2^W. Returns `false`, having reported the counters before that one, when the
/// programming is lost: the caller repairs it.
///
/// The programming decides, not the time since the last poll: a reset always clears the event
/// selects' enable bits, while a "wrap too fast for any clock" test passes a counter that was near
/// 2^W when it was reset (the apparent advance, 2^W less its last value, is small, and counted too
/// many) and needs a clock that leaves out the sleep. A wrap is rare (hours apart at 48 bits), so its up to ten rdmsr
/// cost nothing per collect.
fn read_polled<M: Msrs>(
    processor: &ProcessorPmu,
    published: &AtomicCells,
    table: &CountTable,
    programming: &Programming,
    msrs: &mut M,
) -> bool {
    for counter in 0..table.len() {
        let read = || table.read(msrs, counter);
        let wrap_is_real = || programming.intact(msrs);
        match processor.poll().poll_unless_reset(counter, table.width(counter), read, wrap_is_real) {
            Some(Ok(extended)) => {
                if let Some(count) = processor.counters.report(counter, extended) {
                    table.store(published, counter, count);
                }
            }
            Some(Err(NotAWrap)) => {
                publish::hundredfold_cycles(published);
                return false;
            }
            None => {}
        }
    }
    publish::hundredfold_cycles(published);
    true
}

/// How a read takes a session's counters, each through the session's [`CountTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::session) enum Reading {
    /// Interrupts held off, the overflow handler folding wraps, and every counter with an rdpmc index
    /// and its own placement (always on Intel; AMD's first six core counters): no test per counter.
    Held { status_register: u32 },
    /// Interrupts held off, the overflow handler folding the wraps of the placed counters; a counter
    /// without an rdpmc index is read with rdmsr, and one without a placement is not reported.
    Placed { status_register: u32 },
    /// No overflow interrupt: each counter is polled (crate::pmu::poll).
    Polled,
}

impl Reading {
    /// Reads the table's counters on this processor, interrupts held off, and publishes their
    /// totals: with an overflow interrupt, every counter, then the global status once, then again
    /// any counter with a wrap pending (the protocol of `crate::pmu::fold`); without one, each
    /// counter is polled. Returns `false` when a polled read found the programming lost
    /// (`programming` confirms each polled wrap), for the caller to repair it; an interrupt-driven
    /// read always returns `true`.
    #[inline(always)]
    pub(in crate::session) fn read<M: Msrs>(
        self,
        processor: &ProcessorPmu,
        published: &AtomicCells,
        table: &CountTable,
        programming: &Programming,
        msrs: &mut M,
    ) -> bool {
        match self {
            Reading::Held { status_register } => {
                read_held::<M, true>(processor, published, table, msrs, status_register);
                true
            }
            Reading::Placed { status_register } => {
                read_held::<M, false>(processor, published, table, msrs, status_register);
                true
            }
            Reading::Polled => read_polled(processor, published, table, programming, msrs),
        }
    }

    /// The global overflow status, for a repair's read of stopped counters (0 when polled).
    pub(in crate::session) fn status<M: Msrs>(self, msrs: &M) -> u64 {
        match self {
            Reading::Held { status_register } | Reading::Placed { status_register } => {
                msrs.read(status_register)
            }
            Reading::Polled => 0,
        }
    }

    /// A repair's report of counter `counter`, which counted its event all along and was stopped
    /// at `raw` (`status` the global status read after stopping): as a read would, so nothing it
    /// counted is lost. Publishes the count (100 x the core cycles is the caller's, once).
    pub(in crate::session) fn report_stopped(
        self,
        processor: &ProcessorPmu,
        published: &AtomicCells,
        table: &CountTable,
        counter: usize,
        raw: u64,
        status: u64,
    ) {
        if counter >= table.len() {
            return;
        }
        let count = match self {
            Reading::Held { .. } | Reading::Placed { .. } => table
                .placement(counter)
                .and_then(|at| processor.counters.report_held(counter, at, raw, status, || raw)),
            Reading::Polled => processor
                .poll()
                .poll(counter, table.width(counter), || raw)
                .and_then(|extended| processor.counters.report(counter, extended)),
        };
        if let Some(count) = count {
            table.store(published, counter, count);
        }
    }

    /// A repair's restart of counter `counter`'s session cell, the counter stopped at `raw` and
    /// going on from there: an overflow count from 0, or a polled value from `raw` (the counter's
    /// value, as crate::pmu::poll requires). The caller has restarted every cell from 0.
    pub(in crate::session) fn restart(self, processor: &ProcessorPmu, counter: usize, raw: u64, width: u8) {
        if let Reading::Polled = self {
            let _ = processor.poll().start(counter, raw, width);
        }
    }

    /// How `table`'s counters are read, for `plan` whose status bits `owned` the overflow handler
    /// folds (empty when polled).
    pub(in crate::session) fn of(
        vendor: Vendor,
        plan: &CounterPlan,
        owned: OwnedMask,
        table: &CountTable,
    ) -> Reading {
        match program::global_status_register(vendor, plan).filter(|_| owned != OwnedMask::EMPTY) {
            None => Reading::Polled,
            Some(status_register) if table.all_held() => Reading::Held { status_register },
            Some(status_register) => Reading::Placed { status_register },
        }
    }
}

/// How a read takes a session's top-down totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::session) enum TopdownReading {
    /// The plan has none.
    None,
    /// Fixed counter 3 and IA32_PERF_METRICS ([`CounterPlan::topdown_metrics`]).
    PerfMetrics,
    /// From the topdown profile's events, with this many issue slots per cycle.
    FromEvents(u8),
}

impl TopdownReading {
    /// Reads and publishes the top-down totals of `plan`.
    pub(in crate::session) fn read<M: Msrs>(
        self,
        processor: &ProcessorPmu,
        published: &AtomicCells,
        plan: &CounterPlan,
        msrs: &mut M,
    ) {
        match self {
            TopdownReading::None => {}
            TopdownReading::PerfMetrics => {
                // Fixed counter 3's wraps are counted in the counter after the plan's (its status bit
                // is above every assignment's, so that is its rank among the owned bits).
                let wraps = processor.counters.session_cell(plan.as_slice().len());
                let read = topdown::read_and_zero(msrs, &processor.topdown_remainders, wraps);
                publish::topdown(published, &publish::topdown_totals(published).plus(&read));
            }
            TopdownReading::FromEvents(width) => {
                publish::topdown(published, &topdown_from_events(processor, plan, width));
            }
        }
    }

    /// The Top-down Source of a plan read this way (`None`: the plan counts no top-down).
    pub(in crate::session) fn source(self) -> Option<TopdownSource> {
        match self {
            TopdownReading::PerfMetrics => Some(TopdownSource::PerfMetrics),
            TopdownReading::FromEvents(_) => Some(TopdownSource::ProfileEvents),
            TopdownReading::None => None,
        }
    }

    pub(in crate::session) fn of(plan: &CounterPlan) -> TopdownReading {
        match (plan.topdown_metrics(), plan.topdown_width()) {
            (true, _) => TopdownReading::PerfMetrics,
            (false, Some(width)) => TopdownReading::FromEvents(width),
            (false, None) => TopdownReading::None,
        }
    }
}

/// The interrupts-off read ([`Reading::read`]): each counter, then the global status once, then
/// each counter's report (read again where a wrap is pending). `HELD`: every counter has an rdpmc
/// index and its own placement ([`CountTable::all_held`]), so that no counter pays a test for them.
#[inline(always)]
fn read_held<M: Msrs, const HELD: bool>(
    processor: &ProcessorPmu,
    published: &AtomicCells,
    table: &CountTable,
    msrs: &mut M,
    status_register: u32,
) {
    let len = table.len();
    let read =
        |msrs: &M, counter| if HELD { table.read_rdpmc(msrs, counter) } else { table.read(msrs, counter) };
    // Index loops: the iterator adapters cost several instructions per counter here.
    let mut raws = [0u64; TABLE];
    for counter in 0..len {
        raws[counter & (TABLE - 1)] = read(msrs, counter);
    }
    let status = msrs.read(status_register);
    for counter in 0..len {
        let at = if HELD { Some(table.held_placement(counter)) } else { table.placement(counter) };
        if let Some(at) = at {
            let raw = raws[counter & (TABLE - 1)];
            let read_again = || read(msrs, counter);
            if let Some(count) = processor.counters.report_held(counter, at, raw, status, read_again) {
                table.store(published, counter, count);
            }
        }
    }
    publish::hundredfold_cycles(published);
}

/// Which of `plan`'s events it counts with their ratio partner.
pub(in crate::session) fn paired(plan: &CounterPlan) -> Paired {
    Paired::of(plan.as_slice().iter().map(|assignment| assignment.event))
}

/// Top-down totals from the topdown profile's event counts as last reported on this processor: what a
/// read publishes, and what the counts assembled whole show.
pub(in crate::session) fn topdown_from_events(
    processor: &ProcessorPmu,
    plan: &CounterPlan,
    width: u8,
) -> topdown::Topdown {
    topdown::from_events(width, plan.topdown_atom(), |event| {
        plan.as_slice()
            .iter()
            .position(|assignment| assignment.event == event)
            .map(|counter| processor.counters.reported(counter))
    })
}

/// One processor's values as of its last read, with `plan` (the last session's, open or closed)
/// placing the event counts: between sessions, and while one is being opened or closed, the last plan
/// places the last values, so counts never drop back to 0 while the counters are released.
/// `machine` gives the processor's core type's PMU (its Top-down Source before any session).
pub(in crate::session) fn counts_under(
    processor: &ProcessorState,
    plan: Option<&CounterPlan>,
    machine: &Machine,
) -> EventCounts {
    let pmu = &processor.pmu;
    let model = machine.model_of(usize::from(pmu.core_type()));
    let (aperf, mperf) = publish::last_frequency(&processor.published);
    let mut counts = EventCounts {
        overflow_interrupts: pmu.counters.overflow_interrupts(),
        aperf,
        mperf,
        core_type: u64::from(pmu.core_type()),
        topdown_source: topdown_source::of_core_type(model, plan) as u64,
        processors: 1,
        ..EventCounts::default()
    };
    if let Some(plan) = plan {
        let paired = paired(plan);
        for (counter, assignment) in plan.as_slice().iter().enumerate() {
            let count = pmu.counters.reported(counter);
            counts.events[assignment.event.index()] = count;
            if paired.has(assignment.event) {
                counts.paired[assignment.event.index()] = count;
            }
        }
        // No counter holds them: the block keeps MPERF's advance over the sessions.
        if plan.reference_from_mperf() {
            counts.events[Event::ReferenceCycles.index()] =
                publish::event_count(&processor.published, Event::ReferenceCycles);
        }
    }
    // Kept in the block for IA32_PERF_METRICS; derived from the events in the topdown profile; 0 in a
    // plan with neither (after a topdown profile, say).
    counts.topdown = match plan {
        None => publish::topdown_totals(&processor.published),
        Some(plan) => match TopdownReading::of(plan) {
            TopdownReading::PerfMetrics => publish::topdown_totals(&processor.published),
            TopdownReading::FromEvents(width) => topdown_from_events(pmu, plan, width),
            TopdownReading::None => topdown::Topdown::default(),
        },
    };
    counts
}
