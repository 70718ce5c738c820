//! Event profiles from the service's Parameters key, read at each acquisition: the topdown profile
//! on processors without IA32_PERF_METRICS (Skylake, Zen 4), and the custom profile with valid and
//! malformed CustomEvents lines, against the virtual PMU's ground truth.

use crate::common;

use kernel_double::consumer::pdh::Value;
use kernel_double::consumer::{self, Column, Counterset, Sample, TOTAL};
use kernel_double::control::pcw;
use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD, REG_MULTI_SZ, REG_SZ};
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::driver::Driver;
use kernel_double::status::STATUS_SUCCESS;

const TOPDOWN_PERCENTS: [u32; 4] = [21, 23, 25, 27];
const SLOTS_TOTAL: u32 = 29;
/// Custom Event n's 64-bit total.
const fn custom_total(n: u32) -> u32 {
    37 + 2 * n
}
/// Status counterset positions: Top-down Source, Active Profile, Rejected Custom Events.
const TOPDOWN_SOURCE: usize = 9;
const ACTIVE_PROFILE: usize = 10;
const REJECTED: usize = 11;

fn hardware() -> Counterset {
    Counterset::open(&consumer::manifest(), "Hardware Counters").unwrap()
}

/// Loads the driver (the CPU model and the Parameters values already set) and adds every Hardware
/// Counters counter, which owns the counters and reads the profile.
fn start() -> (Driver, Counterset) {
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let set = hardware();
    assert_eq!(pcw::add_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    (driver, set)
}

/// Removes the counters, unloads, and checks that nothing leaked or was violated.
fn finish(mut driver: Driver, set: &Counterset) {
    assert_eq!(pcw::remove_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}

fn raw(set: &Counterset, sample: &Sample, instance: &str, id: u32) -> u64 {
    sample.values_of(set, instance).expect("instance sampled")[set.index_of(id).unwrap()].expect("value")
}

fn percent(set: &Counterset, first: &Sample, second: &Sample, instance: &str, id: u32) -> f64 {
    let column = Column { instance: Some(instance.to_string()), counter: set.index_of(id).unwrap() };
    match consumer::values(set, &[column], Some(first), second, consumer::Formatter::Uncapped)[0] {
        Value::Value(value) => value,
        other => panic!("{instance}: counter {id} is {other:?}"),
    }
}

/// Top-down level 1 over an interval from the true input counts, by the formulas of Linux's
/// TopdownL1 (Intel, 4 slots per cycle) and amdzen4 pipeline utilisation (6 per cycle).
fn true_percents(width: u64, recovery: bool, vp: u32, before: &[u64; pmu::EVENTS]) -> [f64; 4] {
    let delta = |event: usize| pmu::counted(vp, event) - before[event];
    let slots = (width * delta(pmu::CORE_CYCLES)) as f64;
    let retiring = delta(pmu::SLOTS_RETIRED) as f64;
    let recovery = if recovery { width * delta(pmu::RECOVERY_CYCLES) } else { 0 };
    let bad = (delta(pmu::SLOTS_ISSUED) - delta(pmu::SLOTS_RETIRED) + recovery) as f64;
    let frontend = delta(pmu::SLOTS_NOT_DELIVERED) as f64;
    let backend = slots - retiring - bad - frontend;
    [retiring, bad, frontend, backend].map(|part| 100.0 * part / slots)
}

fn topdown_profile(model: &'static cpuid::CpuModel, width: u64, recovery: bool) {
    cpuid::set_model(model);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("topdown"));
    let (driver, set) = start();
    let status = common::driver_status();
    assert_eq!((status[ACTIVE_PROFILE], status[TOPDOWN_SOURCE], status[REJECTED]), (1, 2, 0));
    let first = consumer::sample(&set).unwrap();
    let before: Vec<[u64; pmu::EVENTS]> =
        (0..topology::processor_count()).map(|vp| std::array::from_fn(|e| pmu::counted(vp, e))).collect();
    for vp in 0..topology::processor_count() {
        pmu::step(vp, 1_000_000 * u64::from(vp + 1));
    }
    let second = consumer::sample(&set).unwrap();
    for vp in 0..topology::processor_count() {
        let instance = format!("0,{vp}");
        let shown = TOPDOWN_PERCENTS.map(|id| percent(&set, &first, &second, &instance, id));
        let truth = true_percents(width, recovery, vp, &before[vp as usize]);
        for (shown, truth) in shown.iter().zip(truth) {
            // Slots reach the percentages divided by 65536: within 0.1 point at this much work.
            assert!((shown - truth).abs() < 0.1, "{instance}: {shown:?} vs {truth:?}");
        }
        assert_eq!(raw(&set, &second, &instance, SLOTS_TOTAL), width * pmu::counted(vp, pmu::CORE_CYCLES));
    }
    let total: f64 = TOPDOWN_PERCENTS.iter().map(|&id| percent(&set, &first, &second, TOTAL, id)).sum();
    assert!((total - 100.0).abs() <= 1.0, "_Total sums to {total}");
    finish(driver, &set);
}

#[test]
fn topdown_profile_on_skylake() {
    topdown_profile(&cpuid::SKYLAKE, 4, true);
}

#[test]
fn topdown_profile_on_zen4() {
    topdown_profile(&cpuid::ZEN4, 6, false);
}

/// The custom profile on Skylake: two valid lines (UOPS_ISSUED.ANY and, with a counter mask, an event
/// the workload does not make), and malformed ones.
#[test]
fn custom_profile_counts_valid_lines_and_rejects_the_rest() {
    cpuid::set_model(&cpuid::SKYLAKE);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("Custom"));
    let lines = [
        "event=0x0E,umask=0x01,name=uops issued",
        "event=0x1C0",                    // 9 bits on Intel
        "event=0xC4,en=1",                // a bit the driver owns
        "umask=1",                        // no event
        "event=0xA3,umask=0x14,cmask=20", // valid, counts nothing here
        "event=0xC4,cmask=300",           // out of range
    ];
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
    let (driver, set) = start();
    let status = common::driver_status();
    assert_eq!((status[ACTIVE_PROFILE], status[REJECTED]), (2, 4));
    for vp in 0..topology::processor_count() {
        pmu::step(vp, 10_000 * u64::from(vp + 1));
    }
    let sample = consumer::sample(&set).unwrap();
    for vp in 0..topology::processor_count() {
        let instance = format!("0,{vp}");
        assert_eq!(raw(&set, &sample, &instance, custom_total(0)), pmu::counted(vp, pmu::SLOTS_ISSUED));
        assert_eq!(raw(&set, &sample, &instance, custom_total(1)), 0, "event A3 counts nothing here");
        for n in 2..8 {
            assert_eq!(raw(&set, &sample, &instance, custom_total(n)), 0);
        }
        // Instructions and cycles stay counted; the default profile's LLC and branch events do not.
        assert_eq!(raw(&set, &sample, &instance, 7), pmu::counted(vp, pmu::INSTRUCTIONS));
        assert_eq!(raw(&set, &sample, &instance, 11), 0, "LLC misses");
    }
    finish(driver, &set);
}

/// Wrong types, an overlong value, more lines than counters: each rejected, the rest working.
#[test]
fn malformed_parameters_fall_back_and_are_counted() {
    cpuid::set_model(&cpuid::ZEN4);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_DWORD, 2u32.to_le_bytes().to_vec());
    let (driver, set) = start();
    let status = common::driver_status();
    assert_eq!((status[ACTIVE_PROFILE], status[REJECTED]), (0, 1), "a REG_DWORD Profile: default");
    pmu::step(0, 1_000);
    let sample = consumer::sample(&set).unwrap();
    assert_eq!(raw(&set, &sample, "0,0", 7), pmu::counted(0, pmu::INSTRUCTIONS));
    finish(driver, &set);

    // Custom, with CustomEvents far too long: rejected whole; then ten valid lines for eight counters.
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("custom"));
    let long = format!("event=0xC0,name={}", "x".repeat(2048));
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&[&long]));
    let (driver, set) = start();
    let status = common::driver_status();
    assert_eq!((status[ACTIVE_PROFILE], status[REJECTED]), (2, 1), "an overlong CustomEvents");
    finish(driver, &set);

    let lines: Vec<String> = (0..10).map(|i| format!("event={:#x}", 0xC0 + i)).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
    let (driver, set) = start();
    let status = common::driver_status();
    assert_eq!(status[REJECTED], 2, "lines 9 and 10 have no custom counter");
    // Zen 4 has 6 counters: instructions, cycles and four custom events; the rest find no counter.
    // (The virtual PMU's totals add up every counter counting an event, here two count instructions.)
    pmu::step(0, 1_000);
    let sample = consumer::sample(&set).unwrap();
    let instructions = pmu::RATES[pmu::INSTRUCTIONS] * 1_000;
    assert_eq!(raw(&set, &sample, "0,0", custom_total(0)), instructions, "event C0 counts instructions");
    assert_eq!(raw(&set, &sample, "0,0", custom_total(4)), 0, "no counter left");
    finish(driver, &set);
}

/// A Parameters change applies at the next acquisition, with the driver loaded all along: custom
/// first, then (after the counters are released for want of readers) default. Totals follow their
/// events: instructions carry on, custom event 0 is no longer counted, LLC misses start from 0.
#[test]
fn a_profile_change_applies_at_the_next_acquisition() {
    use kernel_double::control::hal;
    use std::time::Duration;
    cpuid::set_model(&cpuid::SKYLAKE);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("custom"));
    registry::set_value(
        PARAMETERS_KEY,
        "CustomEvents",
        REG_MULTI_SZ,
        registry::multi_sz(&["event=0x0E,umask=1"]),
    );
    let (driver, set) = start();
    pmu::step(0, 1_000);
    let custom = consumer::sample(&set).unwrap();
    assert_eq!(raw(&set, &custom, "0,0", custom_total(0)), pmu::counted(0, pmu::SLOTS_ISSUED));
    let instructions = raw(&set, &custom, "0,0", 7);

    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("default"));
    assert_eq!(pcw::remove_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    common::until_released(|| hal::owner().is_none(), Duration::from_secs(6));
    assert_eq!(common::driver_status()[ACTIVE_PROFILE], 2, "nothing changes before the next acquisition");

    assert_eq!(pcw::add_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert_eq!(common::driver_status()[ACTIVE_PROFILE], 0);
    let llc_misses = pmu::counted(0, 4);
    pmu::step(0, 1_000);
    let default = consumer::sample(&set).unwrap();
    assert_eq!(raw(&set, &default, "0,0", 7), instructions + pmu::RATES[pmu::INSTRUCTIONS] * 1_000);
    assert_eq!(raw(&set, &default, "0,0", custom_total(0)), 0, "custom event 0 is no longer counted");
    assert_eq!(raw(&set, &default, "0,0", 11), pmu::counted(0, 4) - llc_misses, "LLC misses from 0");
    finish(driver, &set);
}
