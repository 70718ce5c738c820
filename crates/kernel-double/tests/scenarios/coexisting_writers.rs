//! Other tools write the PMU's MSRs without HAL arbitration (raw MSR readers built on WinRing0). One
//! that only flips bits which do not change what a counter counts (an event select's INT bit, Intel's
//! pin-control bit, a fixed counter's PMI bit: Intel SDM Vol. 3B, IA32_PERFEVTSELx and
//! IA32_FIXED_CTR_CTRL; AMD APM Vol. 2, PerfCtl) must not be taken for lost programming: nothing is
//! repaired and its bits stay as it left them. One that reprograms an event select of the driver's
//! must be repaired within as many collects as the driver programs registers, with no count lost,
//! none invented, none going backwards, and the counters' own values kept (the other tool reading
//! them must not see them go back to 0).

use crate::common;

use common::counting::*;
use common::*;
use kernel_double::control::pcw;
use kernel_double::cpu::cpuid::{self, CpuModel, PmuKind};
use kernel_double::cpu::pmu;
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// Event select bit 20, INT (Intel and AMD).
const EVTSEL_INT: u64 = 1 << 20;
/// Intel IA32_PERFEVTSELx bit 19, PC (pin control).
const EVTSEL_PC: u64 = 1 << 19;
/// IA32_FIXED_CTR_CTRL: each 4-bit field's PMI bit (fields of fixed counters 0-2).
const FIXED_PMI_BITS: u64 = 0x888;
const IA32_FIXED_CTR_CTRL: u32 = 0x38D;

fn start(model: &'static CpuModel) -> (kernel_double::driver::Driver, [bool; 7], Vec<[u64; 7]>) {
    cpuid::set_model(model);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let counted = counted_events();
    let mut previous = totals();
    step_and_check(&mut previous, &counted, 1_000, "before the other tool");
    (driver, counted, previous)
}

fn finish(mut driver: kernel_double::driver::Driver) {
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}

/// Every programmed counter's raw value on every processor.
fn raw_counters() -> Vec<Vec<(u32, u64)>> {
    (0..PROCESSORS)
        .map(|vp| {
            pmu::programmed_counters(vp)
                .into_iter()
                .map(|(msr, _)| (msr, pmu::foreign_read(vp, msr)))
                .collect()
        })
        .collect()
}

fn harmless_co_writer(model: &'static CpuModel) {
    let (driver, counted, mut previous) = start(model);
    let reprograms = driver_status()[PMU_REPROGRAMS];
    let intel = matches!(model.pmu, PmuKind::Intel { .. });
    let mut written = Vec::new();
    for vp in 0..PROCESSORS {
        for (counter, _) in pmu::programmed_counters(vp) {
            if let Some(control) = control_of(model, counter) {
                let flipped = EVTSEL_INT | if intel { EVTSEL_PC } else { 0 };
                written.push((vp, control, pmu::foreign_read(vp, control) ^ flipped));
            }
        }
        if intel {
            written.push((
                vp,
                IA32_FIXED_CTR_CTRL,
                pmu::foreign_read(vp, IA32_FIXED_CTR_CTRL) ^ FIXED_PMI_BITS,
            ));
        }
    }
    for &(vp, msr, value) in &written {
        pmu::foreign_write(vp, msr, value);
    }
    let mut raws = raw_counters();
    // Two full rotations of the driver's check and more: every register it checks is read.
    for collect in 0..40 {
        step_and_check(&mut previous, &counted, 400, &format!("collect {collect} after the harmless writes"));
        let now = raw_counters();
        assert!(
            now.iter().flatten().zip(raws.iter().flatten()).all(|(now, before)| now.1 >= before.1),
            "collect {collect}: a counter went backwards: {raws:x?} -> {now:x?}"
        );
        raws = now;
    }
    assert_eq!(driver_status()[PMU_REPROGRAMS], reprograms, "a harmless write was repaired");
    for &(vp, msr, value) in &written {
        assert_eq!(pmu::foreign_read(vp, msr), value, "processor {vp}: MSR {msr:#x} was rewritten");
    }
    println!("{}: {} harmless writes, nothing repaired", model.name, written.len());
    finish(driver);
}

fn foreign_event_select(model: &'static CpuModel, foreign_select: u64) {
    let (driver, counted, mut previous) = start(model);
    let (counter, control) = pmu::programmed_counters(2)
        .into_iter()
        .find_map(|(counter, _)| Some((counter, control_of(model, counter)?)))
        .expect("a general-purpose counter is programmed");
    let ours = pmu::foreign_read(2, control);
    let bound = programmed_registers(model, 2);
    let mut slowest = 0;
    // After each repair the driver's next check is the one after the event select's; `shift` more
    // collects before the next write make the writes land at every turn of the rotation.
    for shift in 0..bound {
        for collect in 0..shift {
            step_and_check(
                &mut previous,
                &counted,
                100,
                &format!("write {shift}: collect {collect} before it"),
            );
        }
        let reprograms = driver_status()[PMU_REPROGRAMS];
        pmu::foreign_write(2, control, foreign_select);
        let mut raw = pmu::foreign_read(2, counter);
        let mut repaired_at = None;
        for collect in 1..=bound {
            // Every processor keeps counting; processor 2's reprogrammed counter counts the other
            // tool's event, which is none of the workload's.
            for vp in 0..PROCESSORS {
                pmu::step(vp, 500);
            }
            collect_exact(&mut previous, &format!("write {shift}: collect {collect} after it"));
            let now = pmu::foreign_read(2, counter);
            assert!(
                now >= raw,
                "write {shift}, collect {collect}: counter {counter:#x} went back, {raw:#x} -> {now:#x}"
            );
            raw = now;
            if driver_status()[PMU_REPROGRAMS] != reprograms {
                repaired_at = Some(collect);
                break;
            }
        }
        let collect = repaired_at.unwrap_or_else(|| {
            panic!("write {shift}: the foreign event select was not repaired within {bound} collects")
        });
        slowest = slowest.max(collect);
        assert_eq!(driver_status()[PMU_REPROGRAMS], reprograms + 1, "one processor repaired once");
        assert_eq!(pmu::foreign_read(2, control), ours, "the event select is the driver's again");
        step_and_check(&mut previous, &counted, 2_000, &format!("write {shift}: after the repair"));
        assert!(pmu::foreign_read(2, counter) >= raw, "counter {counter:#x} went backwards after the repair");
    }
    println!(
        "{}: {bound} foreign event selects, each repaired within {slowest} collects of at most {bound}",
        model.name
    );
    finish(driver);
}

#[test]
fn skylake_harmless_co_writer_is_left_alone() {
    harmless_co_writer(&cpuid::SKYLAKE);
}

#[test]
fn zen4_harmless_co_writer_is_left_alone() {
    harmless_co_writer(&cpuid::ZEN4);
}

/// MEM_LOAD_RETIRED.L1_HIT (event D1H, umask 01H), user and kernel, enabled: not the driver's.
#[test]
fn skylake_foreign_event_select_is_repaired_keeping_counts() {
    foreign_event_select(&cpuid::SKYLAKE, 0x43_01D1);
}

/// ls_dispatch (event 29H, umask 07H), user and kernel, enabled: not the driver's.
#[test]
fn zen4_foreign_event_select_is_repaired_keeping_counts() {
    foreign_event_select(&cpuid::ZEN4, 0x43_0729);
}

/// PerfEvtSel without PerfMonV2's global registers: the event select's EN bit alone enables.
#[test]
fn zen3_foreign_event_select_is_repaired_keeping_counts() {
    foreign_event_select(&cpuid::ZEN3, 0x43_0729);
}
