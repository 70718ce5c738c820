//! One processor's read, inside the all-processor call with interrupts held off: how a session reads
//! its counters ([`Reading`], decided once per session) and its top-down totals ([`TopdownReading`]),
//! and the read itself, which stores what it reads into the processor's published block
//! (`crate::block::publish`); and one processor's values as the reads left them ([`counts_under`]).

use super::processor_state::ProcessorState;
use super::topdown_source;
use crate::block::fields::{EventCounts, Paired};
use crate::block::publish::{self, CountCell};
use crate::counters::hardware_counters::AtomicCells;
use crate::pcw::driver_status::TopdownSource;
use crate::pmu::events::Event;
use crate::pmu::fold::{COUNTERS, OwnRankPlacements, OwnedMask, Placement, TABLE};
use crate::pmu::hybrid::Machine;
use crate::pmu::model::Vendor;
use crate::pmu::placement::{Assignment, CounterPlan};
use crate::pmu::poll::NotAWrap;
use crate::pmu::processor::ProcessorPmu;
use crate::pmu::program::{self, Msrs, Programming};
use crate::pmu::topdown;

/// [`read_held`] for a plan with a counter lacking an rdpmc index or a placement.
fn read_placed<M: Msrs>(
    processor: &ProcessorPmu,
    published: &AtomicCells,
    plan: &CounterPlan,
    msrs: &mut M,
    status_register: u32,
    placements: &[Option<Placement>; TABLE],
    paired: Paired,
) {
    let assignments = plan.as_slice();
    let counters = PlannedCounters { assignments, placements, paired };
    read_held(processor, published, assignments.len(), msrs, status_register, &counters)
}

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
    plan: &CounterPlan,
    programming: &Programming,
    paired: Paired,
    msrs: &mut M,
) -> bool {
    for (counter, assignment) in plan.iter().enumerate() {
        let read = || msrs.read_counter(assignment.counter_msr, assignment.rdpmc);
        let wrap_is_real = || programming.intact(msrs);
        match processor.poll().poll_unless_reset(counter, assignment.width, read, wrap_is_real) {
            Some(Ok(extended)) => {
                if let Some(count) = processor.counters.report(counter, extended) {
                    publish::event(published, assignment.event, count, paired);
                }
            }
            Some(Err(NotAWrap)) => return false,
            None => {}
        }
    }
    true
}

/// How a read takes a session's counters.
pub(super) enum Reading {
    /// Interrupts held off, the overflow handler folding wraps, and every counter with an rdpmc index
    /// and a placement (always on Intel): [`HeldReads`].
    Held { status_register: u32, counters: HeldReads },
    /// Interrupts held off, the overflow handler folding the wraps of the placed counters (`None` for a
    /// counter whose status bit the session does not own, which is not read).
    Placed { status_register: u32, placements: [Option<Placement>; TABLE] },
    /// No overflow interrupt: each counter is polled (crate::pmu::poll).
    Polled,
}

impl Reading {
    /// Reads the plan's counters on this processor, interrupts held off, and publishes their totals:
    /// with an overflow interrupt, every counter (rdpmc), then the global status once, then again any
    /// counter with a wrap pending (the protocol of `crate::pmu::fold`); without one, each counter is
    /// polled.
    /// `paired`: the plan's events counted with their ratio partner (the session part's, worked out once).
    /// Returns `false` when a polled read found the programming lost (`programming` confirms each
    /// polled wrap), for the caller to repair it; an interrupt-driven read always returns `true`.
    #[inline(always)]
    pub(super) fn read<M: Msrs>(
        &self,
        processor: &ProcessorPmu,
        published: &AtomicCells,
        plan: &CounterPlan,
        programming: &Programming,
        paired: Paired,
        msrs: &mut M,
    ) -> bool {
        match self {
            // Every counter placed and readable with rdpmc: no test per counter.
            Reading::Held { status_register, counters } => {
                // At most COUNTERS, as the compiler sees: no counter pays a bounds test.
                let len = usize::from(counters.len).min(COUNTERS);
                read_held(processor, published, len, msrs, *status_register, counters);
                publish::hundredfold_cycles(published);
                true
            }
            Reading::Placed { status_register, placements } => {
                read_placed(processor, published, plan, msrs, *status_register, placements, paired);
                true
            }
            Reading::Polled => read_polled(processor, published, plan, programming, paired, msrs),
        }
    }

    /// The global overflow status, for a repair's read of stopped counters (0 when polled).
    pub(super) fn status<M: Msrs>(&self, msrs: &M) -> u64 {
        match self {
            Reading::Held { status_register, .. } | Reading::Placed { status_register, .. } => {
                msrs.read(*status_register)
            }
            Reading::Polled => 0,
        }
    }

    /// A repair's report of counter `counter`, whose counter counted its event all along and was stopped at
    /// `raw` (`status` the global status read after stopping): as a read would, so nothing it counted
    /// is lost. Publishes the count.
    pub(super) fn report_stopped(
        &self,
        processor: &ProcessorPmu,
        published: &AtomicCells,
        plan: &CounterPlan,
        counter: usize,
        raw: u64,
        status: u64,
    ) {
        let Some(assignment) = plan.as_slice().get(counter) else { return };
        let count = match self {
            Reading::Held { counters, .. } => counters
                .placement(counter)
                .and_then(|at| processor.counters.report_held(counter, at, raw, status, || raw)),
            Reading::Placed { placements, .. } => placements[counter & (TABLE - 1)]
                .and_then(|at| processor.counters.report_held(counter, at, raw, status, || raw)),
            Reading::Polled => processor
                .poll()
                .poll(counter, assignment.width, || raw)
                .and_then(|extended| processor.counters.report(counter, extended)),
        };
        if let Some(count) = count {
            publish::event(published, assignment.event, count, paired(plan));
        }
    }

    /// A repair's restart of counter `counter`'s session cell, its counter stopped at `raw` and going on
    /// from there: an overflow count from 0, or a polled value from `raw` (the counter's value, as
    /// crate::pmu::poll requires). The caller has restarted every cell from 0.
    pub(super) fn restart(&self, processor: &ProcessorPmu, counter: usize, raw: u64, width: u8) {
        if let Reading::Polled = self {
            let _ = processor.poll().start(counter, raw, width);
        }
    }

    pub(super) fn of(vendor: Vendor, plan: &CounterPlan, owned: OwnedMask) -> Reading {
        let Some(status_register) =
            program::global_status_register(vendor, plan).filter(|_| owned != OwnedMask::EMPTY)
        else {
            return Reading::Polled;
        };
        let mut placements = [None; TABLE];
        for (placement, assignment) in placements.iter_mut().zip(plan.iter()) {
            *placement = assignment.global_bit.and_then(|bit| Placement::new(owned, bit, assignment.width));
        }
        match HeldReads::of(plan, &placements) {
            Some(counters) => Reading::Held { status_register, counters },
            None => Reading::Placed { status_register, placements },
        }
    }
}

/// How a read takes a session's top-down totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TopdownReading {
    /// The plan has none.
    None,
    /// Fixed counter 3 and IA32_PERF_METRICS ([`CounterPlan::topdown_metrics`]).
    PerfMetrics,
    /// From the topdown profile's events, with this many issue slots per cycle.
    FromEvents(u8),
}

impl TopdownReading {
    /// Reads and publishes the top-down totals of `plan`.
    pub(super) fn read<M: Msrs>(
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
    pub(super) fn source(self) -> Option<TopdownSource> {
        match self {
            TopdownReading::PerfMetrics => Some(TopdownSource::PerfMetrics),
            TopdownReading::FromEvents(_) => Some(TopdownSource::ProfileEvents),
            TopdownReading::None => None,
        }
    }

    pub(super) fn of(plan: &CounterPlan) -> TopdownReading {
        match (plan.topdown_metrics(), plan.topdown_width()) {
            (true, _) => TopdownReading::PerfMetrics,
            (false, Some(width)) => TopdownReading::FromEvents(width),
            (false, None) => TopdownReading::None,
        }
    }
}

/// The interrupts-off read of `len` counters ([`Reading::read`]): each counter, then the global status
/// once, then each counter's report (read again where a wrap is pending). Inlined for each kind of
/// [`HeldCounters`], so that where every counter has an rdpmc index and a placement, no counter pays a test
/// for them.
#[inline(always)]
fn read_held<M: Msrs>(
    processor: &ProcessorPmu,
    published: &AtomicCells,
    len: usize,
    msrs: &mut M,
    status_register: u32,
    counters: &impl HeldCounters,
) {
    // Index loops: the iterator adapters cost several instructions per counter here.
    let mut raws = [0u64; TABLE];
    for counter in 0..len {
        raws[counter & (TABLE - 1)] = counters.read(msrs, counter);
    }
    let status = msrs.read(status_register);
    for counter in 0..len {
        if let Some(at) = counters.placement(counter) {
            let raw = raws[counter & (TABLE - 1)];
            let read_again = || counters.read(msrs, counter);
            if let Some(count) = processor.counters.report_held(counter, at, raw, status, read_again) {
                counters.publish(published, counter, count);
            }
        }
    }
}

/// What the interrupts-off reader needs per counter.
trait HeldCounters {
    /// Reads counter `counter`'s counter.
    fn read<M: Msrs>(&self, msrs: &M, counter: usize) -> u64;
    /// The counter's placement among the owned counters, if it has one.
    fn placement(&self, counter: usize) -> Option<Placement>;
    /// Publishes `count`, the counter's event's total.
    fn publish(&self, published: &AtomicCells, counter: usize, count: u64);
}

/// Any plan's counters, read from the plan and the session's placements.
struct PlannedCounters<'a> {
    assignments: &'a [Assignment],
    placements: &'a [Option<Placement>; TABLE],
    paired: Paired,
}

impl HeldCounters for PlannedCounters<'_> {
    #[inline(always)]
    fn read<M: Msrs>(&self, msrs: &M, counter: usize) -> u64 {
        let assignment = &self.assignments[counter];
        msrs.read_counter(assignment.counter_msr, assignment.rdpmc)
    }
    #[inline(always)]
    fn placement(&self, counter: usize) -> Option<Placement> {
        self.placements[counter & (TABLE - 1)]
    }
    #[inline(always)]
    fn publish(&self, published: &AtomicCells, counter: usize, count: u64) {
        publish::event(published, self.assignments[counter].event, count, self.paired);
    }
}

/// How the interrupts-off reader reads a plan whose every counter has an rdpmc index and a placement that
/// is its own overflow counter (always on Intel, and on AMD's first six core counters): per counter, the
/// (counter MSR, rdpmc index), the placement and the cell its count is shown in, without an `Option`
/// each.
pub(super) struct HeldReads {
    /// How many counters the plan has.
    len: u8,
    reads: [(u32, u32); TABLE],
    placements: OwnRankPlacements,
    cells: [CountCell; TABLE],
}

impl HeldCounters for HeldReads {
    #[inline(always)]
    fn read<M: Msrs>(&self, msrs: &M, counter: usize) -> u64 {
        let (msr, index) = self.reads[counter & (TABLE - 1)];
        msrs.read_counter(msr, Some(index))
    }
    #[inline(always)]
    fn placement(&self, counter: usize) -> Option<Placement> {
        Some(self.placements.get(counter))
    }
    #[inline(always)]
    fn publish(&self, published: &AtomicCells, counter: usize, count: u64) {
        self.cells[counter & (TABLE - 1)].store(published, count);
    }
}

impl HeldReads {
    fn of(plan: &CounterPlan, placements: &[Option<Placement>; TABLE]) -> Option<HeldReads> {
        // Places past the plan's counters are never read; they repeat the first counter's.
        let mut held = HeldReads {
            len: plan.as_slice().len() as u8,
            reads: [(0, 0); TABLE],
            placements: OwnRankPlacements::filled_with(placements[0]?),
            cells: [CountCell::of(Event::Instructions, Paired::default()); TABLE],
        };
        let paired = paired(plan);
        for (counter, assignment) in plan.iter().enumerate() {
            held.reads[counter] = (assignment.counter_msr, assignment.rdpmc?);
            // Each counter is its own overflow counter: the plan orders its counters by status bit.
            if !held.placements.set(counter, placements[counter]?) {
                return None;
            }
            held.cells[counter] = CountCell::of(assignment.event, paired);
        }
        Some(held)
    }
}

/// Which of `plan`'s events it counts with their ratio partner.
pub(super) fn paired(plan: &CounterPlan) -> Paired {
    Paired::of(plan.as_slice().iter().map(|assignment| assignment.event))
}

/// Top-down totals from the topdown profile's event counts as last reported on this processor: what a
/// read publishes, and what the counts assembled whole show.
pub(super) fn topdown_from_events(
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
pub(super) fn counts_under(
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
