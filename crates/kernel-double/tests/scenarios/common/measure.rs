//! What the real driver costs on the double's Skylake model, in counts: driver instructions per fresh
//! and per served collect and per overflow interrupt (single-stepped), rdmsr, rdpmc, pool allocations
//! and all-processor calls per collect, non-paged pool and resident data with counters owned.
//!
//! Shared by the bench, which prints these figures (benches/double.rs, `cargo make bench`), and the
//! budgets scenario, which holds them under their ceilings (budgets.rs): one measuring code, so the
//! test holds what the bench prints. Each function measures in this process; the double's state is
//! per process, so a figure taken on two processor counts (the pool's slope) takes two processes.

#![allow(dead_code)]

use super::single_step::{self, single_stepped};
use kernel_double::control::{hal, ke, pcw, pool, registry};
use kernel_double::cpu::{self, cpuid, msr, pmu, topology};
use kernel_double::driver::Driver;
use kernel_double::status::STATUS_SUCCESS;
use std::hint::black_box;

const HARDWARE_COUNTERS: &str = "Hardware Counters";
/// The driver's default minimum collect interval, 10 ms, in the kernel clock's 100 ns units.
const MINIMUM_COLLECT_INTERVAL_100NS: i64 = 100_000;
/// Counters the Skylake model's default plan programs: 3 fixed and 4 general-purpose.
pub const SKYLAKE_COUNTERS: u64 = 7;
/// What a measurement prints for the process that started it: `RESULT <key> <value>`.
const RESULT: &str = "RESULT";

/// Loads the driver (`load`) on `processors` virtual Skylake processors, runs DriverEntry and starts a
/// query of every Hardware Counters counter (counters owned). Only the measurements move the kernel's
/// clock: a single-stepped collect lasts half a minute of host time on a loaded machine, after which
/// the housekeeping thread would otherwise release and re-take the counters amid what is counted.
pub fn start(processors: u32, load: impl FnOnce() -> Driver) -> Driver {
    hal::stop_host_clock();
    topology::configure(processors, topology::MAX_GROUP_SIZE);
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    cpu::enter(0);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    driver
}

/// Ends the query and unloads; panics on any violation the double recorded.
pub fn stop(mut driver: Driver) {
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    let violations = kernel_double::violations::all();
    assert!(violations.is_empty(), "violations: {violations:?}");
}

/// A collect the driver answers with a fresh read of every processor: the kernel's clock moves past
/// the driver's minimum collect interval (10 ms by default) first.
pub fn collect() {
    hal::advance_clock(MINIMUM_COLLECT_INTERVAL_100NS);
    collect_now();
}

/// A collect at the clock's time as it is: within the minimum interval of the last read, the driver
/// serves it from that read.
pub fn collect_now() {
    let (status, instances) =
        pcw::collect(HARDWARE_COUNTERS, &pcw::Query::default()).expect("Hardware Counters registered");
    assert_eq!(status, STATUS_SUCCESS);
    black_box(instances);
}

/// What the double counted while some collects ran.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Instructions the double emulated (rdmsr, wrmsr, cr8, cpuid traps) on the calling processor.
    pub emulated: u64,
    pub rdmsr: u64,
    pub rdpmc: u64,
    pub allocations: u64,
    /// KeIpiGenericCall calls.
    pub ipis: u64,
}

/// Runs `f` and returns what the double counted meanwhile.
pub fn counted(f: impl FnOnce()) -> Counts {
    let emulated = cpu::current().emulated_instructions();
    let (rdmsr, rdpmc) = (msr::reads() as u64, pmu::pmc_reads());
    let (allocations, ipis) = (pool::allocation_count(), ke::ipi_calls());
    f();
    Counts {
        emulated: cpu::current().emulated_instructions() - emulated,
        rdmsr: msr::reads() as u64 - rdmsr,
        rdpmc: pmu::pmc_reads() - rdpmc,
        allocations: pool::allocation_count() - allocations,
        ipis: ke::ipi_calls() - ipis,
    }
}

/// Driver instructions of one single-stepped run, and all instructions traced (driver and double,
/// the signal handlers excluded).
#[derive(Clone, Copy, Debug)]
pub struct Stepped {
    pub driver: u64,
    pub all: u64,
}

/// A fresh collect on `driver` (started by [`start`]), single-stepped: the average of `runs`, after
/// one that is not counted.
pub fn fresh_collect_instructions(driver: &Driver, runs: u64) -> Stepped {
    single_step::install(driver);
    collect();
    let (mut in_driver, mut all) = (0, 0);
    for _ in 0..runs {
        let (run_in_driver, run_all) = single_stepped(collect);
        in_driver += run_in_driver;
        all += run_all;
    }
    Stepped { driver: in_driver / runs, all: all / runs }
}

/// The Memory Controller counterset on the Skylake model (one controller, 32-bit counters), queried
/// on `driver` (started by [`start`], after [`longest_collect_interval`]): the driver's instructions
/// for a collect that reads the controller afresh, and for one served from that read (the least of
/// three tries, each right after a fresh one: a try the host delayed past the interval reads afresh
/// and costs more). Their difference is the read of every controller, which the housekeeping
/// thread's poll makes too.
pub fn memory_collect_instructions(driver: &Driver) -> (u64, u64) {
    const MEMORY_CONTROLLER: &str = "Memory Controller";
    let collect_memory = || {
        let (status, instances) =
            pcw::collect(MEMORY_CONTROLLER, &pcw::Query::default()).expect("registered");
        assert_eq!(status, STATUS_SUCCESS);
        assert_eq!(instances.len(), 1, "Skylake's one controller");
        black_box(instances);
    };
    single_step::install(driver);
    assert_eq!(pcw::add_counter(MEMORY_CONTROLLER, u64::MAX), Some(STATUS_SUCCESS));
    let fresh = || {
        hal::advance_clock(10_000_000);
        collect_memory();
    };
    fresh();
    let (fresh_in_driver, _) = single_stepped(fresh);
    let served = (0..3)
        .map(|_| {
            fresh();
            single_stepped(collect_memory).0
        })
        .min()
        .expect("three tries");
    (fresh_in_driver, served)
}

/// Sets the service's MinimumCollectIntervalMs to its longest, 100 ms, before [`start`]: the
/// single-stepped collect of [`served_collect_instructions`] (slow, and the kernel's clock runs with
/// the host's) then still reads the clock within the interval of the fresh one before it (the clock
/// is read as the collect begins, a few hundred instructions in).
pub fn longest_collect_interval() {
    use registry::{PARAMETERS_KEY, REG_DWORD};
    registry::set_value(PARAMETERS_KEY, "MinimumCollectIntervalMs", REG_DWORD, 100u32.to_le_bytes().to_vec());
}

/// The driver's instructions for a collect it serves from the last read (no KeIpiGenericCall), on a
/// driver started after [`longest_collect_interval`]. A collect the host delayed past the interval
/// (the machine busy) reads afresh and is tried again, up to three times.
pub fn served_collect_instructions(driver: &Driver) -> u64 {
    single_step::install(driver);
    for _ in 0..3 {
        hal::advance_clock(10_000_000);
        collect_now();
        let ipis = ke::ipi_calls();
        let (in_driver, _) = single_stepped(collect_now);
        if ke::ipi_calls() == ipis {
            return in_driver;
        }
    }
    panic!("no single-stepped collect was served: each came more than 100 ms after the fresh one");
}

/// The overflow handler's driver instructions (one delivery on processor 0) against the number of
/// counters that wrap at once.
#[derive(Clone, Debug)]
pub struct PmiInstructions {
    /// (set bits, driver instructions), for 1 to every programmed counter.
    pub points: Vec<(u64, u64)>,
    /// The least-squares line's slope: instructions per set bit.
    pub per_bit: f64,
    /// Its intercept: instructions per interrupt, whatever the bits.
    pub fixed: f64,
}

/// Single-steps one overflow interrupt on processor 0 of `driver` (started by [`start`]) for 1 to
/// every programmed counter wrapping at once.
pub fn pmi_instructions(driver: &Driver) -> PmiInstructions {
    single_step::install(driver);
    let counters = pmu::programmed_counters(0);
    let mut points = Vec::new();
    for bits in 1..=counters.len() {
        let delivered = pmu::delivered();
        for &(msr, _) in &counters[..bits] {
            pmu::preload(0, msr, (1 << 48) - 1);
        }
        let (in_driver, _) = single_stepped(|| pmu::step(0, 1));
        assert_eq!(pmu::delivered() - delivered, 1, "one interrupt for {bits} wrapping counters");
        points.push((bits as u64, in_driver));
    }
    let xy: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x as f64, y as f64)).collect();
    let n = xy.len() as f64;
    let (sx, sy) = xy.iter().fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (sxx, sxy) = xy.iter().fold((0.0, 0.0), |(sxx, sxy), (x, y)| (sxx + x * x, sxy + x * y));
    let per_bit = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    PmiInstructions { points, per_bit, fixed: (sy - per_bit * sx) / n }
}

/// The driver's non-paged memory with counters owned.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// Pool still allocated.
    pub pool_bytes: u64,
    /// The image's resident writable sections (page-rounded).
    pub image_data_bytes: u64,
}

/// What `driver` (started by [`start`]) holds in non-paged memory.
pub fn memory(driver: &Driver) -> Memory {
    let pool_bytes = pool::outstanding().iter().map(|allocation| allocation.size as u64).sum();
    let image_data_bytes = driver
        .image()
        .sections()
        .iter()
        .filter(|section| !section.discarded && section.protection & libc::PROT_WRITE != 0)
        .map(|section| section.length as u64)
        .sum();
    Memory { pool_bytes, image_data_bytes }
}

/// Prints one figure for the process that started this one (see [`results`]).
pub fn report(key: &str, value: f64) {
    println!("{RESULT} {key} {value}");
}

/// The figures a measuring process printed with [`report`], in order (a test's may follow libtest's
/// "test NAME ... " on the same line).
pub fn results(stdout: &str) -> Vec<(String, f64)> {
    stdout
        .lines()
        .filter_map(|line| {
            let (_, result) = line.split_once(RESULT)?;
            let mut words = result.split_whitespace();
            Some((words.next()?.to_owned(), words.next()?.parse().ok()?))
        })
        .collect()
}
