//! `pmupcw-run`'s command line: the options with their ranges, the CPU models and Windows builds it
//! takes, checked as clap parses them (a value outside them is refused with exit code 2), and what
//! they become for the run (`super::run`).

use kernel_double::consumer;
use kernel_double::control::memory::{self, Platform};
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::pmu;
use kernel_double::kernel_build;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(super) struct Options {
    pub(super) driver: PathBuf,
    pub(super) samples: usize,
    pub(super) interval: Duration,
    /// Sample on the virtual clock, this many seconds apart (see `docs/kernel-double.md`, "`pmupcw-run`").
    pub(super) virtual_interval: Option<f64>,
    pub(super) processors: Option<u32>,
    pub(super) model: &'static CpuModel,
    /// The machine around the processors, where `--platform` names one (else the model's own).
    pub(super) platform: Option<&'static Platform>,
    /// The memory controllers' DRAM traffic: read and write bytes per second of the kernel's clock.
    pub(super) dram_traffic: (u64, u64),
    pub(super) kernel_build: u32,
    pub(super) consumer: ConsumerMode,
    pub(super) formatter: consumer::Formatter,
    /// Instructions, core cycles and reference cycles per workload unit, if set.
    pub(super) workload: Option<(u64, u64, u64)>,
    /// The Parameters key's `Profile`, if given.
    pub(super) profile: Option<String>,
    /// The Parameters key's `CustomEvents` lines.
    pub(super) custom_events: Vec<String>,
}

/// How the consumer announces its query (see `docs/kernel-double.md`, "`pmupcw-run`").
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ConsumerMode {
    /// One AddCounter per counterset before the samples, one RemoveCounter after (PDH).
    Pdh,
    /// Collects only, never AddCounter (HKEY_PERFORMANCE_DATA, WMI's raw classes).
    Registry,
    /// Two AddCounters and three RemoveCounters per counterset (PCW promises no pairing).
    Unbalanced,
}

impl ConsumerMode {
    /// AddCounters before the samples and RemoveCounters after, per counterset.
    pub(super) fn calls(self) -> (usize, usize) {
        match self {
            ConsumerMode::Pdh => (1, 1),
            ConsumerMode::Registry => (0, 0),
            ConsumerMode::Unbalanced => (2, 3),
        }
    }
}

/// Which PDH caller formats the values (see `docs/kernel-double.md`, "`pmupcw-run`").
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Formatter {
    /// PDH_FMT_DOUBLE | PDH_FMT_NOCAP100: perfmon, Get-Counter, Telegraf, OpenTelemetry, .NET.
    Uncapped,
    /// PDH_FMT_DOUBLE alone: windows_exporter's formatted path, Grafana Alloy (caps percentages at 100).
    WindowsExporter,
}

/// The service's `Profile` values (src/pmu/profile.rs).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Profile {
    /// The published events.
    Default,
    /// Adds the top-down events where IA32_PERF_METRICS is missing.
    Topdown,
    /// The `--custom-event` lines.
    Custom,
}

/// The CPU models `--cpu-model` takes: every model of the double's table (which the configuration
/// matrix runs too), the two Hyper-V models with a PMU whose IA32_PERF_METRICS the hypervisor
/// intercepts (`hyperv_perf_metrics.rs` runs them) and Tiger Lake-U, whose two memory controllers
/// have 64-bit counters at their own offsets (`memory_controller.rs` runs it).
pub(super) fn models() -> Vec<(&'static str, &'static CpuModel)> {
    let mut models = cpuid::MODELS.to_vec();
    models.push(("hyperv-root-alder-lake", &cpuid::HYPERV_ROOT_ALDER_LAKE));
    models.push(("hyperv-guest-alder-lake-pmu", &cpuid::HYPERV_GUEST_ALDER_LAKE_PMU));
    models.push(("tiger-lake-u", &cpuid::TIGER_LAKE_U));
    models
}

/// The fastest DRAM traffic `--dram-read-gbps` and `--dram-write-gbps` take each, in GB/s: beyond
/// any client memory's peak (Ice Lake-U's LPDDR4X-3733 on 128 bits is 59.7 GB/s).
const DRAM_GBPS_MAX: f64 = 200.0;

/// The Windows builds `--kernel-build` takes: released x64 builds from Windows 10 1903 on (the
/// oldest the double presents), so that a typo is not taken for a future Windows.
pub(super) const KERNEL_BUILDS: &[(u32, &str)] = &[
    (18362, "Windows 10 1903"),
    (18363, "Windows 10 1909"),
    (19041, "Windows 10 2004"),
    (19042, "Windows 10 20H2"),
    (19043, "Windows 10 21H1"),
    (19044, "Windows 10 21H2"),
    (19045, "Windows 10 22H2"),
    (20348, "Windows Server 2022"),
    (22000, "Windows 11 21H2"),
    (22621, "Windows 11 22H2"),
    (22631, "Windows 11 23H2"),
    (26100, "Windows 11 24H2, Windows Server 2025"),
    (26200, "Windows 11 25H2"),
];

/// The command line (`--help` prints it).
#[derive(clap::Parser)]
#[command(
    name = "pmupcw-run",
    about = "Runs the real pmupcw.sys in the kernel double and prints typeperf CSV of every counterset",
    long_about = "Runs the real, signed pmupcw.sys in the kernel double (virtual processors and PMU, fake \
        ntoskrnl/HAL with Driver Verifier-style checks), samples every counterset as PDH does and prints \
        typeperf CSV, checks every ratio against the 64-bit totals of the same CSV, validates the \
        PERF_OBJECT_TYPE blocks (ExtCounterTestLevel 1), unloads the driver and prints the double's leak \
        and violation report. Exits 0 on PASS, 1 on any violation, leak, invalid block or inexact ratio, \
        2 on a bad argument."
)]
pub(super) struct Cli {
    /// The driver image [default: $PMUPCW_PACKAGE_DIR/pmupcw.sys, else target/package/pmupcw/pmupcw.sys]
    #[arg(long, value_name = "PATH")]
    driver: Option<PathBuf>,
    /// Samples to take (a rate or ratio shows a value from the second on)
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    samples: u32,
    /// Real time between samples, in milliseconds, by which the kernel's clock moves too: at least the
    /// driver's minimum collect interval (10 ms), so that every sample is a fresh read
    #[arg(long, value_name = "MS", default_value_t = 1000, conflicts_with = "virtual_interval",
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    interval_ms: u64,
    /// Sample on the double's virtual clock, SECONDS apart (0.1 to 600), each processor running up to
    /// 6 GHz worth of work in between: minutes-long samples take no time
    #[arg(long, value_name = "SECONDS", value_parser = virtual_interval)]
    virtual_interval: Option<f64>,
    /// Logical processors (1 to 2048, in groups of 64) [default: 4; 24 for a hybrid model]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=2048))]
    processors: Option<u32>,
    /// The CPU model the virtual processors present (listed below)
    #[arg(long, value_name = "MODEL", default_value = "skylake", value_parser = cpu_model)]
    cpu_model: &'static CpuModel,
    /// A machine (listed below): its CPU model with the device at 00:00.0 and memory controller it
    /// has, or one a driver must refuse (an unknown bridge, MCHBAR disabled, a guest's bridge)
    #[arg(long, value_name = "PLATFORM", conflicts_with = "cpu_model", value_parser = platform)]
    platform: Option<(&'static CpuModel, &'static Platform)>,
    /// DRAM reads the memory controllers serve, in GB/s (10^9 bytes a second) of the kernel's clock
    #[arg(long, value_name = "GBPS", default_value_t = 20.0, value_parser = dram_gbps)]
    dram_read_gbps: f64,
    /// DRAM writes the memory controllers serve, in GB/s
    #[arg(long, value_name = "GBPS", default_value_t = 8.0, value_parser = dram_gbps)]
    dram_write_gbps: f64,
    /// The Windows build the fake kernel presents (listed below); it decides what ntoskrnl.exe exports
    #[arg(long, value_name = "BUILD", default_value_t = kernel_build::WINDOWS_11_24H2, value_parser = windows_build)]
    kernel_build: u32,
    /// How the consumer announces its query
    #[arg(long, value_enum, default_value_t = ConsumerMode::Pdh)]
    consumer: ConsumerMode,
    /// Which PDH caller formats the values: with PDH_FMT_NOCAP100, or windows_exporter's FmtDouble alone
    #[arg(long, value_enum, default_value_t = Formatter::Uncapped)]
    formatter: Formatter,
    /// The workload's instructions per core cycle, 0.2 to 4 [default: the model's 0.8]
    #[arg(long, value_name = "IPC", value_parser = ipc)]
    ipc: Option<f64>,
    /// The workload's frequency in percent of the reference frequency, 50 to 140 [default: the model's 111]
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u64).range(50..=140))]
    frequency: Option<u64>,
    /// The service's Parameters value `Profile`, set before DriverEntry as Install-Pmupcw.ps1 -Profile does
    /// [default: none, which the driver reads as default; custom when --custom-event is given]
    #[arg(long, value_enum)]
    profile: Option<Profile>,
    /// One line of the Parameters value `CustomEvents` (REG_MULTI_SZ; repeat for more lines, read by the
    /// custom profile), e.g. "event=0xC4,umask=0x00,name=branches"
    #[arg(long = "custom-event", visible_alias = "custom-events", value_name = "LINE")]
    custom_events: Vec<String>,
}

pub(super) fn cpu_model(name: &str) -> Result<&'static CpuModel, String> {
    models().into_iter().find(|(known, _)| *known == name).map(|(_, model)| model).ok_or_else(|| {
        let names: Vec<&str> = models().iter().map(|(known, _)| *known).collect();
        format!("unknown CPU model; one of: {}", names.join(", "))
    })
}

pub(super) fn platform(name: &str) -> Result<(&'static CpuModel, &'static Platform), String> {
    memory::named(name).ok_or_else(|| {
        let names: Vec<&str> = memory::PLATFORMS.iter().map(|(known, _, _)| *known).collect();
        format!("unknown platform; one of: {}", names.join(", "))
    })
}

pub(super) fn dram_gbps(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|gbps| (0.0..=DRAM_GBPS_MAX).contains(gbps))
        .ok_or_else(|| format!("from 0 to {DRAM_GBPS_MAX} GB/s"))
}

/// Bytes a second of `gbps` GB/s, whole 64-byte lines (what a memory controller counts).
fn bytes_per_second(gbps: f64) -> u64 {
    let bytes = (gbps * 1e9).round() as u64;
    bytes - bytes % memory::LINE_BYTES
}

pub(super) fn windows_build(text: &str) -> Result<u32, String> {
    let known: Vec<String> = KERNEL_BUILDS.iter().map(|(build, _)| build.to_string()).collect();
    text.parse::<u32>()
        .ok()
        .filter(|build| KERNEL_BUILDS.iter().any(|(known, _)| known == build))
        .ok_or_else(|| format!("not a Windows build the double presents; one of: {}", known.join(", ")))
}

pub(super) fn ipc(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|ipc| (pmu::IPC_RANGE.0..=pmu::IPC_RANGE.1).contains(ipc))
        .ok_or_else(|| "from 0.2 to 4 instructions per cycle".to_string())
}

/// The workload unit of `--ipc` and `--frequency` (see `docs/kernel-double.md`, "`pmupcw-run`"), if
/// either is given.
pub(super) fn workload(cli: &Cli) -> Option<(u64, u64, u64)> {
    if cli.ipc.is_none() && cli.frequency.is_none() {
        return None;
    }
    let core_cycles = cli.frequency.unwrap_or(111);
    let ipc = cli.ipc.unwrap_or(0.8);
    Some(((ipc * core_cycles as f64).round() as u64, core_cycles, 100))
}

pub(super) fn virtual_interval(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|seconds| (0.1..=600.0).contains(seconds))
        .ok_or_else(|| "from 0.1 to 600 seconds".to_string())
}

/// The lists `--help` ends with: the CPU models and Windows builds.
pub(super) fn lists() -> String {
    let mut text = String::from("CPU models (--cpu-model):\n");
    for (name, model) in models() {
        text.push_str(&format!("  {name:<28} {}\n", model.name));
    }
    text.push_str("\nPlatforms (--platform):\n");
    for (name, _, platform) in memory::PLATFORMS.iter() {
        text.push_str(&format!("  {name:<28} {}\n", platform.name));
    }
    text.push_str("\nWindows builds (--kernel-build):\n");
    for (build, name) in KERNEL_BUILDS {
        text.push_str(&format!("  {build:<28} {name}\n"));
    }
    text
}

/// The options, or the process exits: 0 after `--help` (on stdout), 2 with a message on a bad
/// argument.
pub(super) fn options() -> Options {
    use clap::{CommandFactory, FromArgMatches};
    // cargo-make passes the end-of-options marker of `cargo make run -- ...` on: drop it.
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments.get(1).is_some_and(|first| first == "--") {
        arguments.remove(1);
    }
    let command = Cli::command().after_help(lists());
    let mut matches = command.clone().try_get_matches_from(arguments).unwrap_or_else(|error| error.exit());
    let cli = Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|error| error.exit());
    let profile = match (cli.profile, cli.custom_events.is_empty()) {
        (None, false) | (Some(Profile::Custom), _) => Some("custom"),
        (Some(Profile::Default), true) => Some("default"),
        (Some(Profile::Topdown), true) => Some("topdown"),
        (None, true) => None,
        (Some(_), false) => command
            .clone()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--custom-event is read by the custom profile only: leave --profile out or say --profile custom",
            )
            .exit(),
    };
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let workload = workload(&cli);
    let directory = std::env::var_os("PMUPCW_PACKAGE_DIR")
        .map_or_else(|| repository.join("target/package/pmupcw"), PathBuf::from);
    Options {
        driver: cli.driver.unwrap_or_else(|| directory.join("pmupcw.sys")),
        samples: cli.samples as usize,
        interval: Duration::from_millis(cli.interval_ms),
        virtual_interval: cli.virtual_interval,
        processors: cli.processors,
        model: cli.platform.map_or(cli.cpu_model, |(model, _)| model),
        platform: cli.platform.map(|(_, platform)| platform),
        dram_traffic: (bytes_per_second(cli.dram_read_gbps), bytes_per_second(cli.dram_write_gbps)),
        kernel_build: cli.kernel_build,
        consumer: cli.consumer,
        formatter: match cli.formatter {
            Formatter::Uncapped => consumer::Formatter::Uncapped,
            Formatter::WindowsExporter => consumer::Formatter::WindowsExporter,
        },
        workload,
        profile: profile.map(str::to_string),
        custom_events: cli.custom_events,
    }
}
