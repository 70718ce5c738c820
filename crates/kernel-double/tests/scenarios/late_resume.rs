//! Resume as Windows delivers it: the PMU comes back at its power-on values, and the
//! `\Callback\PowerState` "back in S0" call comes later, from a work item queued during resume
//! (PopUnlockAfterSleepWorker, observed in decompiled Windows builds), so collects read the reset PMU
//! before the driver hears of the resume. On AMD Zen 4 the reset leaves PerfMonV2's global control
//! with every counter enabled (AMD's PPR) and the event selects 0: a polled counter back at 0 must not
//! read as a wrap (a 2^48 jump). On Intel IA32_PERF_GLOBAL_CTRL comes back with the general-purpose
//! enables set and the fixed ones clear (Intel SDM). The sleep lands at every phase of the driver's
//! rotating programming check (one more collect between sleeps), and every count stays the virtual
//! PMU's, never backwards, with each processor reprogrammed once per sleep.

use crate::common;

use common::counting::*;
use common::*;
use kernel_double::control::{callback, pcw};
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// Collects on the reset PMU before the late "back in S0" call.
const READS_BEFORE_THE_CALL: u64 = 2;
/// Sleeps: each moves the rotation on by READS_BEFORE_THE_CALL + 1 collects (odd, so that sixteen
/// sleeps start at every phase of a rotation of up to sixteen turns; the power calls check every
/// register and take no turn).
const SLEEPS: usize = 16;

fn scenario(model: &'static CpuModel) {
    cpuid::set_model(model);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let counted = counted_events();
    let mut previous = totals();
    step_and_check(&mut previous, &counted, 1_000, "before the first sleep");
    for sleep in 0..SLEEPS {
        let reprograms = driver_status()[PMU_REPROGRAMS];
        let resume = callback::suspend_resume_late(READS_BEFORE_THE_CALL);
        for read in 0..READS_BEFORE_THE_CALL {
            for vp in 0..PROCESSORS {
                kernel_double::cpu::pmu::step(vp, 700);
            }
            collect_exact(&mut previous, &format!("sleep {sleep}: collect {read} before the late call"));
        }
        resume.back_in_s0();
        step_and_check(&mut previous, &counted, 900, &format!("sleep {sleep}: after the late call"));
        assert_eq!(
            driver_status()[PMU_REPROGRAMS],
            reprograms + u64::from(PROCESSORS),
            "sleep {sleep}: every processor reprogrammed once"
        );
    }
    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}

#[test]
fn zen4_late_resume_callback_counts_stay_exact() {
    scenario(&cpuid::ZEN4);
}

#[test]
fn skylake_late_resume_callback_counts_stay_exact() {
    scenario(&cpuid::SKYLAKE);
}

/// Zen 3: no global registers, every counter enabled by its own event select alone.
#[test]
fn zen3_late_resume_callback_counts_stay_exact() {
    scenario(&cpuid::ZEN3);
}

/// Alder Lake performance cores: fixed counter 3 and IA32_PERF_METRICS among what the repair restores.
#[test]
fn alder_lake_late_resume_callback_counts_stay_exact() {
    scenario(&cpuid::ALDER_LAKE_P);
}
