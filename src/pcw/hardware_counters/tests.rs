//! Host tests of the Hardware Counters callback: filtering by id, name mask and counter mask, the
//! query count, the status accounting, and many consumers collecting at once.

use super::*;
use crate::counters::hardware_counters::{Counterset, Values, id};
use crate::pcw::wildcard::ascii_upcase;
use std::collections::BTreeSet;

/// Blocks that identify their processor and field: field f of processor i holds i * 1_000_000 + f + 1
/// (cut to the field's width), for the 72 processors of [`two_groups`].
struct PatternCounts {
    blocks: Vec<AtomicCells>,
}

/// Processor `index`'s pattern.
fn pattern(index: u32) -> Values {
    Values::from_fields(|field| u64::from(index) * 1_000_000 + field as u64 + 1)
}

impl PatternCounts {
    fn new() -> Self {
        let blocks = (0..72)
            .map(|index| {
                let block = AtomicCells::new();
                for (field, cell) in crate::counters::hardware_counters::CELLS.iter().enumerate() {
                    let value = u64::from(index) * 1_000_000 + field as u64 + 1;
                    match *cell {
                        crate::pcw::Cell::Wide(i) => {
                            block.wide[usize::from(i)].store(value, Ordering::Relaxed)
                        }
                        crate::pcw::Cell::Narrow(i) => {
                            block.narrow[usize::from(i)].store(value as u32, Ordering::Relaxed)
                        }
                    }
                }
                assert_eq!(block.values(), pattern(index), "CELLS places field {index} as Values does");
                block
            })
            .collect();
        PatternCounts { blocks }
    }
}

impl CountSource for PatternCounts {
    fn block(&self, index: u32) -> Option<&AtomicCells> {
        self.blocks.get(index as usize)
    }

    fn has_core_type(&self, core_type: u8) -> bool {
        core_type == 0
    }

    fn core_type_values(&self, core_type: u8) -> crate::counters::hardware_counters_by_core_type::Values {
        crate::counters::hardware_counters_by_core_type::Values::from_fields(|field| {
            u64::from(core_type) * 1_000_000 + field as u64 + 1
        })
    }
}

thread_local! {
    static CLOCK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
/// Advances 5 ticks per reading on each thread, so one collect takes exactly 5 ticks.
fn clock() -> u64 {
    CLOCK.with(|clock| clock.replace(clock.get() + 5))
}

/// Two processor groups of 36, as Windows splits 72 processors.
fn two_groups() -> Vec<ProcessorInstance> {
    (0..72u32).map(|index| ProcessorInstance::new(index, (index / 36) as u16, (index % 36) as u8)).collect()
}

fn provider() -> HardwareCounters<Vec<ProcessorInstance>, PatternCounts> {
    let status = Box::leak(Box::new(DriverStatus::new()));
    HardwareCounters::new(two_groups(), PatternCounts::new(), status, ascii_upcase, clock)
}

#[derive(Debug, Default)]
struct Recorder {
    instances: Vec<(String, u32, Option<Values>)>,
    fail_after: Option<usize>,
    /// Instances whose block was handed over as it is (every counter requested).
    whole_blocks: usize,
}

impl InstanceSink<Counterset> for Recorder {
    fn add(&mut self, name: &[u16], id: u32, data: Option<&Values>) -> Result<(), AddInstanceFailed> {
        if self.fail_after == Some(self.instances.len()) {
            return Err(AddInstanceFailed(0xC000_0023_u32 as i32)); // STATUS_BUFFER_TOO_SMALL
        }
        self.instances.push((String::from_utf16(name).unwrap(), id, data.copied()));
        Ok(())
    }

    fn add_block<B: crate::pcw::CountersetBlock<Counterset = Counterset>>(
        &mut self,
        name: &[u16],
        id: u32,
        block: &B,
    ) -> Result<(), AddInstanceFailed> {
        self.add(name, id, Some(&block.values()))?;
        self.whole_blocks += 1;
        Ok(())
    }
}

fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

fn collect(
    provider: &HardwareCounters<Vec<ProcessorInstance>, PatternCounts>,
    query: &Query<'_>,
) -> Recorder {
    let mut recorder = Recorder::default();
    provider.collect(query, &mut recorder).unwrap();
    recorder
}

fn names(recorder: &Recorder) -> Vec<&str> {
    recorder.instances.iter().map(|(name, _, _)| name.as_str()).collect()
}

#[test]
fn collect_reports_every_processor_with_its_counts() {
    let provider = provider();
    let recorder = collect(&provider, &Query::ALL);
    assert_eq!(recorder.instances.len(), 72);
    let (name, instance_id, values) = &recorder.instances[40];
    assert_eq!((name.as_str(), *instance_id), ("1,4", 68));
    assert_eq!(values.unwrap(), pattern(40));
    assert_eq!(recorder.whole_blocks, 72, "every counter requested: each block is handed over as it is");
}

#[test]
fn instance_id_selects_one_processor_or_none() {
    let provider = provider();
    let one = collect(&provider, &Query { instance_id: 64 + 2, ..Query::ALL });
    assert_eq!(names(&one), ["1,2"]);
    let missing = collect(&provider, &Query { instance_id: 40, ..Query::ALL }); // group 0 has 36
    assert!(missing.instances.is_empty());
}

#[test]
fn instance_mask_filters_by_name_case_insensitively() {
    let provider = provider();
    let group_one = utf16("1,*");
    let recorder = collect(&provider, &Query { instance_mask: Some(&group_one), ..Query::ALL });
    assert_eq!(recorder.instances.len(), 36);
    assert!(names(&recorder).iter().all(|name| name.starts_with("1,")));
    let single_digit = utf16("?,?");
    assert_eq!(
        collect(&provider, &Query { instance_mask: Some(&single_digit), ..Query::ALL }).instances.len(),
        20
    );
    let star = utf16("*");
    assert_eq!(collect(&provider, &Query { instance_mask: Some(&star), ..Query::ALL }).instances.len(), 72);
    let empty: Vec<u16> = Vec::new();
    assert!(collect(&provider, &Query { instance_mask: Some(&empty), ..Query::ALL }).instances.is_empty());
    let both = utf16("0,3*");
    let recorder = collect(&provider, &Query { instance_mask: Some(&both), instance_id: 30, ..Query::ALL });
    assert_eq!(names(&recorder), ["0,30"]);
}

#[test]
fn counter_mask_leaves_unrequested_counters_zero() {
    let provider = provider();
    let mask = 1u64 << id::INSTRUCTIONS_PER_SEC;
    let recorder = collect(&provider, &Query { counter_mask: mask, ..Query::ALL });
    let values = recorder.instances[3].2.unwrap();
    assert_eq!(values.instructions_retired, pattern(3).instructions_retired);
    assert_eq!(values.core_cycles, 0);
    assert_eq!(values.llc_misses, 0);
    assert_eq!(values.overflow_interrupts, 0);

    // The IPC counter reads the instruction count (a shared 64-bit field); its base, a separate
    // counter the consumer also asks for, 100 x the cycle count, its own field.
    let ipc = (1u64 << id::INSTRUCTIONS_PER_CYCLE) | (1u64 << id::INSTRUCTIONS_PER_CYCLE_BASE);
    let values = collect(&provider, &Query { counter_mask: ipc, ..Query::ALL }).instances[3].2.unwrap();
    let full = pattern(3);
    assert_eq!(
        (values.instructions_retired, values.core_cycles_times100),
        (full.instructions_retired, full.core_cycles_times100)
    );
    assert_eq!((values.llc_misses, values.core_cycles), (0, 0));
}

#[test]
fn enumerate_reports_names_and_ids_without_data() {
    let provider = provider();
    let mut recorder = Recorder::default();
    let mask = utf16("0,1?");
    provider.enumerate(&Query { instance_mask: Some(&mask), ..Query::ALL }, &mut recorder).unwrap();
    assert_eq!(recorder.instances.len(), 10);
    assert!(recorder.instances.iter().all(|(_, _, data)| data.is_none()));
    assert_eq!(recorder.instances[0].1, 10);
}

#[test]
fn a_failing_sink_stops_the_collect_and_its_status_is_returned() {
    let provider = provider();
    let mut recorder = Recorder { fail_after: Some(5), ..Recorder::default() };
    let result = provider.collect(&Query::ALL, &mut recorder);
    assert_eq!(result, Err(AddInstanceFailed(0xC000_0023_u32 as i32)));
    assert_eq!(recorder.instances.len(), 5);
}

#[test]
fn add_and_remove_counter_track_active_queries_without_underflow() {
    let provider = provider();
    provider.counter_added(u64::MAX);
    provider.counter_added(1);
    assert_eq!(provider.active_queries(), 2);
    provider.counter_removed(1);
    provider.counter_removed(u64::MAX);
    provider.counter_removed(u64::MAX);
    assert_eq!(provider.active_queries(), 0);
}

#[test]
fn every_collect_is_counted_and_timed() {
    let provider = provider();
    for _ in 0..3 {
        collect(&provider, &Query::ALL);
    }
    let block = provider.status.block();
    assert_eq!(block.collect_requests.load(Ordering::Relaxed), 3);
    assert_eq!(block.collect_count.load(Ordering::Relaxed), 3);
    assert_eq!(block.collect_time_ns.load(Ordering::Relaxed), 15);
}

/// 16 consumers collect at once, each with its own masks, while another adds and removes queries;
/// every collect sees exactly the instance set its masks select, each instance once, with the
/// values of that instance.
#[test]
fn sixteen_consumers_collecting_at_once_each_see_a_consistent_instance_set() {
    let provider = provider();
    let processors = two_groups();
    let index_of_id: std::collections::HashMap<u32, usize> =
        processors.iter().enumerate().map(|(index, processor)| (processor.id(), index)).collect();
    let masks: Vec<Vec<u16>> =
        ["*", "0,*", "1,*", "?,1?", "*5", "0,3?"].iter().map(|mask| utf16(mask)).collect();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..2000 {
                provider.counter_added(1);
                provider.counter_removed(1);
            }
        });
        for consumer in 0..16usize {
            let (provider, masks, processors, index_of_id) = (&provider, &masks, &processors, &index_of_id);
            scope.spawn(move || {
                let mask = &masks[consumer % masks.len()];
                let query = Query { instance_mask: Some(mask), ..Query::ALL };
                let expected: BTreeSet<String> = processors
                    .iter()
                    .filter(|processor| query.selects(processor.id(), processor.name(), ascii_upcase))
                    .map(|processor| String::from_utf16(processor.name()).unwrap())
                    .collect();
                assert!(!expected.is_empty());
                for _ in 0..200 {
                    let recorder = collect(provider, &query);
                    let seen: BTreeSet<String> =
                        names(&recorder).iter().map(|name| name.to_string()).collect();
                    assert_eq!(seen.len(), recorder.instances.len(), "an instance reported twice");
                    assert_eq!(seen, expected);
                    for (name, instance_id, values) in &recorder.instances {
                        let index = index_of_id[instance_id];
                        assert_eq!(String::from_utf16(processors[index].name()).unwrap(), *name);
                        assert_eq!(values.unwrap(), pattern(index as u32));
                    }
                }
            });
        }
    });
    assert_eq!(provider.active_queries(), 0);
    assert_eq!(provider.status.block().collect_requests.load(Ordering::Relaxed), 16 * 200);
}

/// Records what the counterset tells its count source, as the PMU client would see it.
#[derive(Default)]
struct RecordingSource {
    refreshes: std::sync::atomic::AtomicUsize,
    additions: std::sync::atomic::AtomicUsize,
}

impl CountSource for RecordingSource {
    fn refresh(&self) {
        self.refreshes.fetch_add(1, Ordering::Relaxed);
    }
    fn block(&self, _processor_index: u32) -> Option<&AtomicCells> {
        None
    }
    fn has_core_type(&self, _core_type: u8) -> bool {
        false
    }
    fn core_type_values(&self, _core_type: u8) -> crate::counters::hardware_counters_by_core_type::Values {
        crate::counters::hardware_counters_by_core_type::Values::default()
    }
    fn query_added(&self) {
        self.additions.fetch_add(1, Ordering::Relaxed);
    }
}

/// The PMU client owns the counters while consumers are active: it must hear of every AddCounter
/// (an unpaired RemoveCounter is not passed on), and refresh once per collect (one all-processor
/// call).
#[test]
fn the_count_source_hears_of_queries_and_refreshes_once_per_collect() {
    let status = Box::leak(Box::new(DriverStatus::new()));
    let provider =
        HardwareCounters::new(two_groups(), RecordingSource::default(), status, ascii_upcase, clock);
    provider.counter_added(1);
    provider.counter_added(2);
    provider.counter_removed(1);
    provider.counter_removed(2);
    provider.counter_removed(2); // unbalanced: not passed on
    assert_eq!(provider.source.additions.load(Ordering::Relaxed), 2);
    assert_eq!(provider.active_queries(), 0);
    let mut recorder = Recorder::default();
    provider.collect(&Query::ALL, &mut recorder).unwrap();
    provider.collect(&Query::ALL, &mut recorder).unwrap();
    assert_eq!(provider.source.refreshes.load(Ordering::Relaxed), 2);
}

/// The fast path for "every instance" (no mask, or `*`, and any id) reports exactly what the
/// per-instance match reports, and only those queries take it.
#[test]
fn every_instance_queries_take_the_fast_path_with_the_same_result() {
    let provider = provider();
    let star = utf16("*");
    let every = [Query::ALL, Query { instance_mask: Some(&star), ..Query::ALL }];
    for query in every {
        assert!(query.selects_every_instance());
        let recorder = collect(&provider, &query);
        assert_eq!(recorder.instances.len(), 72);
        assert_eq!(
            names(&recorder),
            names(&collect(&provider, &Query { instance_mask: Some(&utf16("*,*")), ..Query::ALL }))
        );
    }
    let star_star = utf16("**");
    for partial in [
        Query { instance_id: 3, ..Query::ALL },
        Query { instance_mask: Some(&star_star), ..Query::ALL },
        Query { instance_mask: Some(&[]), ..Query::ALL },
    ] {
        assert!(!partial.selects_every_instance(), "{partial:?}");
    }
}
