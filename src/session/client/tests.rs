//! The ownership state machine on the host, over the fake platform.

use super::fake::*;
use super::*;
use crate::pmu::poll::{DEFAULT_SAFETY, MAX_EVENT_HZ, poll_period_100ns};
use std::sync::atomic::Ordering;
use windows_sys::Win32::Foundation::{
    STATUS_DEVICE_BUSY, STATUS_INSUFFICIENT_RESOURCES, STATUS_NO_MEMORY, STATUS_NOT_SUPPORTED,
};

#[test]
fn the_first_collect_takes_the_planned_counters_with_a_resource_list_on_intel() {
    let client = skylake(&[]);
    assert!(client.asked().is_empty(), "nothing owned before a query");
    client.collect();
    let plan = crate::pmu::placement::plan_with_pmi(&SKYLAKE_I7_6700K.model(), true);
    let counters: Vec<u32> = plan.iter().map(|a| u32::from(a.hal_index)).collect();
    assert_eq!(
        client.asked(),
        [Asked::Listed { counters, overflow_interrupt: true, core_types: vec![None] }]
    );
    assert!(client.owns());
    assert_eq!(client.state(), PmuState::Active as u32);
    for processor in 0..PROCESSORS {
        for assignment in plan.iter() {
            if let crate::pmu::placement::HardwareCounter::General(_) = assignment.hardware {
                assert_eq!(client.msr(processor, assignment.control_msr), assignment.control);
            }
        }
    }
    assert!(!client.polling(), "with an overflow interrupt nothing is polled");
}

#[test]
fn amd_asks_for_the_whole_pmu_and_polls() {
    let client = client_for(Some(ZEN4_RYZEN9_7950X.model()), &[]);
    client.query_added();
    assert_eq!(client.asked(), [Asked::WholePmu]);
    assert!(client.polling());
    let poll = poll_period_100ns(48, MAX_EVENT_HZ, DEFAULT_SAFETY) as u64;
    assert_eq!(client.next_tick(), Some(poll.min(2 * SECOND)));
}

#[test]
fn any_refused_list_falls_back_to_the_whole_pmu_without_an_interrupt() {
    for refusal in [STATUS_INSUFFICIENT_RESOURCES, STATUS_NOT_SUPPORTED, STATUS_NO_MEMORY] {
        let client = skylake(&[refusal]);
        client.collect();
        assert!(matches!(client.asked()[..], [Asked::Listed { .. }, Asked::WholePmu]), "{refusal:#x}");
        assert!(client.owns() && client.polling(), "{refusal:#x}");
        assert_eq!(client.state(), PmuState::Active as u32);
    }
}

#[test]
fn busy_and_failed_pmus_are_reported_and_retried_at_most_once_a_second_by_collects() {
    for (answers, state) in [
        (&[STATUS_DEVICE_BUSY][..], PmuState::Busy),
        (&[STATUS_INSUFFICIENT_RESOURCES, STATUS_INSUFFICIENT_RESOURCES][..], PmuState::Busy),
        (&[STATUS_NO_MEMORY, STATUS_NO_MEMORY][..], PmuState::Failed),
    ] {
        let client = skylake(answers);
        client.collect();
        assert_eq!(client.asked().len(), answers.len(), "the arbiter's busy is not retried as a whole PMU");
        assert_eq!(client.state(), state as u32);
        assert!(!client.owns());
        client.advance(SECOND / 2);
        client.collect();
        assert_eq!(client.asked().len(), answers.len(), "retried within a second");
        client.advance(SECOND / 2);
        client.collect();
        assert!(client.owns(), "not retried after a second");
        assert_eq!(client.state(), PmuState::Active as u32);
    }
}

#[test]
fn an_add_counter_retries_a_busy_pmu_at_once() {
    let client = skylake(&[STATUS_DEVICE_BUSY]);
    client.query_added();
    assert_eq!(client.state(), PmuState::Busy as u32);
    client.query_added();
    assert!(client.owns());
}

#[test]
fn the_counters_go_back_after_the_hysteresis_without_activity_whatever_the_adds() {
    let client = skylake(&[]);
    for _ in 0..3 {
        client.query_added(); // never removed
    }
    client.collect();
    assert_eq!(client.next_tick(), Some(2 * SECOND));
    client.advance(2 * SECOND - 1);
    client.tick();
    assert!(client.owns(), "released before the hysteresis");
    assert_eq!(client.next_tick(), Some(1));
    client.advance(1);
    client.tick();
    assert!(!client.owns(), "not released after the hysteresis");
    assert_eq!(client.state(), PmuState::Idle as u32);
    assert_eq!(client.status.block().counters_owned.load(Ordering::Relaxed), 0);
    // Every register is 0 but IA32_PERF_GLOBAL_OVF_CTRL, a write-only clear register, and
    // IA32_PERF_GLOBAL_CTRL, whose general-purpose enables are back at their power-on 1 (the HAL
    // relies on them), its fixed counters' at 0.
    for processor in 0..PROCESSORS {
        let file = client.platform.msrs[processor].lock().unwrap();
        let expected = |msr: u32| if msr == 0x38F { 0xF } else { 0 };
        assert!(
            file.iter().all(|(&msr, &value)| value == expected(msr) || msr == 0x390),
            "not as at power-on: {file:x?}"
        );
    }
    assert_eq!(client.next_tick(), None, "nothing owned: sleep until woken");
}

#[test]
fn a_slow_consumer_keeps_the_counters_for_three_of_its_intervals() {
    let client = skylake(&[]);
    client.collect_now();
    client.advance(15 * SECOND);
    client.collect_now();
    client.advance(45 * SECOND - 1);
    client.tick();
    assert!(client.owns(), "a 15 s agent lost the counters between samples");
    client.advance(1);
    client.tick();
    assert!(!client.owns());
}

#[test]
fn activity_above_passive_level_hands_the_acquisition_to_an_immediate_tick() {
    let client = skylake(&[]);
    client.platform.passive.store(false, Ordering::SeqCst);
    client.query_added();
    assert!(client.asked().is_empty(), "the HAL was called above PASSIVE_LEVEL");
    assert_eq!(client.platform.wakes.load(Ordering::SeqCst), 1, "the housekeeping thread was not woken");
    assert_eq!(client.next_tick(), Some(0), "the deferred acquisition waits");
    client.platform.passive.store(true, Ordering::SeqCst);
    client.tick();
    assert!(client.owns());
    assert_ne!(client.next_tick(), Some(0));
}

#[test]
fn lost_programming_is_repaired_without_a_jump_or_a_step_back() {
    let client = skylake(&[]);
    client.collect();
    for processor in 0..PROCESSORS {
        client.set_msr(processor, IA32_FIXED_CTR0, 1_000);
    }
    client.collect();
    assert_eq!(client.values(0).instructions_retired, 1_000);
    // A resume: every register back to 0 (the counter's value too).
    for processor in 0..PROCESSORS {
        client.platform.msrs[processor].lock().unwrap().clear();
    }
    client.collect();
    assert_eq!(client.reprograms(), PROCESSORS as u32);
    assert_eq!(client.values(0).instructions_retired, 1_000, "a reset read as a wrap or a step back");
    for processor in 0..PROCESSORS {
        client.set_msr(processor, IA32_FIXED_CTR0, 500);
    }
    client.collect();
    assert_eq!(client.values(0).instructions_retired, 1_500, "counting did not resume");
    assert_eq!(client.reprograms(), PROCESSORS as u32, "repaired again though intact");
}

/// AMD PerfMonV2 after a resume: PerfCntrGlobalCtl back with every counter's bit set (AMD's PPR), the
/// event selects and counters 0. A collect whose turn checks only the global control must not take
/// the polled counter back at 0 for a wrap (a 2^48 jump): each sleep lands at another turn.
#[test]
fn a_polled_counter_reset_at_resume_is_not_a_wrap_at_any_turn() {
    const PERF_CTR0: u32 = 0xC001_0201;
    const GLOBAL_CTL: u32 = 0xC000_0301;
    let client = client_for(Some(ZEN4_RYZEN9_7950X.model()), &[]);
    client.collect();
    let mut expected = 0;
    for sleep in 0..8 {
        for processor in 0..PROCESSORS {
            let counted = client.msr(processor, PERF_CTR0) + 1_000;
            client.set_msr(processor, PERF_CTR0, counted);
        }
        client.collect();
        expected += 1_000;
        assert_eq!(client.values(0).instructions_retired, expected, "sleep {sleep}: before");
        let reprograms = client.reprograms();
        for processor in 0..PROCESSORS {
            let mut msrs = client.platform.msrs[processor].lock().unwrap();
            msrs.clear();
            msrs.insert(GLOBAL_CTL, 0x3F);
        }
        client.collect();
        assert_eq!(client.values(0).instructions_retired, expected, "sleep {sleep}: a reset read as a wrap");
        assert_eq!(client.reprograms(), reprograms + PROCESSORS as u32, "sleep {sleep}: repaired at once");
        assert_eq!(client.msr(0, PERF_CTR0), 0, "the repair writes no counter");
    }
}

#[test]
fn counts_survive_a_release_and_a_new_session() {
    let client = skylake(&[]);
    client.collect();
    client.set_msr(2, IA32_FIXED_CTR0, 7_000);
    client.advance(3 * SECOND);
    client.tick();
    assert!(!client.owns());
    client.assert_published();
    assert_eq!(client.values(2).instructions_retired, 7_000, "the release read the last counts");
    client.collect();
    assert!(client.owns());
    client.set_msr(2, IA32_FIXED_CTR0, 5);
    client.collect();
    assert_eq!(client.values(2).instructions_retired, 7_005);
}

#[test]
fn an_unusable_pmu_is_never_asked_for() {
    let client = client_for(None, &[]);
    client.query_added();
    client.collect();
    client.tick();
    assert!(client.asked().is_empty());
    assert_eq!(client.next_tick(), None);
    assert_eq!(client.state(), PmuState::UnsupportedVendor as u32);
}

/// A collect slower than the hysteresis (many processors under a slow hypervisor, or the double
/// single-stepping the driver) is activity until it ends, so back-to-back collects keep the counters.
#[test]
fn idle_time_counts_from_the_end_of_a_collect() {
    let client = skylake(&[]);
    client.collect();
    client.platform.call_time.store(3 * SECOND, Ordering::SeqCst);
    client.refresh();
    client.tick();
    assert!(client.owns(), "released in the middle of a slow collect");
    client.advance(3 * SECOND); // handing 64 instances to PCW, single-stepped
    client.collect_done();
    client.tick();
    assert!(client.owns(), "released right after a slow collect ended");
}

#[test]
fn each_acquisition_reads_the_profile_and_a_change_applies_at_the_next() {
    use crate::pmu::events::Event;
    use crate::pmu::msr;
    use crate::settings::{REG_MULTI_SZ, REG_SZ};
    let client = skylake(&[]);
    client.set_setting("Profile", REG_SZ, &["custom"]);
    client.set_setting(
        "CustomEvents",
        REG_MULTI_SZ,
        &["event=0xD1,umask=0x08,name=l1 misses", "usr=1", "event=0x1FF"],
    );
    client.collect();
    assert_eq!(client.profile_status(), (2, 2), "custom, two lines rejected");
    // Custom event 0 on the first general-purpose counter; the default events are not counted.
    let select = client.msr(0, msr::IA32_PERFEVTSEL0);
    assert_eq!(select & 0xFFFF, 0x08D1);
    assert_eq!(client.msr(0, msr::IA32_PERFEVTSEL0 + 1), 0, "only one custom event was accepted");
    client.set_msr(1, msr::IA32_PMC0, 4_321);
    client.collect();
    let values = client.values(1);
    assert_eq!(values.custom_event0, 4_321);
    assert_eq!(values.llc_misses, 0);
    // The profile changes while the session is open: nothing happens until the next acquisition.
    client.set_setting("Profile", REG_SZ, &["default"]);
    client.collect();
    assert_eq!(client.profile_status().0, 2);
    client.advance(3 * SECOND);
    client.tick();
    assert!(!client.owns());
    client.assert_published();
    assert_eq!(client.values(1).custom_event0, 4_321, "the count stays after the release");
    let instructions = client.values(1).instructions_retired;
    client.collect();
    assert_eq!(client.profile_status(), (0, 0));
    let _ = Event::LlcMisses;
    assert_eq!(client.msr(0, msr::IA32_PERFEVTSEL0) & 0xFFFF, 0x412E, "LLC misses is back on counter 0");
    // Totals follow their events, not the counter: LLC misses does not inherit custom event 0's.
    client.set_msr(1, msr::IA32_PMC0, 10);
    client.collect();
    let values = client.values(1);
    assert_eq!((values.llc_misses, values.custom_event0), (10, 0));
    assert_eq!(values.instructions_retired, instructions, "an event counted by both keeps its total");
}

#[test]
fn a_hybrid_machine_plans_asks_and_programs_each_core_type_and_sums_each() {
    use crate::counters::{hardware_counters, hardware_counters_by_core_type};
    use crate::pmu::hybrid::{CoreType, Machine, ProcessorDescription};
    use crate::pmu::model::PERF_CAPABILITIES_PERF_METRICS;
    use crate::pmu::model::tests::{ALDER_LAKE_I9_12900K_E, ALDER_LAKE_I9_12900K_P_ONLY};
    use crate::pmu::msr;
    // Performance cores with 8 GP / 4 fixed and PERF_METRICS, efficient cores with 6 GP / 3 fixed.
    let performance =
        ALDER_LAKE_I9_12900K_P_ONLY.model().with_perf_capabilities(|| PERF_CAPABILITIES_PERF_METRICS);
    let efficient = ALDER_LAKE_I9_12900K_E.model();
    let core_type =
        |index: usize| if index < PROCESSORS / 2 { CoreType::Performance } else { CoreType::Efficient };
    let processors: Vec<ProcessorState> = (0..PROCESSORS).map(|_| ProcessorState::default()).collect();
    for (index, processor) in processors.iter().enumerate() {
        processor.pmu.set_core_type(core_type(index));
    }
    let machine = Machine::of((0..PROCESSORS).map(|index| {
        let model = if core_type(index) == CoreType::Performance { performance } else { efficient };
        ProcessorDescription { core_type: core_type(index), detection: Detection::Usable(model) }
    }));
    let status = Box::leak(Box::new(DriverStatus::new()));
    let (sessions, plans) = tables_for(machine);
    let client = PmuClient::new(fake_platform(&[]), machine, processors, sessions, plans, status);
    let topdown_source = || status.block().topdown_source.load(Ordering::Relaxed);
    assert_eq!(topdown_source(), TopdownSource::PerCoreType as u32);
    client.collect();
    assert_eq!(topdown_source(), TopdownSource::PerCoreType as u32);
    let [Asked::Listed { core_types, .. }] = &client.asked()[..] else { panic!("{:?}", client.asked()) };
    assert_eq!(core_types, &[Some(1), Some(2)], "one list per core type, each on its processors");
    for processor in 0..PROCESSORS {
        let global = client.msr(processor, msr::IA32_PERF_GLOBAL_CTRL);
        let topdown = (1 << 35) | (1 << 48);
        let expected = if core_type(processor) == CoreType::Performance { topdown } else { 0 };
        assert_eq!(global & topdown, expected, "processor {processor}: {global:#x}");
        client.set_msr(processor, 0x309, 1000 * (processor as u64 + 1)); // fixed counter 0: instructions
    }
    client.collect();
    let instructions = |values: &hardware_counters::Values| values.instructions_retired;
    let per_processor: Vec<u64> =
        (0..PROCESSORS as u32).map(|index| instructions(&client.values(index))).collect();
    assert!(per_processor.iter().all(|&count| count > 0), "{per_processor:?}");
    let half = PROCESSORS / 2;
    for (core_type, processors) in [(1u8, &per_processor[..half]), (2, &per_processor[half..])] {
        let sums: hardware_counters_by_core_type::Values = client.core_type_values(core_type);
        assert_eq!(sums.instructions_retired, processors.iter().sum::<u64>());
        assert_eq!((sums.processors, sums.core_type), (half as u32, u32::from(core_type)));
    }
    assert_eq!(client.core_type_values(0).processors, 0, "no uniform processors here");
    assert!(client.has_core_type(1) && client.has_core_type(2) && !client.has_core_type(0));
}

#[test]
fn perf_metrics_under_a_hypervisor_are_not_used_and_the_status_says_why() {
    use crate::pmu::model::tests::HYPERV_ROOT_ALDER_LAKE_P_ONLY;
    use crate::pmu::msr;
    let model = HYPERV_ROOT_ALDER_LAKE_P_ONLY
        .model()
        .with_perf_capabilities(|| crate::pmu::model::PERF_CAPABILITIES_PERF_METRICS);
    let status = Box::leak(Box::new(DriverStatus::new()));
    let processors: Vec<ProcessorState> = (0..PROCESSORS).map(|_| ProcessorState::default()).collect();
    let (sessions, plans) = tables_for(Detection::Usable(model));
    let client =
        PmuClient::new(fake_platform(&[]), Detection::Usable(model), processors, sessions, plans, status);
    let topdown_source = || status.block().topdown_source.load(Ordering::Relaxed);
    assert_eq!(topdown_source(), TopdownSource::NotUnderHypervisor as u32);
    client.collect();
    assert_eq!(status.pmu_state(), PmuState::Active as u32);
    assert_eq!(topdown_source(), TopdownSource::NotUnderHypervisor as u32, "after the acquisition too");
    // Neither fixed counter 3 nor EN_PERF_METRICS is enabled.
    let global = client.msr(0, msr::IA32_PERF_GLOBAL_CTRL);
    assert_eq!(global & ((1 << 35) | (1 << 48)), 0, "{global:#x}");
    assert_ne!(global, 0, "the other counters are enabled");
}

#[test]
fn a_processor_added_after_load_is_left_alone_and_counted() {
    // The platform runs workers on 4 processors; the client was made for the 3 active at load.
    let status = Box::leak(Box::new(DriverStatus::new()));
    let processors: Vec<ProcessorState> = (0..PROCESSORS - 1).map(|_| ProcessorState::default()).collect();
    let detection = Detection::Usable(SKYLAKE_I7_6700K.model());
    let (sessions, plans) = tables_for(detection);
    let client = PmuClient::new(fake_platform(&[]), detection, processors, sessions, plans, status);
    client.collect();
    assert!(client.owns());
    assert_eq!(status.block().processors_not_monitored.load(Ordering::Relaxed), 1);
    let added = PROCESSORS - 1;
    let untouched = || client.platform.msrs[added].lock().unwrap().is_empty();
    assert!(untouched(), "the added processor was programmed");
    assert_ne!(client.msr(0, 0x38F), 0, "the processors known at load are");
    client.release();
    assert!(untouched(), "the added processor was written at release");
}

/// A collect within the minimum interval of the last fresh read is served from it: no all-processor
/// call, the blocks as that read left them, counted as served; the interval comes from the Parameters
/// key at acquisition, a bad value falling back to the default.
#[test]
fn collects_within_the_minimum_interval_are_served_from_the_last_read() {
    const MS: u64 = SECOND / 1000;
    let fixed_counter_0 = |client: &PmuClient<FakePlatform>| client.values(0).instructions_retired;
    for (setting, interval_ms) in [(None, 10u32), (Some(75u32), 75), (Some(0), 10), (Some(250), 10)] {
        let client = skylake(&[]);
        if let Some(value) = setting {
            let units = vec![value as u16, (value >> 16) as u16];
            client.platform.settings.lock().unwrap().push(("MinimumCollectIntervalMs", 4, units));
        }
        client.collect_now(); // acquires, reads
        let status = client.status.block();
        assert_eq!(status.minimum_collect_interval.load(Ordering::Relaxed), interval_ms);
        client.set_msr(0, IA32_FIXED_CTR0, 1000);
        client.advance(u64::from(interval_ms) * MS);
        client.collect_now();
        assert_eq!(fixed_counter_0(&client), 1000, "fresh once the interval passed");
        client.set_msr(0, IA32_FIXED_CTR0, 2000);
        client.advance(u64::from(interval_ms) * MS - 1);
        client.collect_now();
        assert_eq!(fixed_counter_0(&client), 1000, "served: the last read's count");
        client.advance(1);
        client.collect_now();
        assert_eq!(fixed_counter_0(&client), 2000, "fresh again");
        assert_eq!(status.fresh_collects.load(Ordering::Relaxed), 3);
        assert_eq!(status.served_collects.load(Ordering::Relaxed), 1);
    }
}

/// A collect that finds no session open (its acquisition handed to the housekeeping thread from above
/// PASSIVE_LEVEL) reads nothing, so it does not use up the minimum interval: the first collect once
/// the session is open reads afresh, at the same clock reading.
#[test]
fn a_collect_that_read_nothing_leaves_the_interval_to_the_next() {
    let client = skylake(&[]);
    client.platform.passive.store(false, Ordering::SeqCst);
    client.collect_now();
    assert!(!client.owns(), "acquired above PASSIVE_LEVEL");
    client.platform.passive.store(true, Ordering::SeqCst);
    client.tick();
    assert!(client.owns());
    client.set_msr(0, IA32_FIXED_CTR0, 1000);
    client.collect_now();
    assert_eq!(client.values(0).instructions_retired, 1000, "served from a read that never happened");
    let status = client.status.block();
    assert_eq!(status.fresh_collects.load(Ordering::Relaxed), 1);
    assert_eq!(status.served_collects.load(Ordering::Relaxed), 0);
}

/// A HAL whose counter table lacks fixed counter 3 (Alder and Raptor Lake's leaf 0xA; see
/// `per_core_type`) refuses the list naming it: asked again without it, the driver still programs it
/// (with EN_PERF_METRICS, which no list names), owns what the second list names, and reports resource
/// lists; only a second refusal falls back to the whole PMU, whose Counters Owned are every counter.
#[test]
fn a_list_refused_for_fixed_counter_3_is_asked_again_without_it_before_the_whole_pmu() {
    use crate::pcw::driver_status::PmuOwnership;
    use crate::pmu::model::PERF_CAPABILITIES_PERF_METRICS;
    use crate::pmu::model::tests::ICE_LAKE_I7_1065G7;
    use crate::pmu::msr;
    use windows_sys::Win32::Foundation::STATUS_INVALID_PARAMETER;
    let model = ICE_LAKE_I7_1065G7.model().with_perf_capabilities(|| PERF_CAPABILITIES_PERF_METRICS);
    let status = |client: &PmuClient<FakePlatform>| {
        let block = client.status.block();
        (block.counters_owned.load(Ordering::Relaxed), block.pmu_ownership.load(Ordering::Relaxed))
    };
    let client = client_for(Some(model), &[STATUS_INVALID_PARAMETER]);
    client.collect();
    let [
        Asked::Listed { counters: first, .. },
        Asked::Listed { counters: second, overflow_interrupt: true, .. },
    ] = &client.asked()[..]
    else {
        panic!("{:?}", client.asked())
    };
    assert!(first.contains(&35) && !second.contains(&35), "{first:?} then {second:?}");
    assert_eq!(
        first.iter().filter(|&&index| index != 35).collect::<Vec<_>>(),
        second.iter().collect::<Vec<_>>()
    );
    assert!(client.owns() && !client.polling());
    for processor in 0..PROCESSORS {
        let global = client.msr(processor, msr::IA32_PERF_GLOBAL_CTRL);
        assert_eq!(
            global & ((1 << 35) | (1 << 48)),
            (1 << 35) | (1 << 48),
            "fixed counter 3 still programmed"
        );
    }
    assert_eq!(status(&client), (second.len() as u32, PmuOwnership::ResourceLists as u32));
    client.release();
    assert_eq!(status(&client), (0, PmuOwnership::None as u32));

    let client = client_for(Some(model), &[STATUS_INVALID_PARAMETER, STATUS_INVALID_PARAMETER]);
    client.collect();
    assert!(matches!(client.asked()[..], [Asked::Listed { .. }, Asked::Listed { .. }, Asked::WholePmu]));
    let every_counter = u32::from(model.gp_counters) + u32::from(model.fixed_counters);
    assert_eq!(status(&client), (every_counter, PmuOwnership::WholePmu as u32));
    assert!(client.owns() && client.polling());
}

#[test]
fn the_boot_guard_marker_is_flushed_before_the_first_programming_and_gone_after_the_first_read() {
    let client = skylake(&[]);
    let marker = || *client.platform().marker.lock().unwrap();
    client.query_added();
    assert!(client.owns());
    assert_eq!(marker(), Some((true, 0)), "the marker was not set before any MSR was written");
    client.collect();
    assert!(matches!(marker(), Some((false, writes)) if writes > 0), "a clean read left the marker");
    // A later acquisition in the same load is no first programming: no marker.
    client.release();
    *client.platform().marker.lock().unwrap() = None;
    client.query_added();
    client.collect();
    assert_eq!(marker(), None);
    // A release reads every processor back too: without any collect, it clears the marker.
    let client = skylake(&[]);
    client.query_added();
    assert!(matches!(*client.platform().marker.lock().unwrap(), Some((true, _))));
    client.release();
    assert!(matches!(*client.platform().marker.lock().unwrap(), Some((false, _))), "the release left it");
}

#[test]
fn a_held_off_client_asks_for_nothing_and_one_that_cannot_write_the_marker_programs_nothing() {
    let mut client = skylake(&[]);
    client.hold_off(crate::pcw::driver_status::HardwareGuard::HeldOff);
    client.query_added();
    client.collect();
    assert!(client.asked().is_empty() && !client.owns(), "a held-off start asked the HAL");
    assert_eq!(client.state(), PmuState::HeldOff as u32);
    assert_eq!(*client.platform().marker.lock().unwrap(), None, "a held-off start touched the marker");

    let client = skylake(&[]);
    client.platform().marker_fails.store(true, Ordering::SeqCst);
    client.query_added();
    assert!(client.asked().is_empty() && !client.owns(), "programmed without a marker");
    assert_eq!(client.state(), PmuState::Failed as u32);
    client.platform().marker_fails.store(false, Ordering::SeqCst);
    client.query_added();
    assert!(client.owns(), "the next query did not try again");
}
