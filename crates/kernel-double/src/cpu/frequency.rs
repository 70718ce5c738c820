//! IA32_MPERF (0xE7) and IA32_APERF (0xE8) of every virtual processor: free-running 64-bit counters
//! present where `CPUID.06H:ECX[0]` is set (Intel SDM Vol. 3B, "Hardware Coordination Feedback";
//! AMD APM Vol. 2, "Effective Frequency Interface", same MSR numbers). MPERF counts at the fixed
//! reference frequency and APERF at the actual one, both only in C0: here one workload unit adds the
//! workload's reference and core cycles (`pmu::rate`, which `pmu::set_workload` changes).
//!
//! Windows itself reads them (its processor performance accounting), so a driver that writes them
//! corrupts another user's numbers: the double records any write as a violation. Without the CPUID
//! bit they do not exist, and an access is a #GP (a violation).

use super::cpuid;
use super::pmu::workload as pmu;
use crate::poison::IgnorePoison;
use std::sync::Mutex;

pub const IA32_MPERF: u32 = 0xE7;
pub const IA32_APERF: u32 = 0xE8;

/// Per processor: (APERF, MPERF).
static COUNTERS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// Whether processor `vp` has APERF and MPERF (CPUID.06H:ECX\[0\]).
pub fn present(vp: u32) -> bool {
    cpuid::cpuid_on(vp, 6, 0)[2] & 1 != 0
}

/// Whether `msr` is APERF or MPERF (of any model).
pub fn is_frequency_msr(msr: u32) -> bool {
    msr == IA32_MPERF || msr == IA32_APERF
}

/// `units` of work on `vp`: APERF advances by core cycles, MPERF by reference cycles.
pub(crate) fn advance(vp: u32, units: u64) {
    if !present(vp) {
        return;
    }
    let mut counters = COUNTERS.lock().ignore_poison();
    if counters.len() <= vp as usize {
        counters.resize(vp as usize + 1, (0, 0));
    }
    let (aperf, mperf) = &mut counters[vp as usize];
    *aperf = aperf.wrapping_add(pmu::rate(pmu::CORE_CYCLES) * units);
    *mperf = mperf.wrapping_add(pmu::rate(pmu::REFERENCE_CYCLES) * units);
}

/// (APERF, MPERF) of `vp` now.
pub fn counted(vp: u32) -> (u64, u64) {
    COUNTERS.lock().ignore_poison().get(vp as usize).copied().unwrap_or((0, 0))
}

/// rdmsr of APERF or MPERF on `vp`.
pub(crate) fn read(vp: u32, msr: u32) -> u64 {
    let (aperf, mperf) = counted(vp);
    if msr == IA32_APERF { aperf } else { mperf }
}
