use super::*;

/// The block a reader expects for `counts`, by the naming rule applied to the field names at run
/// time: an independent spelling of what [`SOURCES`] resolves at compile time.
fn expected(counts: &EventCounts) -> Values {
    Values::from_fields(|field| {
        let name = FIELDS[field];
        if name == "OverflowInterrupts" {
            return counts.overflow_interrupts;
        }
        for event in Event::ALL {
            if name == event.info().field {
                return counts.events[event.index()];
            }
            if name.strip_suffix("Scaled") == Some(event.info().field) {
                return counts.events[event.index()] >> RATIO_SCALE_SHIFT;
            }
        }
        panic!("field {name} names no event")
    })
}

#[test]
fn every_event_is_published() {
    for event in Event::ALL {
        assert!(FIELDS.contains(&event.info().field), "{event:?}: no manifest field {}", event.info().field);
    }
}

#[test]
fn each_event_count_lands_in_its_fields_only() {
    for event in Event::ALL {
        let mut counts = EventCounts::default();
        // Above 32 bits, and not a multiple of 2^10, so truncation and scaling both show.
        counts.events[event.index()] = (0x1_2345_6789 << 10) + 0x3FF;
        let values = counts.values();
        assert_eq!(values, expected(&counts), "{event:?}");
        assert_ne!(values, Values::default(), "{event:?} is in no field");
    }
}

#[test]
fn all_counts_at_once() {
    let counts = EventCounts {
        events: core::array::from_fn(|i| (i as u64 + 1) << 33 | (i as u64 * 977)),
        overflow_interrupts: 12_345,
    };
    assert_eq!(counts.values(), expected(&counts));
}

#[test]
fn scaled_fields_resolve_to_their_event() {
    assert_eq!(FieldSource::of("InstructionsRetiredScaled"), FieldSource::Scaled(Event::Instructions));
    assert_eq!(FieldSource::of("CoreCycles"), FieldSource::Count(Event::CoreCycles));
    assert_eq!(FieldSource::of("OverflowInterrupts"), FieldSource::OverflowInterrupts);
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
