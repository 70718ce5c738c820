//! A consumer sampling every second never gets two samples from one fresh read, whatever minimum
//! collect interval the administrator sets (Parameters\MinimumCollectIntervalMs): otherwise PDH shows
//! every ratio of that sample as 0 with a valid status (a zero base delta gives 0, as PDH does) and the
//! rates as 0, then a doubled rate. A real sampler's period jitters: it waits for the period's tick and
//! then collects, so a sample that ran late (a busy machine, a slow provider in the same query) is
//! followed by one that comes early (here up to 150 ms late).
//!
//! With the largest interval the driver accepts, and with 1000 ms (the largest earlier versions
//! accepted, which the driver now rejects for the default), every sample of every counter that counts
//! over the run counts in every one-second sample.

use crate::common::{self, HARDWARE_COUNTERS, MINIMUM_COLLECT_INTERVAL};

use kernel_double::consumer::pdh::Value;
use kernel_double::consumer::{self, Counterset};
use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD};
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// The sampler's nominal period: one second, typeperf's `-si 1` and perfmon's default.
const PERIOD_100NS: i64 = 10_000_000;
/// How late each sample runs after its tick (100 ns units): 0 to 150 ms, in an order that makes some
/// gaps between samples shorter than the period (late, then on time).
const LATENESS_100NS: [i64; 8] = [0, 1_500_000, 0, 800_000, 10_000, 1_200_000, 0, 300_000];
/// The largest MinimumCollectIntervalMs the driver accepts (docs/security.md).
const LARGEST_INTERVAL_MS: u32 = 100;

/// Samples once a second (late by [`LATENESS_100NS`]) with the interval set to `set_ms`, the
/// processors working between samples; checks that the driver works with `in_force_ms` and that no
/// pair of consecutive samples shows a counted counter as 0.
fn sample_every_second(set_ms: u32, in_force_ms: u64) {
    registry::set_value(PARAMETERS_KEY, "MinimumCollectIntervalMs", REG_DWORD, set_ms.to_le_bytes().to_vec());
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let set = Counterset::open(&consumer::manifest(), HARDWARE_COUNTERS).unwrap();
    assert_eq!(pcw::add_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));

    let mut samples = vec![consumer::sample(&set).unwrap()];
    let columns = consumer::columns(&set, &samples[0]);
    let mut late = 0;
    for &lateness in LATENESS_100NS.iter().cycle().take(24) {
        // The processors run until the next tick, then the sample comes `lateness` after it.
        for vp in 0..topology::processor_count() {
            pmu::step(vp, 1_000 * (1 + u64::from(vp)));
        }
        hal::advance_clock(PERIOD_100NS - late + lateness);
        late = lateness;
        samples.push(consumer::sample(&set).unwrap());
    }
    let whole_run = consumer::values(
        &set,
        &columns,
        samples.first(),
        samples.last().unwrap(),
        consumer::Formatter::Uncapped,
    );
    let mut checked = 0;
    for pair in samples.windows(2) {
        let seconds = (pair[1].time - pair[0].time) as f64 / pair[1].frequency as f64;
        let values =
            consumer::values(&set, &columns, Some(&pair[0]), &pair[1], consumer::Formatter::Uncapped);
        for ((column, value), over_run) in columns.iter().zip(&values).zip(&whole_run) {
            let counted = matches!(over_run, Value::Value(v) if *v != 0.0);
            if counted {
                checked += 1;
                assert!(
                    matches!(value, Value::Value(v) if *v != 0.0),
                    "{set_ms} ms set: {} of {:?} reads {value:?} in a sample {seconds:.3} s after the last \
                     (over the whole run {over_run:?})",
                    set.counters[column.counter].name,
                    column.instance
                );
            }
        }
    }
    assert!(checked > 0, "nothing counted");
    assert_eq!(common::driver_status()[MINIMUM_COLLECT_INTERVAL], in_force_ms, "{set_ms} ms set");
    assert_eq!(pcw::remove_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn a_one_second_sampler_never_gets_two_samples_from_one_read() {
    topology::configure(PROCESSORS, 64);
    cpuid::set_model(&cpuid::SKYLAKE);
    // What earlier versions accepted is now out of range: the default, 10 ms.
    sample_every_second(1000, 10);
    sample_every_second(LARGEST_INTERVAL_MS, u64::from(LARGEST_INTERVAL_MS));
}
