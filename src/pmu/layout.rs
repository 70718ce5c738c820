//! Where a processor's PMU registers are, worked out once from its [`PmuModel`]: how many
//! general-purpose counters the driver may name and at which MSRs, which `rdpmc` index reads each,
//! and the global control/status registers if there are any. The vendor differences of the register
//! map live here, as Linux keeps them in its `x86_pmu` description (`eventsel`, `perfctr`,
//! `addr_offset`, `rdpmc_index`, the counter mask; arch/x86/events/core.c, intel/core.c, amd/core.c).

use super::model::{PmuModel, Vendor};
use super::msr;

/// General-purpose counters the driver can name: Intel's architectural IA32_PMC0-7 (C1H-C8H) with
/// IA32_PERFEVTSEL0-7 (186H-18DH) (Intel SDM Vol. 4, "Architectural MSRs"), AMD's core counters. A
/// processor that reports more keeps the rest for other software.
pub const MAX_GENERAL_PURPOSE: usize = 8;
/// AMD core counters with PerfCtrExtCore and no PerfMonV2 (PerfCtl0-5 / PerfCtr0-5).
const AMD_CORE_COUNTERS: u8 = 6;
/// AMD legacy counters (PerfEvtSel0-3 / PerfCtr0-3).
const AMD_LEGACY_COUNTERS: u8 = 4;
/// RDPMC reads AMD core counters 0-5 by number (AMD APM Vol. 3, RDPMC: indexes 6 and up read other
/// units' counters).
const AMD_RDPMC_CORE_COUNTERS: u8 = 6;
/// IA32_PERF_GLOBAL_CTRL bits 0-31, the general-purpose enables: 1 at reset (Intel SDM Vol. 3B,
/// "Architectural Performance Monitoring Version 2"), while the fixed counters' and EN_PERF_METRICS
/// are 0.
const INTEL_GENERAL_PURPOSE_ENABLES: u64 = 0xFFFF_FFFF;

/// The global control, status and status-clear registers: Intel IA32_PERF_GLOBAL_CTRL/STATUS/
/// OVF_CTRL, AMD PerfMonV2 PerfCntrGlobalCtl/Status/StatusClr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalRegisters {
    pub control: u32,
    pub status: u32,
    pub clear_status: u32,
    /// The enable bits set at power-on, which the Windows HAL relies on (Intel: the general-purpose
    /// ones; AMD PerfMonV2: every core counter's, AMD's PPR for family 19h, MSR C000_0301).
    pub power_on_enables: u64,
}

impl GlobalRegisters {
    /// `vendor`'s global registers (on AMD, PerfMonV2's).
    pub const fn of(vendor: Vendor) -> Self {
        match vendor {
            Vendor::Intel => GlobalRegisters {
                control: msr::IA32_PERF_GLOBAL_CTRL,
                status: msr::IA32_PERF_GLOBAL_STATUS,
                clear_status: msr::IA32_PERF_GLOBAL_OVF_CTRL,
                power_on_enables: INTEL_GENERAL_PURPOSE_ENABLES,
            },
            Vendor::Amd => GlobalRegisters {
                control: msr::AMD_PERF_CNTR_GLOBAL_CTL,
                status: msr::AMD_PERF_CNTR_GLOBAL_STATUS,
                clear_status: msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
                power_on_enables: u64::MAX,
            },
        }
    }
}

/// One model's register map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterLayout {
    /// General-purpose counters the driver may name: those CPUID reports, within the registers above.
    pub general_purpose: u8,
    /// Counter i is `counter_base + stride * i`, its control `control_base + stride * i`.
    counter_base: u32,
    control_base: u32,
    stride: u32,
    /// General-purpose counters `rdpmc` reads by their number.
    rdpmc_counters: u8,
    pub global: Option<GlobalRegisters>,
}

impl RegisterLayout {
    /// The layout of `model`'s PMU: Intel IA32_PMCi/IA32_PERFEVTSELi with the global registers; AMD
    /// PerfCtr/PerfCtl pairs from C0010200H with PerfCtrExtCore or PerfMonV2 (which is defined on
    /// them, with as many counters as CPUID.80000022H:EBX\[3:0\] reports; Linux `amd_core_pmu_init`),
    /// else the four legacy pairs (AMD APM Vol. 2, "Performance Monitoring Counters").
    pub const fn of(model: &PmuModel) -> Self {
        let (limit, counter_base, control_base, stride, rdpmc_counters) = match model.vendor {
            Vendor::Intel => (MAX_GENERAL_PURPOSE as u8, msr::IA32_PMC0, msr::IA32_PERFEVTSEL0, 1, u8::MAX),
            Vendor::Amd if model.amd_perfmon_v2 => (
                MAX_GENERAL_PURPOSE as u8,
                msr::AMD_PERF_CTR_CORE0,
                msr::AMD_PERF_CTL_CORE0,
                2,
                AMD_RDPMC_CORE_COUNTERS,
            ),
            Vendor::Amd if model.amd_core_extended => (
                AMD_CORE_COUNTERS,
                msr::AMD_PERF_CTR_CORE0,
                msr::AMD_PERF_CTL_CORE0,
                2,
                AMD_RDPMC_CORE_COUNTERS,
            ),
            Vendor::Amd => (AMD_LEGACY_COUNTERS, msr::AMD_PERF_CTR0, msr::AMD_PERF_EVT_SEL0, 1, u8::MAX),
        };
        let global = match model.vendor {
            Vendor::Amd if !model.amd_perfmon_v2 => None,
            vendor => Some(GlobalRegisters::of(vendor)),
        };
        let general_purpose = if model.gp_counters < limit { model.gp_counters } else { limit };
        RegisterLayout { general_purpose, counter_base, control_base, stride, rdpmc_counters, global }
    }

    /// The counter and control MSRs of general-purpose counter `counter`.
    pub const fn general_purpose_registers(&self, counter: u8) -> (u32, u32) {
        let offset = self.stride * counter as u32;
        (self.counter_base + offset, self.control_base + offset)
    }

    /// The `rdpmc` index of general-purpose counter `counter`, where `rdpmc` reads it.
    pub const fn rdpmc(&self, counter: u8) -> Option<u32> {
        if counter < self.rdpmc_counters { Some(counter as u32) } else { None }
    }

    /// Counter `counter`'s bit in the global control and status registers (general-purpose counter
    /// i = bit i on both vendors), where there are such registers.
    pub const fn global_bit(&self, counter: u8) -> Option<u8> {
        if self.global.is_some() { Some(counter) } else { None }
    }
}

#[cfg(test)]
mod tests;
