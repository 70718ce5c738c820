//! The run of `pmupcw-run`: loads the driver, sets its Parameters, adds the counters, samples and
//! prints the CSV with its exactness check, formats PERF_OBJECT_TYPE blocks, removes the counters,
//! unloads the driver and prints the double's end-of-run report; exits 1 on any fault.

use super::options::*;
use super::{dram_truth, workload_truth};
use kernel_double::consumer::{self, Counterset, Sample, csv, exactness, perf_object};
use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_MULTI_SZ, REG_SZ};
use kernel_double::control::{hal, memory, pcw};
use kernel_double::cpu::cpuid;
use kernel_double::cpu::{pmu, topology};
use kernel_double::driver::Driver;
use kernel_double::kernel_build;
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;

const COUNTERSETS: [&str; 4] =
    ["Hardware Counters", "Hardware Counters by Core Type", "Hardware Counters Driver", "Memory Controller"];

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
    if let Some(platform) = options.platform {
        memory::set(platform);
    }
    kernel_build::set(options.kernel_build);
    println!(
        "# CPU model: {}, {} virtual processors, Windows build {}",
        options.model.name,
        topology::processor_count(),
        options.kernel_build
    );
    set_parameters(&options);
    // Only the samples' intervals move the clock: the driver's housekeeping thread then acts at the
    // moments the intervals end, never in the middle of the workload's steps however slow they are
    // on a loaded machine, and what a collect reads is the traffic model's truth at a known moment.
    hal::stop_host_clock();
    let (read, write) = options.dram_traffic;
    memory::set_traffic(read, write);
    println!(
        "# platform: {}; DRAM traffic {read} bytes/s read, {write} bytes/s written, over {} memory controllers",
        memory::current().name,
        memory::controllers()
    );
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
fn print_samples(sets: &[Counterset], options: &Options, host: &str) -> Option<(Vec<Option<Sample>>, bool)> {
    let mut previous: Vec<Option<Sample>> = vec![None; sets.len()];
    let mut columns = Vec::new();
    let mut paths = Vec::new();
    let mut rows = Vec::new();
    let mut traffic = Vec::new();
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
        traffic.push(dram_truth::Moved::now());
    }
    let document = csv::document(&paths, &rows, "\n");
    print!("{document}");
    let document = match exactness::parse(&document) {
        Ok(document) => document,
        Err(error) => {
            eprintln!("pmupcw-run: the CSV does not parse: {error}");
            return Some((previous, true));
        }
    };
    Some((previous, check_document(&document, options, &traffic)))
}

/// The checks of the printed CSV: its ratios against its totals, and on what the runner knows moved
/// (the workload's cycles on the virtual clock, the DRAM traffic): returns true if one failed.
fn check_document(document: &exactness::Document, options: &Options, traffic: &[dram_truth::Moved]) -> bool {
    let verdict = exactness::check(document);
    println!();
    println!(
        "# ratios and rates against the 64-bit totals: {} ratios checked ({} idle), {} rates, {} off",
        verdict.checked,
        verdict.idle,
        verdict.rates,
        verdict.violations.len()
    );
    for violation in &verdict.violations {
        println!("#   {violation}");
    }
    let mut inexact = !verdict.violations.is_empty();
    if let Some(seconds) = options.virtual_interval {
        // A processor without a PMU (a guest's, or leaf 0xA zero) ran the work but counts none of it.
        let cycles = |vp| match cpuid::model_of(vp).pmu {
            cpuid::PmuKind::None => 0,
            _ => virtual_interval_units(vp, seconds) * pmu::rate(pmu::CORE_CYCLES),
        };
        let (checked, off) = workload_truth::check(document, cycles);
        println!(
            "# core cycles against the workload: {checked} processor intervals checked, {} off",
            off.len()
        );
        for line in off.iter().take(12) {
            println!("#   {line}");
        }
        inexact |= checked == 0 || !off.is_empty();
    }
    let counts = memory::current().controller_base(0).is_some();
    let (checked, absent, off) = dram_truth::check(document, traffic);
    println!(
        "# DRAM against the traffic model: {checked} values checked, {absent} without a value ({}), {} off",
        if counts { "a memory controller counts" } else { "no memory controller: none expected" },
        off.len()
    );
    for line in off.iter().take(12) {
        println!("#   {line}");
    }
    // Where a memory controller counts, every interval's values are compared; where none does, the
    // counterset has no instance, and `_Total` no value.
    let compared = if counts { options.samples < 2 || (checked > 0 && absent == 0) } else { checked == 0 };
    inexact | !off.is_empty() | !compared
}

/// The time between two samples, and the work the processors do in it (see `docs/kernel-double.md`,
/// "`pmupcw-run`").
fn advance(options: &Options) {
    let Some(seconds) = options.virtual_interval else {
        std::thread::sleep(options.interval);
        for vp in 0..topology::processor_count() {
            pmu::step(vp, 100_000 * u64::from(vp + 1));
        }
        pass(options.interval.as_secs_f64());
        return;
    };
    // The interval's work, then its end: what the driver's housekeeping thread does when the time
    // has passed (a release after an idle limit shorter than the interval, say) comes after the work,
    // as at the end of a real interval, instead of racing the steps.
    for vp in 0..topology::processor_count() {
        pmu::step(vp, virtual_interval_units(vp, seconds));
    }
    pass(seconds);
}

/// Moves the kernel's clock by `seconds`, a second at a time, each step once the driver's system
/// threads have done what came due in it (its housekeeping thread polls 32-bit memory controller
/// counters every second: a ten-minute jump would let them wrap unseen, which no real clock does).
fn pass(seconds: f64) {
    hal::advance_clock_by_seconds((seconds * hal::PERFORMANCE_FREQUENCY as f64).round() as i64);
}

/// The workload units processor `vp` runs in a virtual interval of `seconds`: (vp mod 4 + 1) / 4 of
/// the interval at 6 GHz.
fn virtual_interval_units(vp: u32, seconds: f64) -> u64 {
    const BUSIEST_HZ: f64 = 6e9;
    let cycles = BUSIEST_HZ * seconds * f64::from(vp % 4 + 1) / 4.0;
    (cycles / pmu::rate(pmu::CORE_CYCLES) as f64) as u64
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
