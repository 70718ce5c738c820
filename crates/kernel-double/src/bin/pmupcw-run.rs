//! `pmupcw-run` (`cargo make run`): the double's PDH-style consumer of the real driver. Loads the real,
//! signed `pmupcw.sys` into the kernel double, starts a query on every counterset (AddCounter), samples
//! them N times at an interval with PDH's semantics and prints typeperf's CSV, formats the last collect
//! as PERF_OBJECT_TYPE blocks and prints the ExtCounterTestLevel 1 verdict, then stops the query
//! (RemoveCounter), unloads the driver and prints the double's end-of-run report. Exits 1 on any
//! violation, leak or invalid block.
//!
//! `pmupcw-run --help` (clap) lists every option with its range, the CPU models and the Windows
//! builds; a value outside them is refused with a message and exit code 2.
//! The consumer announces itself as PDH does (`pdh`, the default: one AddCounter per counterset
//! before the samples, one RemoveCounter after), as a registry consumer does (`registry`:
//! HKEY_PERFORMANCE_DATA and WMI's raw classes only collect, never AddCounter), or unpaired
//! (`unbalanced`: two AddCounters, three RemoveCounters), since PCW promises no pairing.
//! MODEL is one of the double's CPU models (`kernel_double::cpu::cpuid::MODELS`, plus the Hyper-V
//! models with a PMU); a hybrid model runs 24 processors unless `--processors` says otherwise. N is 1
//! to 2048 processors, in groups of 64. `--profile` and `--custom-event` set the service's Parameters
//! values before DriverEntry, as `Install-Pmupcw.ps1 -Profile ... -CustomEvents ...` does: `Profile`
//! (REG_SZ) and `CustomEvents` (REG_MULTI_SZ, one line per `--custom-event`; custom events alone imply
//! the custom profile, and any other profile with them is refused). BUILD is the Windows build the fake
//! kernel presents, a released one from 18362 (Windows 10 1903) on, by default 26100; it decides what
//! ntoskrnl.exe exports (`kernel_double::kernel_build`).
//! `--formatter` says which PDH caller formats the values: `uncapped` (the default: PDH_FMT_DOUBLE |
//! PDH_FMT_NOCAP100, as perfmon, Get-Counter, Telegraf, the OpenTelemetry receiver and .NET pass) or
//! `windows-exporter` (PDH_FMT_DOUBLE alone, as windows_exporter's formatted path and so Grafana Alloy
//! pass), whose PDH shows any percentage above 100 as 100 (`consumer::pdh::format`).
//! The workload: after each interval every virtual processor runs
//! 100000 * (index + 1) units of the double's deterministic workload model (`cpu::pmu::step`), so the
//! processors' rates differ. `--ipc` (0.2 to 4) and `--frequency` (50 to 140, percent of the
//! reference frequency) set what a unit makes (`cpu::pmu::set_workload`: 100 reference cycles,
//! FREQUENCY core cycles, IPC x FREQUENCY instructions); without either, the model's default (IPC 0.8
//! at 111 %).
//! `--virtual-interval SECONDS` (0.1 to 600) samples on a virtual clock instead: no waiting, the
//! double's KeQueryPerformanceCounter moves forward by SECONDS between samples, and in that time
//! processor n runs (n mod 4 + 1) / 4 of SECONDS at 6 GHz (the busiest 6 x 10^9 core cycles a
//! second), so a minute's sample of 2048 processors is 4.6 x 10^14 cycles, enough to wrap a 32-bit
//! sum a hundred thousand times.
//! After the CSV it checks every ratio against the 64-bit totals of the same CSV
//! (`consumer::exactness`, parsed back from the printed text) and fails on a ratio off its totals.
//! The driver defaults to `$PMUPCW_PACKAGE_DIR/pmupcw.sys`, else target/package/pmupcw/pmupcw.sys
//! (what `cargo make package` builds); the counter manifest is the packaged `pmupcw.man` next to it,
//! else the one this binary was built with.

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
mod run {
    use kernel_double::consumer::{self, Counterset, Sample, csv, exactness, perf_object};
    use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_MULTI_SZ, REG_SZ};
    use kernel_double::control::{hal, pcw};
    use kernel_double::cpu::cpuid::{self, CpuModel};
    use kernel_double::cpu::{pmu, topology};
    use kernel_double::driver::Driver;
    use kernel_double::kernel_build;
    use kernel_double::report::Report;
    use kernel_double::status::STATUS_SUCCESS;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    const COUNTERSETS: [&str; 3] =
        ["Hardware Counters", "Hardware Counters by Core Type", "Hardware Counters Driver"];

    struct Options {
        driver: PathBuf,
        samples: usize,
        interval: Duration,
        /// Sample on the virtual clock, this many seconds apart (see the module docs).
        virtual_interval: Option<f64>,
        processors: Option<u32>,
        model: &'static CpuModel,
        kernel_build: u32,
        consumer: ConsumerMode,
        formatter: consumer::Formatter,
        /// Instructions, core cycles and reference cycles per workload unit, if set.
        workload: Option<(u64, u64, u64)>,
        /// The Parameters key's `Profile`, if given.
        profile: Option<String>,
        /// The Parameters key's `CustomEvents` lines.
        custom_events: Vec<String>,
    }

    /// How the consumer announces its query (see the module docs).
    #[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    enum ConsumerMode {
        /// One AddCounter per counterset before the samples, one RemoveCounter after (PDH).
        Pdh,
        /// Collects only, never AddCounter (HKEY_PERFORMANCE_DATA, WMI's raw classes).
        Registry,
        /// Two AddCounters and three RemoveCounters per counterset (PCW promises no pairing).
        Unbalanced,
    }

    impl ConsumerMode {
        /// AddCounters before the samples and RemoveCounters after, per counterset.
        fn calls(self) -> (usize, usize) {
            match self {
                ConsumerMode::Pdh => (1, 1),
                ConsumerMode::Registry => (0, 0),
                ConsumerMode::Unbalanced => (2, 3),
            }
        }
    }

    /// Which PDH caller formats the values (see the module docs).
    #[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    enum Formatter {
        /// PDH_FMT_DOUBLE | PDH_FMT_NOCAP100: perfmon, Get-Counter, Telegraf, OpenTelemetry, .NET.
        Uncapped,
        /// PDH_FMT_DOUBLE alone: windows_exporter's formatted path, Grafana Alloy (caps percentages at 100).
        WindowsExporter,
    }

    /// The service's `Profile` values (src/pmu/profile.rs).
    #[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    enum Profile {
        /// The published events.
        Default,
        /// Adds the top-down events where IA32_PERF_METRICS is missing.
        Topdown,
        /// The `--custom-event` lines.
        Custom,
    }

    /// The CPU models `--cpu-model` takes: every model of the double's table (which the configuration
    /// matrix runs too) and the two Hyper-V models with a PMU whose IA32_PERF_METRICS the hypervisor
    /// intercepts (`hyperv_perf_metrics.rs` runs them).
    fn models() -> Vec<(&'static str, &'static CpuModel)> {
        let mut models = cpuid::MODELS.to_vec();
        models.push(("hyperv-root-alder-lake", &cpuid::HYPERV_ROOT_ALDER_LAKE));
        models.push(("hyperv-guest-alder-lake-pmu", &cpuid::HYPERV_GUEST_ALDER_LAKE_PMU));
        models
    }

    /// The Windows builds `--kernel-build` takes: released x64 builds from Windows 10 1903 on (the
    /// oldest the double presents), so that a typo is not taken for a future Windows.
    const KERNEL_BUILDS: &[(u32, &str)] = &[
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
    struct Cli {
        /// The driver image [default: $PMUPCW_PACKAGE_DIR/pmupcw.sys, else target/package/pmupcw/pmupcw.sys]
        #[arg(long, value_name = "PATH")]
        driver: Option<PathBuf>,
        /// Samples to take (a rate or ratio shows a value from the second on)
        #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        samples: u32,
        /// Real time between samples, in milliseconds
        #[arg(long, value_name = "MS", default_value_t = 1000, conflicts_with = "virtual_interval",
              value_parser = clap::value_parser!(u64).range(0..=60_000))]
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

    fn cpu_model(name: &str) -> Result<&'static CpuModel, String> {
        models().into_iter().find(|(known, _)| *known == name).map(|(_, model)| model).ok_or_else(|| {
            let names: Vec<&str> = models().iter().map(|(known, _)| *known).collect();
            format!("unknown CPU model; one of: {}", names.join(", "))
        })
    }

    fn windows_build(text: &str) -> Result<u32, String> {
        let known: Vec<String> = KERNEL_BUILDS.iter().map(|(build, _)| build.to_string()).collect();
        text.parse::<u32>()
            .ok()
            .filter(|build| KERNEL_BUILDS.iter().any(|(known, _)| known == build))
            .ok_or_else(|| format!("not a Windows build the double presents; one of: {}", known.join(", ")))
    }

    fn ipc(text: &str) -> Result<f64, String> {
        text.parse::<f64>()
            .ok()
            .filter(|ipc| (pmu::IPC_RANGE.0..=pmu::IPC_RANGE.1).contains(ipc))
            .ok_or_else(|| "from 0.2 to 4 instructions per cycle".to_string())
    }

    /// The workload unit of `--ipc` and `--frequency` (see the module docs), if either is given.
    fn workload(cli: &Cli) -> Option<(u64, u64, u64)> {
        if cli.ipc.is_none() && cli.frequency.is_none() {
            return None;
        }
        let core_cycles = cli.frequency.unwrap_or(111);
        let ipc = cli.ipc.unwrap_or(0.8);
        Some(((ipc * core_cycles as f64).round() as u64, core_cycles, 100))
    }

    fn virtual_interval(text: &str) -> Result<f64, String> {
        text.parse::<f64>()
            .ok()
            .filter(|seconds| (0.1..=600.0).contains(seconds))
            .ok_or_else(|| "from 0.1 to 600 seconds".to_string())
    }

    /// The lists `--help` ends with: the CPU models and Windows builds.
    fn lists() -> String {
        let mut text = String::from("CPU models (--cpu-model):\n");
        for (name, model) in models() {
            text.push_str(&format!("  {name:<28} {}\n", model.name));
        }
        text.push_str("\nWindows builds (--kernel-build):\n");
        for (build, name) in KERNEL_BUILDS {
            text.push_str(&format!("  {build:<28} {name}\n"));
        }
        text
    }

    /// The options, or the process exits: 0 after `--help` (on stdout), 2 with a message on a bad
    /// argument.
    fn options() -> Options {
        use clap::{CommandFactory, FromArgMatches};
        // cargo-make passes the end-of-options marker of `cargo make run -- ...` on: drop it.
        let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if arguments.get(1).is_some_and(|first| first == "--") {
            arguments.remove(1);
        }
        let command = Cli::command().after_help(lists());
        let mut matches =
            command.clone().try_get_matches_from(arguments).unwrap_or_else(|error| error.exit());
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
            model: cli.cpu_model,
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

    fn host() -> String {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|name| name.trim().to_uppercase())
            .ok()
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "LOCALHOST".into())
    }

    pub fn main() -> i32 {
        let options = options();
        // A hybrid model without a processor count gets the i9-12900K's 24: 16 performance, 8 efficient.
        let processors = options.processors.or(options.model.other_cores.as_ref().map(|_| 24));
        if let Some(processors) = processors {
            topology::configure(processors, processors.min(64));
        }
        cpuid::set_model(options.model);
        kernel_build::set(options.kernel_build);
        println!(
            "# CPU model: {}, {} virtual processors, Windows build {}",
            options.model.name,
            topology::processor_count(),
            options.kernel_build
        );
        set_parameters(&options);
        if let Some((instructions, core_cycles, reference_cycles)) = options.workload {
            if let Err(error) = pmu::set_workload(instructions, core_cycles, reference_cycles) {
                eprintln!("pmupcw-run: {error}");
                return 2;
            }
            println!(
                "# workload: {instructions} instructions in {core_cycles} core cycles per {reference_cycles} \
                 reference cycles (IPC {}, {} % of the reference frequency)",
                instructions as f64 / core_cycles as f64,
                core_cycles as f64 * 100.0 / reference_cycles as f64
            );
        }
        println!(
            "# formatter: {}",
            match options.formatter {
                consumer::Formatter::Uncapped =>
                    "PDH_FMT_DOUBLE | PDH_FMT_NOCAP100 (perfmon, Get-Counter, Telegraf, OpenTelemetry, .NET)",
                consumer::Formatter::WindowsExporter =>
                    "PDH_FMT_DOUBLE (windows_exporter, Grafana Alloy: percentages capped at 100)",
            }
        );
        let manifest_path = options.driver.with_file_name("pmupcw.man");
        let manifest = match std::fs::read_to_string(&manifest_path) {
            Ok(text) => consumer::parse_manifest(&manifest_path.display().to_string(), &text),
            Err(_) => Ok(consumer::manifest()),
        };
        let manifest = match manifest {
            Ok(manifest) => manifest,
            Err(error) => {
                eprintln!("pmupcw-run: {error}");
                return 1;
            }
        };
        let mut driver = match Driver::load(&options.driver) {
            Ok(driver) => driver,
            Err(error) => {
                eprintln!("pmupcw-run: loading {}: {error}", options.driver.display());
                eprintln!("pmupcw-run: build it with `cargo make package` (bash scripts/linux/package.sh)");
                return 1;
            }
        };
        println!("# loaded {} at {:#x}", options.driver.display(), driver.image().base());
        let status = driver.driver_entry();
        println!("# DriverEntry: {status:#x}");
        let mut failed = status != STATUS_SUCCESS;
        if !failed {
            failed |= consume(&manifest, &options);
        }
        let unloaded = driver.unload();
        println!("# DriverUnload: {}", if unloaded { "called" } else { "none set" });
        let report = Report::now();
        println!("# kernel double report:");
        for line in report.to_string().lines() {
            println!("#   {line}");
        }
        failed |= !report.is_clean();
        println!("# result: {}", if failed { "FAIL" } else { "PASS" });
        i32::from(failed)
    }

    /// Writes `--profile` and `--custom-event` into the service's Parameters key, which the driver
    /// reads at each acquisition of the counters.
    fn set_parameters(options: &Options) {
        if let Some(profile) = &options.profile {
            registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz(profile));
            println!("# Parameters: Profile {profile:?}");
        }
        if !options.custom_events.is_empty() {
            let lines: Vec<&str> = options.custom_events.iter().map(String::as_str).collect();
            registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
            println!("# Parameters: CustomEvents {lines:?}");
        }
    }

    /// The query: returns true if something failed.
    fn consume(manifest: &counter_manifest::Manifest, options: &Options) -> bool {
        let mut sets = Vec::new();
        for name in COUNTERSETS {
            match Counterset::open(manifest, name) {
                Ok(set) => sets.push(set),
                Err(error) => {
                    eprintln!("pmupcw-run: {error}");
                    return true;
                }
            }
        }
        let (adds, removes) = options.consumer.calls();
        let mut failed = add_counters(&sets, adds);
        let host = host();
        let Some((last_samples, inexact)) = print_samples(&sets, options, &host) else { return true };
        failed |= inexact;
        failed |= check_perf_objects(&sets, &last_samples, &host);
        failed | remove_counters(&sets, removes)
    }

    /// Lists each counterset's instances and adds all its counters `adds` times (once, as a PDH query
    /// does; see `--consumer`): returns true if something failed.
    fn add_counters(sets: &[Counterset], adds: usize) -> bool {
        let mut failed = false;
        for set in sets {
            match consumer::enumerate(set) {
                Ok(instances) => {
                    let names: Vec<String> =
                        instances.iter().map(|(name, id)| format!("{name:?}={id}")).collect();
                    println!("# {}: {} instances: {}", set.name, instances.len(), names.join(" "));
                }
                Err(error) => {
                    eprintln!("pmupcw-run: {error}");
                    failed = true;
                }
            }
            for _ in 0..adds {
                let status = pcw::add_counter(&set.name, set.full_mask());
                println!("# AddCounter({:?}, {:#x}): {status:x?}", set.name, set.full_mask());
                failed |= status != Some(STATUS_SUCCESS);
            }
        }
        failed
    }

    /// Samples every counterset `options.samples` times, the workload advancing in between, and prints
    /// the typeperf CSV and how its ratios compare with its totals; returns each counterset's last
    /// sample and whether a ratio was off its totals, or None if a sample failed.
    fn print_samples(
        sets: &[Counterset],
        options: &Options,
        host: &str,
    ) -> Option<(Vec<Option<Sample>>, bool)> {
        let mut previous: Vec<Option<Sample>> = vec![None; sets.len()];
        let mut columns = Vec::new();
        let mut paths = Vec::new();
        let mut rows = Vec::new();
        for round in 0..options.samples {
            if round > 0 {
                advance(options);
            }
            let mut values = Vec::new();
            let mut stamp = None;
            for (index, set) in sets.iter().enumerate() {
                let sample = match consumer::sample(set) {
                    Ok(sample) => sample,
                    Err(error) => {
                        eprintln!("pmupcw-run: {error}");
                        return None;
                    }
                };
                if round == 0 {
                    let set_columns = consumer::columns(set, &sample);
                    paths.extend(set_columns.iter().map(|column| consumer::path(host, set, column)));
                    columns.push(set_columns);
                }
                stamp.get_or_insert(sample.unix_millis);
                values.extend(consumer::values(
                    set,
                    &columns[index],
                    previous[index].as_ref(),
                    &sample,
                    options.formatter,
                ));
                previous[index] = Some(sample);
            }
            rows.push(csv::row(&csv::timestamp(stamp.unwrap_or(0)), &values));
        }
        let document = csv::document(&paths, &rows, "\n");
        print!("{document}");
        let inexact = match exactness::parse(&document).map(|document| exactness::check(&document)) {
            Ok(verdict) => {
                println!();
                println!(
                    "# ratios against the 64-bit totals: {} checked ({} idle), {} off",
                    verdict.checked,
                    verdict.idle,
                    verdict.violations.len()
                );
                for violation in &verdict.violations {
                    println!("#   {violation}");
                }
                !verdict.violations.is_empty()
            }
            Err(error) => {
                eprintln!("pmupcw-run: the CSV does not parse: {error}");
                true
            }
        };
        Some((previous, inexact))
    }

    /// The time between two samples, and the work the processors do in it (see the module docs).
    fn advance(options: &Options) {
        let Some(seconds) = options.virtual_interval else {
            std::thread::sleep(options.interval);
            for vp in 0..topology::processor_count() {
                pmu::step(vp, 100_000 * u64::from(vp + 1));
            }
            return;
        };
        const BUSIEST_HZ: f64 = 6e9;
        hal::advance_clock((seconds * hal::PERFORMANCE_FREQUENCY as f64) as i64);
        for vp in 0..topology::processor_count() {
            let cycles = BUSIEST_HZ * seconds * f64::from(vp % 4 + 1) / 4.0;
            pmu::step(vp, (cycles / pmu::rate(pmu::CORE_CYCLES) as f64) as u64);
        }
    }

    /// Formats the last samples as PERF_OBJECT_TYPE blocks, collected into a guarded buffer and into a
    /// PERF_DATA_BLOCK, and prints ExtCounterTestLevel 1's verdict on each: returns true on a fault.
    fn check_perf_objects(sets: &[Counterset], last_samples: &[Option<Sample>], host: &str) -> bool {
        let objects: Vec<Vec<u8>> = sets
            .iter()
            .zip(last_samples)
            .filter_map(|(set, sample)| sample.as_ref().map(|sample| consumer::object_data(set, sample)))
            .map(|object| perf_object::format_object(&object))
            .collect();
        let total: usize = objects.iter().map(Vec::len).sum();
        let mut buffer = perf_object::GuardedBuffer::new(total.next_multiple_of(4096));
        let result = perf_object::collect_into(&mut buffer, &objects);
        let faults = perf_object::validate_collect(&buffer, &result);
        println!();
        println!(
            "# PERF_OBJECT_TYPE: {} objects, {} bytes ({}), ExtCounterTestLevel 1: {}",
            result.num_object_types,
            result.total_bytes,
            objects.iter().map(|object| format!("{} bytes", object.len())).collect::<Vec<_>>().join(" + "),
            if faults.is_empty() { "valid".to_string() } else { format!("{} faults", faults.len()) }
        );
        for fault in &faults {
            println!("#   {fault}");
        }
        let mut failed = !faults.is_empty();
        let last = last_samples.iter().flatten().next();
        let header = perf_object::DataBlockHeader {
            system_name: host.to_string(),
            unix_millis: last.map_or(0, |sample| sample.unix_millis),
            perf_time: last.map_or(0, |sample| sample.time),
            perf_freq: last.map_or(0, |sample| sample.frequency),
        };
        let block = perf_object::format_data_block(&header, &objects);
        let faults = perf_object::validate_data_block(&block);
        println!(
            "# PERF_DATA_BLOCK: {} bytes, {}",
            block.len(),
            if faults.is_empty() { "valid".to_string() } else { format!("{} faults", faults.len()) }
        );
        for fault in &faults {
            println!("#   {fault}");
        }
        failed |= !faults.is_empty();
        failed
    }

    /// Removes every counterset's counters `removes` times: returns true if something failed.
    fn remove_counters(sets: &[Counterset], removes: usize) -> bool {
        let mut failed = false;
        for set in sets {
            for _ in 0..removes {
                let status = pcw::remove_counter(&set.name, set.full_mask());
                println!("# RemoveCounter({:?}): {status:x?}", set.name);
                failed |= status != Some(STATUS_SUCCESS);
            }
        }
        failed
    }
}
