//! PERF_METRICS overflow on Sapphire Rapids: fixed counter 3 (TOPDOWN.SLOTS) wraps at 48 bits while
//! EN_PERF_METRICS is set, which sets IA32_PERF_GLOBAL_STATUS bits 35 and 48
//! (`pmu::perf_metrics_overflow`'s sources). Every slot must still be published, exactly:
//!
//! * a wrap the next collect finds pending (bits 35 and 48 still set);
//! * a wrap whose status bits the HAL clears first, because another counter's overflow interrupt came
//!   in between (the HAL writes back every status bit it read after calling the owner's handler);
//! * and the gap between two reads is bounded without any consumer: with no collect for a minute on
//!   the kernel's clock, the housekeeping thread reads (and zeroes) fixed counter 3.

use crate::common;

use kernel_double::consumer::{self, Counterset, Sample};
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::driver::Driver;
use kernel_double::status::STATUS_SUCCESS;

/// Manifest ids of the slot totals: all slots, then the four categories.
const SLOTS_TOTAL: u32 = 29;
const CATEGORY_TOTALS: [u32; 4] = [30, 31, 32, 33];
const IA32_FIXED_CTR0: u32 = 0x309;
const IA32_FIXED_CTR3: u32 = 0x30C;
const WRAP: u64 = 1 << 48;
/// The processor whose fixed counter 3 wraps.
const VP: u32 = 1;

fn published(hardware: &Counterset, sample: &Sample, vp: u32) -> (u64, [u64; 4]) {
    let values = sample.values_of(hardware, &format!("0,{vp}")).expect("instance sampled");
    let value = |id: u32| values[hardware.index_of(id).unwrap()].expect("value");
    (value(SLOTS_TOTAL), CATEGORY_TOTALS.map(value))
}

/// Loads the driver on Sapphire Rapids, opens a query of every Hardware Counters counter and takes a
/// first sample (the session is open and programmed after it).
fn start() -> (Driver, Counterset) {
    cpuid::set_model(&cpuid::SAPPHIRE_RAPIDS);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let hardware = Counterset::open(&consumer::manifest(), "Hardware Counters").unwrap();
    assert_eq!(pcw::add_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    for vp in 0..topology::processor_count() {
        pmu::step(vp, 1_000);
    }
    consumer::sample(&hardware).unwrap();
    (driver, hardware)
}

/// Moves `vp`'s fixed counter 3 to within `slots` slots of its wrap (by whole workload units, which
/// IA32_PERF_METRICS splits in the workload's mix).
fn near_the_wrap(vp: u32, slots: u64) {
    let per_unit = pmu::RATES[pmu::TOPDOWN_SLOTS];
    let now = pmu::foreign_read(vp, IA32_FIXED_CTR3);
    pmu::preload(vp, IA32_FIXED_CTR3, now + (WRAP - slots - now) / per_unit * per_unit);
}

/// Every slot fixed counter 3 counted on `vp` is published, split so that the four categories sum to
/// it, each within one IA32_PERF_METRICS step (1/255) of the read's slots of the virtual PMU's truth.
fn assert_every_slot_published(hardware: &Counterset, vp: u32) {
    let sample = consumer::sample(hardware).unwrap();
    let (slots, categories) = published(hardware, &sample, vp);
    let counted = pmu::counted(vp, pmu::TOPDOWN_SLOTS);
    assert!(counted > WRAP, "the scenario wrapped fixed counter 3 ({counted} slots counted)");
    assert_eq!(slots, counted, "published slots across a fixed counter 3 overflow");
    assert_eq!(categories.iter().sum::<u64>(), slots, "categories {categories:?}");
    let truth = pmu::topdown_counted(vp);
    for (category, (&shown, &truth)) in categories.iter().zip(&truth).enumerate() {
        assert!(
            shown.abs_diff(truth) <= slots / 255 + 3,
            "category {category}: {shown} published, truth {truth}"
        );
    }
    let status = pmu::foreign_read(vp, 0x38E);
    assert_eq!(status & ((1 << 35) | (1 << 48)), 0, "the overflow bits were left set: {status:#x}");
}

fn finish(mut driver: Driver, hardware: &Counterset) {
    assert_eq!(pcw::remove_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn slots_across_a_pending_perf_metrics_overflow_are_exact() {
    let (driver, hardware) = start();
    near_the_wrap(VP, 60_000);
    // 120,000 slots: fixed counter 3 wraps, and bits 35 and 48 wait for the next read.
    pmu::step(VP, 1_000);
    let status = pmu::foreign_read(VP, 0x38E);
    assert_eq!(status & ((1 << 35) | (1 << 48)), (1 << 35) | (1 << 48), "status {status:#x}");
    assert_every_slot_published(&hardware, VP);
    finish(driver, &hardware);
}

#[test]
fn slots_across_an_overflow_the_hal_acknowledged_are_exact() {
    let (driver, hardware) = start();
    near_the_wrap(VP, 60_000);
    // Fixed counter 0 (instructions, with its PMI bit) wraps in the same step: the HAL calls the
    // handler and clears every status bit it read, bits 35 and 48 included, before any read.
    let instructions = pmu::foreign_read(VP, IA32_FIXED_CTR0);
    pmu::preload(VP, IA32_FIXED_CTR0, instructions + (WRAP - 8_000 - instructions));
    let delivered = pmu::delivered();
    pmu::step(VP, 1_000);
    assert!(pmu::delivered() > delivered, "no overflow interrupt was delivered");
    let status = pmu::foreign_read(VP, 0x38E);
    assert_eq!(status & ((1 << 35) | (1 << 48)), 0, "the HAL left status {status:#x}");
    assert_every_slot_published(&hardware, VP);
    finish(driver, &hardware);
}

#[test]
fn the_housekeeping_thread_reads_perf_metrics_within_a_minute_without_consumers() {
    let (driver, hardware) = start();
    // Collects 30 s apart (the query kept active in between): the session stays owned for 3 x 30 s
    // without a collect.
    for tick in 0..300 {
        if tick % 10 == 0 {
            assert_eq!(pcw::add_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
        }
        common::tick_kernel_clock();
    }
    consumer::sample(&hardware).unwrap();
    pmu::step(VP, 1_000);
    assert!(pmu::foreign_read(VP, IA32_FIXED_CTR3) >= 120_000, "fixed counter 3 counts");
    let started = hal::clock();
    let mut seconds = 0;
    while pmu::foreign_read(VP, IA32_FIXED_CTR3) >= 120_000 {
        assert!(seconds <= 61, "no read of fixed counter 3 in {seconds} s without a consumer");
        common::tick_kernel_clock();
        seconds = (hal::clock() - started) / hal::PERFORMANCE_FREQUENCY;
    }
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { .. })), "the session is still open");
    eprintln!("fixed counter 3 read after {seconds} s without a consumer");
    let sample = consumer::sample(&hardware).unwrap();
    assert_eq!(published(&hardware, &sample, VP).0, pmu::counted(VP, pmu::TOPDOWN_SLOTS));
    finish(driver, &hardware);
}
