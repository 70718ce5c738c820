//! What each field of the Hardware Counters and Hardware Counters by Core Type blocks holds, matched
//! by name between the counter manifest's `field`s and the driver's tables, at compile time.
//!
//! * A field named like an event's [`EventInfo::field`](crate::pmu::events::EventInfo::field) holds
//!   that event's 64-bit count.
//! * `TopdownSlots` and `Topdown<Category>Slots` hold the top-down slot totals
//!   ([`crate::pmu::topdown`]); `AperfCycles` and `MperfCycles` the last APERF and MPERF readings;
//!   `OverflowInterrupts` the processor's handled PMIs; `CoreType` the processor's
//!   [`CoreType`](crate::pmu::hybrid::CoreType) and `Processors` how many processors the block sums.
//! * `CoreCyclesTimes100` and `MperfCyclesTimes100`: 100 x the core cycles and 100 x MPERF (modulo
//!   2^64), the bases of the ratios that can exceed 1, so that PDH shows the ratio itself, uncapped.
//! * `<event field>Paired`: an event of a ratio pair ([`PAIRS`]) where the plan counts both sides, else
//!   0, so that a ratio's `_Total` (perflib sums numerators and bases apart) covers only those.
//!
//! Ratio counters read these 64-bit fields (their types are 64-bit: see the manifest's header
//! comment), so a ratio is the exact ratio of the totals. Any other field fails the build, so adding
//! an event is a row in the event table and a counter in the manifest, and nothing else.

use crate::counters::{hardware_counters, hardware_counters_by_core_type};
use crate::pmu::events::{Event, str_eq};
use crate::pmu::topdown::{Category, Topdown};

/// A per-processor value a field can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Count(Event),
    /// The event's count where the plan counts its ratio partner too ([`Paired`]), else 0.
    Paired(Event),
    /// 100 x the event's count, modulo 2^64.
    Hundredfold(Event),
    /// 100 x MPERF, modulo 2^64.
    MperfHundredfold,
    TopdownSlots,
    TopdownCategory(Category),
    Aperf,
    Mperf,
    OverflowInterrupts,
    CoreType,
    /// Where the processor's top-down totals come from (a [`crate::pcw::driver_status::TopdownSource`]).
    TopdownSource,
    Processors,
}

/// The ratios whose two sides a plan may count one without the other (an efficient core's topdown
/// profile counts LLC misses without references): (numerator, base).
pub const PAIRS: [(Event, Event); 2] =
    [(Event::LlcMisses, Event::LlcReferences), (Event::BranchMispredicts, Event::Branches)];

/// The other side of `event`'s ratio pair, if it is in one.
pub const fn partner(event: Event) -> Option<Event> {
    let mut pair = 0;
    while pair < PAIRS.len() {
        let (numerator, base) = PAIRS[pair];
        if numerator.index() == event.index() {
            return Some(base);
        }
        if base.index() == event.index() {
            return Some(numerator);
        }
        pair += 1;
    }
    None
}

/// The events of a plan that it counts together with their ratio partner, a bit per
/// [`Event::index`]: their `Paired` fields hold their counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Paired(u32);

const _: () = assert!(Event::COUNT <= 32, "Paired has a bit per event");

impl Paired {
    /// Of a plan counting `events`.
    pub fn of(events: impl Iterator<Item = Event> + Clone) -> Paired {
        let mut mask = 0;
        for event in events.clone() {
            if partner(event).is_some_and(|partner| events.clone().any(|other| other == partner)) {
                mask |= 1 << event.index();
            }
        }
        Paired(mask)
    }

    /// Whether `event` is counted with its partner.
    #[inline(always)]
    pub const fn has(self, event: Event) -> bool {
        self.0 & (1 << event.index()) != 0
    }
}

/// The named values other than events, with their field names.
const NAMED: [(&str, Value); 17] = [
    ("CoreCyclesTimes100", Value::Hundredfold(Event::CoreCycles)),
    ("MperfCyclesTimes100", Value::MperfHundredfold),
    ("LlcMissesPaired", Value::Paired(Event::LlcMisses)),
    ("LlcReferencesPaired", Value::Paired(Event::LlcReferences)),
    ("BranchMispredictsPaired", Value::Paired(Event::BranchMispredicts)),
    ("BranchesPaired", Value::Paired(Event::Branches)),
    ("TopdownSlots", Value::TopdownSlots),
    ("TopdownRetiringSlots", Value::TopdownCategory(Category::Retiring)),
    ("TopdownBadSpeculationSlots", Value::TopdownCategory(Category::BadSpeculation)),
    ("TopdownFrontendBoundSlots", Value::TopdownCategory(Category::FrontendBound)),
    ("TopdownBackendBoundSlots", Value::TopdownCategory(Category::BackendBound)),
    ("AperfCycles", Value::Aperf),
    ("MperfCycles", Value::Mperf),
    ("OverflowInterrupts", Value::OverflowInterrupts),
    ("CoreType", Value::CoreType),
    ("TopdownSource", Value::TopdownSource),
    ("Processors", Value::Processors),
];

impl Value {
    /// The value the field `name` holds unscaled, if any.
    pub const fn named(name: &str) -> Option<Value> {
        if let Some(event) = Event::with_field(name) {
            return Some(Value::Count(event));
        }
        let mut index = 0;
        while index < NAMED.len() {
            if str_eq(NAMED[index].0, name) {
                return Some(NAMED[index].1);
            }
            index += 1;
        }
        None
    }

    /// The value of the manifest field `field`. Panics (at compile time, where it is used) if the
    /// field names nothing the driver counts.
    pub const fn of_field(field: &str) -> Value {
        match Value::named(field) {
            Some(value) => value,
            None => panic!("a counter field in the manifest names no event or value the driver has"),
        }
    }

    pub(super) fn of(self, counts: &EventCounts) -> u64 {
        match self {
            Value::Count(event) => counts.events[event.index()],
            Value::Paired(event) => counts.paired[event.index()],
            Value::Hundredfold(event) => counts.events[event.index()].wrapping_mul(100),
            Value::MperfHundredfold => counts.mperf.wrapping_mul(100),
            Value::TopdownSlots => counts.topdown.slots,
            Value::TopdownCategory(category) => counts.topdown.categories[category as usize],
            Value::Aperf => counts.aperf,
            Value::Mperf => counts.mperf,
            Value::OverflowInterrupts => counts.overflow_interrupts,
            Value::CoreType => counts.core_type,
            Value::TopdownSource => counts.topdown_source,
            Value::Processors => counts.processors,
        }
    }
}

/// The value of each of `fields`, in order; evaluated by the compiler.
const fn sources<const N: usize>(fields: &[&str]) -> [Value; N] {
    let mut sources = [Value::OverflowInterrupts; N];
    let mut index = 0;
    while index < N {
        sources[index] = Value::of_field(fields[index]);
        index += 1;
    }
    sources
}

/// The value of each Hardware Counters field, in [`hardware_counters::FIELDS`] order.
pub const SOURCES: [Value; hardware_counters::FIELDS.len()] = sources(hardware_counters::FIELDS);

/// The value of each Hardware Counters by Core Type field.
pub const BY_CORE_TYPE_SOURCES: [Value; hardware_counters_by_core_type::FIELDS.len()] =
    sources(hardware_counters_by_core_type::FIELDS);

/// One processor's values: event counts extended to 64 bits and never decreasing, top-down totals,
/// APERF/MPERF readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Indexed by [`Event::index`]; 0 for an event that is not counted.
    pub events: [u64; Event::COUNT],
    /// The counts of the events counted with their ratio partner ([`Paired`]), 0 for the others; by
    /// [`Event::index`].
    pub paired: [u64; Event::COUNT],
    pub topdown: Topdown,
    pub aperf: u64,
    pub mperf: u64,
    pub overflow_interrupts: u64,
    /// The processors' [`CoreType`](crate::pmu::hybrid::CoreType) as a number.
    pub core_type: u64,
    /// Where the processors' top-down totals come from, as a
    /// [`TopdownSource`](crate::pcw::driver_status::TopdownSource) number (the same for every
    /// processor of a core type).
    pub topdown_source: u64,
    /// How many processors these values are of.
    pub processors: u64,
}

impl EventCounts {
    /// The Hardware Counters block of these values.
    pub fn values(&self) -> hardware_counters::Values {
        hardware_counters::Values::from_fields(|field| SOURCES[field].of(self))
    }

    /// The Hardware Counters by Core Type block of these values.
    pub fn by_core_type_values(&self) -> hardware_counters_by_core_type::Values {
        hardware_counters_by_core_type::Values::from_fields(|field| BY_CORE_TYPE_SOURCES[field].of(self))
    }

    /// Adds another processor's values (of the same core type) to these: every count wraps at 64 bits,
    /// as each processor's own does.
    pub fn accumulate(&mut self, other: &EventCounts) {
        for (sum, value) in self.events.iter_mut().zip(other.events) {
            *sum = sum.wrapping_add(value);
        }
        for (sum, value) in self.paired.iter_mut().zip(other.paired) {
            *sum = sum.wrapping_add(value);
        }
        self.topdown.slots = self.topdown.slots.wrapping_add(other.topdown.slots);
        for (sum, value) in self.topdown.categories.iter_mut().zip(other.topdown.categories) {
            *sum = sum.wrapping_add(value);
        }
        self.aperf = self.aperf.wrapping_add(other.aperf);
        self.mperf = self.mperf.wrapping_add(other.mperf);
        self.overflow_interrupts = self.overflow_interrupts.wrapping_add(other.overflow_interrupts);
        self.processors = self.processors.wrapping_add(other.processors);
        self.core_type = other.core_type;
        self.topdown_source = other.topdown_source;
    }
}

#[cfg(test)]
mod tests;
