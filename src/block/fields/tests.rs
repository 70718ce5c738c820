use super::*;
use crate::counters::hardware_counters::{FIELDS, Values};

/// Every value with its field name, spelled out independently of [`Value::of_field`] (the named
/// values are the table's).
fn every_value() -> Vec<(String, Value)> {
    let mut values: Vec<(String, Value)> = Event::ALL
        .iter()
        .filter_map(|&event| Some((event.info().field?.to_owned(), Value::Count(event))))
        .collect();
    for (name, value) in NAMED {
        values.push((name.to_owned(), value));
    }
    values
}

/// The block a reader expects for `counts`, by the naming rule applied to the field names at run
/// time: an independent spelling of what [`SOURCES`] resolves at compile time.
fn expected(counts: &EventCounts) -> Values {
    let values = every_value();
    Values::from_fields(|field| {
        let name = FIELDS[field];
        for (value_name, value) in &values {
            if name == value_name {
                return value.of(counts);
            }
        }
        panic!("field {name} names no value")
    })
}

/// Counts where every value is distinct and above 32 bits (a 4-byte field would lose them).
fn distinct_counts() -> EventCounts {
    let big = |i: u64| ((i + 1) << 40) | (i * 977 + 0x1_2345);
    EventCounts {
        events: core::array::from_fn(|i| big(i as u64)),
        paired: core::array::from_fn(|i| big(40 + i as u64)),
        topdown: Topdown { slots: big(20), categories: core::array::from_fn(|i| big(21 + i as u64)) },
        aperf: big(30),
        mperf: big(31),
        overflow_interrupts: 12_345,
        core_type: 2,
        topdown_source: 6,
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
fn fields_resolve_to_their_value() {
    assert_eq!(Value::of_field("InstructionsRetired"), Value::Count(Event::Instructions));
    assert_eq!(Value::of_field("CoreCycles"), Value::Count(Event::CoreCycles));
    assert_eq!(Value::of_field("TopdownSlots"), Value::TopdownSlots);
    assert_eq!(Value::of_field("TopdownBackendBoundSlots"), Value::TopdownCategory(Category::BackendBound));
    assert_eq!(Value::of_field("AperfCycles"), Value::Aperf);
    assert_eq!(Value::of_field("OverflowInterrupts"), Value::OverflowInterrupts);
    assert_eq!(Value::of_field("CoreCyclesTimes100"), Value::Hundredfold(Event::CoreCycles));
    assert_eq!(Value::of_field("LlcMissesPaired"), Value::Paired(Event::LlcMisses));
}

#[test]
fn ratio_bases_that_can_exceed_their_numerators_hold_100_times_the_count_modulo_2_to_the_64() {
    let mut counts = EventCounts { mperf: u64::MAX / 7, ..EventCounts::default() };
    counts.events[Event::CoreCycles.index()] = u64::MAX / 3;
    let values = counts.values();
    assert_eq!(values.core_cycles_times100, (u64::MAX / 3).wrapping_mul(100));
    assert_eq!(values.mperf_cycles_times100, (u64::MAX / 7).wrapping_mul(100));
}

#[test]
fn a_pair_is_paired_only_where_the_plan_counts_both_sides() {
    use Event::*;
    let paired = Paired::of([Instructions, CoreCycles, LlcMisses, Branches, BranchMispredicts].into_iter());
    assert!(paired.has(Branches) && paired.has(BranchMispredicts));
    assert!(!paired.has(LlcMisses), "misses without references");
    assert!(!paired.has(Instructions) && !paired.has(LlcReferences));
    assert!(Paired::of([LlcReferences, LlcMisses].into_iter()).has(LlcReferences));
    assert_eq!(
        (partner(LlcMisses), partner(Branches), partner(CoreCycles)),
        (Some(LlcReferences), Some(BranchMispredicts), None)
    );
}

#[test]
#[should_panic(expected = "names no event")]
fn an_unknown_field_is_refused() {
    Value::of_field("Instructions");
}

#[test]
#[should_panic(expected = "names no event")]
fn a_scaled_field_is_refused() {
    // Ratio counters read the counts themselves: no field holds a scaled count any more.
    Value::of_field("InstructionsRetiredScaled");
}

/// The Hardware Counters by Core Type block, by the same naming rule.
#[test]
fn every_by_core_type_field_holds_its_value() {
    use crate::counters::hardware_counters_by_core_type as by_type;
    let counts = distinct_counts();
    let values = every_value();
    let expected = by_type::Values::from_fields(|field| {
        let name = by_type::FIELDS[field];
        let (_, value) = values.iter().find(|(value_name, _)| value_name == name).expect("a value");
        value.of(&counts)
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
    assert_eq!(sum.paired, one.paired.map(|count| count.wrapping_mul(2)));
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
