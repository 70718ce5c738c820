//! The Grafana dashboard (`docs/agents/pmupcw-dashboard.json`) and the fleet guide's PromQL and
//! InfluxQL examples query only what the configurations export, under each agent's naming rule: every
//! metric a PromQL selector names is a windows_exporter/Alloy family of the objects file, every label it
//! matches is that family's instance label (or a target label), and a `processor="_Total"` selector
//! only reads a family whose object lists `_Total`; every InfluxQL field is one Telegraf writes.

use std::collections::BTreeSet;

use agent_configs::{manifest, promql, read, telegraf, windows_exporter};

/// The objects the fleet guide shows beside the configurations (its `yaml` blocks: the custom event
/// objects), checked under the exporter's rules.
fn guide_objects() -> Vec<windows_exporter::Object> {
    let mut objects = Vec::new();
    for block in promql::blocks(&read("docs/fleet-collection.md"), "yaml") {
        let shown: Vec<windows_exporter::Object> =
            serde_norway::from_str(&block).expect("the guide's objects parse");
        assert_eq!(windows_exporter::check_objects(&manifest::load(), &shown), Vec::<String>::new());
        objects.extend(shown);
    }
    objects
}

/// The families the configurations export, and with `guide` those of the guide's objects too.
fn families_with(guide: bool) -> Vec<windows_exporter::Family> {
    let mut objects: Vec<windows_exporter::Object> =
        serde_norway::from_str(&read("docs/agents/performancecounter-objects.yml")).unwrap();
    if guide {
        objects.extend(guide_objects());
    }
    windows_exporter::families(&manifest::load(), &objects)
}

fn families() -> Vec<windows_exporter::Family> {
    families_with(false)
}

/// What is wrong with `expr` against `families`.
fn check_expr(expr: &str, families: &[windows_exporter::Family]) -> Vec<String> {
    let selectors = match promql::selectors(expr) {
        Ok(selectors) => selectors,
        Err(error) => return vec![format!("{expr}: does not parse: {error}")],
    };
    let mut problems = Vec::new();
    for selector in selectors {
        let Some(metric) = &selector.metric else {
            problems.push(format!("{expr}: a selector without a metric name"));
            continue;
        };
        let Some(family) = families.iter().find(|family| &family.metric == metric) else {
            problems.push(format!("{expr}: no configuration exports {metric}"));
            continue;
        };
        for (label, op, value) in &selector.matchers {
            // `instance` and `job` are Prometheus's target labels.
            if label != "instance"
                && label != "job"
                && family.instance_label.as_deref() != Some(label.as_str())
            {
                problems.push(format!("{expr}: {metric} has no label {label}"));
            }
            if family.instance_label.as_deref() == Some(label.as_str())
                && op == "="
                && !family.instances.contains(value)
            {
                problems.push(format!("{expr}: {metric}{{{label}=\"{value}\"}} is never exported"));
            }
        }
    }
    problems
}

/// Every `expr` of the dashboard's panels and variables (the `query` of a query variable).
fn dashboard_exprs(dashboard: &serde_json::Value) -> Vec<String> {
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push(target["expr"].as_str().expect("a PromQL target").to_string());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if let Some(query) = variable["query"]["query"].as_str() {
            // label_values(metric, label): the metric must exist and carry the label.
            let inner =
                query.strip_prefix("label_values(").and_then(|rest| rest.strip_suffix(')')).expect(query);
            let (metric, label) = inner.split_once(',').expect(query);
            exprs.push(format!("count by ({}) ({})", label.trim(), metric.trim()));
        }
    }
    exprs
}

fn dashboard() -> serde_json::Value {
    serde_json::from_str(&read("docs/agents/pmupcw-dashboard.json")).expect("the dashboard is JSON")
}

#[test]
fn the_dashboard_queries_only_exported_metrics() {
    let families = families();
    let dashboard = dashboard();
    let exprs = dashboard_exprs(&dashboard);
    assert!(exprs.len() > 15, "{exprs:?}");
    let problems: Vec<String> = exprs.iter().flat_map(|expr| check_expr(expr, &families)).collect();
    assert_eq!(problems, Vec::<String>::new());
    // The panels the dashboard is for.
    let panels = dashboard["panels"].as_array().unwrap();
    let has = |kind: &str, title: &str| {
        panels.iter().any(|p| p["type"] == kind && p["title"].as_str().unwrap().contains(title))
    };
    assert!(has("heatmap", "IPC per processor"));
    assert!(has("timeseries", "Machine IPC"));
    assert!(has("timeseries", "LLC and branch rates"));
    assert!(has("stat", "PMU State"));
    assert!(has("stat", "Memory Controller State"));
    let bandwidth = panels.iter().find(|p| p["title"] == "DRAM bandwidth (GB/s)").expect("a bandwidth panel");
    let exprs: Vec<&str> =
        bandwidth["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap()).collect();
    // Read and write, per host, from the machine's byte totals, in GB/s.
    for total in ["windows_pmupcw_dram_read_bytes_total", "windows_pmupcw_dram_write_bytes_total"] {
        assert!(
            exprs
                .iter()
                .any(|e| e.contains(total) && e.contains("controller=\"_Total\"") && e.ends_with("/ 1e9")),
            "{total}: {exprs:?}"
        );
    }
    let topdown =
        panels.iter().find(|p| p["title"].as_str().unwrap().starts_with("Top-down level 1")).unwrap();
    assert_eq!(topdown["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"], "normal");
    assert!(
        topdown["targets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["expr"].as_str().unwrap().contains("slots_total"))
    );
}

#[test]
fn the_dashboard_check_catches_a_wrong_metric_label_or_total() {
    let families = families();
    for (expr, expected) in [
        ("windows_pmupcw_instructions_per_100_cycles", "no configuration exports"),
        ("windows_pmupcw_instructions_total{processor=\"_Total\"}", "is never exported"),
        ("windows_pmupcw_pmu_state{processor=\"0,0\"}", "has no label processor"),
        ("rate(windows_pmupcw_llc_misses_total[5m]", "does not parse"),
    ] {
        let problems = check_expr(expr, &families);
        assert!(problems.iter().any(|p| p.contains(expected)), "{expr}: {problems:?}");
    }
}

#[test]
fn the_status_panels_name_every_state_the_driver_reports() {
    let dashboard = dashboard();
    for (title, enumeration) in [("PMU State", "PmuState"), ("Top-down Source", "TopdownSource")] {
        let panel = dashboard["panels"].as_array().unwrap().iter().find(|p| p["title"] == title).unwrap();
        let options = &panel["fieldConfig"]["defaults"]["mappings"][0]["options"];
        let mapped: BTreeSet<u32> =
            options.as_object().unwrap().keys().map(|key| key.parse().unwrap()).collect();
        assert_eq!(mapped, agent_configs::driver_values(enumeration), "{title}");
    }
    let panel =
        dashboard["panels"].as_array().unwrap().iter().find(|p| p["title"] == "Memory Controller State");
    let options =
        &panel.expect("a Memory Controller State panel")["fieldConfig"]["defaults"]["mappings"][0]["options"];
    let mapped: BTreeSet<u32> = options.as_object().unwrap().keys().map(|key| key.parse().unwrap()).collect();
    assert_eq!(mapped, agent_configs::memory_controller_values(), "Memory Controller State");
}

#[test]
fn the_fleet_guide_queries_return_data_under_the_agents_rules() {
    let guide = read("docs/fleet-collection.md");
    let families = families_with(true);
    let mut queries = 0;
    // One query per paragraph, comments on their own lines.
    for query in promql::guide_queries(&guide) {
        queries += 1;
        assert_eq!(check_expr(&query, &families), Vec::<String>::new(), "{query}");
    }
    assert!(queries >= 5, "{queries} PromQL queries");
    assert!(guide.contains("processor=\"_Total\""), "the guide shows a _Total query");

    // InfluxQL: every double-quoted identifier is a measurement, tag or field Telegraf writes.
    let file: telegraf::File = toml::from_str(&read("docs/agents/telegraf.conf")).unwrap();
    let plugin = &file.inputs.win_perf_counters[0];
    let mut written: BTreeSet<String> = ["host", "instance", "objectname", "source"].map(String::from).into();
    for object in &plugin.object {
        written.insert(telegraf::measurement(object));
        written.extend(object.Counters.iter().map(|counter| telegraf::field(object, counter)));
    }
    let quoted = regex::Regex::new(r#""([^"]+)""#).unwrap();
    let sql = promql::blocks(&guide, "sql").join("\n");
    let identifiers: Vec<String> = quoted.captures_iter(&sql).map(|c| c[1].to_string()).collect();
    assert!(identifiers.len() >= 10, "{identifiers:?}");
    let unknown: Vec<&String> = identifiers.iter().filter(|id| !written.contains(*id)).collect();
    assert!(unknown.is_empty(), "InfluxQL names Telegraf does not write: {unknown:?}");
}
