//! The OpenTelemetry collector's `windowsperfcounters` receiver (opentelemetry-collector-contrib),
//! as its source says:
//! - `receiver/windowsperfcountersreceiver/config.go` (commit 662523d5) `Validate`: at least one entry
//!   in `perfcounters`; every entry has an `object` and at least one counter; a counter's `metric`, when
//!   given, must be a key of `metrics`; no instance is empty; a metric has `sum` or `gauge`, not both,
//!   and a `sum`'s `aggregation` is `cumulative` or `delta`. Without `metric` a counter's metric is
//!   named by its counter path.
//! - `pkg/winperfcounters/watcher.go` (commit 945ff0ef) `removeTotalIfMultipleValues`: of the values one
//!   counter path returns, `_Total` is dropped when there are several (so `instances: ["*"]` never
//!   reports `_Total`, issue #29054), and a lone `_Total` loses its instance name, so it is reported
//!   with no `instance` attribute. PR #50239 (2026) keeps `_Total` for `["*", "_Total"]`; the
//!   configuration here asks for `_Total` in an entry of its own, which both behaviours report.
//! - Values are PDH's formatted values (`GetFormattedCounterArrayDouble`).

use std::collections::{BTreeMap, BTreeSet};

use counter_manifest::Manifest;
use serde::Deserialize;

/// The receiver's configuration (config.go `Config`, with scraperhelper's `collection_interval`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receiver {
    pub collection_interval: Option<String>,
    pub initial_delay: Option<String>,
    #[serde(default)]
    pub metrics: BTreeMap<String, Metric>,
    #[serde(default)]
    pub perfcounters: Vec<ObjectConfig>,
}

/// A metric's description (config.go `MetricConfig`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    pub unit: Option<String>,
    pub description: Option<String>,
    pub gauge: Option<serde_norway::Value>,
    pub sum: Option<Sum>,
}

/// config.go `SumMetric`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sum {
    #[serde(default)]
    pub aggregation: String,
    #[serde(default)]
    pub monotonic: bool,
}

/// One entry of `perfcounters` (config.go `ObjectConfig`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectConfig {
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub instances: Vec<String>,
    #[serde(default)]
    pub counters: Vec<CounterConfig>,
}

/// config.go `CounterConfig`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterConfig {
    #[serde(default)]
    pub name: String,
    pub metric: Option<String>,
    pub attributes: Option<BTreeMap<String, String>>,
}

/// The collector's configuration file: the receivers this checks, and the service's pipelines.
#[derive(Debug, Deserialize)]
pub struct CollectorFile {
    pub receivers: BTreeMap<String, serde_norway::Value>,
    #[serde(default)]
    pub processors: BTreeMap<String, serde_norway::Value>,
    pub exporters: BTreeMap<String, serde_norway::Value>,
    pub service: Service,
}

/// `service:`.
#[derive(Debug, Deserialize)]
pub struct Service {
    pub pipelines: BTreeMap<String, Pipeline>,
}

/// A pipeline: the components it names must be configured (the collector refuses to start otherwise).
#[derive(Debug, Deserialize)]
pub struct Pipeline {
    #[serde(default)]
    pub receivers: Vec<String>,
    #[serde(default)]
    pub processors: Vec<String>,
    #[serde(default)]
    pub exporters: Vec<String>,
}

/// The values one counter path reports, by instance attribute (None: no attribute), from the
/// instances PDH returns for it (watcher.go `removeTotalIfMultipleValues`).
pub fn reported_instances(returned: &[String]) -> Vec<Option<String>> {
    match returned {
        [] => Vec::new(),
        [one] => vec![(one != "_Total" && !one.is_empty()).then(|| one.clone())],
        many => many.iter().filter(|name| *name != "_Total").map(|name| Some(name.clone())).collect(),
    }
}

/// The values of every metric `receiver` reports on a 4-processor machine: metric -> instance
/// attributes (None: none), from every counter path of every entry.
pub fn reported(manifest: &Manifest, receiver: &Receiver) -> BTreeMap<String, Vec<Option<String>>> {
    let mut metrics: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    for entry in &receiver.perfcounters {
        let actual = crate::manifest::instances(manifest, &entry.object, 4);
        let patterns = if entry.instances.is_empty() { vec![String::new()] } else { entry.instances.clone() };
        for pattern in &patterns {
            let returned: Vec<String> = actual
                .iter()
                .filter(|name| {
                    if pattern.is_empty() { name.is_empty() } else { crate::instance_matches(pattern, name) }
                })
                .cloned()
                .collect();
            for counter in &entry.counters {
                let metric =
                    counter.metric.clone().unwrap_or_else(|| format!("\\{}\\{}", entry.object, counter.name));
                metrics.entry(metric).or_default().extend(reported_instances(&returned));
            }
        }
    }
    metrics
}

/// What is wrong with `receiver` under config.go's `Validate`, the manifest, and this project's own
/// rules (every counter names its metric; a ratio's metric is a gauge).
pub fn check_receiver(manifest: &Manifest, receiver: &Receiver) -> Vec<String> {
    let mut problems = Vec::new();
    if receiver.perfcounters.is_empty() {
        problems.push("must specify at least one perf counter".to_string());
    }
    for (name, metric) in &receiver.metrics {
        if let Some(sum) = &metric.sum {
            if metric.gauge.is_some() {
                problems.push(format!("metric {name:?} provides both a sum and a gauge"));
            }
            if sum.aggregation != "cumulative" && sum.aggregation != "delta" {
                problems.push(format!("sum metric {name:?} has an invalid aggregation"));
            }
        }
    }
    let mut used = BTreeSet::new();
    for entry in &receiver.perfcounters {
        let at = format!("perfcounters {:?} {:?}", entry.object, entry.instances);
        if entry.object.is_empty() {
            problems.push("an entry without `object`".to_string());
            continue;
        }
        if entry.counters.is_empty() {
            problems.push(format!("{at}: no counters"));
        }
        if entry.instances.iter().any(String::is_empty) {
            problems.push(format!("{at}: an empty instance"));
        }
        problems
            .extend(instance_problems(manifest, entry).into_iter().map(|problem| format!("{at}: {problem}")));
        for counter in &entry.counters {
            problems.extend(crate::manifest::check_counter(manifest, &entry.object, &counter.name));
            let Some(metric) = &counter.metric else {
                problems.push(format!("{at}: counter {:?} names no metric", counter.name));
                continue;
            };
            used.insert(metric.clone());
            match receiver.metrics.get(metric) {
                None => problems.push(format!("{at}: metric {metric:?} is not defined in `metrics`")),
                Some(definition)
                    if definition.sum.is_some()
                        && crate::manifest::needs_base(manifest, &entry.object, &counter.name) =>
                {
                    problems.push(format!("{at}: ratio {:?} is a gauge, not a sum", counter.name));
                }
                Some(_) => {}
            }
        }
    }
    problems
}

fn instance_problems(manifest: &Manifest, entry: &ObjectConfig) -> Vec<String> {
    let Some(set) = crate::manifest::set(manifest, &entry.object) else { return Vec::new() };
    match (entry.instances.is_empty(), set.instances.is_multiple()) {
        (true, true) => vec!["a multi-instance counterset needs `instances`".to_string()],
        (false, false) => vec!["a single-instance counterset takes no `instances`".to_string()],
        _ => Vec::new(),
    }
}

/// What is wrong with the pipelines: a component they name that is not configured, or a
/// windowsperfcounters receiver no pipeline uses.
pub fn check_pipelines(file: &CollectorFile) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, pipeline) in &file.service.pipelines {
        for (kind, names, configured) in [
            ("receiver", &pipeline.receivers, &file.receivers),
            ("processor", &pipeline.processors, &file.processors),
            ("exporter", &pipeline.exporters, &file.exporters),
        ] {
            for component in names.iter().filter(|component| !configured.contains_key(*component)) {
                problems.push(format!("pipeline {name}: {kind} {component:?} is not configured"));
            }
        }
    }
    for receiver in file.receivers.keys().filter(|key| is_windowsperfcounters(key)) {
        if !file.service.pipelines.values().any(|pipeline| pipeline.receivers.contains(receiver)) {
            problems.push(format!("receiver {receiver:?} is in no pipeline"));
        }
    }
    problems
}

/// Whether a component id (`type` or `type/name`) is a windowsperfcounters receiver.
pub fn is_windowsperfcounters(id: &str) -> bool {
    id.split('/').next() == Some("windowsperfcounters")
}

#[cfg(test)]
mod tests {
    use super::reported_instances;

    #[test]
    fn total_survives_only_alone_and_without_its_name() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(reported_instances(&names(&["0,0", "_Total"])), [Some("0,0".to_string())]);
        assert_eq!(reported_instances(&names(&["_Total"])), [None]);
        assert_eq!(reported_instances(&names(&[""])), [None]);
    }
}
