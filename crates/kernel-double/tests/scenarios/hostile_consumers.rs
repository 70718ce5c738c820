//! Hostile consumers: what a local process that may query performance counters can make the driver
//! do. Each prints its figures (all-processor calls per second of the kernel's clock, the driver's
//! own collect time per second, non-paged pool in use) and passes on the collect bound (no more than
//! one all-processor read per minimum collect interval, docs/security.md), exact counts, no leak and
//! a clean unload.
//!
//! * a tight collect loop from 16 threads over 10 s of the kernel's clock, the clock moved forward
//!   5 ms at a time between collects, and the workload stepped with it;
//! * 10^5 AddCounter and RemoveCounter calls that do not pair;
//! * instance masks of PCW's longest length (a UNICODE_STRING holds at most 32,767 UTF-16 units)
//!   made of pathological wildcards;
//! * the service stopped (DriverUnload) while 16 consumers query;
//! * the interval as the registry sets it, and the default for a bad value.

use crate::common::{self, *};
use kernel_double::control::{hal, ke, pcw, pool};
use kernel_double::cpu::{self, cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};

const PROCESSORS: u32 = 4;
const CONSUMERS: u32 = 16;
/// The run's length on the kernel's clock (10 s), and the step it moves by between collects (1 ms).
const RUN_100NS: i64 = 100_000_000;
const STEP_100NS: i64 = 50_000;
/// Collects by each consumer between two clock steps: 16 consumers make 32 per 5 ms step, 6,400 per
/// second, 64 times what the bound lets through.
const COLLECTS_PER_STEP: u64 = 2;

/// Loads the real driver on four virtual Skylake processors.
fn load_on_skylake() -> kernel_double::driver::Driver {
    topology::configure(PROCESSORS, 64);
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    driver
}

/// Bytes of non-paged pool the driver has allocated and not freed.
fn pool_in_use() -> usize {
    pool::outstanding().iter().map(|allocation| allocation.size).sum()
}

/// The status counterset's collect time sum (nanoseconds, 64-bit) and collect count (32-bit).
fn collect_time() -> (u64, u32) {
    let status = driver_status();
    (status[AVERAGE_COLLECT_TIME], status[AVERAGE_COLLECT_TIME + 1] as u32)
}

#[test]
fn tight_collect_loop_from_sixteen_threads() {
    let mut driver = load_on_skylake();
    cpu::enter(0);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let interval = minimum_collect_interval_100ns();
    assert_eq!(interval, 100_000, "the default minimum collect interval is 10 ms");

    // One consumer: a fresh read is the virtual PMU's counts; a collect within the interval repeats
    // it exactly (the workload ran meanwhile); the next fresh read catches up.
    let fresh = totals();
    assert_eq!(fresh, true_totals(PROCESSORS), "a fresh read is the virtual PMU's counts");
    let ipis = ke::ipi_calls();
    for vp in 0..PROCESSORS {
        pmu::step(vp, 1000);
    }
    assert_eq!(totals_now(), fresh, "a collect within the minimum interval repeats the last read");
    assert_eq!(ke::ipi_calls(), ipis, "and sends no all-processor call");
    hal::advance_clock(interval);
    assert_eq!(totals_now(), true_totals(PROCESSORS), "the next fresh read catches up");

    let pool_before = pool_in_use();
    let (time_before, count_before) = collect_time();
    let (ipis_before, clock_before) = (ke::ipi_calls(), hal::clock());
    let status_before = driver_status();
    // Lockstep: every consumer collects COLLECTS_PER_STEP times back to back, then all wait while the
    // clock and the workload move one step, so the clock never moves inside a collect (the driver's
    // own timing of a collect holds no jump) and the consumers cannot starve the stepping thread.
    let steps = RUN_100NS / STEP_100NS;
    let (collected, stepped) = (Barrier::new(CONSUMERS as usize + 1), Barrier::new(CONSUMERS as usize + 1));
    let collects = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for consumer in 0..CONSUMERS {
            let (collected, stepped, collects) = (&collected, &stepped, &collects);
            scope.spawn(move || {
                cpu::enter(consumer % PROCESSORS);
                let mut previous = vec![[0u64; 7]; PROCESSORS as usize];
                for _ in 0..steps {
                    for _ in 0..COLLECTS_PER_STEP {
                        let now = totals_now();
                        for (vp, (now, before)) in now.iter().zip(&previous).enumerate() {
                            assert!(now.iter().zip(before).all(|(n, b)| n >= b), "processor {vp} went back");
                        }
                        previous = now;
                    }
                    collects.fetch_add(COLLECTS_PER_STEP, Ordering::Relaxed);
                    collected.wait();
                    stepped.wait();
                }
            });
        }
        for _ in 0..steps {
            collected.wait();
            for vp in 0..PROCESSORS {
                pmu::step(vp, 10);
            }
            hal::advance_clock(STEP_100NS);
            stepped.wait();
        }
    });
    let elapsed = (hal::clock() - clock_before) as f64 / 1e7;
    let ipis = ke::ipi_calls() - ipis_before;
    let (time_after, count_after) = collect_time();
    let collects = collects.load(Ordering::Relaxed);
    let driver_seconds = (time_after - time_before) as f64 / 1e9;
    println!(
        "{collects} collects by {CONSUMERS} threads in {elapsed:.3} s of the kernel's clock \
         ({} counted by the driver): {ipis} all-processor calls, {:.1} per second (bound {:.1}); \
         driver time {:.4} s per second (in the double, traps emulated); pool in use {} bytes \
         before, {} after",
        count_after.wrapping_sub(count_before),
        ipis as f64 / elapsed,
        1e7 / interval as f64,
        driver_seconds / elapsed,
        pool_before,
        pool_in_use()
    );
    let bound = (elapsed * 1e7 / interval as f64).floor() as u64 + 1;
    assert!(ipis <= bound, "{ipis} all-processor calls in {elapsed:.3} s: more than the bound, {bound}");
    let status = driver_status();
    let counted = |index: usize| status[index] - status_before[index];
    assert_eq!(counted(FRESH_COLLECTS), ipis, "Fresh Collects: one per all-processor call");
    assert_eq!(counted(FRESH_COLLECTS) + counted(FRESH_COLLECTS + 1), collects, "fresh and served");
    assert_eq!(pool_in_use(), pool_before, "pool grew during the loop");
    assert_eq!(totals(), true_totals(PROCESSORS), "exact after the loop");
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}

#[test]
fn a_hundred_thousand_unpaired_add_and_remove_counter_calls() {
    let mut driver = load_on_skylake();
    let (ipis_before, allocations_before) = (ke::ipi_calls(), hal::allocation_calls());
    std::thread::scope(|scope| {
        for thread in 0..4u32 {
            scope.spawn(move || {
                cpu::enter(thread);
                // Two adds for every remove on even threads, two removes for every add on odd ones:
                // the calls never pair.
                for call in 0..25_000u32 {
                    let add = (call % 3 != 0) == (thread % 2 == 0);
                    let status = if add {
                        pcw::add_counter(HARDWARE_COUNTERS, u64::MAX)
                    } else {
                        pcw::remove_counter(HARDWARE_COUNTERS, 1 << (call % 21))
                    };
                    assert_eq!(status, Some(STATUS_SUCCESS));
                }
            });
        }
    });
    let ipis = ke::ipi_calls() - ipis_before;
    let allocations = hal::allocation_calls() - allocations_before;
    println!(
        "10^5 unpaired AddCounter/RemoveCounter: {ipis} all-processor calls, {allocations} \
         HalAllocateHardwareCounters calls, pool in use {} bytes",
        pool_in_use()
    );
    assert_eq!(allocations, 1, "the counters are owned once");
    assert!(ipis <= 1, "no all-processor call but the one that programs the counters: {ipis}");
    cpu::enter(0);
    for vp in 0..PROCESSORS {
        pmu::step(vp, 500);
    }
    assert_eq!(totals(), true_totals(PROCESSORS), "exact after the storm of additions");
    assert!(driver.unload());
    assert_clean();
}

/// The kernel's 1:1 upcase, for the reference match (the instance names here are ASCII).
fn matches(mask: &[u16], name: &str) -> bool {
    let name: Vec<u16> = name.encode_utf16().collect();
    let up = |unit: u16| if (0x61..=0x7A).contains(&unit) { unit - 0x20 } else { unit };
    let mut row = vec![false; name.len() + 1];
    row[0] = true;
    for &unit in mask {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            next[j] = match unit {
                0x2A => row[j] || (j > 0 && next[j - 1]),
                0x3F => j > 0 && row[j - 1],
                _ => j > 0 && row[j - 1] && up(unit) == up(name[j - 1]),
            };
        }
        row = next;
    }
    row[name.len()]
}

#[test]
fn instance_masks_of_the_longest_length_with_pathological_wildcards() {
    const LONGEST: usize = 32_767;
    let mut driver = load_on_skylake();
    cpu::enter(0);
    let star_question: String = "*?".repeat(LONGEST / 2) + "*";
    let masks = [
        star_question.clone(),
        "*".repeat(LONGEST - 3) + "0,2",
        "?".repeat(LONGEST),
        "*".repeat(LONGEST - 2) + ",x",
        "*a".repeat(LONGEST / 2) + "*",
        "*".repeat(LONGEST),
    ];
    let expected = expected_processor_instances(&[PROCESSORS]);
    let (ipis_before, clock_before) = (ke::ipi_calls(), hal::clock());
    let (time_before, count_before) = collect_time();
    for mask in &masks {
        assert_eq!(mask.encode_utf16().count(), LONGEST);
        let query = pcw::Query { instance_mask: Some(mask.clone()), ..pcw::Query::default() };
        let (status, instances) = pcw::collect(HARDWARE_COUNTERS, &query).expect("registered");
        assert_eq!(status, STATUS_SUCCESS);
        let units: Vec<u16> = mask.encode_utf16().collect();
        let wanted: Vec<_> = expected.iter().filter(|(name, _)| matches(&units, name)).cloned().collect();
        let got: Vec<_> = instances.iter().map(|i| (i.name.clone(), i.id)).collect();
        assert_eq!(got, wanted, "mask {}...", &mask[..8]);
        let (status, enumerated) = pcw::enumerate(HARDWARE_COUNTERS, &query).expect("registered");
        assert_eq!(status, STATUS_SUCCESS);
        assert_eq!(enumerated.len(), wanted.len());
    }
    let (time_after, count_after) = collect_time();
    let collects = count_after.wrapping_sub(count_before);
    println!(
        "{} masks of {LONGEST} units: {:.3} ms of driver time per collect (in the double), {} \
         all-processor calls in {:.3} s of the kernel's clock, pool in use {} bytes",
        masks.len(),
        (time_after - time_before) as f64 / 1e6 / f64::from(collects),
        ke::ipi_calls() - ipis_before,
        (hal::clock() - clock_before) as f64 / 1e7,
        pool_in_use()
    );
    assert!(driver.unload());
    assert_clean();
}

#[test]
fn service_stop_while_sixteen_consumers_query() {
    let mut driver = load_on_skylake();
    let collected = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for consumer in 0..CONSUMERS {
            let collected = &collected;
            scope.spawn(move || {
                cpu::enter(consumer % PROCESSORS);
                let _ = pcw::add_counter(HARDWARE_COUNTERS, u64::MAX);
                // Until the counterset is gone (None), every collect is complete.
                while let Some((status, instances)) = pcw::collect(HARDWARE_COUNTERS, &pcw::Query::default())
                {
                    assert_eq!(status, STATUS_SUCCESS);
                    assert_eq!(instances.len(), PROCESSORS as usize);
                    let _ = pcw::collect(DRIVER_STATUS, &pcw::Query::default());
                    collected.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while collected.load(Ordering::Relaxed) < 1000 {
            std::thread::yield_now();
        }
        assert!(driver.unload());
    });
    println!("service stopped after {} collects by {CONSUMERS} consumers", collected.load(Ordering::Relaxed));
    assert!(pcw::collect(HARDWARE_COUNTERS, &pcw::Query::default()).is_none());
    assert!(pcw::registrations().is_empty(), "{:?}", pcw::registrations());
    assert_eq!(pool_in_use(), 0, "pool left after unload");
    assert_clean();
}

/// The interval an administrator sets (Parameters\MinimumCollectIntervalMs) is what the driver
/// bounds reads by; a bad value leaves the default in force.
#[test]
fn the_minimum_interval_is_the_registry_value_and_a_bad_one_is_the_default() {
    use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD, REG_SZ};
    let set =
        |kind, data: Vec<u8>| registry::set_value(PARAMETERS_KEY, "MinimumCollectIntervalMs", kind, data);
    let cases: [(u32, Vec<u8>, i64); 5] = [
        (REG_DWORD, 75u32.to_le_bytes().to_vec(), 75),
        (REG_DWORD, 0u32.to_le_bytes().to_vec(), 10),
        (REG_DWORD, 101u32.to_le_bytes().to_vec(), 10),
        (REG_DWORD, 1000u32.to_le_bytes().to_vec(), 10),
        (REG_SZ, registry::sz("75"), 10),
    ];
    topology::configure(PROCESSORS, 64);
    cpuid::set_model(&cpuid::SKYLAKE);
    // "Halfway" must be halfway: the host's time, which a loaded machine can make run several
    // milliseconds between two collects, no longer moves the kernel's clock.
    hal::stop_host_clock();
    for (kind, data, milliseconds) in cases {
        set(kind, data);
        let mut driver = common::load();
        assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
        cpu::enter(0);
        assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
        let interval = milliseconds * 10_000;
        assert_eq!(minimum_collect_interval_100ns(), interval, "kind {kind}");
        hal::advance_clock(interval);
        let fresh = totals_now();
        for vp in 0..PROCESSORS {
            pmu::step(vp, 100);
        }
        hal::advance_clock(interval / 2);
        assert_eq!(totals_now(), fresh, "{milliseconds} ms: served halfway through the interval");
        hal::advance_clock(interval - interval / 2);
        // The virtual PMU's totals run on across the loads of this test: compare the workload's events.
        let workload: Vec<[u64; 7]> =
            fresh.iter().map(|totals| std::array::from_fn(|e| totals[e] + pmu::RATES[e] * 100)).collect();
        assert_eq!(totals_now(), workload, "{milliseconds} ms: fresh once it ended");
        assert!(driver.unload());
        assert_clean();
    }
}
