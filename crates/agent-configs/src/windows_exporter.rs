//! windows_exporter's `performancecounter` collector (Grafana Alloy's `prometheus.exporter.windows`
//! embeds the same code), as its source says. Read at tag v0.31.8; the rules are the same from v0.30.0,
//! the first release whose objects take `type: formatted` (PR #1830):
//! - `internal/collector/performancecounter/types.go`: an object is `name`, `object`, `type`,
//!   `instances`, `counters` (`name`, `type`, `metric`, `labels`), `instance_label`; the YAML is
//!   unmarshalled without KnownFields, so a misspelt key is silently ignored (these checks refuse it).
//! - `performancecounter.go` `Build`: `name` required and unique, `object` required, a counter's `name`
//!   required and unique in its object; a missing `metric` is `sanitizeMetricName("windows_" +
//!   "performancecounter_" + object + "_" + counter)`; each counter becomes a struct field named
//!   `ToUpper(sanitizeMetricName(counter))` (so two counters whose names sanitize alike collide, and
//!   one starting with a digit is no Go field name); `type` defaults to `raw`; `instance_label`
//!   defaults to `instance`; an object without `instances` has no instance label.
//! - `internal/pdh/collector.go`: `_Total` is requested only when `instances` lists it
//!   (`slices.Contains(instances, "_Total")`), and every instance whose name ends in `_Total` is
//!   dropped otherwise (`strings.HasSuffix(instanceName, "_Total") && !totalCounterRequested`), in raw
//!   and formatted mode alike; no `instances` is the path without an instance. In raw mode a
//!   PERF_PRECISION_100NS_TIMER is `FirstValue * 1e-7` and any other type its first raw value: no
//!   ratio's base is read, so a ratio needs `type: formatted`.
//! - `internal/config/config.go`: the config file is decoded with KnownFields(true) at the top level
//!   and flattened into flags, so `collector.performancecounter.objects` must be one YAML string.

use std::collections::{BTreeMap, BTreeSet};

use counter_manifest::Manifest;
use serde::Deserialize;

/// One entry of the collector's `objects` (types.go `Object`).
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Object {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub object: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    pub instances: Option<Vec<String>>,
    #[serde(default)]
    pub counters: Vec<Counter>,
    pub instance_label: Option<String>,
}

/// One counter of an object (types.go `Counter`).
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    pub metric: Option<String>,
    pub labels: Option<BTreeMap<String, String>>,
}

/// The configuration file's top level (config.go `configFile`, decoded with KnownFields).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub debug: Option<serde_norway::Value>,
    pub collectors: Option<Collectors>,
    pub collector: Option<BTreeMap<String, BTreeMap<String, serde_norway::Value>>>,
    pub log: Option<serde_norway::Value>,
    pub process: Option<serde_norway::Value>,
    pub scrape: Option<serde_norway::Value>,
    pub telemetry: Option<serde_norway::Value>,
    pub web: Option<serde_norway::Value>,
}

/// `collectors:` (`enabled` is one comma-separated string).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Collectors {
    pub enabled: Option<String>,
}

/// `sanitizeMetricName` (performancecounter.go): `%` becomes `percent`, `(` and `)` go, the rest is
/// lower-cased, every character but `[a-zA-Z0-9]` becomes `_`, and `_` is trimmed from both ends.
pub fn sanitize_metric_name(name: &str) -> String {
    let replaced = name.replace('%', "percent").replace(['(', ')'], "").to_lowercase();
    let mapped: String = replaced.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    mapped.trim_matches('_').to_string()
}

/// The metric a counter of `object` is exported as.
pub fn metric_name(object: &Object, counter: &Counter) -> String {
    counter.metric.clone().unwrap_or_else(|| {
        sanitize_metric_name(&format!("windows_performancecounter_{}_{}", object.object, counter.name))
    })
}

/// The instance names of `actual` that the object exports (collector.go's `_Total` rule over PDH's
/// wildcard): `""` is the single-instance counterset's value, exported without an instance label.
pub fn exported_instances(object: &Object, actual: &[String]) -> Vec<String> {
    let Some(instances) = &object.instances else {
        return actual.iter().filter(|name| name.is_empty()).cloned().collect();
    };
    let total_requested = instances.iter().any(|instance| instance == "_Total");
    actual
        .iter()
        .filter(|name| instances.iter().any(|pattern| crate::instance_matches(pattern, name)))
        .filter(|name| total_requested || !name.ends_with("_Total"))
        .cloned()
        .collect()
}

/// One exported series family: a metric, its object, and its instance label (None without one).
#[derive(Clone, Debug)]
pub struct Family {
    pub metric: String,
    pub object: String,
    pub counter: String,
    pub instance_label: Option<String>,
    /// The instances (as named by PDH) the family has on a machine of the manifest's instances.
    pub instances: Vec<String>,
}

/// Every family `objects` export, with the instances a 4-processor machine gives each.
pub fn families(manifest: &Manifest, objects: &[Object]) -> Vec<Family> {
    let mut families = Vec::new();
    for object in objects {
        let actual = crate::manifest::instances(manifest, &object.object, 4);
        let instances = exported_instances(object, &actual);
        let label = object
            .instances
            .as_ref()
            .map(|_| object.instance_label.clone().unwrap_or_else(|| "instance".to_string()));
        for counter in &object.counters {
            families.push(Family {
                metric: metric_name(object, counter),
                object: object.object.clone(),
                counter: counter.name.clone(),
                instance_label: label.clone(),
                instances: instances.clone(),
            });
        }
    }
    families
}

/// One exported descriptor: metric name, label names, constant label values, Prometheus type.
type Exported = (String, BTreeSet<String>, BTreeMap<String, String>, String);

/// What is wrong with `objects` under the collector's rules and the manifest.
pub fn check_objects(manifest: &Manifest, objects: &[Object]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    let mut metrics: Vec<Exported> = Vec::new();
    for object in objects {
        let at = format!("object {:?}", object.name);
        if object.name.is_empty() {
            problems.push("an object without `name`".to_string());
        } else if !names.insert(object.name.clone()) {
            problems.push(format!("{at}: name is duplicated"));
        }
        if object.object.is_empty() {
            problems.push(format!("{at}: `object` is required"));
            continue;
        }
        let formatted = match object.kind.as_deref() {
            None | Some("raw") => false,
            Some("formatted") => true,
            Some(other) => {
                problems.push(format!("{at}: type {other:?} is neither raw nor formatted"));
                false
            }
        };
        problems
            .extend(check_instances(manifest, object).into_iter().map(|problem| format!("{at}: {problem}")));
        if object.instance_label.as_deref().is_some_and(|label| ["instance", "job"].contains(&label))
            || (object.instances.is_some() && object.instance_label.is_none())
        {
            // Prometheus renames a scraped label that a target label already holds (`honor_labels:
            // false`, its configuration docs) to `exported_instance`: name the instance otherwise.
            problems.push(format!("{at}: the instance label would clash with Prometheus's `instance`"));
        }
        let mut fields = BTreeSet::new();
        for counter in &object.counters {
            problems.extend(
                check_counter(manifest, object, counter, formatted, &mut fields)
                    .into_iter()
                    .map(|problem| format!("{at}: counter {:?}: {problem}", counter.name)),
            );
            let metric = metric_name(object, counter);
            // client_golang (prometheus/desc.go, `Desc`): descriptors sharing a name must have the
            // same label names and type, and differ in their constant labels' values; the exporter
            // makes each counter's instance label and `labels` constant labels (`collectObject`).
            let label_names: BTreeSet<String> = object
                .instances
                .as_ref()
                .map(|_| object.instance_label.clone().unwrap_or_else(|| "instance".into()))
                .into_iter()
                .chain(counter.labels.iter().flat_map(|labels| labels.keys().cloned()))
                .collect();
            let values = counter.labels.clone().unwrap_or_default();
            let kind = counter.kind.clone().unwrap_or_default();
            let earlier: Vec<&Exported> = metrics.iter().filter(|(name, ..)| name == &metric).collect();
            let clash = earlier.iter().any(|(_, names, earlier_values, earlier_kind)| {
                names != &label_names || earlier_values == &values || earlier_kind != &kind
            });
            metrics.push((metric.clone(), label_names, values, kind));
            if clash {
                problems.push(format!("{at}: metric {metric} is exported twice"));
            }
        }
        if object.counters.is_empty() {
            problems.push(format!("{at}: no counters"));
        }
    }
    problems
}

fn check_instances(manifest: &Manifest, object: &Object) -> Vec<String> {
    let Some(set) = crate::manifest::set(manifest, &object.object) else { return Vec::new() };
    match (&object.instances, set.instances.is_multiple()) {
        (None, true) => vec!["a multi-instance counterset needs `instances`".to_string()],
        (Some(_), false) => vec!["a single-instance counterset takes no `instances`".to_string()],
        (Some(list), true) if list.is_empty() || list.iter().any(String::is_empty) => {
            vec!["an empty instance".to_string()]
        }
        _ => Vec::new(),
    }
}

fn check_counter(
    manifest: &Manifest,
    object: &Object,
    counter: &Counter,
    formatted: bool,
    fields: &mut BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    if counter.name.is_empty() {
        return vec!["`name` is required".to_string()];
    }
    problems.extend(crate::manifest::check_counter(manifest, &object.object, &counter.name));
    let field = sanitize_metric_name(&counter.name).to_uppercase();
    if !field.starts_with(|c: char| c.is_ascii_uppercase()) {
        problems.push(format!("its field name {field:?} is no exported Go identifier"));
    }
    if !fields.insert(field.clone()) {
        problems.push(format!("its field name {field} is taken by another counter of the object"));
    }
    match counter.kind.as_deref() {
        None | Some("gauge") => {}
        Some("counter") if formatted => {
            problems.push("a formatted value is no Prometheus counter".to_string())
        }
        Some("counter") => {}
        Some(other) => problems.push(format!("type {other:?} is neither counter nor gauge")),
    }
    if !formatted && crate::manifest::needs_base(manifest, &object.object, &counter.name) {
        problems.push("a ratio needs `type: formatted` (raw mode reads no base)".to_string());
    }
    let metric = metric_name(object, counter);
    let valid = metric.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && metric.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if !valid {
        problems.push(format!("{metric:?} is no Prometheus metric name"));
    }
    problems
}

/// The `objects` string of a configuration file, parsed, or what is wrong with the file.
pub fn objects_of_config_file(text: &str) -> Result<(ConfigFile, Vec<Object>), String> {
    let file: ConfigFile = serde_norway::from_str(text).map_err(|error| format!("config file: {error}"))?;
    let objects = file
        .collector
        .as_ref()
        .and_then(|collector| collector.get("performancecounter"))
        .and_then(|collector| collector.get("objects"))
        .ok_or("no collector.performancecounter.objects")?;
    let serde_norway::Value::String(objects) = objects else {
        return Err("collector.performancecounter.objects must be a string (`|-`)".to_string());
    };
    let enabled = file.collectors.as_ref().and_then(|collectors| collectors.enabled.as_deref()).unwrap_or("");
    if !enabled.split(',').any(|name| name.trim() == "performancecounter") {
        return Err(format!("collectors.enabled {enabled:?} leaves performancecounter out"));
    }
    let objects = serde_norway::from_str(objects).map_err(|error| format!("objects: {error}"))?;
    Ok((file, objects))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_follow_sanitize_metric_name() {
        assert_eq!(sanitize_metric_name("% LLC Misses"), "percent_llc_misses");
        assert_eq!(sanitize_metric_name("Avg. Collect Time"), "avg__collect_time");
        assert_eq!(
            sanitize_metric_name("windows_performancecounter_Memory_Cache Faults/sec"),
            "windows_performancecounter_memory_cache_faults_sec"
        );
        assert_eq!(sanitize_metric_name("(Processor) Time_"), "processor_time");
    }

    #[test]
    fn total_is_exported_only_when_listed() {
        let actual: Vec<String> = ["0,0", "0,1", "_Total"].map(String::from).to_vec();
        let object = |instances: &[&str]| Object {
            name: "x".into(),
            object: "Hardware Counters".into(),
            kind: None,
            instances: Some(instances.iter().map(|s| s.to_string()).collect()),
            counters: Vec::new(),
            instance_label: None,
        };
        assert_eq!(exported_instances(&object(&["*"]), &actual), ["0,0", "0,1"]);
        assert_eq!(exported_instances(&object(&["*", "_Total"]), &actual), ["0,0", "0,1", "_Total"]);
        assert_eq!(exported_instances(&object(&["_Total"]), &actual), ["_Total"]);
    }
}
