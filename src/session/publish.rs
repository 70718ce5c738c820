//! Each processor's Hardware Counters block, kept current by the reads themselves: every read stores
//! the values it changed into the processor's block (atomic cells with the block's layout), and a
//! collect hands PCW the block as it is, with no per-instance assembly. Which cells a value goes to
//! comes from the manifest's field names ([`super::fields::SOURCES`]) and the generated cell table
//! ([`hardware_counters::CELLS`]), at compile time: an event's stores are reached by one jump on the
//! event ([`Event::visit`]), each to a constant cell.
//!
//! A read stores only what it read; whatever else the block shows (the core type, events of the
//! current plan that are not read by this path) is written whole by [`publish_all`] when a session
//! starts, so that the block always equals [`super::fields::EventCounts::values`] of the processor's
//! counts (client_tests checks this after every kind of read).

use super::fields::{EventCounts, SOURCES, Value};
use crate::counters::hardware_counters::{self, AtomicCells};
use crate::pcw::{Cell, CountersetBlock};
use crate::pmu::events::{Event, EventVisitor};
use crate::pmu::processor::PerProcessor;
use crate::pmu::topdown::{Category, Topdown};
use core::sync::atomic::Ordering;

/// One processor: its PMU state and its published block. All zero is "nothing counted yet" (the pool
/// hands it out zeroed).
///
/// Not cache-line aligned, for the memory target (512 bytes of non-paged pool per processor): a line
/// may hold the end of one processor's block and the start of the next one's counters. Each is
/// written only on its own processor, the block only by a read (once per collect), so such a line
/// moves between the two at most once per collect.
#[repr(C)]
#[derive(Default)]
pub struct Processor {
    pub pmu: PerProcessor,
    /// What a collect hands PCW for this processor: written only on this processor (by its reads)
    /// or before it counts, read by PCW's copy at any time.
    pub published: AtomicCells,
}

// The non-paged memory target: at most 512 bytes per processor, its instance (name and id) included.
const _: () = assert!(
    core::mem::size_of::<Processor>()
        + core::mem::size_of::<crate::pcw::processor_instances::ProcessorInstance>()
        <= 512,
    "at most 512 bytes of state per processor"
);

/// The most fields one value fills: its count and its `Scaled` twin.
const MAX_FIELDS: usize = 2;

/// One field a value is stored to: its cell, and the value's shift for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target {
    cell: Cell,
    shift: u8,
}

/// The fields one value fills, in block order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Targets([Option<Target>; MAX_FIELDS]);

impl Targets {
    /// The Hardware Counters fields that hold `value` (none, if the manifest shows it nowhere).
    /// Evaluated by the compiler for fixed values; panics there if a value fills more than
    /// [`MAX_FIELDS`] fields.
    const fn of(value: Value) -> Targets {
        let mut targets = [None; MAX_FIELDS];
        let mut found = 0;
        let mut field = 0;
        while field < SOURCES.len() {
            let source = SOURCES[field];
            if value_eq(source.value, value) {
                assert!(found < MAX_FIELDS, "a value fills more fields than a read publishes");
                targets[found] =
                    Some(Target { cell: hardware_counters::CELLS[field], shift: source.shift as u8 });
                found += 1;
            }
            field += 1;
        }
        Targets(targets)
    }

    /// Stores `value` (shifted, and cut to 32 bits for a 4-byte field) in every field of `block`.
    /// Written out for both places rather than as a loop: with constant targets the compiler then
    /// reduces it to one or two plain stores.
    #[inline(always)]
    fn store(&self, block: &AtomicCells, value: u64) {
        let [first, second] = self.0;
        if let Some(target) = first {
            target.store(block, value);
        }
        if let Some(target) = second {
            target.store(block, value);
        }
    }
}

impl Target {
    #[inline(always)]
    fn store(self, block: &AtomicCells, value: u64) {
        let shifted = value >> self.shift;
        match self.cell {
            Cell::Wide(index) => {
                if let Some(cell) = block.wide.get(usize::from(index)) {
                    cell.store(shifted, Ordering::Relaxed);
                }
            }
            Cell::Narrow(index) => {
                if let Some(cell) = block.narrow.get(usize::from(index)) {
                    cell.store(shifted as u32, Ordering::Relaxed);
                }
            }
        }
    }
}

impl Targets {
    /// Whether one of the fields holds the value itself in 8 bytes (unshifted): the block can then
    /// keep the value, not only show it.
    const fn keeps_the_value(&self) -> bool {
        let mut index = 0;
        while index < MAX_FIELDS {
            if let Some(Target { cell: Cell::Wide(_), shift: 0 }) = self.0[index] {
                return true;
            }
            index += 1;
        }
        false
    }

    /// The value a field keeps it in ([`Self::keeps_the_value`]), or 0 if none does.
    #[inline(always)]
    fn load(&self, block: &AtomicCells) -> u64 {
        for target in self.0.iter().flatten() {
            if let Target { cell: Cell::Wide(index), shift: 0 } = *target {
                return block.wide.get(usize::from(index)).map_or(0, |cell| cell.load(Ordering::Relaxed));
            }
        }
        0
    }
}

/// `==` for [`Value`] in a const fn.
const fn value_eq(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Count(a), Value::Count(b)) => a.index() == b.index(),
        (Value::TopdownCategory(a), Value::TopdownCategory(b)) => a as usize == b as usize,
        (Value::TopdownSlots, Value::TopdownSlots)
        | (Value::Aperf, Value::Aperf)
        | (Value::Mperf, Value::Mperf)
        | (Value::OverflowInterrupts, Value::OverflowInterrupts)
        | (Value::CoreType, Value::CoreType)
        | (Value::Processors, Value::Processors) => true,
        _ => false,
    }
}

const APERF: Targets = Targets::of(Value::Aperf);
const MPERF: Targets = Targets::of(Value::Mperf);
const OVERFLOW_INTERRUPTS: Targets = Targets::of(Value::OverflowInterrupts);
const TOPDOWN_SLOTS: Targets = Targets::of(Value::TopdownSlots);
const TOPDOWN_CATEGORIES: [Targets; 4] = [
    Targets::of(Value::TopdownCategory(Category::Retiring)),
    Targets::of(Value::TopdownCategory(Category::BadSpeculation)),
    Targets::of(Value::TopdownCategory(Category::FrontendBound)),
    Targets::of(Value::TopdownCategory(Category::BackendBound)),
];

/// The fields of each event's count, by [`Event::index`].
const EVENT_TARGETS: [Targets; Event::COUNT] = {
    let mut targets = [Targets([None; MAX_FIELDS]); Event::COUNT];
    let mut index = 0;
    while index < Event::COUNT {
        targets[index] = Targets::of(Value::Count(Event::ALL[index]));
        index += 1;
    }
    targets
};

/// Publishes `count`, the total of `event`: a jump to the event's stores, whose cells are constants.
#[inline(always)]
pub fn event(block: &AtomicCells, event: Event, count: u64) {
    event.visit(StoreCount { block, count });
}

struct StoreCount<'a> {
    block: &'a AtomicCells,
    count: u64,
}

impl EventVisitor for StoreCount<'_> {
    #[inline(always)]
    fn visit<const EVENT: usize>(self) {
        const { EVENT_TARGETS[EVENT] }.store(self.block, self.count);
    }
}

/// Publishes the last APERF and MPERF readings.
#[inline(always)]
pub fn frequency(block: &AtomicCells, aperf: u64, mperf: u64) {
    APERF.store(block, aperf);
    MPERF.store(block, mperf);
}

/// Publishes the processor's overflow interrupt count.
#[inline(always)]
pub fn overflow_interrupts(block: &AtomicCells, count: u64) {
    OVERFLOW_INTERRUPTS.store(block, count);
}

// The block keeps the top-down totals of IA32_PERF_METRICS (see [`topdown_totals`]).
const _: () = {
    assert!(TOPDOWN_SLOTS.keeps_the_value(), "the manifest has no 8-byte TopdownSlots field");
    let mut category = 0;
    while category < TOPDOWN_CATEGORIES.len() {
        assert!(TOPDOWN_CATEGORIES[category].keeps_the_value(), "a Topdown<Category>Slots field is missing");
        category += 1;
    }
};

/// The top-down totals the block shows. The block is where the driver keeps the totals of
/// IA32_PERF_METRICS: each read adds its slots to them ([`crate::pmu::topdown::read_and_zero`]).
pub fn topdown_totals(block: &AtomicCells) -> Topdown {
    Topdown {
        slots: TOPDOWN_SLOTS.load(block),
        categories: TOPDOWN_CATEGORIES.each_ref().map(|targets| targets.load(block)),
    }
}

/// Publishes the top-down totals.
pub fn topdown(block: &AtomicCells, topdown: &Topdown) {
    TOPDOWN_SLOTS.store(block, topdown.slots);
    for (targets, &slots) in TOPDOWN_CATEGORIES.iter().zip(&topdown.categories) {
        targets.store(block, slots);
    }
}

/// Writes the whole block from `counts`: when a session starts, and at load.
pub fn publish_all(block: &AtomicCells, counts: &EventCounts) {
    for (source, &cell) in SOURCES.iter().zip(hardware_counters::CELLS) {
        Target { cell, shift: 0 }.store(block, source.read(counts));
    }
    debug_assert_eq!(block.values(), counts.values());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::hardware_counters::Values;

    #[test]
    fn each_value_fills_the_fields_that_name_it() {
        let block = AtomicCells::new();
        event(&block, Event::CoreCycles, 5 << 10);
        let values = block.values();
        assert_eq!(values.core_cycles, 5 << 10);
        assert_eq!(values.core_cycles_scaled, 5, "the Scaled twin holds the count >> 10");
        frequency(&block, 3 << 10, 7 << 10);
        assert_eq!((block.values().aperf_cycles_scaled, block.values().mperf_cycles_scaled), (3, 7));
        overflow_interrupts(&block, 9);
        assert_eq!(block.values().overflow_interrupts, 9);
        topdown(&block, &Topdown { slots: 1 << 20, categories: [1 << 16, 2 << 16, 3 << 16, 4 << 16] });
        let values = block.values();
        assert_eq!((values.topdown_slots, values.topdown_slots_scaled), (1 << 20, 16));
        assert_eq!(
            (values.topdown_backend_bound_slots, values.topdown_backend_bound_slots_scaled),
            (4 << 16, 4)
        );
        assert_eq!(
            Values { reserved: 0, ..values },
            values,
            "nothing else was written (the reserved tail stays 0)"
        );
    }

    #[test]
    fn publish_all_writes_every_field_as_the_values_block_has_it() {
        let mut counts =
            EventCounts { aperf: 1 << 40, mperf: 3 << 12, core_type: 2, ..EventCounts::default() };
        for (index, event) in counts.events.iter_mut().enumerate() {
            *event = (index as u64 + 1) << 33;
        }
        counts.topdown = Topdown { slots: 1 << 50, categories: [1, 2, 3, 4] };
        let block = AtomicCells::new();
        publish_all(&block, &counts);
        assert_eq!(block.values(), counts.values());
    }
}
