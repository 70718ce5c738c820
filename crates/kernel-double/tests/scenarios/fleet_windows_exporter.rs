//! The fleet guide and the dashboard under windows_exporter as it behaves (`consumer::windows_exporter`):
//! `docs/agents/windows_exporter.yml`'s objects exported from the real pmupcw.sys running a workload
//! of known IPC and frequency, scraped every 15 s as Prometheus would, and every PromQL query of
//! `docs/fleet-collection.md` and every panel of `docs/agents/pmupcw-dashboard.json` evaluated on the
//! scraped series (`agent_configs::promql_eval`). An exporter started before the driver keeps dead
//! collectors until it restarts, as the guide tells the operator.

use std::collections::BTreeMap;

use crate::common;

use agent_configs::promql_eval::{self, Labels, Series, Value};
use agent_configs::{promql, read, windows_exporter as config};
use kernel_double::consumer::windows_exporter::{Exporter, Metric, ObjectConfig, PDH_CSTATUS_NO_OBJECT};
use kernel_double::consumer::{self, performance_counter};
use kernel_double::control::hal;
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

/// The workload: 30 instructions in 20 core cycles per 18 reference cycles (IPC 1.5 at 111 %).
const WORKLOAD: (u64, u64, u64) = (30, 20, 18);
const IPC: f64 = 1.5;
/// Prometheus's scrape interval here, in the clock's 100 ns units: 15 s.
const SCRAPE_100NS: i64 = 150_000_000;
/// The host label Prometheus adds to every series of this target.
const HOST: &str = "host-a:9182";

fn objects() -> Vec<ObjectConfig> {
    let (_, objects) = config::objects_of_config_file(&read("docs/agents/windows_exporter.yml")).unwrap();
    model_of(&objects)
}

/// The objects the fleet guide shows beside the configurations (its `yaml` blocks).
fn guide_objects() -> Vec<ObjectConfig> {
    let blocks = promql::blocks(&read("docs/fleet-collection.md"), "yaml");
    assert!(!blocks.is_empty(), "the guide shows the custom event objects");
    blocks.iter().flat_map(|block| model_of(&serde_yaml_objects(block))).collect()
}

fn serde_yaml_objects(block: &str) -> Vec<config::Object> {
    // The exporter reads its objects as a YAML string (`collector.performancecounter.objects`).
    let file = format!(
        "collectors:\n  enabled: performancecounter\ncollector:\n  performancecounter:\n    objects: |-\n{}",
        indent(block)
    );
    config::objects_of_config_file(&file).unwrap().1
}

fn indent(block: &str) -> String {
    block.lines().map(|line| format!("      {line}\n")).collect()
}

fn model_of(objects: &[config::Object]) -> Vec<ObjectConfig> {
    objects
        .iter()
        .map(|object| ObjectConfig {
            name: object.name.clone(),
            object: object.object.clone(),
            formatted: object.kind.as_deref() == Some("formatted"),
            instances: object.instances.clone().unwrap_or_default(),
            instance_label: object.instance_label.clone().unwrap_or_else(|| "instance".into()),
            counters: object
                .counters
                .iter()
                .map(|counter| {
                    let labels = counter.labels.clone().unwrap_or_default().into_iter().collect();
                    (counter.name.clone(), config::metric_name(object, counter), labels)
                })
                .collect(),
        })
        .collect()
}

/// Runs the workload for one scrape interval, then scrapes: the metrics, stamped in seconds.
fn run_and_scrape(exporter: &mut Exporter) -> (f64, Vec<Metric>) {
    for vp in 0..topology::processor_count() {
        pmu::step(vp, 50_000);
    }
    hal::advance_clock(SCRAPE_100NS);
    let (ticks, frequency) = performance_counter();
    (ticks as f64 / frequency as f64, exporter.scrape())
}

/// Prometheus's series: each metric with `instance` and `job` added, points by scrape.
fn store(series: &mut BTreeMap<Labels, Vec<(f64, f64)>>, time: f64, metrics: &[Metric]) {
    for metric in metrics {
        let mut labels = metric.labels.clone();
        labels.insert("__name__".into(), metric.name.clone());
        labels.insert("instance".into(), HOST.into());
        labels.insert("job".into(), "windows".into());
        series.entry(labels).or_default().push((time, metric.value));
    }
}

fn as_series(series: &BTreeMap<Labels, Vec<(f64, f64)>>) -> Vec<Series> {
    series.iter().map(|(labels, points)| Series { labels: labels.clone(), points: points.clone() }).collect()
}

/// Every dashboard panel's query (Grafana's `$host` read as the host regex).
fn panel_queries() -> Vec<(String, String)> {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("docs/agents/pmupcw-dashboard.json")).unwrap();
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap().replace("$host", ".*");
            out.push((panel["title"].as_str().unwrap().to_string(), expr));
        }
    }
    out
}

fn values(value: Value) -> Vec<(Labels, f64)> {
    match value {
        Value::Vector(vector) => vector,
        Value::Scalar(scalar) => vec![(Labels::new(), scalar)],
    }
}

#[test]
fn an_exporter_started_before_the_driver_exports_nothing_until_it_restarts() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let manifest = consumer::manifest();
    // The agent starts at boot before pmupcw is installed: every object fails with NO_OBJECT.
    let mut early = Exporter::start(&manifest, &objects());
    assert!(objects().iter().all(|object| !early.is_live(&object.name)));
    assert!(early.log.iter().all(|line| line.contains("couldn't initialize collector")), "{:?}", early.log);
    assert!(early.log[0].contains(&format!("{PDH_CSTATUS_NO_OBJECT:#010X}")), "{}", early.log[0]);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    pmu::set_workload(WORKLOAD.0, WORKLOAD.1, WORKLOAD.2).unwrap();
    let mut series = BTreeMap::new();
    for _ in 0..3 {
        let (time, metrics) = run_and_scrape(&mut early);
        assert!(
            metrics
                .iter()
                .all(|metric| metric.name == "windows_performancecounter_collector_success"
                    && metric.value == 0.0),
            "a dead collector stays dead: {metrics:?}"
        );
        store(&mut series, time, &metrics);
    }
    let at = series.values().next().unwrap().last().unwrap().0;
    for (title, query) in panel_queries() {
        let result = values(promql_eval::evaluate(&query, &as_series(&series), at).unwrap());
        assert!(result.is_empty(), "{title}: {query} has data: {result:?}");
    }
    early.stop();

    // The operator restarts the agent after installing (docs/fleet-collection.md): every object lives.
    let mut restarted = Exporter::start(&manifest, &objects());
    assert!(objects().iter().all(|object| restarted.is_live(&object.name)), "{:?}", restarted.log);
    let mut series = BTreeMap::new();
    let mut at = 0.0;
    for _ in 0..5 {
        let (time, metrics) = run_and_scrape(&mut restarted);
        store(&mut series, time, &metrics);
        at = time;
    }
    check_every_query(&as_series(&series), at);
    restarted.stop();
    assert!(driver.unload());
    common::assert_clean();
}

/// Every guide query and panel returns data, and those with a documented value return it.
fn check_every_query(series: &[Series], at: f64) {
    let processors = topology::processor_count() as usize;
    let frequency = WORKLOAD.1 as f64 / WORKLOAD.2 as f64;
    let close = |value: f64, expected: f64| (value - expected).abs() <= 1e-9 * expected.abs().max(1.0);
    let mut queries: Vec<(String, String)> = promql::guide_queries(&read("docs/fleet-collection.md"))
        .into_iter()
        .map(|q| ("guide".into(), q))
        .collect();
    queries.extend(panel_queries());
    let mut wrong = Vec::new();
    for (title, query) in &queries {
        let result =
            values(promql_eval::evaluate(query, series, at).unwrap_or_else(|e| panic!("{query}: {e}")));
        let flat = query.split_whitespace().collect::<Vec<_>>().join(" ");
        // The custom event series exist in the custom profile only: evaluated there, below.
        if flat.contains("custom_event") {
            continue;
        }
        // Filters that select machines or processors in trouble select none here.
        let filter = [" != 1", " > 5", "== 2"].iter().any(|op| flat.contains(op));
        if filter {
            continue;
        }
        if result.is_empty() {
            wrong.push(format!("{title}: no data: {flat}"));
            continue;
        }
        let ipc = flat.contains("instructions_per_cycle")
            || (flat.contains("instructions_total") && flat.contains("core_cycles_total"));
        let relative = flat.contains("relative_frequency") || flat.contains("aperf_cycles_total");
        let expected = if ipc {
            Some(IPC)
        } else if relative {
            Some(frequency)
        } else {
            None
        };
        if let Some(expected) = expected {
            for (labels, value) in &result {
                if !close(*value, expected) {
                    wrong.push(format!(
                        "{title}: {flat}\n  {labels:?} = {value}, the workload's is {expected}"
                    ));
                }
            }
        }
        if flat.starts_with("sum by (instance, processor)") || title.contains("per processor") {
            // A per-processor view keeps hosts and processors apart: one series per processor.
            if result.len() != processors || result.iter().any(|(labels, _)| !labels.contains_key("instance"))
            {
                wrong.push(format!(
                    "{title}: {} series for {processors} processors of one host: {flat}",
                    result.len()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{} of {} queries wrong:\n{}", wrong.len(), queries.len(), wrong.join("\n"));
}

/// After the service restarts under a running exporter, the counts start again from 0: PDH cannot
/// compute Instructions per Cycle (PDH_CALC_NEGATIVE_VALUE) while Relative Frequency (APERF and
/// MPERF as read, which kept counting) is valid, so windows_exporter exports the IPC as 0 for that
/// scrape instead of leaving it out (`collectWorkerFormatted`'s zeroed row).
#[test]
fn a_service_restart_under_the_exporter_exports_a_zero_filled_ipc() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let manifest = consumer::manifest();
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    pmu::set_workload(WORKLOAD.0, WORKLOAD.1, WORKLOAD.2).unwrap();
    let mut exporter = Exporter::start(&manifest, &objects());
    let ipc_of = |metrics: &[Metric]| -> Vec<f64> {
        metrics
            .iter()
            .filter(|m| {
                m.name == "windows_pmupcw_instructions_per_cycle" && m.labels["processor"] != "_Total"
            })
            .map(|m| m.value)
            .collect()
    };
    let processors = topology::processor_count() as usize;
    let (_, before) = run_and_scrape(&mut exporter);
    assert_eq!(ipc_of(&before), vec![IPC; processors]);
    exporter.detach();
    assert!(driver.unload());
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    exporter.attach();
    let (_, after) = run_and_scrape(&mut exporter);
    assert_eq!(ipc_of(&after), vec![0.0; processors], "the restart's scrape: zero-filled, not left out");
    let frequency: Vec<f64> = after
        .iter()
        .filter(|m| m.name == "windows_pmupcw_relative_frequency_ratio" && m.labels["processor"] != "_Total")
        .map(|m| m.value)
        .collect();
    assert!(frequency.len() == processors && frequency.iter().all(|&f| f > 0.5), "{frequency:?}");
    let (_, next) = run_and_scrape(&mut exporter);
    assert_eq!(ipc_of(&next), vec![IPC; processors], "the next scrape computes again");
    exporter.stop();
    assert!(driver.unload());
    common::assert_clean();
}

/// The guide's custom event objects in the custom profile: its labelling query gives each line's
/// machine-wide rate with the line's select value as the `select` label, 0 for none.
#[test]
fn the_guides_custom_event_query_labels_each_line_with_its_select_value() {
    use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_MULTI_SZ, REG_SZ};
    cpuid::set_model(&cpuid::SKYLAKE);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("custom"));
    let lines = ["event=0x2E,umask=0x41,name=llc-misses", "event=0xC5,umask=0x00,name=branch-misses"];
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let mut exporter = Exporter::start(&consumer::manifest(), &[objects(), guide_objects()].concat());
    let mut series = BTreeMap::new();
    let mut at = 0.0;
    for _ in 0..4 {
        let (time, metrics) = run_and_scrape(&mut exporter);
        store(&mut series, time, &metrics);
        at = time;
    }
    let series = as_series(&series);
    let query = promql::guide_queries(&read("docs/fleet-collection.md"))
        .into_iter()
        .find(|query| query.contains("group_left (select)"))
        .expect("the guide's labelling query");
    let labelled = values(promql_eval::evaluate(&query, &series, at).unwrap());
    let unlabelled = values(
        promql_eval::evaluate(
            "sum by (instance, event) (rate(windows_pmupcw_custom_event_total{processor!=\"_Total\"}[5m]))",
            &series,
            at,
        )
        .unwrap(),
    );
    // IA32_PERFEVTSELx: event | umask << 8 | USR | OS | EN.
    let expected = |event: &str| match event {
        "0" => Some(0x412E_u64 | 1 << 16 | 1 << 17 | 1 << 22),
        "1" => Some(0xC5_u64 | 1 << 16 | 1 << 17 | 1 << 22),
        _ => None,
    };
    let mut checked = 0;
    for (labels, value) in &labelled {
        let event = labels["event"].as_str();
        let rate = unlabelled.iter().find(|(other, _)| other["event"] == event).expect("the same series").1;
        assert_eq!(*value, rate, "the join keeps the rate of line {event}");
        match expected(event) {
            Some(select) => {
                assert_eq!(labels["select"], select.to_string(), "line {event}");
                assert!(rate > 0.0, "line {event} counts");
                checked += 1;
            }
            None => assert_eq!(labels["select"], "0", "line {event} is absent: {labels:?}"),
        }
    }
    assert_eq!(checked, 2, "{labelled:?}");
    assert_eq!(labelled.len(), 8, "every line, labelled");
    exporter.stop();
    assert!(driver.unload());
    common::assert_clean();
}
