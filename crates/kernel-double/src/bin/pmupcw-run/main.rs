//! `pmupcw-run` (`cargo make run`): the double's PDH-style consumer of the real driver. Loads the real,
//! signed `pmupcw.sys` into the kernel double, starts a query on every counterset (AddCounter), samples
//! them N times at an interval with PDH's semantics and prints typeperf's CSV, formats the last collect
//! as PERF_OBJECT_TYPE blocks and prints the ExtCounterTestLevel 1 verdict, then stops the query
//! (RemoveCounter), unloads the driver and prints the double's end-of-run report. Exits 1 on any
//! violation, leak or invalid block.
//!
//! `pmupcw-run --help` (clap) lists every option with its range, the CPU models and the Windows
//! builds; a value outside them is refused with a message and exit code 2.
//! What each option does (the consumer's modes, CPU models, profiles, Windows builds, formatters,
//! the workload and the virtual clock): `docs/kernel-double.md`, "`pmupcw-run`".

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn main() {
    std::process::exit(run::main());
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {
    eprintln!("pmupcw-run needs the kernel double, which runs on x86_64 Linux only");
    std::process::exit(2);
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod dram_truth;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod options;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod run;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod workload_truth;
