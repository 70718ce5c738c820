//! How the counters of a virtual processor advance: by the workload's rates for each enabled counter
//! when a test steps the processor, by the reader's own slots on fixed counter 3 when the driver
//! executes a PMU instruction ([`reader_executes`]), and by a test's jump ([`preload`]); wraps set the
//! global status bits. [`counted`] is the exact total each event's counter has accumulated since the
//! driver first programmed it (including [`preload`] jumps): what the driver must report. Which
//! counter counts which event is asked here too ([`programmed_counters`]).

use super::super::atom::Atom;
use super::super::cpuid::PmuKind;
use super::registers::{
    AMD_PERF_CTL_CORE0, EN, EN_PERF_METRICS, IA32_FIXED_CTR0, IA32_PMC0, INT, Register, USR_OS, VpPmu,
    decode, lock, mask, processor, widths,
};
use super::workload::{
    ATOM_BACKEND_BOUND, ATOM_BAD_SPECULATION, ATOM_FRONTEND_BOUND, ATOM_RETIRING, CORE_CYCLES, FIXED_EVENTS,
    RATES, TOPDOWN_MIX, TOPDOWN_SLOTS, gp_event, rate,
};
use crate::poison::IgnorePoison;

/// Advances every enabled counter of `vp` by `units` of work; returns the status bits that raised an
/// interrupt request.
pub(super) fn advance(kind: PmuKind, atom: Option<Atom>, state: &mut VpPmu, units: u64) -> u64 {
    let (gp_width, fixed_width) = widths(kind);
    let mut pmi = 0u64;
    let mut wraps = 0u64;
    // AMD without PerfMonV2 has no global control (each PerfCtl's EN alone enables) and no status.
    let no_global = matches!(kind, PmuKind::Amd { perfmon_v2: false, .. });
    let global_ctrl = if no_global { u64::MAX } else { state.global_ctrl };
    let mut events: Vec<(usize, bool, u8, usize, bool)> = Vec::new(); // (event, is_fixed, bit, index, int)
    for (i, counter) in state.gp.iter().enumerate() {
        let enabled =
            counter.control & EN != 0 && counter.control & USR_OS != 0 && global_ctrl & (1 << i) != 0;
        let event = gp_event(kind, counter.control).or_else(|| {
            atom.and_then(|atom| atom.event(counter.control & 0xFF, (counter.control >> 8) & 0xFF))
        });
        if let (true, Some(event)) = (enabled, event) {
            events.push((event, false, i as u8, i, counter.control & INT != 0));
        }
    }
    for (i, &event) in FIXED_EVENTS.iter().enumerate().take(state.fixed.len()) {
        let field = (state.fixed_ctrl >> (4 * i)) & 0xF;
        let bit = 32 + i as u8;
        if field & 3 != 0 && global_ctrl & (1 << bit) != 0 {
            events.push((event, true, bit, i, field & 8 != 0));
        }
    }
    for (event, fixed, bit, index, int) in events {
        let increment = match (event, atom) {
            (ATOM_FRONTEND_BOUND..=ATOM_BAD_SPECULATION, Some(atom)) => {
                let mix = *TOPDOWN_MIX.lock().ignore_poison();
                let [retiring, bad, frontend, backend] =
                    atom.per_unit(rate(CORE_CYCLES), mix, RATES[TOPDOWN_SLOTS]);
                let per_unit = match event {
                    ATOM_FRONTEND_BOUND => frontend,
                    ATOM_RETIRING => retiring,
                    ATOM_BACKEND_BOUND => backend,
                    _ => bad,
                };
                per_unit * units
            }
            _ => rate(event) * units,
        };
        let (counter, width) =
            if fixed { (&mut state.fixed[index], fixed_width) } else { (&mut state.gp[index], gp_width) };
        assert!(increment < 1 << width, "a workload step must not wrap a {width}-bit counter twice");
        let next = counter.value + increment;
        counter.value = next & mask(width);
        state.counted[event] = state.counted[event].wrapping_add(increment);
        // IA32_PERF_METRICS splits the slots only while IA32_PERF_GLOBAL_CTRL.EN_PERF_METRICS (bit
        // 48) is set (Intel SDM Vol. 3B, "Performance Metrics"; Linux sets GLOBAL_CTRL_EN_PERF_METRICS
        // in intel_ctrl wherever it uses PERF_METRICS): without it the register stays as it was.
        if event == TOPDOWN_SLOTS {
            split_slots(state, global_ctrl, units);
        }
        if next > mask(width) && !no_global {
            let bits = (1 << bit) | perf_metrics_overflow(fixed, index, global_ctrl);
            wraps |= bits;
            if int {
                pmi |= bits;
            }
        }
    }
    state.global_status |= wraps;
    pmi
}

/// IA32_PERF_GLOBAL_STATUS bit 48, PERF_METRICS overflow, for a wrap of fixed counter `index` (when
/// `fixed`) under `global_ctrl`: set when fixed counter 3 (TOPDOWN.SLOTS), whose slots IA32_PERF_METRICS
/// divides, overflows while EN_PERF_METRICS is set (Intel SDM Vol. 3B, "Performance Metrics" and
/// IA32_PERF_GLOBAL_STATUS bit 48; Linux: "The METRICS related register may be overflow. The bit 48 of
/// the STATUS register will be set. If so, PERF_METRICS and Fixed counter 3 are required to be reset",
/// commit "perf/x86/intel: Generic support for hardware TopDown metrics", 2020, whose
/// `handle_pmi_common` resets both on the bit). It raises a PMI with fixed counter 3's PMI bit, as
/// the counter's own bit does. The fractions go on as the shares of every slot since the register was
/// last zeroed (the double's internal counts do not wrap).
fn perf_metrics_overflow(fixed: bool, index: usize, global_ctrl: u64) -> u64 {
    if fixed && index == 3 && global_ctrl & EN_PERF_METRICS != 0 { EN_PERF_METRICS } else { 0 }
}

/// The top-down slots of `units` of work, in the workload's current mix ([`set_topdown_mix`]), into
/// the ground truth, and into IA32_PERF_METRICS' counts where `global_ctrl` has EN_PERF_METRICS.
fn split_slots(state: &mut VpPmu, global_ctrl: u64, units: u64) {
    let mix = *TOPDOWN_MIX.lock().ignore_poison();
    for (category, rate) in mix.iter().enumerate() {
        if global_ctrl & EN_PERF_METRICS != 0 {
            state.metrics[category] += rate * units;
        }
        state.topdown_counted[category] += rate * units;
    }
}

/// Slots fixed counter 3 counts for each PMU instruction the driver executes (rdmsr, wrmsr, rdpmc)
/// while it counts: one workload unit's. Fixed counter 3 counts the slots of every instruction on the
/// processor, the reader's own included (Intel SDM Vol. 3B, "Performance Metrics": TOPDOWN.SLOTS
/// counts the issue slots of the logical processor), so a read that leaves it counting sees it move
/// between its own instructions: the slots counted between reading fixed counter 3 and zeroing it are
/// in no read, and IA32_PERF_METRICS then splits slots that fixed counter 3 no longer holds. Linux
/// reads and zeroes both with the PMU disabled ("PMU has to be disabled before calling this
/// function", `arch/x86/events/intel/core.c`). Limits: only fixed counter 3 counts the reader's
/// instructions (the other counters count the workload alone, so their exact checks are unchanged),
/// and a wrap it causes raises no interrupt.
pub const READER_SLOTS_UNITS: u64 = 1;

/// The driver executes a PMU instruction on `vp` (called by the trap handler before the access takes
/// effect): fixed counter 3, if it counts, counts its slots ([`READER_SLOTS_UNITS`]).
pub(crate) fn reader_executes(vp: u32) {
    let PmuKind::Intel { fixed_width, .. } = processor(vp).kind else { return };
    let mut guard = lock(vp);
    let state = &mut *guard;
    let bit = 32 + 3;
    if state.fixed.len() <= 3 || (state.fixed_ctrl >> 12) & 3 == 0 || state.global_ctrl & (1 << bit) == 0 {
        return;
    }
    let increment = RATES[TOPDOWN_SLOTS] * READER_SLOTS_UNITS;
    let next = state.fixed[3].value + increment;
    state.fixed[3].value = next & mask(fixed_width);
    if next > mask(fixed_width) {
        state.global_status |= (1 << bit) | perf_metrics_overflow(true, 3, state.global_ctrl);
    }
    state.counted[TOPDOWN_SLOTS] = state.counted[TOPDOWN_SLOTS].wrapping_add(increment);
    let global_ctrl = state.global_ctrl;
    split_slots(state, global_ctrl, READER_SLOTS_UNITS);
}

/// The exact number of `event` events `vp`'s counters have counted (plus [`preload`] jumps): what the
/// driver must report for that processor once it has read the counters.
pub fn counted(vp: u32, event: usize) -> u64 {
    lock(vp).counted[event]
}

/// The top-down slots of each category (retiring, bad speculation, frontend bound, backend bound)
/// `vp`'s fixed counter 3 has counted: the ground truth of the driver's category totals, which it can
/// only know to IA32_PERF_METRICS' 1/255 resolution per read.
pub fn topdown_counted(vp: u32) -> [u64; 4] {
    lock(vp).topdown_counted
}

/// Sets the counter at `msr` of `vp` to `value` (masked to its width) as if it had counted the
/// difference: a test's way to start a counter near its wrap point just after the driver programmed
/// it. Fixed counter 3's difference must be whole workload units' slots, which IA32_PERF_METRICS then
/// splits in the current mix. Panics if `msr` is not a counter of the model or the counter counts no workload event.
pub fn preload(vp: u32, msr: u32, value: u64) {
    let kind = processor(vp).kind;
    let (gp_width, fixed_width) = widths(kind);
    let mut state = lock(vp);
    let (counter, width, event) = match decode(vp, msr) {
        Some(Register::Gp(i) | Register::LegacyGp(i)) => {
            let control = state.gp[i].control;
            let event = gp_event(kind, control).or_else(|| {
                processor(vp).atom.and_then(|atom| atom.event(control & 0xFF, (control >> 8) & 0xFF))
            });
            (&mut state.gp[i], gp_width, event)
        }
        Some(Register::Fixed(i)) => (&mut state.fixed[i], fixed_width, FIXED_EVENTS.get(i).copied()),
        other => panic!("MSR {msr:#x} is not a counter ({other:?})"),
    };
    let event = event.unwrap_or_else(|| panic!("MSR {msr:#x} counts no workload event"));
    let value = value & mask(width);
    let jump = value.wrapping_sub(counter.value) & mask(width);
    counter.value = value;
    state.counted[event] = state.counted[event].wrapping_add(jump);
    // Fixed counter 3's jump is slots of the workload: split like any other (a whole number of units).
    if event == TOPDOWN_SLOTS {
        assert_eq!(jump % RATES[TOPDOWN_SLOTS], 0, "fixed counter 3 jumps by whole workload units");
        let global_ctrl = state.global_ctrl;
        split_slots(&mut state, global_ctrl, jump / RATES[TOPDOWN_SLOTS]);
    }
}

/// The counter MSRs of the model that are programmed to count a workload event on `vp` right now,
/// with the event (index into [`RATES`]).
pub fn programmed_counters(vp: u32) -> Vec<(u32, usize)> {
    let kind = processor(vp).kind;
    let state = lock(vp);
    let mut counters = Vec::new();
    for (i, &event) in FIXED_EVENTS.iter().enumerate().take(state.fixed.len()) {
        if (state.fixed_ctrl >> (4 * i)) & 3 != 0 {
            counters.push((IA32_FIXED_CTR0 + i as u32, event));
        }
    }
    let atom = processor(vp).atom;
    for (i, counter) in state.gp.iter().enumerate() {
        let event = gp_event(kind, counter.control).or_else(|| {
            atom.and_then(|atom| atom.event(counter.control & 0xFF, (counter.control >> 8) & 0xFF))
        });
        if counter.control & EN != 0
            && let Some(event) = event
        {
            let msr = match kind {
                PmuKind::Amd { .. } => AMD_PERF_CTL_CORE0 + 2 * i as u32 + 1,
                _ => IA32_PMC0 + i as u32,
            };
            counters.push((msr, event));
        }
    }
    counters
}

/// The MSR of the counter programmed to count `event` (index into [`RATES`]) on `vp` right now, if any.
pub fn counter_of(vp: u32, event: usize) -> Option<u32> {
    programmed_counters(vp).into_iter().find_map(|(msr, counting)| (counting == event).then_some(msr))
}
