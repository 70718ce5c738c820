//! windows_exporter's `performancecounter` collector (and so Grafana Alloy's `prometheus.exporter.windows`)
//! as its source behaves, over the double's PCW: what it would emit for a configuration's objects.
//! Read in prometheus-community/windows_exporter at v0.30.0 and v0.31.8 (the same code in both):
//!
//! * Built once, at start ([`Exporter::start`]: `pkg/collector/collection.go` `Build`,
//!   `internal/pdh/collector.go` `NewCollectorWithReflection`): an object missing then is dead until
//!   the exporter restarts.
//! * Raw objects read each counter's first raw value, formatted ones PDH's value with PDH_FMT_DOUBLE
//!   alone, so capped at 100 for a percent type (`item`: `collectWorkerRaw`,
//!   `collectWorkerFormatted`, `internal/pdh/pdh.go` GetFormattedCounterArrayDouble).
//! * An invalid item is skipped, but its instance's row, created zeroed by any valid item, is emitted
//!   whole: the invalid value is exported as 0 (`rows`, `performancecounter.go` `collectObject`).
//! * `*` expands to every instance, `_Total` included; a name ending in `_Total` is dropped unless the
//!   object lists `_Total` (`instances`: `totalCounterRequested`).

use std::collections::BTreeMap;

use super::pdh::{self, Raw, Value};
use super::{Counterset, Formatter, Sample, TOTAL};
use counter_manifest::Manifest;

/// pdhmsg.h: the object is not on this machine.
pub const PDH_CSTATUS_NO_OBJECT: u32 = 0xC000_0BB8;
/// pdhmsg.h: the object has no such counter.
pub const PDH_CSTATUS_NO_COUNTER: u32 = 0xC000_0BB9;

/// One configured object (`types.go` `Object`), as the agent-configs crate reads it.
#[derive(Clone, Debug)]
pub struct ObjectConfig {
    pub name: String,
    pub object: String,
    pub formatted: bool,
    /// Empty: the object has no instances.
    pub instances: Vec<String>,
    pub instance_label: String,
    /// (counter name, metric name, the counter's constant `labels`).
    pub counters: Vec<(String, String, BTreeMap<String, String>)>,
}

/// One exported sample: metric name, labels (without Prometheus's own `instance` and `job`), value.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

enum State {
    /// Built: the counterset, each configured counter's index in it, and the last sample.
    Live { set: Counterset, indexes: Vec<usize>, previous: Sample },
    /// Failed at build (the status is in [`Exporter::log`]).
    Dead,
}

/// A started exporter: its objects, each live or dead for the rest of its life.
pub struct Exporter {
    objects: Vec<(ObjectConfig, State)>,
    /// The warnings `Build` logged.
    pub log: Vec<String>,
}

/// What the exporter sees of a counterset when it adds its counters: PDH_CSTATUS_NO_OBJECT if the
/// counterset is not registered, PDH_CSTATUS_NO_COUNTER if a counter is not in it.
fn build(manifest: &Manifest, config: &ObjectConfig) -> Result<(Counterset, Vec<usize>), (u32, String)> {
    let path = |counter: &str| {
        let instance = config.instances.first().map_or(String::new(), |instance| format!("({instance})"));
        format!("\\{}{instance}\\{counter}", config.object)
    };
    let first = config.counters.first().map_or("", |(counter, ..)| counter.as_str());
    let set = Counterset::open(manifest, &config.object).map_err(|_| (PDH_CSTATUS_NO_OBJECT, path(first)))?;
    let indexes = config
        .counters
        .iter()
        .map(|(counter, ..)| {
            set.counters
                .iter()
                .position(|candidate| candidate.is_displayed() && &candidate.name == counter)
                .ok_or_else(|| (PDH_CSTATUS_NO_COUNTER, path(counter)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((set, indexes))
}

impl Exporter {
    /// Starts the exporter: builds every object now (and takes the initial sample of each). An object
    /// that is not there (pmupcw not installed, or its manifest not registered: PdhAddEnglishCounter's
    /// PDH_CSTATUS_NO_OBJECT; a counter it lacks: PDH_CSTATUS_NO_COUNTER) fails its build. Both codes
    /// are on `Build`'s list of tolerated errors: the exporter logs the warning "couldn't initialize
    /// collector" and serves on, but that object's PDH collector never got its worker (`Collect`
    /// returns ErrPerformanceCounterNotInitialized): every scrape reports
    /// `windows_performancecounter_collector_success{collector="<name>"} 0` and no metric of it.
    /// Any other build error is fatal (`cmd/windows_exporter/main.go` logs the same text at error
    /// level and exits with 1); versions before v0.30.0 have no `type: formatted` and are not
    /// modelled.
    pub fn start(manifest: &Manifest, objects: &[ObjectConfig]) -> Exporter {
        let mut log = Vec::new();
        let objects = objects
            .iter()
            .map(|config| {
                let state = match build(manifest, config).and_then(|(set, indexes)| {
                    // PdhAddCounter of a PCW counterset's counter: the provider's AddCounter callback.
                    crate::control::pcw::add_counter(&set.name, set.full_mask());
                    let previous = super::sample(&set).map_err(|error| (0, error))?;
                    Ok(State::Live { set, indexes, previous })
                }) {
                    Ok(state) => state,
                    Err((status, path)) => {
                        log.push(format!(
                            "level=WARN msg=\"couldn't initialize collector\" err=\"error build collector \
                             performancecounter: failed collector for {}: failed to initialize collector: failed \
                             to add counter {path}: {status:#010X}\"",
                            config.name
                        ));
                        State::Dead
                    }
                };
                (config.clone(), state)
            })
            .collect();
        Exporter { objects, log }
    }

    /// Stops the exporter: its queries close (the providers' RemoveCounter callbacks).
    pub fn stop(self) {
        self.detach();
    }

    /// The provider goes away under the open queries (the service stops): its RemoveCounter
    /// callbacks. The exporter keeps its objects and their last samples.
    pub fn detach(&self) {
        for (_, state) in &self.objects {
            if let State::Live { set, .. } = state {
                crate::control::pcw::remove_counter(&set.name, set.full_mask());
            }
        }
    }

    /// A provider of the same countersets registers again (the service restarts): the open queries'
    /// counters are added to it, with no new initial sample.
    pub fn attach(&self) {
        for (_, state) in &self.objects {
            if let State::Live { set, .. } = state {
                crate::control::pcw::add_counter(&set.name, set.full_mask());
            }
        }
    }

    /// Whether object `name` was built (false: dead until the exporter restarts).
    pub fn is_live(&self, name: &str) -> bool {
        self.objects.iter().any(|(config, state)| config.name == name && matches!(state, State::Live { .. }))
    }

    /// One scrape of `/metrics`: every live object's metrics, and each object's
    /// `windows_performancecounter_collector_success`.
    pub fn scrape(&mut self) -> Vec<Metric> {
        let mut out = Vec::new();
        for (config, state) in &mut self.objects {
            let success = match state {
                State::Dead => false,
                State::Live { set, indexes, previous } => match super::sample(set) {
                    Ok(current) => {
                        out.extend(emit(config, &rows(config, set, indexes, previous, &current)));
                        *previous = current;
                        true
                    }
                    Err(_) => false,
                },
            };
            out.push(Metric {
                name: "windows_performancecounter_collector_success".into(),
                labels: BTreeMap::from([("collector".into(), config.name.clone())]),
                value: if success { 1.0 } else { 0.0 },
            });
        }
        out
    }
}

/// The instances PDH reports for the object's patterns, `_Total` dropped unless listed.
fn instances(config: &ObjectConfig, set: &Counterset, sample: &Sample) -> Vec<String> {
    if config.instances.is_empty() {
        return vec![String::new()];
    }
    let mut all: Vec<String> = sample.instances.iter().map(|record| record.name.clone()).collect();
    if set.has_total() {
        all.push(TOTAL.into());
    }
    let total_requested = config.instances.iter().any(|instance| instance == TOTAL);
    let mut out: Vec<String> = Vec::new();
    for pattern in &config.instances {
        for name in all.iter().filter(|name| pattern == "*" || *name == pattern) {
            if (name.ends_with(TOTAL) && !total_requested) || out.contains(name) {
                continue;
            }
            out.push(name.clone());
        }
    }
    out
}

/// The raw item of counter `index` of `instance` (`""`: the single instance).
fn raw(set: &Counterset, sample: &Sample, instance: &str, index: usize) -> Option<Raw> {
    let value = if instance.is_empty() {
        sample.instances.first().map(|record| record.values.as_ref().map_or(0, |values| values[index]))
    } else {
        sample.value_of(set, instance, index)
    }?;
    let base = set.counters[index].base.and_then(|base| {
        if instance.is_empty() {
            sample.instances.first().map(|record| record.values.as_ref().map_or(0, |values| values[base]))
        } else {
            sample.value_of(set, instance, base)
        }
    });
    Some(Raw { value, base, time: sample.time, frequency: sample.frequency })
}

/// The value of one item as the worker reads it, None where its CStatus is not valid: raw, the first
/// raw value (a PERF_100NSEC_TIMER or PERF_PRECISION_100NS_TIMER times 1e-7, TicksToSecondScaleFactor;
/// no base read); formatted, PDH's value with [`Formatter::WindowsExporter`]'s flags.
fn item(
    set: &Counterset,
    index: usize,
    formatted: bool,
    previous: &Sample,
    current: &Sample,
    instance: &str,
) -> Option<f64> {
    let now = raw(set, current, instance, index)?;
    let ty = set.counters[index].ty;
    if !formatted {
        let value = pdh::field_value(now.value, ty.size) as f64;
        let timer = matches!(ty.name, "perf_100nsec_timer" | "perf_precision_100ns_timer");
        return Some(if timer { value * 1e-7 } else { value });
    }
    let before = raw(set, previous, instance, index);
    match pdh::format(ty, pdh::compute(ty, before.as_ref(), &now), Formatter::WindowsExporter.flags()) {
        Value::Value(value) => Some(value),
        Value::NoValue | Value::Status(_) => None,
    }
}

/// The rows the worker fills: per instance with at least one valid item, each counter's value or 0
/// (the row is `reflect.New(elemType)`, zeroed; an instance whose every item is invalid has none).
fn rows(
    config: &ObjectConfig,
    set: &Counterset,
    indexes: &[usize],
    previous: &Sample,
    current: &Sample,
) -> Vec<(String, Vec<f64>)> {
    instances(config, set, current)
        .into_iter()
        .filter_map(|instance| {
            let values: Vec<Option<f64>> = indexes
                .iter()
                .map(|&index| item(set, index, config.formatted, previous, current, &instance))
                .collect();
            values
                .iter()
                .any(Option::is_some)
                .then(|| (instance, values.iter().map(|value| value.unwrap_or(0.0)).collect()))
        })
        .collect()
}

/// `collectObject`: every configured counter of every row, labelled with the row's instance and the
/// counter's `labels`.
fn emit(config: &ObjectConfig, rows: &[(String, Vec<f64>)]) -> Vec<Metric> {
    let mut out = Vec::new();
    for (instance, values) in rows {
        for ((_, metric, constant), value) in config.counters.iter().zip(values) {
            let mut labels = BTreeMap::new();
            if !config.instances.is_empty() && !instance.is_empty() {
                labels.insert(config.instance_label.clone(), instance.clone());
            }
            // The counter's own `labels` are copied over the instance label (`maps.Copy`).
            labels.extend(constant.clone());
            out.push(Metric { name: metric.clone(), labels, value: *value });
        }
    }
    out
}
