//! Each processor's Hardware Counters block, kept current by the reads themselves: every read stores
//! the values it changed into the processor's block (atomic cells with the block's layout), and a
//! collect hands PCW the block as it is, with no per-instance assembly. Which cells a value goes to
//! comes from the manifest's field names ([`crate::block::fields::SOURCES`]) and the generated cell table
//! ([`hardware_counters::CELLS`]), at compile time. A count goes to the cells a [`CountCell`] names,
//! which a session works out once per counter (its count table) so that a read stores each count
//! with two stores; 100 x the core cycles follows from the block once per read
//! ([`hundredfold_cycles`]).
//!
//! Every counter showing a value reads its one 8-byte field (rates, totals and the ratios alike), so
//! a read stores each value once, and again where a ratio needs it otherwise: 100 x the core cycles
//! and MPERF, and an event counted with its ratio partner ([`crate::block::fields::Paired`]).
//!
//! A read stores only what it read; whatever else the block shows (the core type, events of the
//! current plan that are not read by this path) is written whole by [`publish_all`] when a session
//! starts, so that the block always equals [`crate::block::fields::EventCounts::values`] of the processor's
//! counts (`src/session/client/tests.rs` checks this after every kind of read).

use crate::block::fields::{EventCounts, Paired, SOURCES, Value};
use crate::counters::hardware_counters::{self, AtomicCells};
use crate::pcw::{Cell, CountersetBlock};
use crate::pmu::events::Event;
use crate::pmu::topdown::{Category, Topdown};
use crate::sync::Ordering;

/// The field a value is stored to (none, if the manifest shows it nowhere): a value fills at most one
/// field, which every counter showing it reads (a count's rate, total and ratio counters share it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target(Option<Cell>);

impl Target {
    /// The Hardware Counters field that holds `value`. Evaluated by the compiler for fixed values;
    /// panics there if two fields name the same value.
    const fn of(value: Value) -> Target {
        let mut target = None;
        let mut field = 0;
        while field < SOURCES.len() {
            if value_eq(SOURCES[field], value) {
                assert!(target.is_none(), "two manifest fields name the same value");
                target = Some(hardware_counters::CELLS[field]);
            }
            field += 1;
        }
        Target(target)
    }

    /// Stores `value` (cut to 32 bits for a 4-byte field) in the field, if any: with a constant
    /// target the compiler reduces it to one plain store.
    #[inline(always)]
    fn store(self, block: &AtomicCells, value: u64) {
        match self.0 {
            Some(Cell::Wide(index)) => {
                if let Some(cell) = block.wide.get(usize::from(index)) {
                    cell.store(value, Ordering::Relaxed);
                }
            }
            Some(Cell::Narrow(index)) => {
                if let Some(cell) = block.narrow.get(usize::from(index)) {
                    cell.store(value as u32, Ordering::Relaxed);
                }
            }
            None => {}
        }
    }

    /// Whether the field holds the value whole (8 bytes): the block can then keep the value, not
    /// only show it.
    const fn keeps_the_value(&self) -> bool {
        matches!(self.0, Some(Cell::Wide(_)))
    }

    /// The value the field keeps ([`Self::keeps_the_value`]), or 0 if it keeps none.
    #[inline(always)]
    fn load(self, block: &AtomicCells) -> u64 {
        match self.0 {
            Some(Cell::Wide(index)) => {
                block.wide.get(usize::from(index)).map_or(0, |cell| cell.load(Ordering::Relaxed))
            }
            _ => 0,
        }
    }
}

/// `==` for [`Value`] in a const fn.
const fn value_eq(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Count(a), Value::Count(b))
        | (Value::Paired(a), Value::Paired(b))
        | (Value::Hundredfold(a), Value::Hundredfold(b)) => a.index() == b.index(),
        (Value::TopdownCategory(a), Value::TopdownCategory(b)) => a as usize == b as usize,
        (Value::TopdownSlots, Value::TopdownSlots)
        | (Value::Aperf, Value::Aperf)
        | (Value::Mperf, Value::Mperf)
        | (Value::MperfHundredfold, Value::MperfHundredfold)
        | (Value::OverflowInterrupts, Value::OverflowInterrupts)
        | (Value::CoreType, Value::CoreType)
        | (Value::TopdownSource, Value::TopdownSource)
        | (Value::Processors, Value::Processors) => true,
        _ => false,
    }
}

const APERF: Target = Target::of(Value::Aperf);
const MPERF: Target = Target::of(Value::Mperf);
const MPERF_HUNDREDFOLD: Target = Target::of(Value::MperfHundredfold);
const OVERFLOW_INTERRUPTS: Target = Target::of(Value::OverflowInterrupts);
const TOPDOWN_SLOTS: Target = Target::of(Value::TopdownSlots);
const TOPDOWN_CATEGORIES: [Target; 4] = [
    Target::of(Value::TopdownCategory(Category::Retiring)),
    Target::of(Value::TopdownCategory(Category::BadSpeculation)),
    Target::of(Value::TopdownCategory(Category::FrontendBound)),
    Target::of(Value::TopdownCategory(Category::BackendBound)),
];

/// Which of an event's fields a per-event table of targets holds.
#[derive(Clone, Copy)]
enum EventField {
    Count,
    Paired,
    Hundredfold,
}

/// The fields of `field` of each event, by [`Event::index`].
const fn event_targets(field: EventField) -> [Target; Event::COUNT] {
    let mut targets = [Target(None); Event::COUNT];
    let mut index = 0;
    while index < Event::COUNT {
        let event = Event::ALL[index];
        targets[index] = Target::of(match field {
            EventField::Count => Value::Count(event),
            EventField::Paired => Value::Paired(event),
            EventField::Hundredfold => Value::Hundredfold(event),
        });
        index += 1;
    }
    targets
}

/// The fields of each event's count.
const EVENT_TARGETS: [Target; Event::COUNT] = event_targets(EventField::Count);
/// The fields of each event's count where the plan counts its ratio partner too.
const PAIRED_TARGETS: [Target; Event::COUNT] = event_targets(EventField::Paired);
/// The fields of 100 x each event's count.
const HUNDREDFOLD_TARGETS: [Target; Event::COUNT] = event_targets(EventField::Hundredfold);

/// The index of an 8-byte cell of the block, or u8::MAX for none.
const fn wide_index(target: Target) -> u8 {
    match target.0 {
        Some(Cell::Wide(index)) => index,
        // Checked below: no count goes to a 4-byte field.
        Some(Cell::Narrow(_)) | None => u8::MAX,
    }
}

/// The count of `event` the block shows (0 for an event it does not show): for a count the block
/// itself keeps, such as reference cycles from MPERF ([`add_to_event`]).
#[inline(always)]
pub fn event_count(block: &AtomicCells, event: Event) -> u64 {
    EVENT_TARGETS[event.index()].load(block)
}

/// Adds `advance` to the count of `event` the block shows: for a count no counter holds, which the
/// block keeps (reference cycles from MPERF's advance between reads).
#[inline(always)]
pub fn add_to_event(block: &AtomicCells, event: Event, advance: u64) {
    let total = event_count(block, event).wrapping_add(advance);
    // Not one of a ratio's pair, nor the core cycles (reference cycles are the only such count):
    // no Paired copy, no 100-fold one.
    CountCell::of(event, Paired::default()).store(block, total);
}

/// Where a read stores one event's count, worked out once per session: the index of the block's
/// 8-byte cell that shows the event, and of the cell a ratio reads it from (its `Paired` field where
/// the plan counts its partner); an index past every cell (u8::MAX) for a cell the block does not
/// have or the count does not go to. A reader that keeps one per counter stores each count with two
/// bounds-checked stores; 100 x the core cycles it leaves to [`hundredfold_cycles`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountCell {
    cell: u8,
    paired: u8,
}

impl CountCell {
    /// The cells of `event`'s count, counted with its partner where `paired` says so.
    pub const fn of(event: Event, paired: Paired) -> CountCell {
        let index = event.index();
        let cell = wide_index(EVENT_TARGETS[index]);
        let paired = match PAIRED_TARGETS[index].0 {
            Some(_) if paired.has(event) => wide_index(PAIRED_TARGETS[index]),
            _ => u8::MAX,
        };
        CountCell { cell, paired }
    }

    /// Stores `count` in the cells the block has.
    #[inline(always)]
    pub fn store(self, block: &AtomicCells, count: u64) {
        if let Some(cell) = block.wide.get(usize::from(self.cell)) {
            cell.store(count, Ordering::Relaxed);
        }
        if let Some(cell) = block.wide.get(usize::from(self.paired)) {
            cell.store(count, Ordering::Relaxed);
        }
    }
}

/// The field of the core cycles, and of 100 x them.
const CORE_CYCLES: Target = EVENT_TARGETS[Event::CoreCycles.index()];
const CORE_CYCLES_HUNDREDFOLD: Target = HUNDREDFOLD_TARGETS[Event::CoreCycles.index()];

// The block keeps the core cycles whole, so that [`hundredfold_cycles`] can take them from it, and
// only they have a 100-fold field ([`CountCell`] stores none).
const _: () = {
    assert!(CORE_CYCLES.keeps_the_value(), "the manifest has no 8-byte CoreCycles field");
    let mut index = 0;
    while index < Event::COUNT {
        assert!(
            HUNDREDFOLD_TARGETS[index].0.is_none() || index == Event::CoreCycles.index(),
            "a 100-fold field of another event than the core cycles"
        );
        index += 1;
    }
};

/// Publishes 100 x the core cycles the block holds (instructions per cycle's base): after a read
/// whose [`CountCell`]s stored them.
#[inline(always)]
pub fn hundredfold_cycles(block: &AtomicCells) {
    CORE_CYCLES_HUNDREDFOLD.store(block, CORE_CYCLES.load(block).wrapping_mul(100));
}

// Every shown count, and every ratio's copy of one, is in an 8-byte cell that a [`CountCell`] can
// name (u8::MAX names none); no event has both a 100-fold and a paired field.
const _: () = {
    let mut index = 0;
    while index < Event::COUNT {
        let targets = [EVENT_TARGETS[index], PAIRED_TARGETS[index], HUNDREDFOLD_TARGETS[index]];
        let mut target = 0;
        while target < targets.len() {
            assert!(
                matches!(targets[target].0, Some(Cell::Wide(cell)) if cell < u8::MAX)
                    || targets[target].0.is_none(),
                "an event's count is shown in a 4-byte field, or past cell 254"
            );
            target += 1;
        }
        assert!(
            PAIRED_TARGETS[index].0.is_none() || HUNDREDFOLD_TARGETS[index].0.is_none(),
            "an event with both a paired and a 100-fold field"
        );
        index += 1;
    }
};

/// Publishes the last APERF and MPERF readings (and 100 x MPERF, relative frequency's base).
#[inline(always)]
pub fn frequency(block: &AtomicCells, aperf: u64, mperf: u64) {
    APERF.store(block, aperf);
    MPERF.store(block, mperf);
    MPERF_HUNDREDFOLD.store(block, mperf.wrapping_mul(100));
}

/// The last APERF and MPERF readings published, as (APERF, MPERF): 0 before the first.
#[inline(always)]
pub fn last_frequency(block: &AtomicCells) -> (u64, u64) {
    (APERF.load(block), MPERF.load(block))
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
        Target(Some(cell)).store(block, source.of(counts));
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
        let event = |event, count, paired| {
            CountCell::of(event, paired).store(&block, count);
            hundredfold_cycles(&block);
        };
        event(Event::CoreCycles, (5 << 40) + 3, Paired::default());
        let values = block.values();
        assert_eq!(values.core_cycles, (5 << 40) + 3, "the whole 64-bit count");
        assert_eq!(values.core_cycles_times100, ((5 << 40) + 3) * 100, "instructions per cycle's base");
        event(Event::LlcMisses, 7, Paired::default());
        assert_eq!((block.values().llc_misses, block.values().llc_misses_paired), (7, 0), "no references");
        event(Event::LlcMisses, 8, Paired::of([Event::LlcMisses, Event::LlcReferences].into_iter()));
        assert_eq!((block.values().llc_misses, block.values().llc_misses_paired), (8, 8));
        frequency(&block, (3 << 40) + 1, (7 << 40) + 2);
        assert_eq!(
            (block.values().aperf_cycles, block.values().mperf_cycles, block.values().mperf_cycles_times100),
            ((3 << 40) + 1, (7 << 40) + 2, ((7 << 40) + 2) * 100)
        );
        overflow_interrupts(&block, 9);
        assert_eq!(block.values().overflow_interrupts, 9);
        topdown(&block, &Topdown { slots: (1 << 40) + 10, categories: [1, 2, 3, (1 << 40) + 4] });
        let values = block.values();
        assert_eq!(values.topdown_slots, (1 << 40) + 10);
        assert_eq!(values.topdown_backend_bound_slots, (1 << 40) + 4);
        assert_eq!((values.core_type, values.topdown_source), (0, 0), "nothing else was written");
    }

    #[test]
    fn a_count_cell_stores_each_event_where_the_whole_block_shows_it() {
        let plans = [Paired::default(), Paired::of(Event::ALL.into_iter())];
        for paired in plans {
            for (index, &event) in Event::ALL.iter().enumerate() {
                let count = ((index as u64) << 40) + 7;
                let mut counts = EventCounts::default();
                counts.events[event.index()] = count;
                if paired.has(event) {
                    counts.paired[event.index()] = count;
                }
                let by_cell = AtomicCells::new();
                CountCell::of(event, paired).store(&by_cell, count);
                hundredfold_cycles(&by_cell);
                assert_eq!(by_cell.values(), counts.values(), "{event:?}");
            }
        }
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
