//! What each field of the Hardware Counters block holds, matched by name between the counter
//! manifest's `field`s and the event table, at compile time.
//!
//! * A field named like an event's [`EventInfo::field`](crate::pmu::events::EventInfo::field) holds
//!   that event's 64-bit count.
//! * The same name plus `Scaled` holds the count divided by 2^[`RATIO_SCALE_SHIFT`]: ratio counters
//!   read these, so that their 32-bit bases wrap rarely (see the manifest's header comment).
//! * `OverflowInterrupts` holds the processor's handled PMIs.
//!
//! Any other field fails the build, so adding an event is a row in the event table and a counter in
//! the manifest, and nothing else.

use crate::counters::hardware_counters::{FIELDS, Values};
use crate::pmu::events::{Event, str_eq};

/// Ratio counters read counts shifted right by this many bits.
pub const RATIO_SCALE_SHIFT: u32 = 10;

/// What a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldSource {
    Count(Event),
    Scaled(Event),
    OverflowInterrupts,
}

const SCALED_SUFFIX: &str = "Scaled";

impl FieldSource {
    /// The source of the manifest field `field`. Panics (at compile time, where it is used) if the
    /// field names nothing the driver counts.
    pub const fn of(field: &str) -> FieldSource {
        if str_eq(field, "OverflowInterrupts") {
            return FieldSource::OverflowInterrupts;
        }
        if let Some(event) = Event::with_field(field) {
            return FieldSource::Count(event);
        }
        let bytes = field.as_bytes();
        if bytes.len() > SCALED_SUFFIX.len() {
            let (stem, suffix) = bytes.split_at(bytes.len() - SCALED_SUFFIX.len());
            if let (Ok(stem), Ok(suffix)) = (core::str::from_utf8(stem), core::str::from_utf8(suffix))
                && str_eq(suffix, SCALED_SUFFIX)
                && let Some(event) = Event::with_field(stem)
            {
                return FieldSource::Scaled(event);
            }
        }
        panic!("a Hardware Counters field in the manifest names no event of the event table")
    }

    fn value(self, counts: &EventCounts) -> u64 {
        match self {
            FieldSource::Count(event) => counts.events[event.index()],
            FieldSource::Scaled(event) => counts.events[event.index()] >> RATIO_SCALE_SHIFT,
            FieldSource::OverflowInterrupts => counts.overflow_interrupts,
        }
    }
}

/// Each field's source, in [`FIELDS`] order; evaluated by the compiler.
pub const SOURCES: [FieldSource; FIELDS.len()] = {
    let mut sources = [FieldSource::OverflowInterrupts; FIELDS.len()];
    let mut index = 0;
    while index < FIELDS.len() {
        sources[index] = FieldSource::of(FIELDS[index]);
        index += 1;
    }
    sources
};

/// One processor's counts, each extended to 64 bits and never decreasing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Indexed by [`Event::index`]; 0 for an event that is not counted.
    pub events: [u64; Event::COUNT],
    pub overflow_interrupts: u64,
}

impl EventCounts {
    /// The Hardware Counters block of these counts.
    pub fn values(&self) -> Values {
        Values::from_fields(|field| SOURCES[field].value(self))
    }
}

#[cfg(test)]
#[path = "fields_tests.rs"]
mod tests;
