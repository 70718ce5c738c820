//! Programming, reading and stopping the planned counters on one processor, as sequences of MSR
//! accesses. Pure: the driver runs these inside its all-processor call with real rdmsr/wrmsr; the
//! tests run them against an MSR file.
//!
//! The driver may own only some counters (HalAllocateHardwareCounters with a resource list), so the
//! shared registers (IA32_PERF_GLOBAL_CTRL, IA32_FIXED_CTR_CTRL, AMD PerfCntrGlobalCtl) are changed
//! read-modify-write: bits of counters other clients own are left as they are.

use super::model::Vendor;
use super::msr;
use super::placement::{CounterPlan, Slot};

/// MSR and counter access on the current processor.
pub trait Msrs {
    fn read(&self, msr: u32) -> u64;
    fn write(&mut self, msr: u32, value: u64);

    /// Reads a counter whose MSR is `msr`: with `rdpmc` at index `rdpmc` where given (no MSR access,
    /// and under a hypervisor usually no exit), else with rdmsr. Host fakes read the MSR.
    fn read_counter(&self, msr: u32, rdpmc: Option<u32>) -> u64 {
        let _ = rdpmc;
        self.read(msr)
    }

    /// Runs `work` with maskable interrupts (the PMI among them) held off on this processor. Host
    /// fakes have none.
    fn with_interrupts_held<R>(&mut self, work: impl FnOnce(&mut Self) -> R) -> R
    where
        Self: Sized,
    {
        work(self)
    }
}

/// Where a vendor keeps the global enable, status and status-clear registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GlobalRegisters {
    control: u32,
    status: u32,
    clear_status: u32,
}

fn global_registers(vendor: Vendor, plan: &CounterPlan) -> Option<GlobalRegisters> {
    if plan.global_ctrl() == 0 {
        return None; // AMD without PerfMonV2: each counter enables itself through its control's EN bit.
    }
    Some(match vendor {
        Vendor::Intel => GlobalRegisters {
            control: msr::IA32_PERF_GLOBAL_CTRL,
            status: msr::IA32_PERF_GLOBAL_STATUS,
            clear_status: msr::IA32_PERF_GLOBAL_OVF_CTRL,
        },
        Vendor::Amd => GlobalRegisters {
            control: msr::AMD_PERF_CNTR_GLOBAL_CTL,
            status: msr::AMD_PERF_CNTR_GLOBAL_STATUS,
            clear_status: msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
        },
    })
}

/// The global overflow status register of `vendor` (IA32_PERF_GLOBAL_STATUS, AMD PerfCntrGlobalStatus),
/// or `None` where the plan has no global registers (AMD without PerfMonV2).
pub fn global_status_register(vendor: Vendor, plan: &CounterPlan) -> Option<u32> {
    global_registers(vendor, plan).map(|global| global.status)
}

/// The 4-bit IA32_FIXED_CTR_CTRL fields of the plan's fixed counters.
fn fixed_fields(plan: &CounterPlan) -> u64 {
    plan.fixed_counters().fold(0, |mask, index| mask | (0xF << (4 * u32::from(index))))
}

/// Stops the plan's counters, zeroes them and their pending overflow status, programs their events,
/// then enables them all at once. Every counter starts from 0.
pub fn start(vendor: Vendor, plan: &CounterPlan, msrs: &mut impl Msrs) {
    stop_and_clear(vendor, plan, msrs);
    for assignment in plan.iter() {
        if let Slot::General(_) = assignment.slot {
            msrs.write(assignment.control_msr, assignment.control);
        }
    }
    if fixed_fields(plan) != 0 {
        let fixed = msrs.read(msr::IA32_FIXED_CTR_CTRL);
        msrs.write(msr::IA32_FIXED_CTR_CTRL, (fixed & !fixed_fields(plan)) | plan.fixed_ctrl());
    }
    if let Some(global) = global_registers(vendor, plan) {
        let control = msrs.read(global.control);
        msrs.write(global.control, control | plan.global_ctrl());
    }
}

/// Disables the plan's counters (globally first, so they stop together), clears their controls,
/// zeroes them and clears their overflow status: what the HAL expects before the counters are freed.
pub fn stop_and_clear(vendor: Vendor, plan: &CounterPlan, msrs: &mut impl Msrs) {
    let global = global_registers(vendor, plan);
    if let Some(global) = global {
        let control = msrs.read(global.control);
        msrs.write(global.control, control & !plan.global_ctrl());
    }
    if fixed_fields(plan) != 0 {
        let fixed = msrs.read(msr::IA32_FIXED_CTR_CTRL);
        msrs.write(msr::IA32_FIXED_CTR_CTRL, fixed & !fixed_fields(plan));
    }
    for assignment in plan.iter() {
        if let Slot::General(_) = assignment.slot {
            // Disable before writing the counter, so that it does not count between the writes (Linux
            // writes a counter, arch/x86/events/core.c x86_perf_event_set_period, only while stopped).
            msrs.write(assignment.control_msr, 0);
        }
        msrs.write(assignment.counter_msr, 0);
    }
    if plan.topdown_metrics() {
        // Fixed counter 3 before IA32_PERF_METRICS, as Linux zeroes them (intel_pmu_update_topdown_event).
        msrs.write(msr::IA32_FIXED_CTR3, 0);
        msrs.write(msr::IA32_PERF_METRICS, 0);
    }
    if let Some(global) = global {
        msrs.write(global.clear_status, plan.global_ctrl());
    }
}

/// The plan's global enable bits that are set at power-on, which the HAL relies on: Intel's
/// general-purpose enables (IA32_PERF_GLOBAL_CTRL bits 0-31 are 1 at reset, the fixed counters' and
/// EN_PERF_METRICS 0: Intel SDM Vol. 3B, "Architectural Performance Monitoring Version 2"), every AMD
/// PerfMonV2 enable (PerfCntrGlobalCtl resets to all core counters enabled: AMD PPR for family 19h,
/// MSR C000_0301).
fn power_on_enables(vendor: Vendor, plan: &CounterPlan) -> u64 {
    const INTEL_GENERAL_PURPOSE_ENABLES: u64 = 0xFFFF_FFFF;
    match vendor {
        Vendor::Intel => plan.global_ctrl() & INTEL_GENERAL_PURPOSE_ENABLES,
        Vendor::Amd => plan.global_ctrl(),
    }
}

/// Stops and clears the plan's counters ([`stop_and_clear`]), then gives the PMU back as the HAL
/// expects it: the plan's global enables at their power-on values. The HAL never sets a
/// general-purpose enable; it programs its own counters through their event selects alone and takes
/// a cleared enable for a foreign modification (observed in decompiled Windows 10/11 HAL builds,
/// `EmonIsModifiedByBadActorInternal`), so a release that left them clear would stop WPR/xperf PMC
/// sampling until a reboot. With their event selects zero the counters stay stopped.
pub fn release(vendor: Vendor, plan: &CounterPlan, msrs: &mut impl Msrs) {
    stop_and_clear(vendor, plan, msrs);
    if let Some(global) = global_registers(vendor, plan) {
        let control = msrs.read(global.control);
        msrs.write(global.control, control | power_on_enables(vendor, plan));
    }
}

/// What [`start`] leaves in the registers a resume or a foreign tool can undo: every general-purpose
/// control, the plan's IA32_FIXED_CTR_CTRL fields and its global enable bits, as (MSR, mask, value)
/// checks worked out once per session, so that each read costs one rdmsr and one compare per check.
///
/// Resume from S3/S4 leaves the PMU at its power-on values (the HAL does not reprogram a client's
/// counters), and a tool that writes MSRs without HAL arbitration may clear an event select: then the
/// counters no longer count what the plan says, and their values are not the driver's to extend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Programming {
    checks: [(u32, u64, u64); MAX_CHECKS],
    len: usize,
    /// The checks repeated round a power-of-two cycle, for [`Self::intact_in_turn`]; `None` without
    /// checks.
    turns: Option<[(u32, u64, u64); TURNS]>,
}

/// The general-purpose controls, IA32_FIXED_CTR_CTRL and the global control.
const MAX_CHECKS: usize = super::placement::MAX_ASSIGNMENTS + 2;
/// The length of the cycle of turns: a power of two, so that a turn is any counter masked, with no
/// comparison and no bounds test; at least [`MAX_CHECKS`], so that every check has a turn in each cycle.
pub const TURNS: usize = MAX_CHECKS.next_power_of_two();

impl Programming {
    /// The checks for `plan` on `vendor`.
    pub fn of(vendor: Vendor, plan: &CounterPlan) -> Self {
        let mut programming = Programming { checks: [(0, 0, 0); MAX_CHECKS], len: 0, turns: None };
        let mut push = |check| {
            programming.checks[programming.len] = check;
            programming.len += 1;
        };
        for assignment in plan.iter() {
            if let Slot::General(_) = assignment.slot {
                push((assignment.control_msr, u64::MAX, assignment.control));
            }
        }
        if fixed_fields(plan) != 0 {
            push((msr::IA32_FIXED_CTR_CTRL, fixed_fields(plan), plan.fixed_ctrl()));
        }
        if let Some(global) = global_registers(vendor, plan) {
            push((global.control, plan.global_ctrl(), plan.global_ctrl()));
        }
        if programming.len > 0 {
            let checks = &programming.checks[..programming.len];
            programming.turns = Some(core::array::from_fn(|turn| checks[turn % checks.len()]));
        }
        programming
    }

    /// Whether this processor's registers still hold the programming. Writes nothing.
    #[inline]
    pub fn intact(&self, msrs: &impl Msrs) -> bool {
        self.checks[..self.len].iter().all(|&(register, mask, value)| msrs.read(register) & mask == value)
    }

    /// Whether the check of turn `turn` (any number: turns go round a cycle of [`TURNS`], in which
    /// every check has at least one turn and some two) still holds: one rdmsr, so that a collect can
    /// afford it. Successive turns go round every check.
    #[inline]
    pub fn intact_in_turn(&self, turn: usize, msrs: &impl Msrs) -> bool {
        match &self.turns {
            Some(turns) => {
                let (register, mask, value) = turns[turn % TURNS];
                msrs.read(register) & mask == value
            }
            None => true,
        }
    }
}

#[cfg(test)]
#[path = "program_tests.rs"]
mod tests;
