//! The workload the virtual processors run. Counters advance only when the test steps a virtual
//! processor (`super::delivery::step`): `units` of work make [`RATES`] events of each kind
//! (instructions, core cycles, reference cycles, LLC references, LLC misses, branches, branch
//! mispredicts, top-down slots and their inputs), except that [`set_workload`] changes the
//! instructions, core cycles and reference cycles of a unit ([`rate`]): IPC from 0.2 to 4 and a
//! frequency from 50 % to 140 % of the reference one; [`set_topdown_mix`] changes how the slots
//! divide. Which event an event select counts on each vendor is decided here too ([`gp_event`]).
//!
//! Counters advance by these rates in `super::counting`; APERF and MPERF in `super::super::frequency`;
//! an efficient core's own top-down events in `super::super::atom`.

use super::super::cpuid::PmuKind;
use crate::poison::IgnorePoison;
use std::sync::Mutex;

/// Events per workload unit: instructions, core cycles, reference cycles, LLC references, LLC misses,
/// branches, branch mispredicts, top-down slots (6 per core cycle, Golden Cove's issue width), then
/// the top-down inputs of processors without IA32_PERF_METRICS: slots not delivered by the frontend,
/// micro-operations issued, retirement slots, recovery cycles.
/// Then an efficient core's own top-down events (`super::atom`), whose rates depend on the core and
/// the mix: 0 here.
pub const RATES: [u64; EVENTS] = [16, 20, 18, 2, 1, 4, 1, 120, 16, 42, 36, 1, 0, 0, 0, 0];
pub const EVENTS: usize = 16;
/// What one workload unit makes of the events [`set_workload`] changes: instructions, core cycles
/// and reference cycles, by default [`RATES`]' (IPC 0.8 at 111 % of the reference frequency).
static WORKLOAD: Mutex<[u64; 3]> =
    Mutex::new([RATES[INSTRUCTIONS], RATES[CORE_CYCLES], RATES[REFERENCE_CYCLES]]);

/// The lowest and highest IPC (instructions per core cycle) and frequency (core cycles per reference
/// cycle) a workload may have: a stalled loop at 0.2 IPC to a 4-wide core's 4, and 50 % (a
/// power-capped part) to 140 % of the reference frequency (turbo; a Core i9-13900K's 5.8 GHz is 193 %
/// of its 3.0 GHz base, so real parts go further, and the driver's arithmetic does not depend on it).
pub const IPC_RANGE: (f64, f64) = (0.2, 4.0);
pub const FREQUENCY_RANGE: (f64, f64) = (0.5, 1.4);

/// Sets what one workload unit makes from now on (every processor): `instructions` retired in
/// `core_cycles` unhalted core cycles, which take `reference_cycles` reference cycles (MPERF's, and
/// fixed counter 2's). Refused (Err) outside [`IPC_RANGE`] and [`FREQUENCY_RANGE`], or if a count
/// is 0 or so large that a step could wrap a counter twice.
pub fn set_workload(instructions: u64, core_cycles: u64, reference_cycles: u64) -> Result<(), String> {
    let ratio = |n: u64, d: u64| if d == 0 { f64::NAN } else { n as f64 / d as f64 };
    let (ipc, frequency) = (ratio(instructions, core_cycles), ratio(core_cycles, reference_cycles));
    let within = |value: f64, (low, high): (f64, f64)| value >= low - 1e-12 && value <= high + 1e-12;
    if !within(ipc, IPC_RANGE) || !within(frequency, FREQUENCY_RANGE) {
        return Err(format!(
            "a workload of IPC {ipc} at {frequency} x the reference frequency: the double covers IPC {:?} and \
             frequency {:?}",
            IPC_RANGE, FREQUENCY_RANGE
        ));
    }
    if [instructions, core_cycles, reference_cycles].iter().any(|&rate| rate > 1_000) {
        return Err("at most 1000 events of a kind per workload unit".into());
    }
    *WORKLOAD.lock().ignore_poison() = [instructions, core_cycles, reference_cycles];
    Ok(())
}

/// Events of `event` (index into [`RATES`]) one workload unit makes now.
pub fn rate(event: usize) -> u64 {
    match event {
        INSTRUCTIONS | CORE_CYCLES | REFERENCE_CYCLES => WORKLOAD.lock().ignore_poison()[event],
        _ => RATES[event],
    }
}

/// An Atom core's TOPDOWN_FE_BOUND.ALL, TOPDOWN_RETIRING.ALL, TOPDOWN_BE_BOUND.ALL and
/// TOPDOWN_BAD_SPECULATION.ALL.
pub const ATOM_FRONTEND_BOUND: usize = 12;
pub const ATOM_RETIRING: usize = 13;
pub const ATOM_BACKEND_BOUND: usize = 14;
pub const ATOM_BAD_SPECULATION: usize = 15;
pub const SLOTS_NOT_DELIVERED: usize = 8;
pub const SLOTS_ISSUED: usize = 9;
pub const SLOTS_RETIRED: usize = 10;
pub const RECOVERY_CYCLES: usize = 11;
pub const INSTRUCTIONS: usize = 0;
pub const CORE_CYCLES: usize = 1;
pub const REFERENCE_CYCLES: usize = 2;
pub const TOPDOWN_SLOTS: usize = 7;
/// The event each Intel fixed counter counts (Intel SDM Vol. 3B: fixed counters 0-2 count
/// instructions, core cycles and reference cycles; fixed counter 3 TOPDOWN.SLOTS).
pub(super) const FIXED_EVENTS: [usize; 4] = [INSTRUCTIONS, CORE_CYCLES, REFERENCE_CYCLES, TOPDOWN_SLOTS];
/// How each workload unit's top-down slots divide into retiring, bad speculation, frontend bound and
/// backend bound (IA32_PERF_METRICS byte order); they sum to `RATES[TOPDOWN_SLOTS]`.
pub const TOPDOWN_RATES: [u64; 4] = [54, 11, 24, 31];
const _: () = assert!(TOPDOWN_RATES[0] + TOPDOWN_RATES[1] + TOPDOWN_RATES[2] + TOPDOWN_RATES[3] == RATES[7]);

/// The event a GP counter's control selects (index into [`RATES`]), if it is one the workload makes.
pub(super) fn gp_event(kind: PmuKind, control: u64) -> Option<usize> {
    let umask = (control >> 8) & 0xFF;
    match kind {
        PmuKind::Intel { .. } => match (control & 0xFF, umask) {
            (0xC0, 0) => Some(0),
            (0x3C, 0) => Some(1),
            (0x3C, 1) => Some(2),
            (0x2E, 0x4F) => Some(3),
            (0x2E, 0x41) => Some(4),
            (0xC4, 0) => Some(5),
            (0xC5, 0) => Some(6),
            // Sandy Bridge to Comet Lake model-specific events (Linux tools/perf/pmu-events/arch/x86/
            // skylake/{frontend,pipeline}.json): IDQ_UOPS_NOT_DELIVERED.CORE, UOPS_ISSUED.ANY,
            // UOPS_RETIRED.RETIRE_SLOTS, INT_MISC.RECOVERY_CYCLES.
            (0x9C, 0x01) => Some(SLOTS_NOT_DELIVERED),
            (0x0E, 0x01) => Some(SLOTS_ISSUED),
            (0xC2, 0x02) => Some(SLOTS_RETIRED),
            (0x0D, 0x01) => Some(RECOVERY_CYCLES),
            _ => None,
        },
        PmuKind::Amd { .. } => match ((control & 0xFF) | ((control >> 32) & 0xF) << 8, umask) {
            (0xC0, 0) => Some(0),
            (0x76, 0) => Some(1),
            (0x120, 0) => Some(2),
            (0x60, 0xFF) => Some(3),
            (0x64, 0x09) => Some(4),
            (0xC2, 0) => Some(5),
            (0xC3, 0) => Some(6),
            // Zen 4 and later (Linux tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json):
            // de_no_dispatch_per_slot.no_ops_from_frontend, de_src_op_disp.all, ex_ret_ops.
            (0x1A0, 0x01) => Some(SLOTS_NOT_DELIVERED),
            (0xAA, 0x07) => Some(SLOTS_ISSUED),
            (0xC1, 0) => Some(SLOTS_RETIRED),
            _ => None,
        },
        PmuKind::None => None,
    }
}

/// How each workload unit's top-down slots divide into the four categories now.
pub(super) static TOPDOWN_MIX: Mutex<[u64; 4]> = Mutex::new(TOPDOWN_RATES);

/// Sets how each workload unit's `RATES[TOPDOWN_SLOTS]` slots divide into retiring, bad speculation,
/// frontend bound and backend bound from now on (every processor), as a program's phases change it.
/// Panics unless the four sum to `RATES[TOPDOWN_SLOTS]`.
pub fn set_topdown_mix(mix: [u64; 4]) {
    assert_eq!(mix.iter().sum::<u64>(), RATES[TOPDOWN_SLOTS], "a top-down mix splits one unit's slots");
    *TOPDOWN_MIX.lock().ignore_poison() = mix;
}
