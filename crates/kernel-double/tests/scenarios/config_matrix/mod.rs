//! The configurations users run, as one matrix: every CPU model of the double (`cpuid::MODELS`) x
//! every event profile (default, topdown, custom with 0 to 9 lines, malformed Parameters values:
//! `cases.rs`) x 1, 2, 64, 65 (two groups) and 256 (four groups) processors. Every cell must hold
//! (`cell.rs`): no bug check; no access to a PMU register the model lacks (a #GP on hardware: Intel
//! SDM Vol. 3B, "Counter Coalescence": with CPUID.0AH reporting 4 counters, IA32_PMC4-7 do not
//! exist); every count field of every processor's Hardware Counters block equal to the virtual PMU's
//! ground truth, also after every counter of two processors has wrapped; the profile applied as
//! documented; every ratio's `_Total` the ratio of the totals of the processors that count both
//! sides, and no ratio capped or percentage above 100 for any consumer (`ratios.rs`); unload clean.
//!
//! One test per model. The processor count is fixed per process (the virtual PMU is built once) and
//! a bug check aborts the process, so the test runs each processor count in a child process (this
//! test re-run, told the count and its first cell through the environment) that goes through the
//! cells in turn, each on a fresh load of the driver. When a child dies, the cell it was in is
//! recorded with how it failed, and a new child goes on from the next cell; the test fails listing
//! every failed cell.

mod cases;
mod cell;
mod ratios;

use crate::common::death::{is_child, run_child_with};
use cell::Expect;
use kernel_double::cpu::cpuid::{self, PmuKind};
use kernel_double::cpu::topology;

/// Processor counts: one, two, a full group, two groups, four full groups.
const PROCESSOR_COUNTS: [u32; 5] = [1, 2, 64, 65, 256];
/// Collects per cell: with up to two processors, three, each after more work; above, one.
const fn rounds(processors: u32) -> u32 {
    if processors <= 2 { 3 } else { 1 }
}
/// The child's instructions: "processors,first cell".
const CELL_ENVIRONMENT: &str = "KERNEL_DOUBLE_MATRIX_CELL";
/// What the child prints (to stderr, where a bug check's report and a panic go too) as a cell starts.
const BEGIN: &str = "config-matrix: begin cell ";

/// A hybrid model: its processors are of two core types.
fn hybrid(name: &str) -> bool {
    cpuid::model_named(name).unwrap().other_cores.is_some()
}

fn intel(name: &str) -> bool {
    let model = cpuid::model_named(name).unwrap();
    !matches!(model.pmu, PmuKind::Amd { .. })
}

/// The child: every cell of `name` on this process's processor count from the first it was told.
fn child(name: &str) {
    let cell = std::env::var(CELL_ENVIRONMENT).expect("the parent names the cell");
    let (processors, first) = cell.split_once(',').unwrap();
    let (processors, first): (u32, usize) = (processors.parse().unwrap(), first.parse().unwrap());
    topology::configure(processors, topology::MAX_GROUP_SIZE);
    cpuid::set_model(cpuid::model_named(name).unwrap());
    // The cells compare counts, not timers: no release or timed read of the housekeeping thread may
    // fall in the middle of a cell's work because the loaded machine ran it slowly.
    kernel_double::control::hal::stop_host_clock();
    let expect = expect(name);
    for (index, case) in cases::all(intel(name), hybrid(name)).iter().enumerate().skip(first) {
        eprintln!("{BEGIN}{index}");
        cell::run(case, expect, rounds(processors));
    }
}

/// Runs the matrix of model `name` (the test at `path`): returns the failed cells, each with how it
/// failed.
fn matrix(name: &str, path: &str) -> Vec<String> {
    let cases = cases::all(intel(name), hybrid(name));
    let mut failures = Vec::new();
    for processors in PROCESSOR_COUNTS {
        let mut first = 0;
        while first < cases.len() {
            let (output, stderr) =
                run_child_with(path, &[(CELL_ENVIRONMENT, format!("{processors},{first}"))]);
            if output.status.success() {
                // A child that ran fewer cells than it was given would hide the rest.
                let ran = stderr.matches(BEGIN).count();
                assert_eq!(ran, cases.len() - first, "{name}, {processors} processors: cells run\n{stderr}");
                break;
            }
            let (failed, how) = match stderr.rsplit_once(BEGIN) {
                Some((_, rest)) => {
                    let (index, how) = rest.split_once('\n').unwrap_or((rest, ""));
                    (index.trim().parse::<usize>().unwrap(), how)
                }
                None => (first, stderr.as_str()),
            };
            failures.push(format!(
                "{name}, {processors} processors, {}: {}",
                cases[failed].name,
                summary(how, output.status)
            ));
            first = failed + 1;
        }
    }
    failures
}

/// The lines of a child's stderr that say how it died: the driver's panic and the bug check, or the
/// failed property (the driver's routine debug output left out).
fn summary(stderr: &str, status: std::process::ExitStatus) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("stack backtrace") && !line.starts_with("note: run with"))
        .filter(|line| !line.is_empty() && (!line.starts_with("[DbgPrintEx") || line.contains("panic")))
        .take(6)
        .collect();
    format!("{} ({status})", lines.join(" "))
}

/// What the model leads to expect beyond the double's tables.
fn expect(name: &str) -> Expect {
    let topdown_inputs_width = match name {
        "skylake" | "skylake-no-ht" => Some(4),
        "zen4" => Some(6),
        "zen5" => Some(8),
        _ => None,
    };
    Expect { topdown_inputs_width }
}

macro_rules! matrix_tests {
    ($($test:ident => $model:literal,)*) => {
        $(
            #[test]
            fn $test() {
                if is_child() {
                    return child($model);
                }
                let failures = matrix($model, concat!(module_path!(), "::", stringify!($test)));
                assert!(failures.is_empty(), "{} failed cells:\n{}", failures.len(), failures.join("\n"));
            }
        )*

        /// The models the tests above run.
        const MATRIX_MODELS: &[&str] = &[$($model),*];
    };
}

matrix_tests! {
    skylake => "skylake",
    skylake_no_ht => "skylake-no-ht",
    ice_lake => "ice-lake",
    alder_lake => "alder-lake",
    sapphire_rapids => "sapphire-rapids",
    alder_lake_hybrid => "alder-lake-hybrid",
    meteor_lake_hybrid => "meteor-lake-hybrid",
    hybrid_own_leaf_a => "hybrid-own-leaf-a",
    zen3 => "zen3",
    zen4 => "zen4",
    zen5 => "zen5",
    hyperv_no_pmu => "hyperv-no-pmu",
    kvm_emerald_rapids_no_pmu => "kvm-emerald-rapids-no-pmu",
    kvm_genoa_no_pmu => "kvm-genoa-no-pmu",
    no_pmu => "no-pmu",
}

#[test]
fn every_model_of_the_double_is_in_the_matrix() {
    let models: Vec<&str> = cpuid::MODELS.iter().map(|(name, _)| *name).collect();
    assert_eq!(models, MATRIX_MODELS);
}
