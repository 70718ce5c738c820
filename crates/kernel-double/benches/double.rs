//! What the kernel double costs, and what the real driver executes inside it:
//!
//! * the double's wall-clock cost per collect (a PcwCallbackCollectData of every Hardware Counters
//!   instance through the real driver, counters owned) on 4 and 64 virtual processors, and per overflow
//!   interrupt delivery (a `pmu::step` that wraps one counter, minus the same step without a wrap);
//!   averaged over many calls, after a warm-up;
//! * the driver's non-paged memory with counters owned, on 4 and 64 virtual processors: pool still
//!   allocated (split into a per-processor slope and a fixed part) and the image's resident writable
//!   sections; and what one collect costs in pool allocations and all-processor calls;
//! * the driver's instructions per collect on 64 virtual processors, and per overflow bit, counted by
//!   single-stepping (tests/scenarios/common/single_step.rs).
//!   The counting is tests/scenarios/common/measure.rs, which the budgets scenario
//!   (tests/scenarios/budgets.rs) shares to hold these figures under their ceilings.
//!   The per-bit figure is the slope of the handler's instructions (one delivery on one processor) over
//!   1..=7 counters wrapping at once; the fixed part is the intercept.
//!
//! Each measurement runs in its own process (the double's state is per process): this binary re-runs
//! itself with `KD_BENCH_CASE` set and prints a table of what the cases report. The image is
//! `$PMUPCW_PACKAGE_DIR/pmupcw.sys` (default target/package/pmupcw/pmupcw.sys), built by
//! `cargo make package`. Run with `cargo bench -p kernel-double --bench double`.

// The double's host-side FFI (signal handlers, ucontext, process_vm_readv, the fake exports' raw
// arguments) groups the calls of one setup in one unsafe block, each block with its SAFETY comment;
// the driver holds itself to one unsafe operation per block.
#![allow(clippy::multiple_unsafe_ops_per_block)]

#[path = "../tests/scenarios/common/single_step.rs"]
mod single_step;

/// The measuring code, shared with the budgets scenario (tests/scenarios/budgets.rs), which holds
/// these figures under their ceilings.
#[path = "../tests/scenarios/common/measure.rs"]
mod measure;

use kernel_double::cpu::pmu;
use kernel_double::driver::Driver;
use measure::{SKYLAKE_COUNTERS, collect, counted, report, start, stop};
use std::path::{Path, PathBuf};
use std::process::{self, Command};
use std::time::Instant;

const CASE: &str = "KD_BENCH_CASE";

fn image_path() -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::var_os("PMUPCW_PACKAGE_DIR")
        .map_or_else(|| repository.join("target/package/pmupcw"), PathBuf::from)
        .join("pmupcw.sys")
}

fn fail(message: String) -> ! {
    eprintln!("double: {message}");
    process::exit(1);
}

/// Loads the real driver (the case's process has not loaded one yet).
fn load() -> Driver {
    let image = image_path();
    if !image.is_file() {
        fail(format!("{} is missing: run `cargo make package` first", image.display()));
    }
    Driver::load(&image).unwrap_or_else(|error| fail(format!("loading: {error}")))
}

/// The per-processor read cost, beside the figures before reads held interrupts off and used rdpmc
/// (measured with this bench on the same model at commit b7965ea: 1,480 driver instructions and 29
/// rdmsr per processor per 64-VP collect: status, counter, status for each of 7 counters, 6
/// programming checks, APERF and MPERF; no rdpmc).
fn print_read_cost(get: &dyn Fn(&str) -> f64) {
    let counters = SKYLAKE_COUNTERS;
    println!();
    println!("| per processor, per collect (64 VPs, Skylake, {counters} counters) | now | before | target |");
    println!("|---|---:|---:|---:|");
    println!(
        "| driver instructions, fresh collect | {:.0} | 1480 | <= 400 |",
        get("collect_driver_instructions_64") / 64.0
    );
    println!(
        "| driver instructions, collect served from the last read | {:.0} | - | <= 40 |",
        get("collect_served_driver_instructions_64") / 64.0
    );
    println!(
        "| rdmsr (global status, one programming check, APERF, MPERF) | {:.2} | 29 | 2 for the PMU |",
        get("collect_rdmsr_per_processor_64")
    );
    println!("| rdpmc | {:.2} | 0 | {counters} (1 per counter) |", get("collect_rdpmc_per_processor_64"));
}

// --- Cases -------------------------------------------------------------------------------------------

fn case_collect_time(processors: u32, iterations: u32) {
    let driver = start(processors, load);
    for _ in 0..iterations / 10 + 1 {
        collect();
    }
    let started = Instant::now();
    let counts = counted(|| (0..iterations).for_each(|_| collect()));
    let elapsed = started.elapsed();
    let per_collect = |count: u64| count as f64 / f64::from(iterations);
    report(&format!("collect_ns_{processors}"), elapsed.as_nanos() as f64 / f64::from(iterations));
    report(&format!("collect_traps_{processors}"), per_collect(counts.emulated));
    report(
        &format!("collect_rdmsr_per_processor_{processors}"),
        per_collect(counts.rdmsr) / f64::from(processors),
    );
    report(
        &format!("collect_rdpmc_per_processor_{processors}"),
        per_collect(counts.rdpmc) / f64::from(processors),
    );
    stop(driver);
}

fn case_pmi_time(iterations: u32) {
    let driver = start(4, load);
    let instructions = pmu::counter_of(0, pmu::INSTRUCTIONS).expect("instructions are counted");
    let delivered = pmu::delivered();
    let timed = |wrap: bool| {
        let mut total = 0u128;
        for _ in 0..iterations {
            pmu::preload(0, instructions, if wrap { (1 << 48) - 1 } else { 1 });
            let started = Instant::now();
            pmu::step(0, 1);
            total += started.elapsed().as_nanos();
        }
        total as f64 / f64::from(iterations)
    };
    let _ = timed(true);
    let _ = timed(false);
    let with = timed(true);
    let without = timed(false);
    assert_eq!(pmu::delivered() - delivered, 2 * u64::from(iterations), "one interrupt per wrapping step");
    report("step_with_pmi_ns", with);
    report("step_without_pmi_ns", without);
    report("pmi_ns", with - without);
    stop(driver);
}

fn case_collect_instructions(processors: u32) {
    let driver = start(processors, load);
    let stepped = measure::fresh_collect_instructions(&driver, 2);
    report(&format!("collect_driver_instructions_{processors}"), stepped.driver as f64);
    report(&format!("collect_all_instructions_{processors}"), stepped.all as f64);
    stop(driver);
}

fn case_served_collect_instructions(processors: u32) {
    measure::longest_collect_interval();
    let driver = start(processors, load);
    let in_driver = measure::served_collect_instructions(&driver);
    report(&format!("collect_served_driver_instructions_{processors}"), in_driver as f64);
    stop(driver);
}

fn case_memory_controller_instructions() {
    measure::longest_collect_interval();
    let driver = start(4, load);
    let (fresh, served) = measure::memory_collect_instructions(&driver);
    report("memory_collect_fresh_instructions", fresh as f64);
    report("memory_collect_served_instructions", served as f64);
    stop(driver);
}

fn case_pmi_instructions() {
    let driver = start(4, load);
    let pmi = measure::pmi_instructions(&driver);
    for (bits, in_driver) in pmi.points {
        report(&format!("pmi_driver_instructions_{bits}_bits"), in_driver as f64);
    }
    report("pmi_instructions_per_bit", pmi.per_bit);
    report("pmi_instructions_fixed", pmi.fixed);
    stop(driver);
}

fn case_memory(processors: u32) {
    let driver = start(processors, load);
    let memory = measure::memory(&driver);
    let collects = 10;
    let counts = counted(|| (0..collects).for_each(|_| collect()));
    report(&format!("pool_bytes_{processors}"), memory.pool_bytes as f64);
    report(&format!("image_data_bytes_{processors}"), memory.image_data_bytes as f64);
    report(&format!("allocations_per_collect_{processors}"), counts.allocations as f64 / f64::from(collects));
    report(&format!("ipis_per_collect_{processors}"), counts.ipis as f64 / f64::from(collects));
    stop(driver);
}

fn run_case(case: &str) {
    match case {
        "collect_time_4" => case_collect_time(4, 20_000),
        "collect_time_64" => case_collect_time(64, 2_000),
        "pmi_time" => case_pmi_time(20_000),
        "collect_instructions_4" => case_collect_instructions(4),
        "collect_instructions_64" => case_collect_instructions(64),
        "served_collect_instructions_4" => case_served_collect_instructions(4),
        "served_collect_instructions_64" => case_served_collect_instructions(64),
        "pmi_instructions" => case_pmi_instructions(),
        "memory_controller_instructions" => case_memory_controller_instructions(),
        "memory_4" => case_memory(4),
        "memory_64" => case_memory(64),
        other => fail(format!("unknown case {other}")),
    }
}

const CASES: [&str; 11] = [
    "memory_4",
    "memory_64",
    "collect_time_4",
    "collect_time_64",
    "pmi_time",
    "collect_instructions_4",
    "collect_instructions_64",
    "served_collect_instructions_4",
    "served_collect_instructions_64",
    "pmi_instructions",
    "memory_controller_instructions",
];

fn main() {
    if let Ok(case) = std::env::var(CASE) {
        run_case(&case);
        return;
    }
    let executable = std::env::current_exe().unwrap_or_else(|error| fail(format!("current_exe: {error}")));
    let mut results: Vec<(String, f64)> = Vec::new();
    for case in CASES {
        let started = Instant::now();
        let output = Command::new(&executable)
            .env(CASE, case)
            .output()
            .unwrap_or_else(|error| fail(format!("running case {case}: {error}")));
        if !output.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            fail(format!("case {case} failed: {}", output.status));
        }
        results.extend(measure::results(&String::from_utf8_lossy(&output.stdout)));
        eprintln!("double: case {case} took {:.2?}", started.elapsed());
    }
    let get =
        |key: &str| results.iter().find(|(name, _)| name == key).map(|(_, value)| *value).unwrap_or(f64::NAN);
    println!("Kernel double on {} (Skylake model, release build of the double)", image_path().display());
    println!();
    println!("| measurement | 4 VPs | 64 VPs |");
    println!("|---|---:|---:|");
    println!(
        "| collect, wall clock (ns, average) | {:.0} | {:.0} |",
        get("collect_ns_4"),
        get("collect_ns_64")
    );
    println!(
        "| collect, emulated instructions (traps) | {:.0} | {:.0} |",
        get("collect_traps_4"),
        get("collect_traps_64")
    );
    println!(
        "| collect, driver instructions (single-stepped) | {:.0} | {:.0} |",
        get("collect_driver_instructions_4"),
        get("collect_driver_instructions_64")
    );
    println!(
        "| collect served from the last read (within the minimum interval), driver instructions | {:.0} | {:.0} |",
        get("collect_served_driver_instructions_4"),
        get("collect_served_driver_instructions_64")
    );
    println!(
        "| collect, all instructions single-stepped (driver + double, signal handlers excluded) | {:.0} | {:.0} |",
        get("collect_all_instructions_4"),
        get("collect_all_instructions_64")
    );
    println!(
        "| collect, pool allocations (average of 10) | {:.0} | {:.0} |",
        get("allocations_per_collect_4"),
        get("allocations_per_collect_64")
    );
    println!(
        "| collect, all-processor calls (KeIpiGenericCall, average of 10) | {:.0} | {:.0} |",
        get("ipis_per_collect_4"),
        get("ipis_per_collect_64")
    );
    println!(
        "| non-paged pool allocated, counters owned (bytes) | {:.0} | {:.0} |",
        get("pool_bytes_4"),
        get("pool_bytes_64")
    );
    println!(
        "| image's resident writable sections (bytes, page-rounded) | {:.0} | {:.0} |",
        get("image_data_bytes_4"),
        get("image_data_bytes_64")
    );
    print_read_cost(&get);
    let per_processor = (get("pool_bytes_64") - get("pool_bytes_4")) / 60.0;
    println!();
    println!("| non-paged pool | bytes | target |");
    println!("|---|---:|---:|");
    println!("| per processor (slope from 4 to 64 VPs) | {per_processor:.1} | <= 640 |");
    println!(
        "| fixed (pool at 4 VPs minus 4 x slope) | {:.0} | <= 8192 |",
        get("pool_bytes_4") - 4.0 * per_processor
    );
    println!();
    println!("| overflow interrupt | value |");
    println!("|---|---:|");
    println!("| step with one PMI delivered (ns, average) | {:.0} |", get("step_with_pmi_ns"));
    println!("| same step without a wrap (ns, average) | {:.0} |", get("step_without_pmi_ns"));
    println!("| the double's cost per PMI delivery (ns) | {:.0} |", get("pmi_ns"));
    for bits in 1..=7 {
        println!(
            "| driver instructions, one PMI with {bits} overflow bit(s) | {:.0} |",
            get(&format!("pmi_driver_instructions_{bits}_bits"))
        );
    }
    println!("| driver instructions per overflow bit (slope) | {:.1} |", get("pmi_instructions_per_bit"));
    println!("| driver instructions per PMI, fixed (intercept) | {:.1} |", get("pmi_instructions_fixed"));
    print_memory_controller_cost(&get);
}

/// The Memory Controller counterset's cost on Skylake (one controller, 32-bit counters).
fn print_memory_controller_cost(get: &dyn Fn(&str) -> f64) {
    let (fresh, served) =
        (get("memory_collect_fresh_instructions"), get("memory_collect_served_instructions"));
    println!();
    println!("| Memory Controller (Skylake, 1 controller) | driver instructions |");
    println!("|---|---:|");
    println!("| collect, fresh (reads the controller) | {fresh:.0} |");
    println!("| collect, served from the last read | {served:.0} |");
    println!(
        "| a read of every controller (fresh minus served): what the 1 s poll reads too | {:.0} |",
        fresh - served
    );
}
