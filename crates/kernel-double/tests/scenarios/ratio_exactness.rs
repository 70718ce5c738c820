//! Every ratio `pmupcw-run` (`cargo make run`) shows agrees with the 64-bit totals in the same CSV:
//! for every sample after the first, every processor, every core type and `_Total`, instructions per
//! cycle within 1e-4 (relative) and each percentage within 0.01 points of 100 x the totals' ratio
//! (`consumer::exactness`, which parses the printed CSV with its own parser). On the default CPU
//! models of the issue (Skylake, Alder Lake's performance cores with IA32_PERF_METRICS, Zen 4,
//! 128 processors), and on the virtual clock: 0.1 s samples (8 and 2048 processors), and 60 s and
//! 10-minute samples of 2048 processors at up to 6 GHz, whose cycles summed over the processors pass
//! 2^32 a hundred thousand times per minute (a 32-bit base, or a 32-bit `_Total` sum, wraps many
//! times between two samples). With windows_exporter's formatting (no PDH_FMT_NOCAP100: percentages
//! capped at 100) at IPC 3.5 and 140 % of the reference frequency, and at IPC 0.2 and 50 %; and on
//! the plans where a processor counts one side of a ratio only (`_Total` then covers the processors
//! counting both). On the virtual clock, every processor's cycles are also compared with what its
//! workload ran, on every model.

use crate::common;

use kernel_double::consumer::exactness::{self, Document};

/// Runs pmupcw-run with `arguments` and returns its output's verdict, asserting the run read
/// something: ratios of every kind that has totals, and `_Total`'s.
fn run(arguments: &[&str]) -> exactness::Verdict {
    run_document(arguments).0
}

/// [`run`], with the CSV it printed.
fn run_document(arguments: &[&str]) -> (exactness::Verdict, Document) {
    let image = common::driver_image();
    // On the host's clock, samples 100 ms apart rather than typeperf's second: the ratios do not
    // depend on the interval (the virtual clock's tests go to ten minutes), and the loop waits less.
    let real_time = !arguments.contains(&"--virtual-interval");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pmupcw-run"))
        .args(["--driver", &image.display().to_string()])
        .args(if real_time { &["--interval-ms", "100"][..] } else { &[] })
        .args(arguments)
        .output()
        .expect("running pmupcw-run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let document = exactness::parse(&stdout).unwrap_or_else(|error| panic!("{error}\n{stdout}"));
    let verdict = exactness::check(&document);
    assert!(
        verdict.violations.is_empty(),
        "{arguments:?}: {} of {} ratio cells off their totals, e.g.:\n{}",
        verdict.violations.len(),
        verdict.checked,
        verdict.violations.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
    let ratio_columns = document
        .paths
        .iter()
        .filter_map(|path| exactness::split_path(path))
        .filter(|(_, _, counter)| exactness::RULES.iter().any(|rule| rule.ratio == counter))
        .collect::<Vec<_>>();
    assert!(
        ratio_columns.iter().any(|(_, instance, _)| instance.as_deref() == Some("_Total")),
        "{arguments:?}: no _Total ratio column"
    );
    let samples = document.rows.len();
    assert!(samples >= 3, "{arguments:?}: {samples} samples");
    assert_eq!(
        verdict.checked,
        ratio_columns.len() * (samples - 1),
        "{arguments:?}: every ratio cell checked"
    );
    assert!(verdict.idle < verdict.checked, "{arguments:?}: nothing moved");
    assert!(output.status.success(), "{arguments:?}:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    (verdict, document)
}

/// The cells of `counter` of `instance` in every row after the first.
fn shown(document: &Document, instance: &str, counter: &str) -> Vec<f64> {
    let at = document
        .paths
        .iter()
        .position(|path| {
            exactness::split_path(path).is_some_and(|(set, at, name)| {
                set == "Hardware Counters" && at.as_deref() == Some(instance) && name == counter
            })
        })
        .unwrap_or_else(|| panic!("no column {instance} {counter}"));
    document.rows[1..].iter().map(|row| row[at].expect("a value")).collect()
}

#[test]
fn a_capping_consumer_shows_ipc_3_5_and_140_percent_frequency_exactly() {
    let arguments = ["--formatter", "windows-exporter", "--ipc", "3.5", "--frequency", "140"];
    let (_, document) = run_document(&arguments);
    for instance in ["0,0", "0,3", "_Total"] {
        assert_eq!(shown(&document, instance, "Instructions per Cycle"), [3.5, 3.5], "{instance}");
        assert_eq!(shown(&document, instance, "Relative Frequency"), [1.4, 1.4], "{instance}");
    }
    let arguments = ["--formatter", "windows-exporter", "--ipc", "0.2", "--frequency", "50"];
    let (_, document) = run_document(&arguments);
    assert_eq!(shown(&document, "_Total", "Instructions per Cycle"), [0.2, 0.2]);
    assert_eq!(shown(&document, "_Total", "Relative Frequency"), [0.5, 0.5]);
}

/// meteor-lake-hybrid in the topdown profile: `_Total` % LLC Misses is the misses over the references
/// of the processors that count both, while `_Total` LLC Misses counts every core's. A processor that
/// counts misses without references (an efficient core whose counters the top-down events take, when
/// its plan has fewer counters than the events) shows % LLC Misses 0 and adds nothing to `_Total`'s.
/// With every counter of a Crestmont core in the plan, its efficient cores count both.
#[test]
fn meteor_lake_hybrid_topdown_total_llc_misses_covers_the_processors_counting_both() {
    let (_, document) = run_document(&["--cpu-model", "meteor-lake-hybrid", "--profile", "topdown"]);
    let processors: Vec<String> = document
        .paths
        .iter()
        .filter_map(|path| exactness::split_path(path))
        .filter(|(set, at, name)| {
            set == "Hardware Counters" && at.as_deref() != Some("_Total") && name == "Core Type"
        })
        .filter_map(|(_, at, _)| at)
        .collect();
    let core_type = |instance: &str| shown(&document, instance, "Core Type")[0];
    let delta = |instance: &str, counter: &str| {
        let cells = shown(&document, instance, counter);
        cells[1] - cells[0]
    };
    assert!(processors.iter().any(|instance| core_type(instance) == 1.0), "{processors:?}");
    assert!(processors.iter().any(|instance| core_type(instance) == 2.0), "{processors:?}");
    let (both, misses_only): (Vec<&String>, Vec<&String>) =
        processors.iter().partition(|instance| delta(instance, "LLC References") > 0.0);
    for instance in &misses_only {
        assert_eq!(shown(&document, instance, "% LLC Misses")[1], 0.0, "{instance}");
    }
    assert!(both.iter().all(|instance| delta(instance, "LLC Misses") > 0.0));
    let sum = |counter: &str| both.iter().map(|instance| delta(instance, counter)).sum::<f64>();
    let expected = 100.0 * sum("LLC Misses") / sum("LLC References");
    let total = shown(&document, "_Total", "% LLC Misses")[1];
    assert!(
        (total - expected).abs() < 1e-4,
        "_Total % LLC Misses {total}, the processors counting both {expected}"
    );
    assert!(total <= 100.0);
}

#[test]
fn zen4_topdown() {
    run(&["--cpu-model", "zen4", "--profile", "topdown"]);
}

#[test]
fn skylake() {
    run(&["--cpu-model", "skylake"]);
}

#[test]
fn alder_lake_top_down() {
    let verdict = run(&["--cpu-model", "alder-lake"]);
    // The four top-down percentages of each processor and of _Total are among the cells, and moved.
    assert!(verdict.checked - verdict.idle >= 4 * 2 * 5, "{verdict:?}");
}

#[test]
fn zen4() {
    run(&["--cpu-model", "zen4"]);
}

#[test]
fn processors_128() {
    run(&["--processors", "128"]);
}

#[test]
fn virtual_clock_tenth_of_a_second() {
    run(&["--virtual-interval", "0.1", "--samples", "4", "--processors", "8"]);
    run(&["--virtual-interval", "0.1", "--samples", "3", "--processors", "2048", "--cpu-model", "zen4"]);
}

#[test]
fn virtual_clock_minute_samples_of_2048_processors_across_many_wraps() {
    // Each sample: 2048 processors at 1.5 to 6 GHz for 60 s, 4.6 x 10^14 cycles in all, 107,000 times
    // 2^32: any 32-bit base of _Total (or of one processor: 3.6 x 10^11 cycles, 84 times 2^32) wraps
    // many times between two samples.
    run(&["--virtual-interval", "60", "--samples", "4", "--processors", "2048", "--cpu-model", "alder-lake"]);
}

#[test]
fn virtual_clock_ten_minute_samples_of_2048_processors() {
    run(&["--virtual-interval", "600", "--samples", "3", "--processors", "2048", "--cpu-model", "zen4"]);
}

#[test]
fn virtual_clock_ten_minute_samples_on_skylake() {
    run(&["--virtual-interval", "600", "--samples", "3", "--processors", "64", "--cpu-model", "skylake"]);
}

/// Every model of the double x the default and topdown profiles (the custom profile's plans are the
/// configuration matrix's), 65 processors (two groups), 10-minute samples on the
/// virtual clock: each processor's Unhalted Core Cycles grows by exactly the cycles its workload ran
/// in every interval (none where the model has no PMU), whatever the housekeeping thread does at the
/// end of an interval (a release after the first, whose idle limit is 2 s), and the run passes.
#[test]
fn virtual_clock_every_model_counts_every_cycle() {
    use kernel_double::cpu::cpuid;
    let image = common::driver_image();
    let mut failed = Vec::new();
    for (model, _) in cpuid::MODELS {
        for profile in ["default", "topdown"] {
            let arguments =
                ["--virtual-interval", "600", "--samples", "3", "--processors", "65", "--cpu-model", model];
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_pmupcw-run"))
                .args(["--driver", &image.display().to_string(), "--profile", profile])
                .args(arguments)
                .output()
                .expect("running pmupcw-run");
            let stdout = String::from_utf8_lossy(&output.stdout);
            let truth = stdout.lines().find(|line| line.starts_with("# core cycles against the workload:"));
            // Two intervals of 65 processors, none off.
            let expected = "# core cycles against the workload: 130 processor intervals checked, 0 off";
            if !output.status.success() || truth != Some(expected) {
                let off: Vec<&str> = stdout.lines().filter(|line| line.starts_with("#   ")).take(4).collect();
                failed.push(format!(
                    "{model} {profile}: {truth:?} {:?}\n  {}",
                    output.status,
                    off.join("\n  ")
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} runs failed:\n{}",
        failed.len(),
        cpuid::MODELS.len() * 3,
        failed.join("\n")
    );
}

/// A legacy consumer (HKEY_PERFORMANCE_DATA's PERF_OBJECT_TYPE blocks, computed as Microsoft's
/// "Retrieving Counter Data" and "Calculating Counter Values" samples do) gets the same exact ratios as
/// PDH, for every processor and `_Total`: each ratio's base is the definition that follows it, and the
/// precision timer's base is read as 64 bits.
#[test]
fn a_legacy_reader_of_perf_object_blocks_gets_the_same_exact_ratios() {
    use kernel_double::consumer::pdh::Value;
    use kernel_double::consumer::{self, Column, TOTAL, legacy_reader, perf_object};
    use kernel_double::control::pcw;
    use kernel_double::cpu::{cpuid, pmu, topology};
    use kernel_double::status::STATUS_SUCCESS;

    let (mut driver, hardware) = common::query_hardware_counters(&cpuid::ALDER_LAKE_P);
    let first = consumer::sample(&hardware).unwrap();
    // A minute of each processor at up to 6 GHz: every count passes 2^32 many times.
    for vp in 0..topology::processor_count() {
        pmu::step(vp, 6_000_000_000 * 60 / pmu::RATES[pmu::CORE_CYCLES] * u64::from(vp % 4 + 1) / 4);
    }
    let second = consumer::sample(&hardware).unwrap();
    let blocks = [&first, &second].map(|sample| {
        legacy_reader::read_object(&perf_object::format_object(&consumer::object_data(&hardware, sample)))
            .unwrap()
    });
    let mut compared = 0;
    for (index, counter) in hardware.counters.iter().enumerate() {
        if counter.ty.name != "perf_precision_100ns_timer" {
            continue;
        }
        let mut names: Vec<String> = second.instances.iter().map(|record| record.name.clone()).collect();
        names.push(TOTAL.to_string());
        for name in &names {
            let read =
                |object| legacy_reader::get_value(object, name, index).expect("a fraction with its base");
            let legacy = legacy_reader::display_value(&read(&blocks[0]), &read(&blocks[1]));
            let column = Column { instance: Some(name.clone()), counter: index };
            let pdh =
                consumer::values(&hardware, &[column], Some(&first), &second, consumer::Formatter::Uncapped)
                    [0];
            match (legacy, pdh) {
                (Some(legacy), Value::Value(pdh)) => {
                    assert!(
                        (legacy - pdh).abs() <= 1e-9 * pdh.abs(),
                        "{name} {}: legacy {legacy}, PDH {pdh}",
                        counter.name
                    )
                }
                other => panic!("{name} {}: {other:?}", counter.name),
            }
            compared += 1;
        }
    }
    // Instructions per cycle, 2 + 4 percentages, relative frequency, on 4 processors and _Total.
    assert_eq!(compared, 8 * (topology::processor_count() as usize + 1));
    assert_eq!(pcw::remove_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}
