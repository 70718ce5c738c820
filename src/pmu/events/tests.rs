//! The event table and each vendor's encodings, as exact event-select values.

use super::*;
use crate::pmu::encoding::{evtsel, fixed_ctrl_field};
use Event::*;

#[test]
fn evtsel_sets_usr_os_en_and_int_on_request() {
    // USR bit 16, OS bit 17, INT bit 20, EN bit 22.
    assert_eq!(evtsel(0xC0, 0x00, false), 0x0043_00C0);
    assert_eq!(evtsel(0xC0, 0x00, true), 0x0053_00C0);
    assert_eq!(evtsel(0x2E, 0x4F, false), 0x0043_4F2E);
    // AMD event bits 11:8 go to bits 35:32.
    assert_eq!(evtsel(0x120, 0x00, false), 0x0001_0043_0020);
    assert_eq!(evtsel(0xFFF, 0xFF, true), 0x000F_0053_FFFF);
}

#[test]
fn fixed_ctrl_fields_are_os_usr_and_pmi_shifted_by_four_bits_per_counter() {
    assert_eq!(fixed_ctrl_field(0, false), 0x003);
    assert_eq!(fixed_ctrl_field(1, false), 0x030);
    assert_eq!(fixed_ctrl_field(2, false), 0x300);
    assert_eq!(fixed_ctrl_field(0, true), 0x00B);
    assert_eq!(fixed_ctrl_field(2, true), 0xB00);
}

#[test]
fn intel_architectural_encodings() {
    let expected = [
        (Instructions, 0x0043_00C0),
        (CoreCycles, 0x0043_003C),
        (ReferenceCycles, 0x0043_013C),
        (LlcReferences, 0x0043_4F2E),
        (LlcMisses, 0x0043_412E),
        (Branches, 0x0043_00C4),
        (BranchMispredicts, 0x0043_00C5),
    ];
    for (event, value) in expected {
        let encoding = intel_encoding(event, 6, 0x5E).unwrap();
        assert_eq!(evtsel(encoding.event, encoding.umask, false), value, "{event:?}");
    }
}

#[test]
fn amd_encodings_per_family() {
    let value =
        |event, family, model| amd_encoding(event, family, model).map(|e| evtsel(e.event, e.umask, false));
    for (family, model) in [(0x17, 0x71), (0x19, 0x21), (0x19, 0x61), (0x1A, 0x44)] {
        assert_eq!(value(Instructions, family, model), Some(0x0043_00C0));
        assert_eq!(value(CoreCycles, family, model), Some(0x0043_0076));
        assert_eq!(value(LlcReferences, family, model), Some(0x0043_FF60));
        assert_eq!(value(LlcMisses, family, model), Some(0x0043_0964));
        assert_eq!(value(Branches, family, model), Some(0x0043_00C2));
        assert_eq!(value(BranchMispredicts, family, model), Some(0x0043_00C3));
    }
    // Before Zen (K8 to family 16h): L2 requests and misses.
    for family in [0x10, 0x15, 0x16] {
        assert_eq!(value(LlcReferences, family, 0), Some(0x0043_077D));
        assert_eq!(value(LlcMisses, family, 0), Some(0x0043_077E));
        assert_eq!(value(ReferenceCycles, family, 0), None);
    }
    // Reference cycles: PMCx120, Zen 4 and later only.
    assert_eq!(value(ReferenceCycles, 0x17, 0x71), None); // Zen 2
    assert_eq!(value(ReferenceCycles, 0x19, 0x21), None); // Zen 3 (Vermeer)
    assert_eq!(value(ReferenceCycles, 0x19, 0x50), None); // Zen 3 (Cezanne)
    assert_eq!(value(ReferenceCycles, 0x19, 0x11), Some(0x0001_0043_0020)); // Zen 4 (Genoa)
    assert_eq!(value(ReferenceCycles, 0x19, 0x61), Some(0x0001_0043_0020)); // Zen 4 (Raphael)
    assert_eq!(value(ReferenceCycles, 0x19, 0xA0), Some(0x0001_0043_0020)); // Zen 4c (Bergamo)
    assert_eq!(value(ReferenceCycles, 0x1A, 0x44), Some(0x0001_0043_0020)); // Zen 5
}

#[test]
fn event_sets_and_indices() {
    assert_eq!(Event::ALL.map(Event::index), core::array::from_fn(|i| i));
    let s = EventSet::EMPTY.with(Branches).with(Instructions);
    assert_eq!(s.len(), 2);
    assert_eq!(s.iter().collect::<Vec<_>>(), [Instructions, Branches]);
    assert!(EventSet::EMPTY.is_empty());
}

#[test]
fn the_table_is_in_priority_order() {
    // Instructions and cycles first (IPC), misses before references and mispredicts before branches
    // (each alone already gives a per-instruction rate), reference cycles last.
    let position = |event: Event| Event::ALL.iter().position(|&e| e == event).unwrap();
    assert_eq!(&Event::ALL[..2], [Instructions, CoreCycles]);
    assert!(position(LlcMisses) < position(LlcReferences));
    assert!(position(BranchMispredicts) < position(Branches));
    assert_eq!(Event::ALL.last(), Some(&ReferenceCycles));
}

#[test]
fn every_field_names_one_event() {
    for event in Event::ALL {
        if let Some(field) = event.info().field {
            assert_eq!(Event::with_field(field), Some(event));
        }
    }
    assert_eq!(Event::with_field("Instructions"), None);
    assert_eq!(Event::with_field(""), None);
}

#[test]
fn groups_split_the_table() {
    assert_eq!(EventSet::DEFAULT.len(), 7);
    // The 4-wide cores' four inputs and the Atom cores' two more.
    assert_eq!(EventSet::TOPDOWN.len(), 7 + 6);
    assert_eq!(EventSet::of_group(Group::Custom).len(), CUSTOM_EVENTS);
    for event in Event::ALL {
        assert_eq!(EventSet::DEFAULT.contains(event), event.info().group == Group::Default, "{event:?}");
        let custom = event.custom_index().is_some();
        assert_eq!(custom, event.info().group == Group::Custom, "{event:?}");
        assert_eq!(event.info().field.is_some(), event.info().group != Group::TopdownInputs, "{event:?}");
    }
}

#[test]
fn every_event_has_one_status_bit() {
    for event in Event::ALL {
        assert_eq!(STATUS_BIT_ORDER.iter().filter(|&&e| e == event).count(), 1, "{event:?}");
    }
    let set = EventSet::EMPTY.with(ReferenceCycles).with(Custom7);
    assert_eq!(set.status_bits(), 1 << 2 | 1 << 18);
    let atom = EventSet::EMPTY.with(SlotsBackendBound).with(SlotsBadSpeculation);
    assert_eq!(atom.status_bits(), 1 << 19 | 1 << 20, "after the custom events: no documented bit moves");
}

#[test]
fn atom_cores_take_their_own_top_down_inputs() {
    use crate::pmu::model::tests::{ALDER_LAKE_I9_12900K_E, Detect, METEOR_LAKE_E};
    let gracemont = PmuModel { atom: true, ..ALDER_LAKE_I9_12900K_E.model() };
    let crestmont = PmuModel { atom: true, ..METEOR_LAKE_E.model() };
    let at = |model: &PmuModel, event| encoding(model, event).map(|e| (e.event, e.umask));
    // intel/perfmon: TOPDOWN_FE_BOUND.ALL 71H, TOPDOWN_RETIRING.ALL C2H (Gracemont) / 72H
    // (Crestmont), TOPDOWN_BE_BOUND.ALL 74H, TOPDOWN_BAD_SPECULATION.ALL 73H (Crestmont).
    assert_eq!(at(&gracemont, SlotsNotDelivered), Some((0x71, 0)));
    assert_eq!(at(&gracemont, SlotsRetired), Some((0xC2, 0)));
    assert_eq!(at(&gracemont, SlotsBackendBound), Some((0x74, 0)));
    assert_eq!(at(&gracemont, SlotsBadSpeculation), None);
    assert_eq!(at(&crestmont, SlotsRetired), Some((0x72, 0)));
    assert_eq!(at(&crestmont, SlotsBadSpeculation), Some((0x73, 0)));
    for model in [&gracemont, &crestmont] {
        assert_eq!(at(model, SlotsIssued), None);
        assert_eq!(at(model, RecoveryCycles), None);
        assert_eq!(at(model, Branches), Some((0xC4, 0)), "architectural events stay");
    }
    assert_eq!((topdown_width(&gracemont), topdown_width(&crestmont)), (Some(5), Some(6)));
    // The performance cores of the same parts have none of these inputs (IA32_PERF_METRICS instead).
    let core = ALDER_LAKE_I9_12900K_E.model();
    assert_eq!((at(&core, SlotsRetired), topdown_width(&core)), (None, None));
}
