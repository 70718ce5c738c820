//! A consumer with PDH's semantics over the double's Performance Counter Library.
//!
//! * [`Counterset::open`] pairs the descriptors the driver registered with the counter manifest
//!   (`manifests/pmupcw.man`, parsed by `counter-manifest`): each counter's type, name, base counter
//!   (the counter that follows a fraction) and `aggregate` attribute.
//! * [`enumerate`] lists the instances (PcwCallbackEnumerateInstances); [`sample`] collects the raw
//!   data of every counter (PcwCallbackCollectData with the full CounterMask) stamped with the
//!   double's KeQueryPerformanceCounter clock (10 MHz).
//! * [`values`] computes what PDH displays from two samples ([`pdh`]), `_Total` included for a
//!   `multipleAggregate` counterset (perflib aggregates the raw values per the counter's `aggregate`;
//!   `undefined` gives `_Total` no value). `_Total` of a ratio is computed like any instance's from its
//!   aggregated numerator and aggregated base: with both summed, sum of numerator deltas over sum of
//!   base deltas.
//! * [`csv`] prints typeperf's CSV; [`perf_object`] formats a sample as PERF_OBJECT_TYPE blocks and
//!   validates them with the ExtCounterTestLevel 1 checks.
//! * [`windows_exporter`] is windows_exporter's `performancecounter` collector over these: what it
//!   would export for a configuration's objects, scrape by scrape.

pub mod csv;
pub mod exactness;
pub mod legacy_reader;
pub mod pdh;
pub mod perf_object;
pub mod windows_exporter;

use crate::control::pcw::{self, Descriptor, InstanceRecord, Query};
use counter_manifest::{CounterType, DetailLevel, Instances, Manifest, manifest_string_ids};
use pdh::{Aggregate, Raw, Value};
use perf_object::{CounterDefinition, ObjectData, ObjectInstances};

/// The manifest the driver was built from, embedded at compile time.
pub const MANIFEST_TEXT: &str = include_str!("../../../../manifests/pmupcw.man");
/// The name perflib gives the aggregate instance.
pub const TOTAL: &str = "_Total";
/// pdhmsg.h: the instance is not there (any more).
pub const PDH_CSTATUS_NO_INSTANCE: u32 = 0x8000_07D1;

/// Parses a counter manifest.
pub fn parse_manifest(file: &str, text: &str) -> Result<Manifest, String> {
    counter_manifest::parse(file, text).map_err(|error| format!("{error:?}"))
}

/// The embedded `manifests/pmupcw.man`.
pub fn manifest() -> Manifest {
    parse_manifest("manifests/pmupcw.man", MANIFEST_TEXT).expect("the embedded manifest is valid")
}

/// One counter as a consumer needs it.
#[derive(Clone, Debug)]
pub struct Counter {
    pub id: u32,
    pub name: String,
    pub ty: &'static CounterType,
    pub aggregate: Aggregate,
    /// The manifest's struct field: counters sharing one read the same data.
    pub field: String,
    pub detail_level: DetailLevel,
    /// The string resource ids of its name and description (CTRPP's numbering; the title indexes a
    /// PERF_COUNTER_DEFINITION carries once lodctr has registered them).
    pub name_index: u32,
    pub help_index: u32,
    pub descriptor: Descriptor,
    /// The index (in [`Counterset::counters`]) of the base counter, for fraction types.
    pub base: Option<usize>,
}

impl Counter {
    /// Whether PDH displays it (base counters are not).
    pub fn is_displayed(&self) -> bool {
        !self.ty.is_base
    }
}

/// A registered counterset described by the manifest, counters in descriptor order.
#[derive(Clone, Debug)]
pub struct Counterset {
    pub name: String,
    pub instances: Instances,
    pub name_index: u32,
    pub help_index: u32,
    pub counters: Vec<Counter>,
}

impl Counterset {
    /// Pairs `descriptors` (registration order) with the manifest's counterset `name`: every descriptor
    /// must be a manifest counter of the same size, and every manifest counter registered.
    pub fn new(manifest: &Manifest, name: &str, descriptors: &[Descriptor]) -> Result<Counterset, String> {
        let position = manifest
            .counter_sets
            .iter()
            .position(|set| set.name == name)
            .ok_or_else(|| format!("the manifest has no counterset {name:?}"))?;
        let set = &manifest.counter_sets[position];
        let ids = &manifest_string_ids(manifest)[position];
        let mut counters = Vec::new();
        for descriptor in descriptors {
            let (at, counter) = set
                .counters
                .iter()
                .enumerate()
                .find(|(_, counter)| counter.id == u32::from(descriptor.id))
                .ok_or_else(|| {
                    format!("{name}: registered counter id {} is not in the manifest", descriptor.id)
                })?;
            if u32::from(descriptor.size) != counter.ty.size {
                return Err(format!(
                    "{name}: counter {} registered with size {}, its type {} has {}",
                    counter.id, descriptor.size, counter.ty.name, counter.ty.size
                ));
            }
            counters.push(Counter {
                id: counter.id,
                // A noDisplay counter without strings is known by its field.
                name: counter.name.clone().unwrap_or_else(|| counter.field.clone()),
                ty: counter.ty,
                aggregate: Aggregate::parse(counter.aggregate.as_deref()),
                field: counter.field.clone(),
                detail_level: counter.detail_level,
                name_index: ids.counters[at].name,
                help_index: ids.counters[at].description,
                descriptor: *descriptor,
                base: None,
            });
        }
        if counters.len() != set.counters.len() {
            return Err(format!(
                "{name}: {} counters registered, the manifest has {}",
                counters.len(),
                set.counters.len()
            ));
        }
        // PDH reads a fraction's base from the counter that follows it.
        for index in 0..counters.len() {
            if let Some(base_type) = counters[index].ty.base {
                match counters.get(index + 1) {
                    Some(next) if next.ty.name == base_type => counters[index].base = Some(index + 1),
                    _ => {
                        return Err(format!(
                            "{name}: {} is not followed by its {base_type} counter",
                            counters[index].name
                        ));
                    }
                }
            }
        }
        Ok(Counterset {
            name: name.to_string(),
            instances: set.instances,
            name_index: ids.set.name,
            help_index: ids.set.description,
            counters,
        })
    }

    /// The registered counterset `name` (its descriptors read from the double's PCW).
    pub fn open(manifest: &Manifest, name: &str) -> Result<Counterset, String> {
        let descriptors = pcw::descriptors(name).ok_or_else(|| format!("{name:?} is not registered"))?;
        Counterset::new(manifest, name, &descriptors)
    }

    /// The CounterMask of every counter.
    pub fn full_mask(&self) -> u64 {
        self.counters.iter().fold(0, |mask, counter| mask | 1u64 << counter.id)
    }

    /// Whether perflib adds a `_Total` instance.
    pub fn has_total(&self) -> bool {
        matches!(self.instances, Instances::MultipleAggregate | Instances::GlobalAggregate)
    }

    /// The index of the counter with id `id`.
    pub fn index_of(&self, id: u32) -> Option<usize> {
        self.counters.iter().position(|counter| counter.id == id)
    }
}

/// The double's KeQueryPerformanceCounter: (ticks, frequency).
pub fn performance_counter() -> (i64, i64) {
    let mut frequency = 0i64;
    // SAFETY: the export only writes the frequency through the valid pointer passed.
    let ticks = unsafe { crate::exports::hal::ke_query_performance_counter(&mut frequency) };
    (ticks, frequency)
}

/// The sample's time as typeperf stamps its rows: the system time, which in the double moves with the
/// kernel's clock (a virtual ten-minute interval is ten minutes between two rows).
fn unix_millis() -> i64 {
    crate::control::ke::system_time_unix_millis()
}

/// One collect of a counterset.
#[derive(Clone, Debug)]
pub struct Sample {
    /// KeQueryPerformanceCounter at collect time.
    pub time: i64,
    pub frequency: i64,
    /// Wall-clock time of the collect (for typeperf's timestamps).
    pub unix_millis: i64,
    pub instances: Vec<InstanceRecord>,
}

impl Sample {
    /// The raw values of instance `name`, `_Total` aggregated for a counterset that has one.
    pub fn values_of(&self, set: &Counterset, name: &str) -> Option<Vec<Option<u64>>> {
        if name == TOTAL && set.has_total() {
            return Some(total(set, &self.instances));
        }
        let record = self.instances.iter().find(|record| record.name == name)?;
        Some(values_or_zero(set, record).into_iter().map(Some).collect())
    }

    /// Counter `counter`'s raw value of instance `name` (`None`: no such instance, or a `_Total`
    /// whose aggregate is undefined), as [`Sample::values_of`] gives it, without copying or
    /// aggregating the other counters: a typeperf-like read of every column of a 2,048-processor
    /// sample would otherwise do that once per column.
    pub fn value_of(&self, set: &Counterset, name: &str, counter: usize) -> Option<u64> {
        if name == TOTAL && set.has_total() {
            return total_of(set, &self.instances, counter);
        }
        self.instances.iter().find(|record| record.name == name).map(|record| value_in(record, counter))
    }
}

/// Counter `counter`'s raw value in `record` (0 where the collect gave the instance no values).
fn value_in(record: &InstanceRecord, counter: usize) -> u64 {
    record.values.as_ref().map_or(0, |values| values[counter])
}

fn values_or_zero(set: &Counterset, record: &InstanceRecord) -> Vec<u64> {
    record.values.clone().unwrap_or_else(|| vec![0; set.counters.len()])
}

/// The instances' names and ids (EnumerateInstances, every instance).
pub fn enumerate(set: &Counterset) -> Result<Vec<(String, u32)>, String> {
    let (status, records) = pcw::enumerate(&set.name, &Query::default())
        .ok_or_else(|| format!("{:?} is not registered", set.name))?;
    if status < 0 {
        return Err(format!("{}: EnumerateInstances failed with {status:#x}", set.name));
    }
    Ok(records.into_iter().map(|record| (record.name, record.id)).collect())
}

/// Collects every counter of every instance, stamped with the double's clock.
pub fn sample(set: &Counterset) -> Result<Sample, String> {
    sample_with(set, &Query { counter_mask: set.full_mask(), ..Query::default() })
}

/// The least time between two samples of this consumer, in the clock's 100 ns units: 10 ms. Real
/// consumers sample far less often (typeperf's `-si` and perfmon's sample interval count whole
/// seconds), while the double's scenarios sample as fast as the host runs; on a clock that runs only
/// with the host's they would sample faster than any real consumer, within pmupcw's minimum collect
/// interval, and get its last read again (docs/security.md). So a sample sooner than this after the
/// last moves the clock forward to it.
pub const SAMPLE_SPACING_100NS: i64 = 100_000;

/// When the last sample ended (the clock's 100 ns units; 0 before the first).
static LAST_SAMPLE: std::sync::Mutex<i64> = std::sync::Mutex::new(0);

/// Moves the double's clock so that this sample starts at least [`SAMPLE_SPACING_100NS`] after the
/// last one ended (so after the driver's read of the last one, whenever inside it that was).
fn space_from_last_sample() {
    let last = *LAST_SAMPLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let now = performance_counter().0;
    if last != 0 && now < last + SAMPLE_SPACING_100NS {
        crate::control::hal::advance_clock(last + SAMPLE_SPACING_100NS - now);
    }
}

fn sample_ended() {
    let mut last = LAST_SAMPLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *last = (*last).max(performance_counter().0);
}

/// Collects with `query`, stamped with the double's clock, at least [`SAMPLE_SPACING_100NS`] after
/// the last sample.
pub fn sample_with(set: &Counterset, query: &Query) -> Result<Sample, String> {
    space_from_last_sample();
    let (time, frequency) = performance_counter();
    let unix_millis = unix_millis();
    let collected = pcw::collect(&set.name, query);
    sample_ended();
    let (status, instances) = collected.ok_or_else(|| format!("{:?} is not registered", set.name))?;
    if status < 0 {
        return Err(format!("{}: CollectData failed with {status:#x}", set.name));
    }
    Ok(Sample { time, frequency, unix_millis, instances })
}

/// `_Total`'s raw values: each counter's aggregate over the instances (None: undefined).
pub fn total(set: &Counterset, instances: &[InstanceRecord]) -> Vec<Option<u64>> {
    (0..set.counters.len()).map(|counter| total_of(set, instances, counter)).collect()
}

/// `_Total`'s raw value of counter `counter`: its aggregate over the instances (None: undefined).
fn total_of(set: &Counterset, instances: &[InstanceRecord], counter: usize) -> Option<u64> {
    let column: Vec<u64> = instances.iter().map(|record| value_in(record, counter)).collect();
    let definition = &set.counters[counter];
    definition.aggregate.apply(&column, definition.ty.size)
}

/// One displayed value: a counter of an instance (None for a single-instance counterset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub instance: Option<String>,
    /// Index in [`Counterset::counters`].
    pub counter: usize,
}

/// What typeperf `"\Set(*)\*"` shows: every displayed counter of every instance of `first`, then of
/// `_Total` (only its counters with a defined aggregate) for a counterset that has one.
pub fn columns(set: &Counterset, first: &Sample) -> Vec<Column> {
    let displayed: Vec<usize> = (0..set.counters.len()).filter(|&i| set.counters[i].is_displayed()).collect();
    if !set.instances.is_multiple() {
        return displayed.into_iter().map(|counter| Column { instance: None, counter }).collect();
    }
    let mut columns = Vec::new();
    for record in &first.instances {
        columns
            .extend(displayed.iter().map(|&counter| Column { instance: Some(record.name.clone()), counter }));
    }
    if set.has_total() {
        columns.extend(
            displayed
                .iter()
                .filter(|&&counter| set.counters[counter].aggregate != Aggregate::Undefined)
                .map(|&counter| Column { instance: Some(TOTAL.to_string()), counter }),
        );
    }
    columns
}

/// A column's counter path.
pub fn path(host: &str, set: &Counterset, column: &Column) -> String {
    csv::counter_path(host, &set.name, column.instance.as_deref(), &set.counters[column.counter].name)
}

fn raw_of(set: &Counterset, sample: &Sample, column: &Column) -> Option<Raw> {
    let value_of = |counter: usize| match column.instance.as_deref() {
        None => sample.instances.first().map(|record| value_in(record, counter)),
        Some(name) => sample.value_of(set, name, counter),
    };
    Some(Raw {
        value: value_of(column.counter)?,
        base: match set.counters[column.counter].base {
            Some(base) => Some(value_of(base)?),
            None => None,
        },
        time: sample.time,
        frequency: sample.frequency,
    })
}

/// Who formats the values, with the PdhGetFormattedCounterValue/Array flags its source passes
/// ([`pdh::format()`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formatter {
    /// PDH_FMT_DOUBLE | PDH_FMT_NOCAP100: perfmon, Get-Counter, Telegraf, the OpenTelemetry
    /// windowsperfcounters receiver, .NET.
    Uncapped,
    /// PDH_FMT_DOUBLE alone: windows_exporter's formatted array path (prometheus-community/
    /// windows_exporter, `internal/pdh/pdh.go`, GetFormattedCounterArrayDouble), and so Grafana Alloy.
    WindowsExporter,
}

impl Formatter {
    /// The format flags this consumer passes.
    pub fn flags(self) -> u32 {
        match self {
            Formatter::Uncapped => pdh::PDH_FMT_DOUBLE | pdh::PDH_FMT_NOCAP100,
            Formatter::WindowsExporter => pdh::PDH_FMT_DOUBLE,
        }
    }
}

/// The displayed value of each column from the previous sample (None: this is the first) and the
/// current one, as `formatter` gets it.
pub fn values(
    set: &Counterset,
    columns: &[Column],
    previous: Option<&Sample>,
    current: &Sample,
    formatter: Formatter,
) -> Vec<Value> {
    columns
        .iter()
        .map(|column| match raw_of(set, current, column) {
            None => Value::Status(PDH_CSTATUS_NO_INSTANCE),
            Some(now) => {
                let before = previous.and_then(|previous| raw_of(set, previous, column));
                let ty = set.counters[column.counter].ty;
                pdh::format(ty, pdh::compute(ty, before.as_ref(), &now), formatter.flags())
            }
        })
        .collect()
}

/// The sample as a PERF_OBJECT_TYPE block's content (with `_Total` for a counterset that has one;
/// undefined aggregates read 0 there). Title indexes are the manifest's string resource ids; on
/// Windows lodctr assigns the real ones.
pub fn object_data(set: &Counterset, sample: &Sample) -> ObjectData {
    let counters = set
        .counters
        .iter()
        .map(|counter| CounterDefinition {
            name_index: counter.name_index,
            help_index: counter.help_index,
            detail_level: match counter.detail_level {
                DetailLevel::Standard => perf_object::PERF_DETAIL_NOVICE,
                DetailLevel::Advanced => perf_object::PERF_DETAIL_ADVANCED,
            },
            counter_type: counter.ty.value,
            size: u32::from(counter.descriptor.size),
        })
        .collect();
    let instances = if set.instances.is_multiple() {
        let mut instances: Vec<(String, Vec<u64>)> = sample
            .instances
            .iter()
            .map(|record| (record.name.clone(), values_or_zero(set, record)))
            .collect();
        if set.has_total() {
            let total = total(set, &sample.instances).into_iter().map(|value| value.unwrap_or(0)).collect();
            instances.push((TOTAL.to_string(), total));
        }
        ObjectInstances::Multiple(instances)
    } else {
        ObjectInstances::Single(
            sample.instances.first().map_or_else(|| vec![0; set.counters.len()], |r| values_or_zero(set, r)),
        )
    };
    ObjectData {
        name_index: set.name_index,
        help_index: set.help_index,
        counters,
        instances,
        perf_time: sample.time,
        perf_freq: sample.frequency,
    }
}

#[cfg(test)]
mod tests;
