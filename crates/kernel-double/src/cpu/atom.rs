//! The efficient (Atom) cores of hybrid processors count top-down level 1 with their own events on
//! general-purpose counters: TOPDOWN_FE_BOUND.ALL (71H), TOPDOWN_RETIRING.ALL (C2H on Gracemont, 72H
//! on Crestmont), TOPDOWN_BE_BOUND.ALL (74H) and, on Crestmont, TOPDOWN_BAD_SPECULATION.ALL (73H), all
//! umask 00H (intel/perfmon `ADL/events/alderlake_gracemont_core.json`,
//! `MTL/events/meteorlake_crestmont_core.json`), out of `#Pipeline_Width` slots per core cycle: 5 on
//! Gracemont, 6 on Crestmont (intel/perfmon `E-core_TMA_Metrics.csv`). The virtual PMU of such a core
//! counts them from the workload's top-down mix scaled to its width; bad speculation takes the slots
//! the other three leave, so the four always sum to width x core cycles, as Intel's level 1 defines.

use super::cpuid;

/// An Atom core's top-down pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Atom {
    /// Allocation slots per core cycle.
    pub width: u64,
    /// TOPDOWN_RETIRING.ALL's event code.
    retiring: u64,
    /// Whether TOPDOWN_BAD_SPECULATION.ALL exists (Crestmont).
    bad_speculation: bool,
}

/// The Atom pipeline of processor `vp`, if its CPUID says it is an efficient core of a hybrid part
/// whose events the double knows: leaf 7 EDX\[15\] (Hybrid), leaf 1AH core type 20H (Atom), family 6
/// model 97H, 9AH, B7H, BAH or BFH (Gracemont) or AAH, ACH (Crestmont).
pub fn of(vp: u32) -> Option<Atom> {
    let hybrid = cpuid::cpuid_on(vp, 7, 0)[3] & (1 << 15) != 0;
    let atom = cpuid::cpuid_on(vp, 0x1A, 0)[0] >> 24 == 0x20;
    let signature = cpuid::cpuid_on(vp, 1, 0)[0];
    let family = (signature >> 8) & 0xF;
    let model = ((signature >> 4) & 0xF) | ((signature >> 12) & 0xF0);
    if !(hybrid && atom && family == 6) {
        return None;
    }
    match model {
        0x97 | 0x9A | 0xB7 | 0xBA | 0xBF => Some(Atom { width: 5, retiring: 0xC2, bad_speculation: false }),
        0xAA | 0xAC => Some(Atom { width: 6, retiring: 0x72, bad_speculation: true }),
        _ => None,
    }
}

impl Atom {
    /// The workload event (see `super::pmu::RATES`) an event select of this core counts, if one of its
    /// top-down events.
    pub fn event(self, event: u64, umask: u64) -> Option<usize> {
        use super::pmu::workload::{
            ATOM_BACKEND_BOUND, ATOM_BAD_SPECULATION, ATOM_FRONTEND_BOUND, ATOM_RETIRING,
        };
        match (event, umask) {
            (0x71, 0) => Some(ATOM_FRONTEND_BOUND),
            (0x74, 0) => Some(ATOM_BACKEND_BOUND),
            (0x73, 0) if self.bad_speculation => Some(ATOM_BAD_SPECULATION),
            (code, 0) if code == self.retiring => Some(ATOM_RETIRING),
            _ => None,
        }
    }

    /// Slots per workload unit of retiring, bad speculation, frontend bound and backend bound: the
    /// width's share of each core cycle (`cycles` per unit), split as `mix` (which sums to `mix_slots`)
    /// splits a unit, rounded down, bad speculation taking what is left.
    pub fn per_unit(self, cycles: u64, mix: [u64; 4], mix_slots: u64) -> [u64; 4] {
        let slots = self.width * cycles;
        let share = |category: usize| mix[category] * slots / mix_slots;
        let [retiring, frontend, backend] = [share(0), share(2), share(3)];
        [retiring, slots - retiring - frontend - backend, frontend, backend]
    }
}
