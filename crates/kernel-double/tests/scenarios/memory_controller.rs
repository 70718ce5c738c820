//! The real pmupcw.sys on every platform of `kernel_double::platform::PLATFORMS`: the Memory
//! Controller State it publishes (counting where a memory controller of a listed model may be
//! mapped, else why not, with nothing mapped and the core counters unaffected), and on Skylake's
//! 32-bit counters at 60 GB/s, 10-minute virtual samples exact across the wraps.

use crate::common::{self, DRIVER_STATUS, HARDWARE_COUNTERS, MEMORY_CONTROLLER};

use kernel_double::control::{hal, memory, pcw};
use kernel_double::cpu::{cpuid, topology};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

/// Manifest ids: Hardware Counters Driver's Memory Controller State and PMU State; Memory
/// Controller's DRAM Read Bytes and DRAM Write Bytes totals.
const MEMORY_CONTROLLER_STATE: usize = 18;
const PMU_STATE: usize = 0;
const READ_BYTES: usize = 3;
const WRITE_BYTES: usize = 4;
/// The status values (`src/imc/status.rs`).
const COUNTING: u64 = 1;
const UNSUPPORTED_MODEL: u64 = 2;
const NO_DEVICE: u64 = 3;
const MCHBAR_DISABLED: u64 = 4;
const UNDER_HYPERVISOR: u64 = 5;

/// A collected instance: name, id, values by manifest id.
type Instance = (String, u32, Vec<u64>);

/// Loads the driver on platform `name` with 4 processors, queries Memory Controller (AddCounter,
/// then a collect) and Hardware Counters, and returns the driver, the Memory Controller instances
/// and the status counterset by id.
fn load_on(name: &str) -> (kernel_double::driver::Driver, Vec<Instance>, Vec<u64>) {
    let (model, platform) = memory::named(name).unwrap_or_else(|| panic!("no platform {name}"));
    topology::configure(4, 4);
    cpuid::set_model(model);
    memory::set(platform);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    pcw::add_counter(MEMORY_CONTROLLER, 0);
    let instances = common::collect_by_id(MEMORY_CONTROLLER);
    let status = common::collect_by_id(DRIVER_STATUS).remove(0).2;
    (driver, instances, status)
}

/// A platform that must not count: the status is `expected`, nothing is mapped, the counterset has
/// no instance, the core counters keep their own state, and unload is clean.
fn refused(name: &str, expected: u64) {
    let (mut driver, instances, status) = load_on(name);
    assert_eq!(status[MEMORY_CONTROLLER_STATE], expected, "{name}: Memory Controller State");
    assert_eq!(memory::mappings(), [], "{name}: mapped");
    assert_eq!(instances, [], "{name}: instances");
    let before = status[PMU_STATE];
    common::collect_by_id(HARDWARE_COUNTERS);
    let after = common::collect_by_id(DRIVER_STATUS).remove(0).2[PMU_STATE];
    // The core PMU goes its own way: idle (0) becomes active (1) on a PMU that counts, an unusable
    // one keeps its reason.
    assert!(after == before || (before == 0 && after == 1), "{name}: PMU State {before} then {after}");
    assert!(driver.unload());
    assert_eq!(violations::all(), [], "{name}");
    common::assert_clean();
}

/// A platform that counts: status counting, one mapping per controller, an instance each.
fn counts(name: &str) {
    let (mut driver, instances, status) = load_on(name);
    assert_eq!(status[MEMORY_CONTROLLER_STATE], COUNTING, "{name}: Memory Controller State");
    let controllers = memory::controllers() as usize;
    assert_eq!(memory::mappings().len(), controllers, "{name}: one page per controller");
    let names: Vec<&str> = instances.iter().map(|(name, _, _)| name.as_str()).collect();
    assert_eq!(names, ["0,0", "0,1"][..controllers], "{name}");
    assert!(driver.unload());
    assert_eq!(memory::mappings(), [], "{name}: a page still mapped at unload");
    assert_eq!(violations::all(), [], "{name}");
    common::assert_clean();
}

macro_rules! platform_tests {
    ($($test:ident: $name:literal => $expected:expr;)*) => {$(
        #[test]
        fn $test() {
            match $expected {
                COUNTING => counts($name),
                refusal => refused($name, refusal),
            }
        }
    )*};
}

platform_tests! {
    skylake_counts: "skylake" => COUNTING;
    skylake_unknown_bridge_is_no_device: "skylake-unknown-bridge" => NO_DEVICE;
    skylake_mchbar_disabled: "skylake-mchbar-disabled" => MCHBAR_DISABLED;
    ice_lake_counts: "ice-lake" => COUNTING;
    tiger_lake_u_counts: "tiger-lake-u" => COUNTING;
    alder_lake_counts: "alder-lake" => COUNTING;
    alder_lake_hybrid_counts: "alder-lake-hybrid" => COUNTING;
    meteor_lake_hybrid_counts: "meteor-lake-hybrid" => COUNTING;
    sapphire_rapids_is_unsupported: "sapphire-rapids" => UNSUPPORTED_MODEL;
    zen4_is_unsupported: "zen4" => UNSUPPORTED_MODEL;
    hyperv_root_counts: "hyperv-root-alder-lake" => COUNTING;
    hyperv_gen1_guest_is_refused: "hyperv-guest-alder-lake-pmu" => UNDER_HYPERVISOR;
    hyperv_mirrored_bridge_guest_is_refused: "hyperv-guest-mirrored-bridge" => UNDER_HYPERVISOR;
    hyperv_guest_without_pmu_is_refused: "hyperv-no-pmu" => UNDER_HYPERVISOR;
    kvm_emerald_rapids_is_unsupported: "kvm-emerald-rapids-no-pmu" => UNSUPPORTED_MODEL;
    kvm_genoa_is_unsupported: "kvm-genoa-no-pmu" => UNSUPPORTED_MODEL;
}

/// Every platform of the double has a test above.
#[test]
fn every_platform_is_covered() {
    let source = include_str!("memory_controller.rs");
    for (name, _, _) in memory::PLATFORMS.iter() {
        assert!(source.contains(&format!("\"{name}\" =>")), "no status test for platform {name}");
    }
}

/// Skylake's 32-bit counters at 60 GB/s (reads) and 20 GB/s (writes), sampled every 10 virtual
/// minutes while a dashboard collects every minute (`memory_traffic_runs.rs` runs a sole 10-minute
/// consumer). Neither consumer reads often enough to see each wrap (the read counter wraps every
/// 4.6 s, about 130 times a minute): the housekeeping thread's 1 s poll does, and every 10-minute
/// interval's DRAM Read and Write Bytes deltas equal the traffic model's truth.
#[test]
fn skylake_at_60_gbps_is_exact_over_ten_minute_samples() {
    // Only the steps below move the clock (and the traffic): what the driver read is then the truth
    // at a moment the test knows, however slowly a loaded machine runs it.
    hal::stop_host_clock();
    let (mut driver, _, status) = load_on("skylake");
    assert_eq!(status[MEMORY_CONTROLLER_STATE], COUNTING);
    // The dashboard's collect: DRAM Read and Write Bytes, and the traffic model's truth then (the
    // stopped clock does not move while the driver reads, so the truth beside it is what it saw).
    let sample = || {
        let instances = common::collect_by_id(MEMORY_CONTROLLER);
        let truth = memory::truth(0);
        (instances[0].2[READ_BYTES], instances[0].2[WRITE_BYTES], truth)
    };
    // A minute at 60 GB/s of reads and 20 GB/s of writes in steps of the 1 s poll period. After each
    // step the housekeeping thread polls or, idle past its limit, releases the mapping, and the test
    // goes on only once it is parked again (a poll at most a step late still sees every wrap, 4.6 s
    // apart), whatever the machine's load. Then the dashboard's collect.
    let minute = || {
        memory::set_traffic(60_000_000_000, 20_000_000_000);
        hal::advance_clock_by_seconds(60 * hal::PERFORMANCE_FREQUENCY);
        sample()
    };
    // The dashboard's first minute sets its cadence (until then the driver knows only collects 10 ms
    // apart, and releases 2 s after the last: the hysteresis).
    let mut last = minute();
    for interval in 0..3 {
        let mut now = minute();
        for _ in 1..10 {
            now = minute();
        }
        let counted = (now.0 - last.0, now.1 - last.1);
        let moved = (now.2.read - last.2.read, now.2.write - last.2.write);
        assert_eq!(counted, moved, "interval {interval}");
        assert!(moved.0 > 600 * 59_000_000_000, "interval {interval}: {moved:?}");
        last = now;
    }
    assert_eq!(common::collect_by_id(DRIVER_STATUS)[0].2[MEMORY_CONTROLLER_STATE], COUNTING);
    assert!(driver.unload());
    assert_eq!(violations::all(), []);
}
