//! The committed agent configurations (`docs/agents/`) parse, ask only for what the manifest declares,
//! follow each agent's rules (src/), and give the machine-wide `_Total` values they are meant to; each
//! check is also shown to fail on the mistake it is there for.

use std::collections::BTreeMap;

use agent_configs::{alloy, manifest, otel, read, telegraf, windows_exporter};

fn objects_file() -> Vec<windows_exporter::Object> {
    serde_norway::from_str(&read("docs/agents/performancecounter-objects.yml")).expect("the objects parse")
}

#[test]
fn windows_exporter_config_follows_the_collector_rules() {
    let manifest = manifest::load();
    let (_, objects) =
        windows_exporter::objects_of_config_file(&read("docs/agents/windows_exporter.yml")).unwrap();
    assert_eq!(objects, objects_file(), "windows_exporter.yml inlines performancecounter-objects.yml");
    assert_eq!(windows_exporter::check_objects(&manifest, &objects), Vec::<String>::new());
    // Every counterset is collected.
    for set in &manifest.counter_sets {
        assert!(objects.iter().any(|object| object.object == set.name), "{} is not collected", set.name);
    }
}

#[test]
fn windows_exporter_exports_total_where_asked_and_core_type_as_a_label() {
    let manifest = manifest::load();
    let families = windows_exporter::families(&manifest, &objects_file());
    let family = |metric: &str| families.iter().find(|family| family.metric == metric).unwrap();
    let ipc = family("windows_pmupcw_instructions_per_cycle");
    assert!(ipc.instances.contains(&"_Total".to_string()), "{ipc:?}");
    assert_eq!(ipc.instance_label.as_deref(), Some("processor"));
    assert!(!family("windows_pmupcw_instructions_total").instances.contains(&"_Total".to_string()));
    assert_eq!(
        family("windows_pmupcw_core_type_instructions_total").instance_label.as_deref(),
        Some("core_type")
    );
    assert_eq!(family("windows_pmupcw_pmu_state").instance_label, None);
    assert_eq!(family("windows_pmupcw_pmu_state").instances, [""]);
    for slots in ["Top-down Slots", "Retiring Slots", "Backend Bound Slots"] {
        assert!(families.iter().any(|family| family.counter == slots), "{slots}");
    }
}

#[test]
fn windows_exporter_rules_catch_the_mistakes_they_are_for() {
    let manifest = manifest::load();
    let text = read("docs/agents/performancecounter-objects.yml");
    for (from, to, expected) in [
        ("instances: [\"*\", \"_Total\"]", "instances: [\"*\"]", None),
        (
            "name: pmupcw_ratios\n  object: \"Hardware Counters\"\n  type: formatted",
            "name: pmupcw_ratios\n  object: \"Hardware Counters\"",
            Some("raw mode reads no base"),
        ),
        ("\"Instructions Retired\", metric", "\"Instruction Retired\", metric", Some("has no counter")),
        ("instance_label: processor", "instance_label: instance", Some("clash with Prometheus")),
        (
            "object: \"Hardware Counters Driver\"\n  counters",
            "object: \"Hardware Counters Driver\"\n  instances: [\"*\"]\n  counters",
            Some("single-instance"),
        ),
        (
            "windows_pmupcw_core_cycles_total, type: counter",
            "windows_pmupcw_instructions_total, type: counter",
            Some("exported twice"),
        ),
        // A constant label does not make a second family of one name with other label names.
        (
            "windows_pmupcw_core_cycles_total, type: counter",
            "windows_pmupcw_instructions_total, type: counter, labels: {kind: cycles}",
            Some("exported twice"),
        ),
    ] {
        let mutated = text.replacen(from, to, 1);
        assert_ne!(mutated, text, "{from}");
        let objects: Vec<windows_exporter::Object> = serde_norway::from_str(&mutated).unwrap();
        let problems = windows_exporter::check_objects(&manifest, &objects);
        match expected {
            Some(expected) => assert!(problems.iter().any(|p| p.contains(expected)), "{to}: {problems:?}"),
            // Listing only "*" is allowed, but then the ratios' _Total is gone.
            None => {
                let families = windows_exporter::families(&manifest, &objects);
                let ipc =
                    families.iter().find(|f| f.metric == "windows_pmupcw_instructions_per_cycle").unwrap();
                assert!(!ipc.instances.contains(&"_Total".to_string()));
            }
        }
    }
    let unknown = text.replacen("instance_label: processor", "instance_lable: processor", 1);
    assert!(serde_norway::from_str::<Vec<windows_exporter::Object>>(&unknown).is_err());
    let list = "collectors:\n  enabled: performancecounter\ncollector:\n  performancecounter:\n    objects:\n      - name: x\n";
    assert!(windows_exporter::objects_of_config_file(list).unwrap_err().contains("must be a string"));
    let off = read("docs/agents/windows_exporter.yml")
        .replace("enabled: cpu,os,performancecounter", "enabled: cpu,os");
    assert!(
        windows_exporter::objects_of_config_file(&off).unwrap_err().contains("leaves performancecounter out")
    );
}

fn otel_file() -> (otel::CollectorFile, otel::Receiver) {
    let file: otel::CollectorFile = serde_norway::from_str(&read("docs/agents/otelcol.yaml")).unwrap();
    let receiver = file.receivers.iter().find(|(id, _)| otel::is_windowsperfcounters(id)).unwrap().1.clone();
    (file, serde_norway::from_value(receiver).expect("the receiver's configuration"))
}

#[test]
fn otel_config_follows_the_receiver_rules_and_reports_totals() {
    let manifest = manifest::load();
    let (file, receiver) = otel_file();
    assert_eq!(otel::check_pipelines(&file), Vec::<String>::new());
    assert_eq!(otel::check_receiver(&manifest, &receiver), Vec::<String>::new());
    let reported = otel::reported(&manifest, &receiver);
    for (metric, values) in &reported {
        if metric.starts_with("pmupcw.machine.") || metric.starts_with("pmupcw.driver.") {
            assert_eq!(values, &[None], "{metric}: one machine-wide value, no instance attribute");
        } else if metric.starts_with("pmupcw.core_type.") {
            assert_eq!(values, &[Some("All".to_string())], "{metric}");
        } else {
            assert_eq!(values.len(), 4, "{metric}: one per processor, no _Total: {values:?}");
            assert!(values.iter().all(|value| value.as_deref().is_some_and(|name| name != "_Total")));
        }
    }
    assert!(reported.contains_key("pmupcw.machine.instructions_per_cycle"));
    assert!(reported.contains_key("pmupcw.topdown.slots"));
}

#[test]
fn otel_rules_catch_the_mistakes_they_are_for() {
    let manifest = manifest::load();
    let text = read("docs/agents/otelcol.yaml");
    for (from, to, expected) in [
        ("instances: [\"_Total\"]", "instances: [\"*\", \"_Total\"]", "no instance attribute"),
        ("metric: pmupcw.instructions\n", "metric: pmupcw.instruction\n", "not defined in `metrics`"),
        ("aggregation: cumulative", "aggregation: total", "invalid aggregation"),
        (
            "receivers: [windowsperfcounters/pmupcw]",
            "receivers: [windowsperfcounters/other]",
            "not configured",
        ),
    ] {
        let mutated = text.replacen(from, to, 1);
        assert_ne!(mutated, text, "{from}");
        let file: otel::CollectorFile = serde_norway::from_str(&mutated).unwrap();
        let receiver: otel::Receiver =
            serde_norway::from_value(file.receivers["windowsperfcounters/pmupcw"].clone()).unwrap();
        let mut problems = otel::check_receiver(&manifest, &receiver);
        problems.extend(otel::check_pipelines(&file));
        let reported = otel::reported(&manifest, &receiver);
        if reported.get("pmupcw.machine.instructions_per_cycle").is_some_and(|values| values != &[None]) {
            problems.push("a machine metric reported with no instance attribute is gone".to_string());
        }
        assert!(problems.iter().any(|p| p.contains(expected)), "{to}: {problems:?}");
    }
}

fn telegraf_plugin() -> telegraf::Plugin {
    let file: telegraf::File =
        toml::from_str(&read("docs/agents/telegraf.conf")).expect("telegraf.conf parses");
    file.inputs.win_perf_counters.into_iter().next().unwrap()
}

#[test]
fn telegraf_config_follows_the_plugin_rules_and_keeps_total() {
    let manifest = manifest::load();
    let plugin = telegraf_plugin();
    assert_eq!(telegraf::check(&manifest, &plugin), Vec::<String>::new());
    for object in &plugin.object {
        let actual = manifest::instances(&manifest, &object.ObjectName, 4);
        let reported = telegraf::reported_instances(object, &actual);
        let expected: Vec<Option<String>> =
            actual.iter().map(|name| (!name.is_empty()).then(|| name.clone())).collect();
        assert_eq!(reported, expected, "{}: every instance, _Total included", object.ObjectName);
    }
    let mut without_total = telegraf_plugin();
    without_total.object[0].IncludeTotal = false;
    let actual = manifest::instances(&manifest, "Hardware Counters", 4);
    assert!(
        !telegraf::reported_instances(&without_total.object[0], &actual)
            .contains(&Some("_Total".to_string()))
    );
    let unknown =
        read("docs/agents/telegraf.conf").replacen("IncludeTotal = true", "IncludeTotals = true", 1);
    assert!(toml::from_str::<telegraf::File>(&unknown).is_err());
    let missing = read("docs/agents/telegraf.conf").replacen("Instances = [\"------\"]", "", 1);
    let file: telegraf::File = toml::from_str(&missing).unwrap();
    assert!(
        telegraf::check(&manifest, &file.inputs.win_perf_counters[0])
            .iter()
            .any(|p| p.contains("no Instances"))
    );
}

#[test]
fn alloy_config_runs_the_same_objects_through_the_windows_exporter() {
    let blocks = alloy::parse(&read("docs/agents/config.alloy")).expect("config.alloy parses");
    let exporter =
        blocks.iter().find(|block| block.name == "prometheus.exporter.windows").expect("the exporter");
    let Some(alloy::Value::List(collectors)) = exporter.attribute("enabled_collectors") else {
        panic!("enabled_collectors")
    };
    assert!(collectors.contains(&alloy::Value::String("performancecounter".into())));
    let performancecounter =
        exporter.blocks("performancecounter").next().expect("a performancecounter block");
    let Some(alloy::Value::Reference(objects)) = performancecounter.attribute("objects") else {
        panic!("objects")
    };
    let file = alloy::referenced(&blocks, objects).expect("objects refers to a component of the file");
    assert_eq!(file.name, "local.file");
    assert!(objects.ends_with(".content"));
    let Some(alloy::Value::String(filename)) = file.attribute("filename") else { panic!("filename") };
    assert!(filename.ends_with("/performancecounter-objects.yml"), "{filename}");
    // The scrape reads this exporter's targets and forwards to a configured component.
    let scrape = blocks.iter().find(|block| block.name == "prometheus.scrape").expect("a scrape");
    let Some(alloy::Value::Reference(targets)) = scrape.attribute("targets") else { panic!("targets") };
    assert_eq!(alloy::referenced(&blocks, targets), Some(exporter));
    let Some(alloy::Value::List(forward)) = scrape.attribute("forward_to") else { panic!("forward_to") };
    for receiver in forward {
        let alloy::Value::Reference(receiver) = receiver else { panic!("{receiver:?}") };
        assert!(alloy::referenced(&blocks, receiver).is_some(), "{receiver}");
    }
}

#[test]
fn the_agents_agree_on_what_they_collect() {
    // The same counters reach every agent: the top-down slot totals, the core type, the statuses and
    // the machine's DRAM byte totals.
    let objects = objects_file();
    let plugin = telegraf_plugin();
    let (_, receiver) = otel_file();
    let mut asked: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    asked.insert(
        "windows_exporter",
        objects.iter().flat_map(|o| o.counters.iter().map(|c| c.name.clone())).collect(),
    );
    asked.insert("telegraf", plugin.object.iter().flat_map(|o| o.Counters.clone()).collect());
    asked.insert(
        "otel",
        receiver.perfcounters.iter().flat_map(|o| o.counters.iter().map(|c| c.name.clone())).collect(),
    );
    for (agent, counters) in &asked {
        for wanted in [
            "Top-down Slots",
            "Retiring Slots",
            "Core Type",
            "PMU State",
            "Top-down Source",
            "Instructions per Cycle",
            "Processors",
            "Memory Controller State",
            "DRAM Read Bytes",
            "DRAM Write Bytes",
        ] {
            assert!(counters.iter().any(|counter| counter == wanted), "{agent} does not collect {wanted}");
        }
    }
}

#[test]
fn every_agent_exports_the_per_processor_topdown_source_and_the_collect_kinds() {
    // (object, counter) pairs each agent must ask for: a processor's own Top-down Source (on a hybrid
    // processor it differs by core type) and how many collects were fresh reads or served ones.
    let wanted = [
        ("Hardware Counters", "Top-down Source"),
        ("Hardware Counters Driver", "Fresh Collects/sec"),
        ("Hardware Counters Driver", "Served Collects/sec"),
    ];
    let pairs = |objects: Vec<(String, Vec<String>)>| -> Vec<(String, String)> {
        objects
            .into_iter()
            .flat_map(|(object, counters)| counters.into_iter().map(move |c| (object.clone(), c)))
            .collect()
    };
    let (_, receiver) = otel_file();
    let agents = [
        (
            "windows_exporter and Alloy",
            pairs(
                objects_file()
                    .iter()
                    .map(|o| (o.object.clone(), o.counters.iter().map(|c| c.name.clone()).collect()))
                    .collect(),
            ),
        ),
        (
            "telegraf",
            pairs(
                telegraf_plugin().object.iter().map(|o| (o.ObjectName.clone(), o.Counters.clone())).collect(),
            ),
        ),
        (
            "otel",
            pairs(
                receiver
                    .perfcounters
                    .iter()
                    .map(|o| (o.object.clone(), o.counters.iter().map(|c| c.name.clone()).collect()))
                    .collect(),
            ),
        ),
    ];
    for (agent, asked) in &agents {
        for (object, counter) in wanted {
            assert!(
                asked.iter().any(|(o, c)| o == object && c == counter),
                "{agent} does not export {object}\\{counter}"
            );
        }
    }
}

#[test]
fn one_metric_with_a_constant_label_per_counter_is_one_family_unless_two_share_its_values() {
    // The fleet guide's custom event objects export every line as one metric, told apart by the
    // constant label `event` (client_golang's rule for descriptors sharing a name).
    let manifest = manifest::load();
    let guide = read("docs/fleet-collection.md");
    let block = agent_configs::promql::blocks(&guide, "yaml").into_iter().next().expect("the objects");
    let objects: Vec<windows_exporter::Object> = serde_norway::from_str(&block).unwrap();
    assert_eq!(windows_exporter::check_objects(&manifest, &objects), Vec::<String>::new());
    let same = block.replacen("labels: {event: \"1\"}", "labels: {event: \"0\"}", 1);
    assert_ne!(same, block);
    let objects: Vec<windows_exporter::Object> = serde_norway::from_str(&same).unwrap();
    let problems = windows_exporter::check_objects(&manifest, &objects);
    assert!(problems.iter().any(|problem| problem.contains("exported twice")), "{problems:?}");
}
