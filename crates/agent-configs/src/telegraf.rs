//! Telegraf's `inputs.win_perf_counters` plugin, as its source says (influxdata/telegraf v1.39.3,
//! `plugins/inputs/win_perf_counters/win_perf_counters.go`):
//! - an object is `ObjectName`, `Counters`, `Instances`, `Measurement`, `WarnOnMissing`,
//!   `FailOnMissing`, `IncludeTotal`, `UseRawValues`, `Sources`; Telegraf refuses a configuration
//!   with a key no plugin field takes;
//! - `parseConfig`: an object without `Instances` adds no counter at all (a warning only), and
//!   `"------"` (`emptyInstance`) is the instance of a counterset without instances;
//! - `shouldIncludeMetric` and `addItem`: with `"*"` an instance whose name contains `_Total` is
//!   dropped unless `IncludeTotal = true`; an instance listed by name is kept;
//! - `sanitizedChars`: a field is the counter name with `/sec` -> `_persec`, ` ` -> `_`, `%` ->
//!   `Percent`, `\` removed (`_Raw` appended with `UseRawValues`); the measurement is `Measurement`
//!   sanitized alike, `win_perf_counters` when empty; tags `objectname`, `instance` (when the name is
//!   not empty) and `source`;
//! - values are PDH's formatted values unless `UseRawValues`.

use std::collections::BTreeSet;

use counter_manifest::Manifest;
use serde::Deserialize;

/// The plugin's configuration (`WinPerfCounters`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Plugin {
    pub PrintValid: Option<bool>,
    pub UsePerfCounterTime: Option<bool>,
    #[serde(default)]
    pub object: Vec<Object>,
    pub CountersRefreshInterval: Option<String>,
    pub UseWildcardsExpansion: Option<bool>,
    pub LocalizeWildcardsExpansion: Option<bool>,
    pub IgnoredErrors: Option<Vec<String>>,
    pub MaxBufferSize: Option<String>,
    pub Sources: Option<Vec<String>>,
}

/// One `[[inputs.win_perf_counters.object]]` (`perfObject`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct Object {
    #[serde(default)]
    pub ObjectName: String,
    #[serde(default)]
    pub Counters: Vec<String>,
    #[serde(default)]
    pub Instances: Vec<String>,
    #[serde(default)]
    pub Measurement: String,
    #[serde(default)]
    pub WarnOnMissing: bool,
    #[serde(default)]
    pub FailOnMissing: bool,
    #[serde(default)]
    pub IncludeTotal: bool,
    #[serde(default)]
    pub UseRawValues: bool,
    pub Sources: Option<Vec<String>>,
}

/// The TOML file: `[[inputs.win_perf_counters]]` and anything else Telegraf reads.
#[derive(Debug, Deserialize)]
pub struct File {
    pub inputs: Inputs,
}

/// `[inputs]`.
#[derive(Debug, Deserialize)]
pub struct Inputs {
    pub win_perf_counters: Vec<Plugin>,
}

/// `sanitizedChars`.
pub fn sanitize(name: &str) -> String {
    // strings.NewReplacer tries its pairs in order at each position; none of these overlap but the
    // two spellings of `/sec`.
    name.replace("/sec", "_persec")
        .replace("/Sec", "_persec")
        .replace(' ', "_")
        .replace('%', "Percent")
        .replace('\\', "")
}

/// The field a counter of `object` is written as.
pub fn field(object: &Object, counter: &str) -> String {
    let field = sanitize(counter);
    if object.UseRawValues { field + "_Raw" } else { field }
}

/// The measurement `object` writes.
pub fn measurement(object: &Object) -> String {
    let name = sanitize(&object.Measurement);
    if name.is_empty() { "win_perf_counters".to_string() } else { name }
}

/// The `instance` tags (None: no tag) of the points `object` writes, from the instances the counterset
/// has (`""` for a single-instance one).
pub fn reported_instances(object: &Object, actual: &[String]) -> Vec<Option<String>> {
    let mut reported = Vec::new();
    for name in actual {
        let kept = object.Instances.iter().any(|pattern| match pattern.as_str() {
            "------" => name.is_empty(),
            "*" => !name.is_empty() && (object.IncludeTotal || !name.contains("_Total")),
            exact => exact == name || object.IncludeTotal && crate::instance_matches(exact, name),
        });
        if kept {
            reported.push((!name.is_empty()).then(|| name.clone()));
        }
    }
    reported
}

/// What is wrong with `plugin` under the plugin's rules and the manifest.
pub fn check(manifest: &Manifest, plugin: &Plugin) -> Vec<String> {
    let mut problems = Vec::new();
    if plugin.object.is_empty() {
        problems.push("no performance objects configured".to_string());
    }
    for object in &plugin.object {
        let at = format!("object {:?}", object.ObjectName);
        if object.ObjectName.is_empty() {
            problems.push("an object without ObjectName".to_string());
            continue;
        }
        if object.Instances.is_empty() {
            problems.push(format!("{at}: no Instances: the plugin adds none of its counters"));
        }
        if object.Counters.is_empty() {
            problems.push(format!("{at}: no Counters"));
        }
        if let Some(set) = crate::manifest::set(manifest, &object.ObjectName) {
            let single = object.Instances.iter().any(|instance| instance == "------");
            if single == set.instances.is_multiple() {
                problems.push(format!(
                    "{at}: Instances {:?} do not fit a {} counterset",
                    object.Instances,
                    set.instances.name()
                ));
            }
        }
        let mut fields = BTreeSet::new();
        for counter in &object.Counters {
            problems.extend(crate::manifest::check_counter(manifest, &object.ObjectName, counter));
            if !fields.insert(field(object, counter)) {
                problems.push(format!("{at}: field {} written twice", field(object, counter)));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_instances_follow_the_plugin() {
        assert_eq!(sanitize("% LLC Misses"), "Percent_LLC_Misses");
        assert_eq!(sanitize("Instructions Retired/sec"), "Instructions_Retired_persec");
        assert_eq!(sanitize("Avg. Collect Time"), "Avg._Collect_Time");
        let object = |instances: &[&str], total: bool| Object {
            ObjectName: "Hardware Counters".into(),
            Counters: Vec::new(),
            Instances: instances.iter().map(|s| s.to_string()).collect(),
            Measurement: String::new(),
            WarnOnMissing: false,
            FailOnMissing: false,
            IncludeTotal: total,
            UseRawValues: false,
            Sources: None,
        };
        let actual: Vec<String> = ["0,0", "_Total"].map(String::from).to_vec();
        assert_eq!(reported_instances(&object(&["*"], false), &actual), [Some("0,0".to_string())]);
        assert_eq!(reported_instances(&object(&["*"], true), &actual).len(), 2);
        assert_eq!(reported_instances(&object(&["------"], false), &[String::new()]), [None]);
    }
}
