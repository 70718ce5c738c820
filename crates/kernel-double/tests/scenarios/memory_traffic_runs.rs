//! `pmupcw-run` (`cargo make run`) with the memory controllers' traffic: on every platform whose
//! memory controller counts, each `Memory Controller` instance's and `_Total`'s DRAM byte totals grow
//! by what the traffic model moved, interval after interval, and the rates are those bytes over the
//! interval; on 1 s samples of the host's time and 10-minute samples of the virtual clock, where a
//! 32-bit counter at 55 GB/s wraps about 120 times between two samples. Where none counts (MCHBAR
//! disabled, a guest's bridge, an unlisted model), the counterset has no instance and the run passes.
//! The CSV is read with the consumer's own parser; the run's exit status says whether the runner's
//! checks (ratios and rates against the totals, DRAM against the traffic model) held.

use crate::common;
use kernel_double::consumer::exactness;

/// Runs pmupcw-run with `arguments`; returns the `Memory Controller` instances of its CSV (without
/// `_Total`), asserting that it passed and that every rate of the CSV was checked against its totals.
fn run(arguments: &[&str]) -> Vec<String> {
    let image = common::driver_image();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pmupcw-run"))
        .args(["--driver", &image.display().to_string()])
        .args(arguments)
        .output()
        .expect("running pmupcw-run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{arguments:?}:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let document = exactness::parse(&stdout).unwrap_or_else(|error| panic!("{error}\n{stdout}"));
    let verdict = exactness::check(&document);
    assert!(verdict.violations.is_empty() && verdict.rates > 0, "{arguments:?}: {verdict:?}");
    let mut instances: Vec<String> = document
        .paths
        .iter()
        .filter_map(|path| exactness::split_path(path))
        .filter(|(set, _, _)| set == "Memory Controller")
        .filter_map(|(_, instance, _)| instance.filter(|name| name != "_Total"))
        .collect();
    instances.dedup();
    instances
}

#[test]
fn one_second_samples_on_skylake_tiger_lake_u_and_alder_lake_hybrid() {
    for (model, controllers) in [("skylake", 1), ("tiger-lake-u", 2), ("alder-lake-hybrid", 2)] {
        let instances = run(&["--cpu-model", model, "--interval-ms", "1000"]);
        assert_eq!(instances, ["0,0", "0,1"][..controllers], "{model}");
    }
}

#[test]
fn ten_minute_samples_at_55_gbps_on_every_counting_platform() {
    for platform in ["skylake", "ice-lake", "tiger-lake-u", "alder-lake-hybrid", "meteor-lake-hybrid"] {
        let arguments = ["--platform", platform, "--virtual-interval", "600", "--samples", "4"];
        let instances =
            run(&[&arguments[..], &["--dram-read-gbps", "55", "--dram-write-gbps", "18"]].concat());
        assert!(!instances.is_empty(), "{platform}: no Memory Controller instance");
    }
}

#[test]
fn platforms_without_a_counting_memory_controller_show_no_instance() {
    for platform in ["skylake-mchbar-disabled", "hyperv-guest-alder-lake-pmu", "kvm-genoa-no-pmu", "zen4"] {
        assert_eq!(
            run(&["--platform", platform, "--interval-ms", "100"]),
            Vec::<String>::new(),
            "{platform}"
        );
    }
}
