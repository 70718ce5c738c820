use super::*;
use crate::counters::hardware_counters::{FIELDS, Values};

/// Every value with its unscaled field name and its `Scaled` shift, spelled out independently of
/// [`FieldSource::of`].
fn every_value() -> Vec<(String, Value, u32)> {
    let mut values: Vec<(String, Value, u32)> = Event::ALL
        .iter()
        .filter_map(|&event| Some((event.info().field?.to_owned(), Value::Count(event), RATIO_SCALE_SHIFT)))
        .collect();
    for (name, value) in NAMED {
        let shift = if name.starts_with("Topdown") { TOPDOWN_SCALE_SHIFT } else { RATIO_SCALE_SHIFT };
        values.push((name.to_owned(), value, shift));
    }
    values
}

/// The block a reader expects for `counts`, by the naming rule applied to the field names at run
/// time: an independent spelling of what [`SOURCES`] resolves at compile time.
fn expected(counts: &EventCounts) -> Values {
    let values = every_value();
    Values::from_fields(|field| {
        let name = FIELDS[field];
        for (value_name, value, shift) in &values {
            if name == value_name {
                return value.of(counts);
            }
            if name.strip_suffix("Scaled") == Some(value_name) {
                return value.of(counts) >> shift;
            }
        }
        panic!("field {name} names no value")
    })
}

/// Counts where every value is distinct, above 32 bits and not a multiple of any scale.
fn distinct_counts() -> EventCounts {
    let big = |i: u64| ((i + 1) << 40) | (i * 977 + 0x1_2345);
    EventCounts {
        events: core::array::from_fn(|i| big(i as u64)),
        topdown: Topdown { slots: big(20), categories: core::array::from_fn(|i| big(21 + i as u64)) },
        aperf: big(30),
        mperf: big(31),
        overflow_interrupts: 12_345,
        core_type: 2,
        processors: 3,
    }
}

#[test]
fn every_published_event_has_a_field() {
    for event in Event::ALL {
        let Some(field) = event.info().field else { continue };
        assert!(FIELDS.contains(&field), "{event:?}: no manifest field {field}");
    }
}

#[test]
fn each_event_count_lands_in_its_fields_only() {
    for event in Event::ALL.into_iter().filter(|event| event.info().field.is_some()) {
        let mut counts = EventCounts::default();
        counts.events[event.index()] = (0x1_2345_6789 << 10) + 0x3FF;
        let values = counts.values();
        assert_eq!(values, expected(&counts), "{event:?}");
        assert_ne!(values, Values::default(), "{event:?} is in no field");
    }
}

#[test]
fn every_field_holds_its_value() {
    let counts = distinct_counts();
    assert_eq!(counts.values(), expected(&counts));
}

#[test]
fn scaled_fields_resolve_to_their_value_and_shift() {
    let source = |value, shift| FieldSource { value, shift };
    assert_eq!(
        FieldSource::of("InstructionsRetiredScaled"),
        source(Value::Count(Event::Instructions), RATIO_SCALE_SHIFT)
    );
    assert_eq!(FieldSource::of("CoreCycles"), source(Value::Count(Event::CoreCycles), 0));
    assert_eq!(FieldSource::of("TopdownSlotsScaled"), source(Value::TopdownSlots, TOPDOWN_SCALE_SHIFT));
    assert_eq!(
        FieldSource::of("TopdownBackendBoundSlotsScaled"),
        source(Value::TopdownCategory(Category::BackendBound), TOPDOWN_SCALE_SHIFT)
    );
    assert_eq!(FieldSource::of("AperfCyclesScaled"), source(Value::Aperf, RATIO_SCALE_SHIFT));
    assert_eq!(FieldSource::of("OverflowInterrupts"), source(Value::OverflowInterrupts, 0));
}

#[test]
#[should_panic(expected = "names no event")]
fn an_unknown_field_is_refused() {
    FieldSource::of("InstructionsScaled");
}

#[test]
#[should_panic(expected = "names no event")]
fn a_bare_suffix_is_refused() {
    FieldSource::of("Scaled");
}

/// The Hardware Counters by Core Type block, by the same naming rule.
#[test]
fn every_by_core_type_field_holds_its_value() {
    use crate::counters::hardware_counters_by_core_type as by_type;
    let counts = distinct_counts();
    let values = every_value();
    let expected = by_type::Values::from_fields(|field| {
        let name = by_type::FIELDS[field];
        let stem = name.strip_suffix("Scaled").unwrap_or(name);
        let (_, value, shift) = values.iter().find(|(value_name, _, _)| value_name == stem).expect("a value");
        value.of(&counts) >> if stem == name { 0 } else { *shift }
    });
    assert_eq!(counts.by_core_type_values(), expected);
}

#[test]
fn accumulating_sums_every_count_and_keeps_the_core_type() {
    let one = distinct_counts();
    let mut sum = EventCounts { core_type: 2, ..EventCounts::default() };
    sum.accumulate(&one);
    sum.accumulate(&one);
    assert_eq!(sum.events, one.events.map(|count| count.wrapping_mul(2)));
    assert_eq!(sum.topdown.categories, one.topdown.categories.map(|count| count * 2));
    assert_eq!(
        (sum.topdown.slots, sum.aperf, sum.mperf),
        (one.topdown.slots * 2, one.aperf * 2, one.mperf * 2)
    );
    assert_eq!((sum.overflow_interrupts, sum.processors, sum.core_type), (2 * 12_345, 6, 2));
    let mut wrapping = EventCounts { events: [u64::MAX; Event::COUNT], ..EventCounts::default() };
    wrapping.accumulate(&EventCounts { events: [2; Event::COUNT], ..EventCounts::default() });
    assert_eq!(wrapping.events, [1; Event::COUNT], "a sum wraps at 64 bits like each count");
}
