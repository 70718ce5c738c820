//! Exact counts under an interrupt storm: a virtual 48-bit PMU started near its wrap point gets a storm of
//! overflow interrupts (10^6 across the processors) while 16 collector threads collect through the
//! real driver's callback. Every delta between a collector's successive collects, per instance and
//! counter, is >= 0; no reported value ever exceeds what the workload has really counted (a wrap
//! counted twice would); and after the workload stops, one more collect reports exactly the workload's
//! totals.
//!
//! The workload thread steps each virtual processor in turn by `UNITS` of work, which moves the core
//! cycles counter by 99% of 2^48 (so it wraps on almost every step) and the other counters by their
//! fixed ratios. Overflow interrupts are delivered between the emulated instructions of whoever
//! occupies the processor (a collector's broadcast worker, at IPI_LEVEL, which PROFILE_LEVEL
//! interrupts on x64) or, when it is free, by the workload thread as that processor (cpu/pmu/delivery.rs).
//! Each 48-bit counter may wrap at most 65535 times before its 64-bit total would itself wrap, which
//! caps the steps per processor: 16 processors give the 10^6 interrupts. The storm stops at its
//! interrupt count; one that cannot reach it within its time limit fails.

use crate::common;

use common::*;
use kernel_double::control::pcw;
use kernel_double::cpu::{self, cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const PROCESSORS: u32 = 16;
const COLLECTORS: u32 = 16;
/// Core cycles per step: 99% of 2^48 (RATES[CORE_CYCLES] = 20 per unit).
const UNITS: u64 = (1u64 << 48) / 100 * 99 / 20;
/// Steps per processor: the cycles counter wraps about 0.99 times per step, < 65535 wraps in all.
const STEPS: u64 = 64_000;
const TARGET_INTERRUPTS: u64 = 1_000_000;
/// The storm must reach its interrupts within this time (about 55 s on a loaded 2-core machine): a
/// storm that stopped on the clock would prove nothing, so past it the test fails.
const TIME_LIMIT: Duration = Duration::from_secs(240);

#[test]
fn overflow_storm_with_sixteen_collectors() {
    topology::configure(PROCESSORS, 64);
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert_eq!(driver_status()[1], 7, "counters owned");
    // Every programmed counter of every processor starts a little below its wrap point.
    for vp in 0..PROCESSORS {
        for (msr, _) in pmu::programmed_counters(vp) {
            pmu::preload(vp, msr, (1 << 48) - 1 - u64::from(vp) * 1000 - u64::from(msr));
        }
    }

    let stop = AtomicBool::new(false);
    let collects = AtomicU64::new(0);
    let started = Instant::now();
    let steps_done = std::thread::scope(|scope| {
        for collector in 0..COLLECTORS {
            let (stop, collects) = (&stop, &collects);
            scope.spawn(move || collect_until_stopped(collector, stop, collects));
        }
        let workload = scope.spawn(|| run_workload(started));
        let steps = workload.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        steps
    });
    let elapsed = started.elapsed();
    let delivered = pmu::delivered();
    println!(
        "{delivered} overflow interrupts ({} inside broadcast workers; {steps_done} steps on each of \
         {PROCESSORS} processors) and {} collects by {COLLECTORS} threads in {elapsed:.2?}",
        pmu::delivered_to_occupant(),
        collects.load(Ordering::Relaxed)
    );
    assert!(pmu::delivered_to_occupant() > 0, "no interrupt landed inside a collect");

    // The workload has stopped: one more collect must report the exact totals.
    let collected = collect_totals();
    let truth = true_totals(PROCESSORS);
    for (vp, ((totals, _), expected)) in collected.iter().zip(&truth).enumerate() {
        assert_eq!(totals, expected, "processor {vp}'s final totals");
    }
    let folded: u64 = collected.iter().map(|(_, overflows)| overflows).sum();
    assert_eq!(folded, delivered, "overflow interrupts the handler counted");
    assert_eq!(driver_status()[2], delivered, "the status counterset's overflow interrupts");
    assert!(collects.load(Ordering::Relaxed) >= u64::from(COLLECTORS), "the collectors barely ran");
    assert!(
        delivered >= TARGET_INTERRUPTS,
        "only {delivered} of {TARGET_INTERRUPTS} interrupts before the {TIME_LIMIT:?} limit ({elapsed:?})"
    );

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}

/// One collector thread: collects until `stop`, checking that no total goes backwards and none
/// exceeds what the workload has really counted.
fn collect_until_stopped(collector: u32, stop: &AtomicBool, collects: &AtomicU64) {
    cpu::enter(collector % PROCESSORS);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let mut previous = vec![[0u64; 7]; PROCESSORS as usize];
    let mut previous_overflows = vec![0u64; PROCESSORS as usize];
    while !stop.load(Ordering::Relaxed) {
        let collected = collect_totals();
        let truth = true_totals(PROCESSORS);
        assert_eq!(collected.len(), PROCESSORS as usize);
        for (vp, (totals, overflows)) in collected.iter().enumerate() {
            for event in 0..7 {
                assert!(
                    totals[event] >= previous[vp][event],
                    "collector {collector}: processor {vp} event {event} went from {} to {}",
                    previous[vp][event],
                    totals[event]
                );
                assert!(
                    totals[event] <= truth[vp][event],
                    "collector {collector}: processor {vp} event {event} reported {} > true {}",
                    totals[event],
                    truth[vp][event]
                );
            }
            assert!(*overflows >= previous_overflows[vp]);
        }
        previous = collected.iter().map(|(totals, _)| *totals).collect();
        previous_overflows = collected.iter().map(|(_, overflows)| *overflows).collect();
        collects.fetch_add(1, Ordering::Relaxed);
    }
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
}

/// The workload thread: steps every processor in turn until the interrupt target, the step cap or
/// the time limit; returns the steps made on each processor.
fn run_workload(started: Instant) -> u64 {
    cpu::enter(0);
    let mut steps = 0;
    'run: for _ in 0..STEPS {
        for vp in 0..PROCESSORS {
            pmu::step(vp, UNITS);
        }
        steps += 1;
        if pmu::delivered() >= TARGET_INTERRUPTS || started.elapsed() > TIME_LIMIT {
            break 'run;
        }
    }
    steps
}
