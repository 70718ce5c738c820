//! Shared by the scenarios: where the real driver is, and loading it.

pub mod counting;
pub mod cpu_models;
pub mod death;
pub mod kernel_builds;
pub mod machine_code;
pub mod measure;
pub mod pmi_sweep;
pub mod pool_faults;
pub mod single_step;

use kernel_double::consumer::Counterset;
use kernel_double::driver::Driver;
use kernel_double::report::Report;
use std::path::{Path, PathBuf};

/// The release, signed `pmupcw.sys` that `cargo make package` (scripts/linux/package.sh) builds:
/// `$PMUPCW_PACKAGE_DIR/pmupcw.sys`, by default target/package/pmupcw/pmupcw.sys. A missing image fails
/// the test: it must not pass by running nothing.
pub fn driver_image() -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let directory = std::env::var_os("PMUPCW_PACKAGE_DIR")
        .map_or_else(|| repository.join("target/package/pmupcw"), PathBuf::from);
    let image = directory.join("pmupcw.sys");
    assert!(
        image.is_file(),
        "{} is missing: run `cargo make package` (or `bash scripts/linux/package.sh`) first",
        image.display()
    );
    image
}

/// Loads the real driver.
pub fn load() -> Driver {
    refuse_to_share_a_process();
    let image = driver_image();
    Driver::load(&image).unwrap_or_else(|error| panic!("loading {}: {error}", image.display()))
}

/// Loads the real driver on `model`, runs DriverEntry, and starts a consumer's query of every
/// Hardware Counters counter (the counters are owned from here on): the driver and the counterset
/// as the consumer reads it.
pub fn query_hardware_counters(model: &'static kernel_double::cpu::cpuid::CpuModel) -> (Driver, Counterset) {
    kernel_double::cpu::cpuid::set_model(model);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), kernel_double::status::STATUS_SUCCESS);
    let hardware = Counterset::open(&kernel_double::consumer::manifest(), HARDWARE_COUNTERS).unwrap();
    assert_eq!(
        kernel_double::control::pcw::add_counter(&hardware.name, hardware.full_mask()),
        Some(kernel_double::status::STATUS_SUCCESS)
    );
    (driver, hardware)
}

/// Stops a scenario run by plain `cargo test`, which runs the scenarios as threads of one process:
/// the double's state is per process (the signal handler, GS, the CPU model, the fake kernel's
/// tables), so they would interfere and fail for reasons of their own. cargo-nextest runs each test
/// in its own process and says so in `NEXTEST_EXECUTION_MODE` (https://nexte.st/docs/configuration/env-vars/).
fn refuse_to_share_a_process() {
    let mode = std::env::var("NEXTEST_EXECUTION_MODE").unwrap_or_default();
    assert!(
        mode == "process-per-test",
        "the scenarios need a process each: run them with `cargo nextest run -p kernel-double --test scenarios` \
         (plain `cargo test` runs them as threads of one process, where the double's per-process state is shared)"
    );
}

/// Asserts nothing is left behind and nothing was violated, printing the report otherwise.
#[track_caller]
pub fn assert_clean() {
    let report = Report::now();
    assert!(report.is_clean(), "the driver left state behind or broke rules:\n{report}");
}

/// The hardware counter instance names and ids a topology must produce, in index order.
pub fn expected_processor_instances(groups: &[u32]) -> Vec<(String, u32)> {
    let mut instances = Vec::new();
    for (group, &count) in groups.iter().enumerate() {
        for number in 0..count {
            instances.push((format!("{group},{number}"), group as u32 * 64 + number));
        }
    }
    instances
}

pub const HARDWARE_COUNTERS: &str = "Hardware Counters";
pub const DRIVER_STATUS: &str = "Hardware Counters Driver";
pub const BY_CORE_TYPE: &str = "Hardware Counters by Core Type";
pub const MEMORY_CONTROLLER: &str = "Memory Controller";
/// Manifest id of the first 64-bit total (Instructions Retired) of a Hardware Counters instance; the
/// seven totals follow in the virtual PMU's event order (kernel_double::cpu::pmu::RATES).
pub const FIRST_TOTAL: usize = 7;
/// Manifest id of the per-processor Overflow Interrupts counter.
pub const OVERFLOW_INTERRUPTS: usize = 20;
/// Index of Avg. Collect Time (ns)'s sum (nanoseconds, 64-bit) in the status counterset's values; its
/// base, the collect count, follows.
pub const AVERAGE_COLLECT_TIME: usize = 4;
/// Index of Fresh Collects/sec's count in the status counterset's values; Served Collects/sec's
/// follows.
pub const FRESH_COLLECTS: usize = 15;
/// Index of Minimum Collect Interval (ms) in the status counterset's values.
pub const MINIMUM_COLLECT_INTERVAL: usize = 17;

/// The minimum interval between two fresh reads the driver works with (its status counterset says),
/// in the kernel clock's 100 ns units: a collect closer than that to the last fresh read is served
/// from it.
pub fn minimum_collect_interval_100ns() -> i64 {
    driver_status()[MINIMUM_COLLECT_INTERVAL] as i64 * 10_000
}

/// Every processor's seven totals from one fresh collect ([`collect_totals`]).
pub fn totals() -> Vec<[u64; 7]> {
    collect_totals().into_iter().map(|(totals, _)| totals).collect()
}

/// Every processor's seven totals from one collect now, however soon after the last.
pub fn totals_now() -> Vec<[u64; 7]> {
    collect_totals_now().into_iter().map(|(totals, _)| totals).collect()
}

/// The driver's status counterset values: PMU State, Counters Owned, Overflow Interrupts, ...
pub fn driver_status() -> Vec<u64> {
    let (status, instances) =
        kernel_double::control::pcw::collect(DRIVER_STATUS, &kernel_double::control::pcw::Query::default())
            .expect("the status counterset is registered");
    assert_eq!(status, kernel_double::status::STATUS_SUCCESS);
    assert_eq!(instances.len(), 1, "{instances:?}");
    instances[0].values.clone().expect("the status instance has data")
}

/// One collect of every Hardware Counters instance as a consumer sampling no faster than the driver's
/// minimum collect interval makes it (the kernel's clock moved by that interval first, so the read is
/// fresh): per processor (by instance order), the seven totals and the overflow interrupt count.
pub fn collect_totals() -> Vec<([u64; 7], u64)> {
    kernel_double::control::hal::advance_clock(minimum_collect_interval_100ns());
    collect_totals_now()
}

/// [`collect_totals`] at the clock's time as it is: served from the last read if within the minimum
/// collect interval of it.
pub fn collect_totals_now() -> Vec<([u64; 7], u64)> {
    let (status, instances) = kernel_double::control::pcw::collect(
        HARDWARE_COUNTERS,
        &kernel_double::control::pcw::Query::default(),
    )
    .expect("registered");
    assert_eq!(status, kernel_double::status::STATUS_SUCCESS);
    // Values come in descriptor order; find the counters by their manifest ids.
    let descriptors = kernel_double::control::pcw::descriptors(HARDWARE_COUNTERS).expect("registered");
    let position = |id: usize| {
        descriptors
            .iter()
            .position(|descriptor| usize::from(descriptor.id) == id)
            .unwrap_or_else(|| panic!("no counter with id {id}"))
    };
    let totals_at: [usize; 7] = std::array::from_fn(|event| position(FIRST_TOTAL + event));
    let overflows_at = position(OVERFLOW_INTERRUPTS);
    instances
        .iter()
        .map(|instance| {
            let values = instance.values.as_ref().expect("collect returns data");
            (totals_at.map(|at| values[at]), values[overflows_at])
        })
        .collect()
}

/// One fresh collect of every instance of `counterset` (the kernel's clock moved by the minimum
/// collect interval first): each instance's name, id and values indexed by manifest counter id
/// rather than descriptor order.
pub fn collect_by_id(counterset: &str) -> Vec<(String, u32, Vec<u64>)> {
    kernel_double::control::hal::advance_clock(minimum_collect_interval_100ns());
    let query = kernel_double::control::pcw::Query::default();
    let (status, instances) = kernel_double::control::pcw::collect(counterset, &query).expect("registered");
    assert_eq!(status, kernel_double::status::STATUS_SUCCESS);
    let descriptors = kernel_double::control::pcw::descriptors(counterset).expect("registered");
    let ids = descriptors.iter().map(|descriptor| usize::from(descriptor.id) + 1).max().unwrap_or(0);
    instances
        .into_iter()
        .map(|instance| {
            let values = instance.values.expect("collect returns data");
            let mut by_id = vec![0; ids];
            for (descriptor, value) in descriptors.iter().zip(values) {
                by_id[usize::from(descriptor.id)] = value;
            }
            (instance.name, instance.id, by_id)
        })
        .collect()
}

/// Owns the whole PMU through the double's HAL, as a client outside the driver would (no group
/// affinity, no resource list, so no overflow handler): tests that program the virtual PMU themselves.
/// Returns the handle for [`free_pmu`].
pub fn own_whole_pmu() -> usize {
    let mut handle = 0usize;
    // SAFETY: whole-PMU allocation (no affinity, no list) with a valid handle output.
    let status = unsafe {
        kernel_double::exports::hal::hal_allocate_hardware_counters(0, 0, std::ptr::null(), &mut handle)
    };
    assert_eq!(status, kernel_double::status::STATUS_SUCCESS);
    handle
}

/// Frees what [`own_whole_pmu`] owned.
pub fn free_pmu(handle: usize) {
    // SAFETY: a handle from own_whole_pmu, freed once.
    let status = unsafe { kernel_double::exports::hal::hal_free_hardware_counters(handle) };
    assert_eq!(status, kernel_double::status::STATUS_SUCCESS);
}

/// What the virtual PMU says each processor's seven totals must be.
///
/// On an AMD processor with MPERF (CPUID.06H:ECX\[0\]) the reference cycles are MPERF's count: it
/// counts at the P0 frequency while the core is in C0 (AMD APM Vol. 2, "Effective Frequency
/// Interface"), and the driver counts them from it, where no core counter counts them. The scenarios
/// run no work on a processor before the driver first owns the counters, nor while they are released.
pub fn true_totals(processors: u32) -> Vec<[u64; 7]> {
    use kernel_double::cpu::{cpuid, frequency, pmu};
    (0..processors)
        .map(|vp| {
            let mut totals: [u64; 7] = std::array::from_fn(|event| pmu::counted(vp, event));
            if matches!(cpuid::model_of(vp).pmu, cpuid::PmuKind::Amd { .. }) && frequency::present(vp) {
                totals[pmu::REFERENCE_CYCLES] = frequency::counted(vp).1;
            }
            totals
        })
        .collect()
}

/// Whether this process can read the byte at `address` (without faulting).
pub fn readable(address: usize) -> bool {
    let mut byte = 0u8;
    let local = libc::iovec { iov_base: (&raw mut byte).cast(), iov_len: 1 };
    let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: 1 };
    // SAFETY: reads one byte of this process into `byte`; an unreadable address fails the call.
    unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) == 1 }
}

/// Lets the kernel's clock run until `released()`: moves it forward in 100 ms steps, giving the
/// driver's housekeeping thread a moment after each, instead of sleeping through the release
/// hysteresis in real time. Returns how much time passed on the driver's clock
/// (KeQueryPerformanceCounter) before the release; fails past `limit` of it.
pub fn until_released(released: impl Fn() -> bool, limit: std::time::Duration) -> std::time::Duration {
    use kernel_double::control::hal;
    let started = hal::clock();
    let elapsed = || std::time::Duration::from_nanos((hal::clock() - started) as u64 * 100);
    while !released() {
        assert!(
            elapsed() < limit,
            "the counters were never released ({:?} on the kernel's clock)",
            elapsed()
        );
        tick_kernel_clock();
    }
    elapsed()
}

/// Moves the kernel's clock forward by 100 ms (waking every timed wait) and gives the threads a
/// timeout woke a moment to run.
pub fn tick_kernel_clock() {
    use kernel_double::control::hal;
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY / 10);
    std::thread::sleep(std::time::Duration::from_millis(5));
}
