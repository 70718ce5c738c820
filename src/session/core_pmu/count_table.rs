//! One core type's counters as a session reads them, worked out once when it opens: per counter (a
//! plan's assignment, its index the counter's), the MSR and rdpmc index that read it, its placement
//! among the owned counters, its width and the block cells its count is shown in. Every read goes
//! through it (interrupts held off, or polled) and so does a repair's, as Linux computes an event's
//! `config_base`, `event_base` and `event_base_rdpmc` once per counter assignment
//! (`x86_assign_hw_event`, arch/x86/events/core.c) rather than at each read.

use crate::block::fields::Paired;
use crate::block::publish::CountCell;
use crate::counters::hardware_counters::AtomicCells;
use crate::pmu::events::Event;
use crate::pmu::fold::{COUNTERS, OwnRankPlacements, OwnedMask, Placement, TABLE};
use crate::pmu::placement::CounterPlan;
use crate::pmu::program::Msrs;

/// A session's counters, one entry per counter of its plan, each array indexed by the counter
/// alone (one index register for every array a read walks). Places past the plan's counters are
/// never read.
pub(in crate::session) struct CountTable {
    /// How many counters the plan has.
    len: u8,
    /// Counters without an rdpmc index, read with rdmsr: bit i for counter i.
    by_rdmsr: u16,
    /// Counters without a placement that is their own (a status bit the session does not own, or
    /// none): bit i for counter i. An interrupts-held read does not report them.
    unplaced: u16,
    /// Each counter's (counter MSR, rdpmc index); the index is 0 where `by_rdmsr` has the counter.
    reads: [(u32, u32); TABLE],
    /// Each counter's placement, where it is its own overflow rank (always so for a placed counter:
    /// a plan orders its counters by status bit), and each counter's width.
    placements: OwnRankPlacements,
    /// Each counter's cells in the published block.
    cells: [CountCell; TABLE],
}

const _: () = assert!(TABLE <= u16::BITS as usize, "a bit per counter in a u16");

impl CountTable {
    /// The table of `plan`, whose status bits `owned` the overflow handler folds (empty when
    /// polled), counting with their ratio partner the events `paired` says.
    pub(in crate::session) fn of(plan: &CounterPlan, owned: OwnedMask, paired: Paired) -> CountTable {
        let placement = |bit: Option<u8>, width| bit.and_then(|bit| Placement::new(owned, bit, width));
        let first = plan.iter().next().and_then(|first| placement(first.global_bit, first.width));
        let mut table = CountTable {
            len: plan.as_slice().len() as u8,
            by_rdmsr: 0,
            unplaced: 0,
            reads: [(0, 0); TABLE],
            placements: first.map_or(OwnRankPlacements::UNSET, OwnRankPlacements::filled_with),
            cells: [CountCell::of(Event::Instructions, Paired::default()); TABLE],
        };
        for (counter, assignment) in plan.iter().enumerate() {
            table.reads[counter] = (assignment.counter_msr, assignment.rdpmc.unwrap_or(0));
            if assignment.rdpmc.is_none() {
                table.by_rdmsr |= 1 << counter;
            }
            let placed = placement(assignment.global_bit, assignment.width);
            if !placed.is_some_and(|placed| table.placements.set(counter, placed)) {
                table.unplaced |= 1 << counter;
                table.placements.set_width(counter, assignment.width);
            }
            table.cells[counter] = CountCell::of(assignment.event, paired);
        }
        table
    }

    /// How many counters: at most [`COUNTERS`], as the compiler sees, so that no counter of a loop
    /// up to it pays a bounds test.
    #[inline]
    pub(in crate::session) fn len(&self) -> usize {
        usize::from(self.len).min(COUNTERS)
    }

    /// Every counter has an rdpmc index and its own placement: a read tests none of them.
    pub(in crate::session) fn all_held(&self) -> bool {
        self.by_rdmsr == 0 && self.unplaced == 0
    }

    /// Reads counter `counter` with rdpmc, which it has ([`Self::all_held`]).
    #[inline]
    pub(in crate::session) fn read_rdpmc<M: Msrs>(&self, msrs: &M, counter: usize) -> u64 {
        let (msr, index) = self.reads[counter & (TABLE - 1)];
        msrs.read_counter(msr, Some(index))
    }

    /// Reads counter `counter`: with rdpmc where it has an index, else with rdmsr.
    #[inline]
    pub(in crate::session) fn read<M: Msrs>(&self, msrs: &M, counter: usize) -> u64 {
        let (msr, index) = self.reads[counter & (TABLE - 1)];
        let rdpmc = (self.by_rdmsr >> (counter & (TABLE - 1)) & 1 == 0).then_some(index);
        msrs.read_counter(msr, rdpmc)
    }

    /// Counter `counter`'s placement, which it has ([`Self::all_held`]).
    #[inline]
    pub(in crate::session) fn held_placement(&self, counter: usize) -> Placement {
        self.placements.get(counter)
    }

    /// Counter `counter`'s placement, if it has its own.
    #[inline]
    pub(in crate::session) fn placement(&self, counter: usize) -> Option<Placement> {
        (self.unplaced >> (counter & (TABLE - 1)) & 1 == 0).then(|| self.placements.get(counter))
    }

    /// Counter `counter`'s width (clamped to 1..=64 as crate::pmu::extend clamps it).
    pub(in crate::session) fn width(&self, counter: usize) -> u8 {
        self.placements.width(counter)
    }

    /// Stores `count`, counter `counter`'s event's total, in its cells of `published` (100 x the
    /// core cycles is left to `crate::block::publish::hundredfold_cycles`, once per read).
    #[inline]
    pub(in crate::session) fn store(&self, published: &AtomicCells, counter: usize, count: u64) {
        self.cells[counter & (TABLE - 1)].store(published, count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::model::tests::{Detect, SKYLAKE_I7_6700K};
    use crate::pmu::placement::{Wanted, plan_for};
    use crate::session::core_pmu::read::paired;
    use core::cell::RefCell;

    /// Answers every counter read with its MSR and records how it was read.
    #[derive(Default)]
    struct Recorder(RefCell<Vec<(u32, Option<u32>)>>);

    impl Msrs for Recorder {
        fn read(&self, msr: u32) -> u64 {
            u64::from(msr)
        }
        fn write(&mut self, _msr: u32, _value: u64) {}
        fn read_counter(&self, msr: u32, rdpmc: Option<u32>) -> u64 {
            self.0.borrow_mut().push((msr, rdpmc));
            u64::from(msr)
        }
        fn with_interrupts_held<R>(&mut self, work: impl FnOnce(&mut Self) -> R) -> R {
            work(self)
        }
    }

    #[test]
    fn each_counter_is_read_placed_and_stored_as_its_assignment_says() {
        let model = SKYLAKE_I7_6700K.model();
        let plan = plan_for(&model, &Wanted::DEFAULT, true);
        let owned = OwnedMask::new(plan.overflow_bits()).expect("a plan's bits fit a mask");
        let table = CountTable::of(&plan, owned, paired(&plan));
        assert_eq!(table.len(), plan.as_slice().len());
        assert!(table.all_held(), "Intel: every counter has an rdpmc index and its own placement");
        let msrs = Recorder::default();
        for (counter, assignment) in plan.iter().enumerate() {
            assert_eq!(table.read(&msrs, counter), u64::from(assignment.counter_msr));
            assert_eq!(table.read_rdpmc(&msrs, counter), u64::from(assignment.counter_msr));
            let bit = assignment.global_bit.expect("Intel counters have a status bit");
            assert_eq!(table.placement(counter), Placement::new(owned, bit, assignment.width));
            assert_eq!(Some(table.held_placement(counter)), table.placement(counter));
            assert_eq!(table.width(counter), assignment.width);
            assert_eq!(table.cells[counter], CountCell::of(assignment.event, paired(&plan)));
        }
        let rdpmc: Vec<_> =
            plan.iter().flat_map(|a| [(a.counter_msr, a.rdpmc), (a.counter_msr, a.rdpmc)]).collect();
        assert_eq!(*msrs.0.borrow(), rdpmc, "both reads use the assignment's rdpmc index");
    }

    #[test]
    fn a_polled_table_places_nothing_and_a_counter_without_rdpmc_is_read_with_rdmsr() {
        let plan = plan_for(&SKYLAKE_I7_6700K.model(), &Wanted::DEFAULT, false);
        let mut table = CountTable::of(&plan, OwnedMask::EMPTY, paired(&plan));
        assert!(!table.all_held(), "nothing owned: no counter is placed");
        assert!((0..table.len()).all(|counter| table.placement(counter).is_none()));
        for (counter, assignment) in plan.iter().enumerate() {
            assert_eq!(table.width(counter), assignment.width, "a polled counter keeps its width");
        }
        table.by_rdmsr = 0b10;
        let msrs = Recorder::default();
        table.read(&msrs, 0);
        table.read(&msrs, 1);
        let [first, second] = [0, 1].map(|counter| plan.as_slice()[counter]);
        assert_eq!(*msrs.0.borrow(), [(first.counter_msr, first.rdpmc), (second.counter_msr, None)]);
    }
}
