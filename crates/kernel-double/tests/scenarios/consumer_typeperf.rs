//! The PDH-semantics consumer against the real pmupcw.sys: both countersets pair with the manifest,
//! typeperf's CSV has one column per displayed counter (and `_Total` per aggregated one) with `" "` on
//! the first sample of each rate, Collect Requests/sec is exactly the number of collects made between
//! two samples over the double's clock, the rates, ratios and `_Total` of a known workload on a
//! Skylake PMU are what PDH's formulas give, and a real collect formats into PERF_OBJECT_TYPE blocks
//! that pass the ExtCounterTestLevel 1 checks.

use crate::common;

use kernel_double::consumer::pdh::{Aggregate, Value};
use kernel_double::consumer::{self, Column, Counterset, Sample, csv, perf_object};
use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn typeperf_csv_rates_and_perf_object_blocks_from_the_real_driver() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let manifest = consumer::manifest();
    let hardware = Counterset::open(&manifest, "Hardware Counters").unwrap();
    let status = Counterset::open(&manifest, "Hardware Counters Driver").unwrap();
    let in_manifest =
        |name| manifest.counter_sets.iter().find(|set| set.name == name).unwrap().counters.len();
    assert_eq!(
        (hardware.counters.len(), status.counters.len()),
        (in_manifest("Hardware Counters"), in_manifest("Hardware Counters Driver"))
    );
    assert_eq!(pcw::add_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));

    let instances = consumer::enumerate(&hardware).unwrap();
    assert_eq!(instances, common::expected_processor_instances(&[4]));

    let first = consumer::sample(&hardware).unwrap();
    let status_first = consumer::sample(&status).unwrap();
    let columns = consumer::columns(&hardware, &first);
    // The displayed counters (bases hidden) on 4 processors, and _Total for those with an aggregate.
    let displayed = |set: &Counterset| set.counters.iter().filter(|c| !c.ty.name.ends_with("_base")).count();
    let aggregated = hardware
        .counters
        .iter()
        .filter(|c| !c.ty.name.ends_with("_base") && c.aggregate != Aggregate::Undefined)
        .count();
    assert_eq!(columns.len(), 4 * displayed(&hardware) + aggregated);
    let status_columns = consumer::columns(&status, &status_first);
    assert_eq!(status_columns.len(), displayed(&status));

    for _ in 0..5 {
        consumer::sample(&hardware).unwrap();
    }
    // The workload: processor n runs 100000 (n + 1) units (pmu::RATES events per unit).
    for vp in 0..4u32 {
        pmu::step(vp, 100_000 * u64::from(vp + 1));
    }
    let second = consumer::sample(&hardware).unwrap();
    let computed =
        consumer::values(&hardware, &columns, Some(&first), &second, consumer::Formatter::Uncapped);
    let value = |instance: &str, id: u32| {
        let counter = hardware.index_of(id).unwrap();
        let at = columns.iter().position(|c| c.instance.as_deref() == Some(instance) && c.counter == counter);
        computed[at.unwrap_or_else(|| panic!("no column {instance} {id}"))]
    };
    let seconds = (second.time - first.time) as f64 / second.frequency as f64;
    for vp in 0..4u64 {
        let name = format!("0,{vp}");
        let instructions = (pmu::RATES[pmu::INSTRUCTIONS] * 100_000 * (vp + 1)) as f64;
        assert_eq!(value(&name, 0), Value::Value(instructions / seconds), "{name}");
        assert_eq!(value(&name, 7), Value::Value(instructions), "{name}");
        // Instructions per cycle and the percentages: the exact ratios of the counts, as PDH
        // computes a PERF_PRECISION_100NS_TIMER, 100 x (N1 - N0) / (D1 - D0); instructions per cycle's
        // base is 100 x the cycles.
        let per_100 = |numerator: u64, base: u64| {
            let units = (100_000 * (vp + 1)) as f64;
            Value::Value(100.0 * ((numerator as f64 * units) / (base as f64 * units)))
        };
        assert_eq!(
            value(&name, 60),
            per_100(pmu::RATES[pmu::INSTRUCTIONS], 100 * pmu::RATES[pmu::CORE_CYCLES]),
            "{name}"
        );
        assert_eq!(value(&name, 16), per_100(pmu::RATES[4], pmu::RATES[3]), "{name}");
        assert_eq!(value(&name, 18), per_100(pmu::RATES[6], pmu::RATES[5]), "{name}");
    }
    let total_instructions = (pmu::RATES[pmu::INSTRUCTIONS] * 100_000 * (1 + 2 + 3 + 4)) as f64;
    assert_eq!(value("_Total", 0), Value::Value(total_instructions / seconds));
    assert_eq!(value("_Total", 7), Value::Value(total_instructions));
    let status_second = consumer::sample(&status).unwrap();

    // Collect Requests/sec: 6 hardware collects between the two status samples.
    let collects = status.index_of(3).unwrap();
    let column = status_columns.iter().position(|column| column.counter == collects).unwrap();
    let values = consumer::values(
        &status,
        &status_columns,
        Some(&status_first),
        &status_second,
        consumer::Formatter::Uncapped,
    );
    let seconds = (status_second.time - status_first.time) as f64 / status_second.frequency as f64;
    assert_eq!(values[column], Value::Value(6.0 / seconds));
    // Avg. Collect Time (ns): positive nanoseconds per collect, under a second, and exactly the
    // change of the 64-bit time sum over the change of the collect count.
    let average = status_columns.iter().position(|c| c.counter == status.index_of(4).unwrap()).unwrap();
    let sum = |sample: &Sample| sample.instances[0].values.as_ref().unwrap()[status.index_of(4).unwrap()];
    let count = |sample: &Sample| sample.instances[0].values.as_ref().unwrap()[status.index_of(5).unwrap()];
    let exact = (sum(&status_second) - sum(&status_first)) as f64
        / (count(&status_second) - count(&status_first)) as f64;
    assert_eq!(values[average], Value::Value(exact), "{values:?}");
    assert!(exact > 0.0 && exact < 1e9, "{exact} ns per collect");

    let samples = Samples {
        first: &first,
        second: &second,
        status_first: &status_first,
        status_second: &status_second,
    };
    check_csv(&hardware, &status, &columns, &status_columns, &samples);

    let objects = [
        perf_object::format_object(&consumer::object_data(&hardware, &second)),
        perf_object::format_object(&consumer::object_data(&status, &status_second)),
    ];
    let mut buffer = perf_object::GuardedBuffer::new(8192);
    let result = perf_object::collect_into(&mut buffer, &objects);
    assert_eq!(result.num_object_types, 2);
    assert_eq!(perf_object::validate_collect(&buffer, &result), []);

    assert_eq!(pcw::remove_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}

/// Two samples of each counterset.
struct Samples<'a> {
    first: &'a Sample,
    second: &'a Sample,
    status_first: &'a Sample,
    status_second: &'a Sample,
}

/// The typeperf CSV document of both countersets over two samples: its shape, header and first-row
/// rules.
fn check_csv(
    hardware: &Counterset,
    status: &Counterset,
    columns: &[Column],
    status_columns: &[Column],
    samples: &Samples<'_>,
) {
    let Samples { first, second, status_first, status_second } = *samples;
    let host = "HOST";
    let mut paths: Vec<String> =
        columns.iter().map(|column| consumer::path(host, hardware, column)).collect();
    paths.extend(status_columns.iter().map(|column| consumer::path(host, status, column)));
    let mut first_values = consumer::values(hardware, columns, None, first, consumer::Formatter::Uncapped);
    first_values.extend(consumer::values(
        status,
        status_columns,
        None,
        status_first,
        consumer::Formatter::Uncapped,
    ));
    let mut second_values =
        consumer::values(hardware, columns, Some(first), second, consumer::Formatter::Uncapped);
    second_values.extend(consumer::values(
        status,
        status_columns,
        Some(status_first),
        status_second,
        consumer::Formatter::Uncapped,
    ));
    let rows = [
        csv::row(&csv::timestamp(first.unix_millis), &first_values),
        csv::row(&csv::timestamp(second.unix_millis), &second_values),
    ];
    let text = csv::document(&paths, &rows, "\r\n");
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert_eq!(lines.len(), 5, "blank line, header, two rows, and the final line end");
    assert_eq!(lines[0], "");
    assert!(
        lines[1].starts_with(r#""(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\HOST\Hardware Counters(0,0)\Instructions Retired/sec","#)
    );
    let last_status = &status.counters.last().unwrap().name;
    assert!(lines[1].ends_with(&format!(r#","\\HOST\Hardware Counters Driver\{last_status}""#)));
    assert!(lines[1].contains(r#""\\HOST\Hardware Counters(_Total)\Instructions Retired""#));
    assert!(lines[1].contains(r#""\\HOST\Hardware Counters(_Total)\Instructions per Cycle""#));
    assert!(!lines[1].contains("Base"));
    for line in &lines[1..4] {
        assert_eq!(line.matches("\",\"").count(), paths.len(), "{line}");
    }
    // First row: the rate of instructions retired shows " ", its total shows a number.
    assert!(lines[2].split(',').nth(1) == Some(r#"" ""#), "{}", lines[2]);
    assert!(lines[2].split(',').nth(8).is_some_and(|field| field.ends_with(".000000\"")), "{}", lines[2]);
    assert!(!lines[3].contains(r#"" ""#), "{}", lines[3]);
}

/// The counter paths of the README's typeperf example (`typeperf "\Set(Instance)\Counter" ... -sc 5`).
fn readme_typeperf_paths() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let line =
        readme.lines().find(|line| line.starts_with("typeperf \"")).expect("the README's typeperf example");
    line.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

/// The fields of a typeperf CSV line, read by the `csv` crate.
fn csv_fields(line: &str) -> Vec<String> {
    let mut reader = ::csv::ReaderBuilder::new().has_headers(false).from_reader(line.as_bytes());
    let record = reader.records().next().expect("a CSV line").expect("a valid CSV line");
    record.iter().map(String::from).collect()
}

/// Whether header path `\\HOST\Set(Instance)\Counter` is what `wanted` (`\Set(Instance)\Counter`, the
/// instance maybe `*`, which PDH expands to every instance, `_Total` included) names.
fn path_matches(column: &str, wanted: &str) -> bool {
    let Some(path) = column.strip_prefix("\\\\").and_then(|rest| rest.find('\\').map(|at| &rest[at..]))
    else {
        return false;
    };
    match wanted.split_once("(*)") {
        Some((set, counter)) => path
            .strip_prefix(&format!("{set}("))
            .and_then(|rest| rest.strip_suffix(&format!("){counter}")))
            .is_some_and(|instance| !instance.is_empty()),
        None => path == wanted,
    }
}

#[test]
fn pmupcw_run_passes_and_prints_the_readme_example_with_values() {
    let image = common::driver_image();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pmupcw-run"))
        .args(["--driver", &image.display().to_string()])
        .output()
        .expect("running pmupcw-run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("\n\"(PDH-CSV 4.0) (Coordinated Universal Time)(0)\",\"\\\\"), "{stdout}");
    assert!(stdout.contains("ExtCounterTestLevel 1: valid"), "{stdout}");
    assert!(stdout.contains("violations: 0"), "{stdout}");
    assert!(stdout.ends_with("# result: PASS\n"), "{stdout}");

    // The default run's CSV has every column of the README's typeperf example, and its last sample
    // shows a number in each (a rate or ratio needs the two samples before it).
    let csv: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("\"(PDH-CSV"))
        .take_while(|line| !line.is_empty())
        .collect();
    let header = csv_fields(csv[0]);
    let last = csv_fields(csv.last().unwrap());
    assert!(csv.len() >= 3, "a header and at least two samples: {csv:?}");
    assert_eq!(header.len(), last.len());
    let wanted = readme_typeperf_paths();
    assert_eq!(wanted.len(), 3, "{wanted:?}");
    for path in &wanted {
        let columns: Vec<usize> = (1..header.len()).filter(|&at| path_matches(&header[at], path)).collect();
        let expected = if path.contains("(*)") { 4 + 1 } else { 1 };
        assert_eq!(
            columns.len(),
            expected,
            "{path}: {:?}",
            columns.iter().map(|&at| &header[at]).collect::<Vec<_>>()
        );
        for at in columns {
            assert!(last[at].parse::<f64>().is_ok(), "{}: {:?}", header[at], last[at]);
        }
    }
    let total_ipc = (1..header.len())
        .find(|&at| header[at].ends_with("\\Hardware Counters(_Total)\\Instructions per Cycle"))
        .expect("a _Total Instructions per Cycle column");
    assert!(last[total_ipc].parse::<f64>().unwrap() > 0.0, "{}", last[total_ipc]);
}
