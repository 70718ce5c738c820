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

use kernel_double::control::{hal, ke, pcw, pool};
use kernel_double::cpu::msr;
use kernel_double::cpu::{self, cpuid, pmu, topology};
use kernel_double::driver::Driver;
use kernel_double::status::STATUS_SUCCESS;
use single_step::single_stepped;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{self, Command};
use std::time::Instant;

const CASE: &str = "KD_BENCH_CASE";
const HARDWARE_COUNTERS: &str = "Hardware Counters";
/// The driver's default minimum collect interval, 10 ms, in the kernel clock's 100 ns units.
const MINIMUM_COLLECT_INTERVAL_100NS: i64 = 100_000;

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

/// Loads the driver on `processors` virtual Skylake processors and starts a query (counters owned).
fn start(processors: u32) -> Driver {
    topology::configure(processors, 64);
    cpuid::set_model(&cpuid::SKYLAKE);
    let image = image_path();
    if !image.is_file() {
        fail(format!("{} is missing: run `cargo make package` first", image.display()));
    }
    let mut driver = Driver::load(&image).unwrap_or_else(|error| fail(format!("loading: {error}")));
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    cpu::enter(0);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    driver
}

fn stop(mut driver: Driver) {
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    let violations = kernel_double::violations::all();
    if !violations.is_empty() {
        fail(format!("violations: {violations:?}"));
    }
}

/// A collect the driver answers with a fresh read of every processor: the kernel's clock moves past
/// the driver's minimum collect interval (10 ms by default) first.
fn collect() {
    hal::advance_clock(MINIMUM_COLLECT_INTERVAL_100NS);
    collect_now();
}

/// A collect at the clock's time as it is: within the minimum interval of the last read, the driver
/// serves it from that read.
fn collect_now() {
    let (status, instances) =
        pcw::collect(HARDWARE_COUNTERS, &pcw::Query::default()).expect("Hardware Counters registered");
    assert_eq!(status, STATUS_SUCCESS);
    black_box(instances);
}

/// Prints one result line for the parent: `RESULT <key> <value>`.
fn report(key: &str, value: f64) {
    println!("RESULT {key} {value}");
}

/// The per-processor read cost, beside the figures before reads held interrupts off and used rdpmc
/// (measured with this bench on the same model at commit b7965ea: 1,480 driver instructions and 29
/// rdmsr per processor per 64-VP collect: status, counter, status for each of 7 counters, 6
/// programming checks, APERF and MPERF; no rdpmc).
fn print_read_cost(get: &dyn Fn(&str) -> f64) {
    let counters = 7.0; // the Skylake model's plan: 3 fixed and 4 general-purpose counters
    println!();
    println!("| per processor, per collect (64 VPs, Skylake, {counters} counters) | now | before | target |");
    println!("|---|---:|---:|---:|");
    println!(
        "| driver instructions, fresh collect | {:.0} | 1480 | <= 400 |",
        get("collect_driver_instructions_64") / 64.0
    );
    println!(
        "| driver instructions, collect served from the last read | {:.0} | - | far less |",
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
    let driver = start(processors);
    for _ in 0..iterations / 10 + 1 {
        collect();
    }
    let emulated = cpu::current().emulated_instructions();
    let (rdmsr, rdpmc) = (msr::reads(), pmu::pmc_reads());
    let started = Instant::now();
    for _ in 0..iterations {
        collect();
    }
    let elapsed = started.elapsed();
    let traps = (cpu::current().emulated_instructions() - emulated) as f64 / f64::from(iterations);
    let per_processor = |count: u64| count as f64 / f64::from(iterations) / f64::from(processors);
    report(&format!("collect_ns_{processors}"), elapsed.as_nanos() as f64 / f64::from(iterations));
    report(&format!("collect_traps_{processors}"), traps);
    report(
        &format!("collect_rdmsr_per_processor_{processors}"),
        per_processor((msr::reads() - rdmsr) as u64),
    );
    report(&format!("collect_rdpmc_per_processor_{processors}"), per_processor(pmu::pmc_reads() - rdpmc));
    stop(driver);
}

fn case_pmi_time(iterations: u32) {
    let driver = start(4);
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
    let driver = start(processors);
    single_step::install(&driver);
    collect();
    let runs = 2;
    let mut driver_total = 0;
    let mut all_total = 0;
    for _ in 0..runs {
        let (in_driver, all) = single_stepped(collect);
        driver_total += in_driver;
        all_total += all;
    }
    report(&format!("collect_driver_instructions_{processors}"), (driver_total / runs) as f64);
    report(&format!("collect_all_instructions_{processors}"), (all_total / runs) as f64);
    stop(driver);
}

/// The driver's instructions for a collect it serves from the last read: the service's
/// MinimumCollectIntervalMs set to its longest, 100 ms, so that the single-stepped collect (slow, and
/// the kernel's clock runs with the host's) still reads the clock within the interval of the fresh one
/// before it (the clock is read as the collect begins, a few hundred instructions in).
fn case_served_collect_instructions(processors: u32) {
    use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD};
    registry::set_value(PARAMETERS_KEY, "MinimumCollectIntervalMs", REG_DWORD, 100u32.to_le_bytes().to_vec());
    let driver = start(processors);
    single_step::install(&driver);
    hal::advance_clock(10_000_000);
    collect_now();
    let ipis = ke::ipi_calls();
    let (in_driver, _) = single_stepped(collect_now);
    if ke::ipi_calls() != ipis {
        fail(
            "the single-stepped collect was not served: it came more than 100 ms after the fresh one".into(),
        );
    }
    report(&format!("collect_served_driver_instructions_{processors}"), in_driver as f64);
    stop(driver);
}

fn case_pmi_instructions() {
    let driver = start(4);
    single_step::install(&driver);
    let counters = pmu::programmed_counters(0);
    let mut points = Vec::new();
    for bits in 1..=counters.len() {
        let delivered = pmu::delivered();
        for &(msr, _) in &counters[..bits] {
            pmu::preload(0, msr, (1 << 48) - 1);
        }
        let (in_driver, _) = single_stepped(|| pmu::step(0, 1));
        assert_eq!(pmu::delivered() - delivered, 1, "one interrupt for {bits} wrapping counters");
        report(&format!("pmi_driver_instructions_{bits}_bits"), in_driver as f64);
        points.push((bits as f64, in_driver as f64));
    }
    // Least-squares line through (bits, instructions).
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(sxx, sxy), (x, y)| (sxx + x * x, sxy + x * y));
    let slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    report("pmi_instructions_per_bit", slope);
    report("pmi_instructions_fixed", (sy - slope * sx) / n);
    stop(driver);
}

fn case_memory(processors: u32) {
    let driver = start(processors);
    let pool_bytes: usize = pool::outstanding().iter().map(|allocation| allocation.size).sum();
    let image_data: usize = driver
        .image()
        .sections()
        .iter()
        .filter(|section| !section.discarded && section.protection & libc::PROT_WRITE != 0)
        .map(|section| section.length)
        .sum();
    let (allocations, ipis) = (pool::allocation_count(), ke::ipi_calls());
    let collects = 10;
    for _ in 0..collects {
        collect();
    }
    report(&format!("pool_bytes_{processors}"), pool_bytes as f64);
    report(&format!("image_data_bytes_{processors}"), image_data as f64);
    report(
        &format!("allocations_per_collect_{processors}"),
        (pool::allocation_count() - allocations) as f64 / f64::from(collects),
    );
    report(&format!("ipis_per_collect_{processors}"), (ke::ipi_calls() - ipis) as f64 / f64::from(collects));
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
        "memory_4" => case_memory(4),
        "memory_64" => case_memory(64),
        other => fail(format!("unknown case {other}")),
    }
}

const CASES: [&str; 10] = [
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
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let mut words = line.split_whitespace();
            if let (Some("RESULT"), Some(key), Some(value)) = (words.next(), words.next(), words.next()) {
                results.push((key.to_string(), value.parse().unwrap_or(f64::NAN)));
            }
        }
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
}
