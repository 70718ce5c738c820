//! Host tests of the Hardware Counters by Core Type callback: which instances exist, their names and
//! ids, masks, and the sums the source hands over.

use super::*;
use crate::counters::hardware_counters;
use crate::counters::hardware_counters_by_core_type::{Values, id};
use crate::pcw::wildcard::ascii_upcase;
use std::sync::atomic::{AtomicU32, Ordering};

/// Processors of the given core types (`types[i]` is processor i's), and blocks that identify their
/// core type: field f of core type t holds t * 1000 + f + 1. Counts the refreshes.
#[derive(Default)]
struct PerType {
    types: Vec<u8>,
    refreshes: AtomicU32,
}

impl CountSource for PerType {
    fn refresh(&self) {
        self.refreshes.fetch_add(1, Ordering::Relaxed);
    }

    fn block(&self, _processor_index: u32) -> Option<&hardware_counters::AtomicCells> {
        None
    }

    fn has_core_type(&self, core_type: u8) -> bool {
        self.types.contains(&core_type)
    }

    fn core_type_values(&self, core_type: u8) -> Values {
        Values::from_fields(|field| u64::from(core_type) * 1000 + field as u64 + 1)
    }
}

/// `types[i]` is processor i's core type.
fn provider(types: &[u8]) -> CoreTypeCounters<PerType> {
    CoreTypeCounters::new(PerType { types: types.to_vec(), ..PerType::default() }, ascii_upcase)
}

#[derive(Default)]
struct Recorder(Vec<(String, u32, Option<Values>)>);

impl InstanceSink<Counterset> for Recorder {
    fn add(&mut self, name: &[u16], id: u32, data: Option<&Values>) -> Result<(), AddInstanceFailed> {
        self.0.push((String::from_utf16(name).unwrap(), id, data.copied()));
        Ok(())
    }
}

fn collect(provider: &CoreTypeCounters<PerType>, query: &Query<'_>) -> Recorder {
    let mut recorder = Recorder::default();
    provider.collect(query, &mut recorder).unwrap();
    recorder
}

fn names(recorder: &Recorder) -> Vec<(&str, u32)> {
    recorder.0.iter().map(|(name, id, _)| (name.as_str(), *id)).collect()
}

#[test]
fn a_uniform_machine_has_one_instance_all() {
    let provider = provider(&[0; 8]);
    let recorder = collect(&provider, &Query::ALL);
    assert_eq!(names(&recorder), [("All", 0)]);
    assert_eq!(recorder.0[0].2, Some(provider.source.core_type_values(0)));
    assert_eq!(provider.source.refreshes.load(Ordering::Relaxed), 1, "one refresh per collect");
}

#[test]
fn a_hybrid_machine_has_an_instance_per_core_type_present() {
    let provider = provider(&[1, 1, 1, 1, 2, 2]);
    let recorder = collect(&provider, &Query::ALL);
    assert_eq!(names(&recorder), [("Performance", 1), ("Efficient", 2)]);
    assert_eq!(recorder.0[1].2, Some(provider.source.core_type_values(2)));
    let mut enumerated = Recorder::default();
    provider.enumerate(&Query::ALL, &mut enumerated).unwrap();
    assert_eq!(names(&enumerated), [("Performance", 1), ("Efficient", 2)]);
    assert!(enumerated.0.iter().all(|(_, _, values)| values.is_none()));
}

#[test]
fn id_name_and_counter_masks_apply() {
    let provider = provider(&[1, 2]);
    let by_id = Query { instance_id: 2, ..Query::ALL };
    assert_eq!(names(&collect(&provider, &by_id)), [("Efficient", 2)]);
    let mask: Vec<u16> = "perf*".encode_utf16().collect();
    let by_name = Query { instance_mask: Some(&mask), ..Query::ALL };
    assert_eq!(names(&collect(&provider, &by_name)), [("Performance", 1)]);
    let processors_only = Query { counter_mask: 1 << id::PROCESSORS, ..Query::ALL };
    let recorder = collect(&provider, &processors_only);
    let mut expected = provider.source.core_type_values(1);
    expected.clear_unrequested(1 << id::PROCESSORS);
    assert_eq!(recorder.0[0].2, Some(expected));
    assert_ne!(expected, provider.source.core_type_values(1), "the other counters were cleared");
}
