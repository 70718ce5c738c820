//! Programming, reading and stopping the planned counters on one processor, as sequences of MSR
//! accesses. Pure: the driver runs these inside its all-processor call with real rdmsr/wrmsr; the
//! tests run them against an MSR file.
//!
//! The driver may own only some counters (HalAllocateHardwareCounters with a resource list), so the
//! shared registers (IA32_PERF_GLOBAL_CTRL, IA32_FIXED_CTR_CTRL, AMD PerfCntrGlobalCtl) are changed
//! read-modify-write: bits of counters other clients own are left as they are.

use super::encoding::{EVTSEL_EN, EVTSEL_INT};
use super::layout::GlobalRegisters;
use super::model::Vendor;
use super::msr;
use super::placement::{Assignment, CounterPlan, HardwareCounter};
use crate::sync::Ordering;
use crate::sync::unmodelled::AtomicU32;

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

/// The plan's global registers ([`GlobalRegisters::of`]), or `None` where it has none (AMD without
/// PerfMonV2, whose plans enable no global bit: each counter enables itself through its control's EN
/// bit).
fn global_registers(vendor: Vendor, plan: &CounterPlan) -> Option<GlobalRegisters> {
    (plan.global_ctrl() != 0).then(|| GlobalRegisters::of(vendor))
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
    program_controls(vendor, plan, msrs);
}

/// Stops the plan's counters, keeping their values: globally where there are global enables (one
/// write stops them together), else by clearing each event select's EN bit. For a repair, which
/// must read them still and then write only the control registers.
pub fn stop(vendor: Vendor, plan: &CounterPlan, msrs: &mut impl Msrs) {
    match global_registers(vendor, plan) {
        Some(global) => disable_globally(global, plan, msrs),
        None => {
            for assignment in plan.iter() {
                if let HardwareCounter::General(_) = assignment.hardware {
                    msrs.write(assignment.control_msr, assignment.control & !EVTSEL_EN);
                }
            }
        }
    }
}

/// Clears the plan's global enable bits, leaving other clients' (one write stops the plan's counters
/// together).
fn disable_globally(global: GlobalRegisters, plan: &CounterPlan, msrs: &mut impl Msrs) {
    let control = msrs.read(global.control);
    msrs.write(global.control, control & !plan.global_ctrl());
}

/// Clears the plan's counters' overflow status bits (where the vendor has a global status).
pub fn clear_status(vendor: Vendor, plan: &CounterPlan, msrs: &mut impl Msrs) {
    if let Some(global) = global_registers(vendor, plan) {
        msrs.write(global.clear_status, plan.global_ctrl());
    }
}

/// Writes the plan's control registers (event selects, its IA32_FIXED_CTR_CTRL fields, then its
/// global enable bits, which start the counters together) and nothing else: the counters go on from
/// the values they hold.
pub fn program_controls(vendor: Vendor, plan: &CounterPlan, msrs: &mut impl Msrs) {
    for assignment in plan.iter() {
        if let HardwareCounter::General(_) = assignment.hardware {
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
    if let Some(global) = global_registers(vendor, plan) {
        disable_globally(global, plan, msrs);
    }
    if fixed_fields(plan) != 0 {
        let fixed = msrs.read(msr::IA32_FIXED_CTR_CTRL);
        msrs.write(msr::IA32_FIXED_CTR_CTRL, fixed & !fixed_fields(plan));
    }
    for assignment in plan.iter() {
        if let HardwareCounter::General(_) = assignment.hardware {
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
    clear_status(vendor, plan, msrs);
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
        msrs.write(global.control, control | (plan.global_ctrl() & global.power_on_enables));
    }
}

/// Intel IA32_PERFEVTSELx bit 19, PC (pin control): toggles the PMi pins, counts nothing (Intel SDM
/// Vol. 3B, "IA32_PERFEVTSELx MSRs"); reserved on AMD, where setting it faults.
const EVTSEL_PC: u64 = 1 << 19;
/// Event-select bits that do not change what a counter counts, so another tool may set or clear them
/// without taking the counter: INT (a PMI on overflow; Intel SDM Vol. 3B; AMD APM Vol. 2,
/// "Performance Event-Select Registers") and PC.
const EVTSEL_NOT_COUNTING: u64 = EVTSEL_INT | EVTSEL_PC;
/// Of each 4-bit IA32_FIXED_CTR_CTRL field, the bits that say what the counter counts: OS, USR and
/// AnyThread; not PMI (Intel SDM Vol. 3B, "Fixed-Function Performance Counters").
const FIXED_FIELD_COUNTING: u64 = 0x7;

/// The bits of the plan's IA32_FIXED_CTR_CTRL fields that say what its fixed counters count.
fn fixed_counting_bits(plan: &CounterPlan) -> u64 {
    plan.fixed_counters().fold(0, |mask, index| mask | (FIXED_FIELD_COUNTING << (4 * u32::from(index))))
}

/// Whether `assignment`'s own registers still say what the plan has it count: its event select's
/// counting bits (or its IA32_FIXED_CTR_CTRL field's) and its global enable bit. For a repair, which
/// keeps the counts of the counters that went on counting their events. Writes nothing.
pub fn counts_as_planned(
    vendor: Vendor,
    plan: &CounterPlan,
    assignment: &Assignment,
    msrs: &impl Msrs,
) -> bool {
    let counting = match assignment.hardware {
        HardwareCounter::General(_) => !EVTSEL_NOT_COUNTING,
        HardwareCounter::Fixed(index) => FIXED_FIELD_COUNTING << (4 * u32::from(index)),
    };
    let control_kept = msrs.read(assignment.control_msr) & counting == assignment.control & counting;
    let enabled = match (global_registers(vendor, plan), assignment.global_bit) {
        (Some(global), Some(bit)) => msrs.read(global.control) & (1 << bit) != 0,
        _ => true,
    };
    control_kept && enabled
}

/// What [`start`] leaves in the registers a resume or a foreign tool can undo: every general-purpose
/// control, the plan's IA32_FIXED_CTR_CTRL fields and its global enable bits, as (MSR, mask, value)
/// checks worked out once per session, so that each read costs one rdmsr and one compare per check.
/// Only bits that say what is counted are checked: another tool may flip an INT, PC or PMI bit, or
/// bits of counters the plan does not use, without the counters being taken from the driver.
///
/// Resume from S3/S4 leaves the PMU at its power-on values (the HAL does not reprogram a client's
/// counters), and a tool that writes MSRs without HAL arbitration may rewrite an event select: then
/// the counters no longer count what the plan says, and their values are not the driver's to extend.
///
/// A collect checks one register ([`Self::intact_in_turn`]); the turns go round the checks in order,
/// so a change to any checked register is found within as many reads of the processor as there are
/// checks, whatever the phase of the rotation when it was made (`program/tests.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Programming {
    /// Each check's register. The first `len` are the checks; the rest repeat them (check
    /// `i % len`), so that any turn masked to the table's size is a check.
    registers: [u32; TURNS],
    /// Each check's (mask, value), at the same turns as `registers` (a separate table: a 4-byte
    /// register beside two 8-byte values would pad every check by 4 bytes).
    expected: [(u64, u64); TURNS],
    /// The turn after each: the one of the next check, `(turn % len + 1) % len`, so that from any
    /// turn the turns go round the checks in order.
    next: [u8; TURNS],
    len: usize,
}

/// The general-purpose controls, IA32_FIXED_CTR_CTRL and the global control.
const MAX_CHECKS: usize = super::placement::MAX_ASSIGNMENTS + 2;
/// The size of the turn tables: a power of two, so that a turn is any counter masked, with no bounds
/// test; at least [`MAX_CHECKS`].
pub const TURNS: usize = MAX_CHECKS.next_power_of_two();

impl Programming {
    /// The checks for `plan` on `vendor`.
    pub fn of(vendor: Vendor, plan: &CounterPlan) -> Self {
        let mut checks = [(0, 0, 0); MAX_CHECKS];
        let mut len = 0;
        let mut push = |check| {
            checks[len] = check;
            len += 1;
        };
        for assignment in plan.iter() {
            if let HardwareCounter::General(_) = assignment.hardware {
                push((
                    assignment.control_msr,
                    !EVTSEL_NOT_COUNTING,
                    assignment.control & !EVTSEL_NOT_COUNTING,
                ));
            }
        }
        let fixed = fixed_counting_bits(plan);
        if fixed != 0 {
            push((msr::IA32_FIXED_CTR_CTRL, fixed, plan.fixed_ctrl() & fixed));
        }
        if let Some(global) = global_registers(vendor, plan) {
            push((global.control, plan.global_ctrl(), plan.global_ctrl()));
        }
        let cycle = len.max(1);
        Programming {
            registers: core::array::from_fn(|turn| checks[turn % cycle].0),
            expected: core::array::from_fn(|turn| (checks[turn % cycle].1, checks[turn % cycle].2)),
            next: core::array::from_fn(|turn| ((turn % cycle + 1) % cycle) as u8),
            len,
        }
    }

    /// Whether this processor's registers still hold the programming. Writes nothing.
    #[inline]
    pub fn intact(&self, msrs: &impl Msrs) -> bool {
        let len = self.len.min(TURNS);
        self.registers[..len]
            .iter()
            .zip(&self.expected[..len])
            .all(|(&register, &(mask, value))| msrs.read(register) & mask == value)
    }

    /// How many reads of a processor the turns take to go round every check: a change to a checked
    /// register is found within this many calls of [`Self::intact_in_turn`].
    #[cfg(test)]
    pub fn rotation(&self) -> usize {
        self.len
    }

    /// Whether the check of this processor's turn (`turn`, which moves on to the next check) still
    /// holds: one rdmsr, so that a collect can afford it. Any value of `turn` is a turn, and from any
    /// the turns go round the checks in order.
    #[inline]
    pub fn intact_in_turn(&self, turn: &AtomicU32, msrs: &impl Msrs) -> bool {
        if self.len == 0 {
            return true;
        }
        let index = turn.load(Ordering::Relaxed) as usize & (TURNS - 1);
        turn.store(u32::from(self.next[index]), Ordering::Relaxed);
        let (mask, value) = self.expected[index];
        msrs.read(self.registers[index]) & mask == value
    }
}

#[cfg(test)]
mod tests;
