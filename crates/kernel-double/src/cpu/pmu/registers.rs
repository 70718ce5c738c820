//! The registers of each virtual processor's PMU and their architectural semantics, for the
//! processor's kind of core; the per-processor register state lives here.
//!
//! * Intel: IA32_PERFEVTSELx (EN bit 22, INT bit 20, USR 16 / OS 17), IA32_FIXED_CTR_CTRL (4-bit
//!   fields: OS, USR, AnyThread, PMI), IA32_PERF_GLOBAL_CTRL (a counter counts only when both its own
//!   enable and its global bit are set), W-bit counters, legacy IA32_PMCx writes sign-extended from
//!   bit 31 (IA32_A_PMCx writes the full width), IA32_PERF_GLOBAL_STATUS set on a wrap and read-only (a
//!   write is a violation), IA32_PERF_GLOBAL_OVF_CTRL clearing it; reserved bits fault; IA32_PERF_METRICS'
//!   fractions; rdpmc.
//! * AMD core counters: PerfCtl/PerfCtr at 0xC0010200+2i / +2i+1 (legacy aliases 0xC0010000+i /
//!   0xC0010004+i for i < 4); with PerfMonV2, PerfCntrGlobalStatus / GlobalCtl / GlobalStatusClr at
//!   0xC0000300..302 (a counter needs both its EN and its global bit); without it, EN alone enables a
//!   counter and a wrap is reported nowhere (the driver extends such counters by polling).
//! * The power-on values a release must leave and a resume restores.
//!
//! How counters advance under the workload is `super::counting`; overflow interrupts `super::delivery`.

use super::super::atom::Atom;
use super::super::cpuid::{self, PmuKind};
use super::super::topology;
use super::workload::EVENTS;
use crate::poison::IgnorePoison;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub(super) const IA32_PMC0: u32 = 0xC1;
const IA32_A_PMC0: u32 = 0x4C1;
const IA32_PERFEVTSEL0: u32 = 0x186;
pub(super) const IA32_FIXED_CTR0: u32 = 0x309;
const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
const IA32_PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
const IA32_PERF_METRICS: u32 = 0x329;
const IA32_PERF_CAPABILITIES: u32 = 0x345;
const AMD_PERF_EVT_SEL0: u32 = 0xC001_0000;
const AMD_PERF_CTR0: u32 = 0xC001_0004;
pub(super) const AMD_PERF_CTL_CORE0: u32 = 0xC001_0200;
const AMD_GLOBAL_STATUS: u32 = 0xC000_0300;
const AMD_GLOBAL_CTL: u32 = 0xC000_0301;
const AMD_GLOBAL_STATUS_CLR: u32 = 0xC000_0302;

pub(super) const EN: u64 = 1 << 22;
pub(super) const INT: u64 = 1 << 20;
pub(super) const USR_OS: u64 = 3 << 16;

/// One counter of one virtual processor.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counter {
    pub(super) value: u64,
    /// IA32_PERFEVTSELx / PerfCtl (GP counters only).
    pub(super) control: u64,
}

/// The PMU registers of one virtual processor, and the events its counters have counted.
#[derive(Debug, Default)]
pub(super) struct VpPmu {
    pub(super) gp: Vec<Counter>,
    pub(super) fixed: Vec<Counter>,
    pub(super) fixed_ctrl: u64,
    pub(super) global_ctrl: u64,
    pub(super) global_status: u64,
    pub(super) counted: [u64; EVENTS],
    /// Top-down slots per category since IA32_PERF_METRICS was last zeroed.
    pub(super) metrics: [u64; 4],
    /// Top-down slots per category since the start: the ground truth of the category totals.
    pub(super) topdown_counted: [u64; 4],
}

/// One virtual processor's PMU: what kind it is and its registers.
pub(super) struct Processor {
    /// The PMU of this processor's kind of core (hybrid models differ between processors).
    pub(super) kind: PmuKind,
    /// Its Atom top-down pipeline, on an efficient core of a hybrid part.
    pub(super) atom: Option<Atom>,
    /// Its IA32_PERF_CAPABILITIES, and whether CPUID.01H:ECX[15] (PDCM) says the register exists.
    perf_capabilities: Option<u64>,
    pmu: Mutex<VpPmu>,
}

struct Pmu {
    processors: Vec<Processor>,
}

static PMU: OnceLock<Pmu> = OnceLock::new();

fn pmu() -> &'static Pmu {
    PMU.get_or_init(|| {
        // Hot-added processors too: their PMU exists before they start.
        let processors = (0..topology::possible_count())
            .map(|vp| {
                let model = cpuid::model_of(vp);
                let kind = model.pmu;
                let (gp, fixed) = match kind {
                    PmuKind::None => (0, 0),
                    PmuKind::Intel { gp, fixed, .. } => (gp, fixed),
                    PmuKind::Amd { counters, .. } => (counters, 0),
                };
                // CPUID.01H:ECX[15] PDCM: IA32_PERF_CAPABILITIES exists (Intel SDM Vol. 4, MSR 345H).
                let pdcm = cpuid::cpuid_on(vp, 1, 0)[2] & (1 << 15) != 0;
                Processor {
                    kind,
                    atom: super::super::atom::of(vp),
                    perf_capabilities: pdcm.then_some(model.perf_capabilities),
                    pmu: Mutex::new(VpPmu {
                        gp: vec![Counter::default(); usize::from(gp)],
                        fixed: vec![Counter::default(); usize::from(fixed)],
                        global_ctrl: power_on_global_ctrl(kind),
                        ..VpPmu::default()
                    }),
                }
            })
            .collect();
        Pmu { processors }
    })
}

pub(super) fn processor(vp: u32) -> &'static Processor {
    &pmu().processors[vp as usize]
}

pub(super) fn lock(vp: u32) -> MutexGuard<'static, VpPmu> {
    processor(vp).pmu.lock().ignore_poison()
}

pub(super) fn mask(width: u8) -> u64 {
    if width >= 64 { u64::MAX } else { (1 << width) - 1 }
}

/// Which register a PMU MSR is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Register {
    Gp(usize),
    /// Intel IA32_PMCx: writes sign-extended from bit 31.
    LegacyGp(usize),
    Control(usize),
    Fixed(usize),
    FixedCtrl,
    Status,
    GlobalCtrl,
    ClearStatus,
    /// IA32_PERF_METRICS, on models whose IA32_PERF_CAPABILITIES has bit 15.
    PerfMetrics,
    /// IA32_PERF_CAPABILITIES, read-only, where CPUID.01H:ECX[15] (PDCM) is set.
    PerfCapabilities,
}

/// Which register of processor `vp`'s PMU `msr` is, if any.
pub(super) fn decode(vp: u32, msr: u32) -> Option<Register> {
    let processor = processor(vp);
    if msr == IA32_PERF_CAPABILITIES {
        return processor.perf_capabilities.map(|_| Register::PerfCapabilities);
    }
    if msr == IA32_PERF_METRICS {
        let present = processor
            .perf_capabilities
            .is_some_and(|capabilities| capabilities & cpuid::PERF_CAPABILITIES_PERF_METRICS != 0);
        // Under the Microsoft hypervisor an access faults (#GP) whatever the capabilities say.
        return (present && !cpuid::perf_metrics_intercepted(vp)).then_some(Register::PerfMetrics);
    }
    let kind = processor.kind;
    let index =
        |base: u32, count: u8| (msr >= base && msr < base + u32::from(count)).then(|| (msr - base) as usize);
    match kind {
        PmuKind::None => None,
        PmuKind::Intel { gp, fixed, .. } => {
            if let Some(i) = index(IA32_PMC0, gp) {
                return Some(Register::LegacyGp(i));
            }
            if let Some(i) = index(IA32_A_PMC0, gp) {
                return Some(Register::Gp(i));
            }
            if let Some(i) = index(IA32_PERFEVTSEL0, gp) {
                return Some(Register::Control(i));
            }
            if let Some(i) = index(IA32_FIXED_CTR0, fixed) {
                return Some(Register::Fixed(i));
            }
            match msr {
                IA32_FIXED_CTR_CTRL => Some(Register::FixedCtrl),
                IA32_PERF_GLOBAL_STATUS => Some(Register::Status),
                IA32_PERF_GLOBAL_CTRL => Some(Register::GlobalCtrl),
                IA32_PERF_GLOBAL_OVF_CTRL => Some(Register::ClearStatus),
                _ => None,
            }
        }
        PmuKind::Amd { counters, perfmon_v2 } => {
            if msr >= AMD_PERF_CTL_CORE0 && msr < AMD_PERF_CTL_CORE0 + 2 * u32::from(counters) {
                let offset = msr - AMD_PERF_CTL_CORE0;
                let i = (offset / 2) as usize;
                return Some(if offset.is_multiple_of(2) { Register::Control(i) } else { Register::Gp(i) });
            }
            if let Some(i) = index(AMD_PERF_EVT_SEL0, counters.min(4)) {
                return Some(Register::Control(i));
            }
            if let Some(i) = index(AMD_PERF_CTR0, counters.min(4)) {
                return Some(Register::Gp(i));
            }
            match msr {
                AMD_GLOBAL_STATUS if perfmon_v2 => Some(Register::Status),
                AMD_GLOBAL_CTL if perfmon_v2 => Some(Register::GlobalCtrl),
                AMD_GLOBAL_STATUS_CLR if perfmon_v2 => Some(Register::ClearStatus),
                _ => None,
            }
        }
    }
}

pub(super) fn widths(kind: PmuKind) -> (u8, u8) {
    match kind {
        PmuKind::None => (0, 0),
        PmuKind::Intel { gp_width, fixed_width, .. } => (gp_width, fixed_width),
        PmuKind::Amd { .. } => (48, 0),
    }
}

/// Whether `msr` is a register of processor `vp`'s PMU.
pub fn is_pmu_msr(vp: u32, msr: u32) -> bool {
    decode(vp, msr).is_some()
}

/// rdmsr of a PMU register on `vp`; `None` if `msr` is not one.
pub(crate) fn read(vp: u32, msr: u32) -> Option<u64> {
    let register = decode(vp, msr)?;
    let state = lock(vp);
    Some(match register {
        Register::Gp(i) | Register::LegacyGp(i) => state.gp[i].value,
        Register::Control(i) => state.gp[i].control,
        Register::Fixed(i) => state.fixed[i].value,
        Register::FixedCtrl => state.fixed_ctrl,
        Register::Status => state.global_status,
        Register::GlobalCtrl => state.global_ctrl,
        Register::ClearStatus => 0,
        Register::PerfMetrics => perf_metrics(&state.metrics),
        Register::PerfCapabilities => processor(vp).perf_capabilities.unwrap_or(0),
    })
}

/// IA32_PERF_METRICS for `metrics` slots per category: each byte the category's share of the slots
/// counted since the register was last zeroed, as an 8-bit integer fraction of 0xFF, the four summing
/// to 0xFF (Intel SDM Vol. 3B, "Performance Metrics"; Linux `arch/x86/events/intel/core.c`,
/// `icl_get_metrics_event_value`: "The metric is reported as an 8bit integer fraction summing up to
/// 0xff"). The double rounds each share down and gives the bytes left to the largest remainders, so
/// each byte is within one step of its exact share and the four sum to 0xFF. The fractions are of
/// the register's own counts, not of fixed counter 3's value: the values in PERF_METRICS are derived
/// from fixed counter 3, and software starts both from zero and writes fixed counter 3 before
/// PERF_METRICS (Intel's description, quoted in the Linux v5.10 series "TopDown metrics support for
/// Ice Lake" and its commit "perf/x86/intel: Support TopDown metrics on Ice Lake"), so zeroing fixed
/// counter 3 alone leaves the fractions of slots it no longer holds.
pub(super) fn perf_metrics(metrics: &[u64; 4]) -> u64 {
    let slots: u128 = metrics.iter().map(|&share| u128::from(share)).sum();
    if slots == 0 {
        return 0;
    }
    let scaled = metrics.map(|share| u128::from(share) * 0xFF);
    let mut fractions = scaled.map(|scaled| scaled / slots);
    let given: u128 = fractions.iter().sum();
    let mut order = [0, 1, 2, 3];
    // Largest remainder first; ties to the lower byte.
    order.sort_by_key(|&byte| (core::cmp::Reverse(scaled[byte] % slots), byte));
    for &byte in order.iter().take((0xFF - given) as usize) {
        fractions[byte] += 1;
    }
    fractions.iter().enumerate().fold(0, |value, (byte, &fraction)| value | ((fraction as u64) << (8 * byte)))
}

/// rdpmc on `vp`: Intel ECX bit 30 selects fixed counter ECX[29:0], else general-purpose counter ECX;
/// AMD ECX is the core counter number. `None` for a counter the model does not have (#GP on hardware).
pub(crate) fn read_pmc(vp: u32, ecx: u32) -> Option<u64> {
    PMC_READS.fetch_add(1, Ordering::Relaxed);
    let kind = processor(vp).kind;
    let state = lock(vp);
    let index = (ecx & 0x1FFF_FFFF) as usize;
    match kind {
        // ECX bit 29: IA32_PERF_METRICS, where the processor has it (Intel SDM Vol. 2B, RDPMC).
        PmuKind::Intel { .. } if ecx & (1 << 29) != 0 => {
            (ecx == 1 << 29 && decode(vp, IA32_PERF_METRICS).is_some()).then(|| perf_metrics(&state.metrics))
        }
        PmuKind::Intel { .. } if ecx & (1 << 30) != 0 => state.fixed.get(index).map(|counter| counter.value),
        PmuKind::Intel { .. } => state.gp.get(index).map(|counter| counter.value),
        // AMD: ECX 0-5 read the core counters; higher indexes read other units (AMD APM Vol. 3, RDPMC),
        // which the double does not model.
        PmuKind::Amd { .. } if index < 6 => state.gp.get(index).map(|counter| counter.value),
        PmuKind::Amd { .. } | PmuKind::None => None,
    }
}

/// rdpmc executed so far (every processor).
pub fn pmc_reads() -> u64 {
    PMC_READS.load(Ordering::Relaxed)
}

static PMC_READS: AtomicU64 = AtomicU64::new(0);

/// wrmsr of a PMU register on `vp`: `None` if `msr` is not one, `Some(Err(why))` if the write would
/// fault on real hardware.
pub(crate) fn write(vp: u32, msr: u32, value: u64) -> Option<Result<(), String>> {
    let kind = processor(vp).kind;
    let register = decode(vp, msr)?;
    let (gp_width, fixed_width) = widths(kind);
    let mut state = lock(vp);
    match register {
        Register::Gp(i) => state.gp[i].value = value & mask(gp_width),
        Register::LegacyGp(i) => state.gp[i].value = (value as u32 as i32 as i64 as u64) & mask(gp_width),
        Register::Control(_) if value & reserved_control_bits(kind) != 0 => {
            let bits = value & reserved_control_bits(kind);
            return Some(Err(format!(
                "write of {value:#x} to an event select sets reserved bits {bits:#x} (#GP)"
            )));
        }
        Register::Control(i) => state.gp[i].control = value,
        Register::Fixed(i) => state.fixed[i].value = value & mask(fixed_width),
        Register::FixedCtrl | Register::GlobalCtrl | Register::ClearStatus
            if value & reserved_bits(vp, register) != 0 =>
        {
            let bits = value & reserved_bits(vp, register);
            return Some(Err(format!(
                "write of {value:#x} to {register:?} sets bits {bits:#x} of counters this processor lacks (#GP)"
            )));
        }
        Register::FixedCtrl => state.fixed_ctrl = value,
        Register::GlobalCtrl => state.global_ctrl = value,
        Register::ClearStatus => state.global_status &= !value,
        Register::Status => return Some(Err(format!("write of {value:#x} to the read-only global status"))),
        Register::PerfCapabilities => {
            return Some(Err(format!("write of {value:#x} to read-only IA32_PERF_CAPABILITIES")));
        }
        Register::PerfMetrics if value == 0 => state.metrics = [0; 4],
        Register::PerfMetrics => {
            return Some(Err(format!(
                "write of {value:#x} to IA32_PERF_METRICS: the double models only zeroing it"
            )));
        }
    }
    Some(Ok(()))
}

/// The reserved bits of an event select, whose setting raises #GP: Intel IA32_PERFEVTSELx bits 63:32
/// (Intel SDM Vol. 3B, "IA32_PERFEVTSELx MSRs"; the TSX qualifiers in bits 32-33 exist only on some
/// parts, none of the double's models) and bit 21, AnyThread, which architectural performance
/// monitoring version 5 deprecates; AMD PerfCtl bits 63:42, 39:36, 21 and 19 (AMD APM Vol. 2,
/// "Performance Event-Select Registers").
fn reserved_control_bits(kind: PmuKind) -> u64 {
    match kind {
        PmuKind::Intel { .. } => 0xFFFF_FFFF_0000_0000 | (1 << 21),
        PmuKind::Amd { .. } => 0xFFFF_FC00_0000_0000 | (0xF << 36) | (1 << 21) | (1 << 19),
        PmuKind::None => 0,
    }
}

/// The reserved bits of Intel's IA32_FIXED_CTR_CTRL (4 per fixed counter the processor has),
/// IA32_PERF_GLOBAL_CTRL (one enable per general-purpose counter from bit 0, per fixed counter from
/// bit 32, and bit 48 for IA32_PERF_METRICS where it exists) and IA32_PERF_GLOBAL_OVF_CTRL (the same
/// counter bits, and the status bits 55-63 of version 4): WRMSR raises #GP when it sets a reserved
/// bit (Intel SDM Vol. 2B, WRMSR; Vol. 3B, "Architectural Performance Monitoring Version 2",
/// "Performance Metrics", and "Counter Coalescence": with 4 counters reported, setting bits 7:4 of
/// IA32_PERF_GLOBAL_CTRL or IA32_PERF_GLOBAL_OVF_CTRL raises #GP). A hybrid processor's cores differ,
/// so a value one core takes can fault on another. AMD's registers are not checked.
/// IA32_PERF_GLOBAL_CTRL bit 48, EN_PERF_METRICS (in the status registers: PERF_METRICS overflow).
pub(super) const EN_PERF_METRICS: u64 = 1 << 48;
/// IA32_PERF_GLOBAL_STATUS bits 55-63 of version 4 (ToPA PMI, LBR and counter freeze, ASCI, uncore,
/// DS buffer, CondChgd), which IA32_PERF_GLOBAL_STATUS_RESET (OVF_CTRL) may clear.
const GLOBAL_STATUS_V4_BITS: u64 = 0x1FF << 55;

fn reserved_bits(vp: u32, register: Register) -> u64 {
    let PmuKind::Intel { gp, fixed, .. } = processor(vp).kind else { return 0 };
    let valid = match register {
        Register::FixedCtrl => mask(4 * fixed),
        Register::GlobalCtrl => {
            let metrics = if decode(vp, IA32_PERF_METRICS).is_some() { EN_PERF_METRICS } else { 0 };
            mask(gp) | (mask(fixed) << 32) | metrics
        }
        Register::ClearStatus => {
            let metrics = if decode(vp, IA32_PERF_METRICS).is_some() { EN_PERF_METRICS } else { 0 };
            mask(gp) | (mask(fixed) << 32) | metrics | GLOBAL_STATUS_V4_BITS
        }
        _ => u64::MAX,
    };
    !valid
}

/// The global control's value at power-on: Intel IA32_PERF_GLOBAL_CTRL with every general-purpose
/// counter's enable bit set and the fixed counters' (and EN_PERF_METRICS) clear (Intel SDM Vol. 3B,
/// "Architectural Performance Monitoring Version 2", IA32_PERF_GLOBAL_CTRL reset value, so that
/// version 1 software keeps working; Linux commit de120e1d692d quotes it); AMD PerfCntrGlobalCtl with
/// every core counter enabled (AMD PPR for family 19h, MSR C000_0301 reset value, as quoted in LKML
/// "KVM: x86/svm/pmu: Set PerfMonV2 global control bits correctly", 2024); 0 where there is no such
/// register.
fn power_on_global_ctrl(kind: PmuKind) -> u64 {
    match kind {
        PmuKind::Intel { gp, .. } => mask(gp),
        PmuKind::Amd { counters, perfmon_v2: true } => mask(counters),
        PmuKind::Amd { perfmon_v2: false, .. } | PmuKind::None => 0,
    }
}

/// The global control's power-on enable bits that are clear on `vp` now (see
/// `power_on_global_ctrl`). The Windows HAL never sets them: it programs its own counters through
/// their event selects and relies on the power-on enables, and takes a cleared one for a foreign
/// modification (observed in decompiled Windows 10/11 HAL builds, `EmonIsModifiedByBadActorInternal`),
/// so a client must give them back set.
pub fn power_on_enables_cleared(vp: u32) -> u64 {
    let power_on = power_on_global_ctrl(processor(vp).kind);
    power_on & !lock(vp).global_ctrl
}

/// Resets every virtual processor's PMU registers to their power-on values, as resume from S3/S4 (or
/// a processor's re-initialisation) leaves them: counters, controls and status 0 (Intel SDM Vol. 3B,
/// "Architectural Performance Monitoring": the registers' reset values), the global control as
/// `power_on_global_ctrl` says, so a check of the global enables alone passes on a reset PMU. The
/// event selects and counters come up 0 (Intel SDM; on AMD as KVM's vCPU reset sets them, Linux
/// arch/x86/kvm/svm/pmu.c `amd_pmu_reset`), so no counter counts until it is programmed again. The
/// HAL re-arms its interrupt but reprograms no client's counters (observed in decompiled Windows
/// 10/11 HAL builds). Counting events are kept: what the driver read stays what was counted.
pub fn power_on_reset() {
    let Some(pmu) = PMU.get() else { return };
    for vp in 0..pmu.processors.len() as u32 {
        let mut guard = lock(vp);
        let state = &mut *guard;
        for counter in state.gp.iter_mut().chain(state.fixed.iter_mut()) {
            *counter = Counter::default();
        }
        state.fixed_ctrl = 0;
        state.global_status = 0;
        state.metrics = [0; 4];
        state.global_ctrl = power_on_global_ctrl(pmu.processors[vp as usize].kind);
    }
}

/// Another tool writes `value` to the PMU register `msr` of `vp` behind the owner's back, as a reader
/// built on a raw MSR driver (WinRing0) does without HAL arbitration: no ownership check, no
/// violation (the foreign tool is not under test). Panics if `msr` is not a PMU register of the model.
pub fn foreign_write(vp: u32, msr: u32, value: u64) {
    write(vp, msr, value).unwrap_or_else(|| panic!("MSR {msr:#x} is not a PMU register")).unwrap();
}

/// What another tool reading the PMU register `msr` of `vp` sees (a raw MSR reader, or one that
/// read-modify-writes a control register with [`foreign_write`]). Panics if `msr` is not a PMU register
/// of the model.
pub fn foreign_read(vp: u32, msr: u32) -> u64 {
    read(vp, msr).unwrap_or_else(|| panic!("MSR {msr:#x} is not a PMU register"))
}

/// The allocation slots per core cycle of `vp`'s Atom top-down events, on an efficient core of a
/// hybrid part (`super::atom`).
pub fn atom_width(vp: u32) -> Option<u64> {
    processor(vp).atom.map(|atom| atom.width)
}

/// Whether every PMU register of `vp` is at its power-on value (what a release must leave behind):
/// counters, controls and status zero, the global control's power-on enables set and nothing else
/// in it (see `power_on_global_ctrl`).
pub fn at_power_on(vp: u32) -> bool {
    let power_on = power_on_global_ctrl(processor(vp).kind);
    let state = lock(vp);
    state.gp.iter().chain(&state.fixed).all(|counter| counter.value == 0 && counter.control == 0)
        && state.fixed_ctrl == 0
        && state.global_ctrl == power_on
        && state.global_status == 0
        && state.metrics == [0; 4]
}

#[cfg(test)]
mod tests {
    use super::perf_metrics;
    use proptest::prelude::*;

    fn bytes(value: u64) -> [u64; 4] {
        core::array::from_fn(|byte| (value >> (8 * byte)) & 0xFF)
    }

    #[test]
    fn perf_metrics_of_the_default_mix() {
        // 54, 11, 24, 31 of 120: exactly 114.75, 23.375, 51, 65.875 of 0xFF; rounded down to 253, the
        // two steps left go to the largest remainders (backend 0.875, retiring 0.75).
        assert_eq!(bytes(perf_metrics(&[54, 11, 24, 31])), [115, 23, 51, 66]);
        assert_eq!(perf_metrics(&[0; 4]), 0);
        assert_eq!(bytes(perf_metrics(&[0, 0, 7, 0])), [0, 0, 255, 0]);
    }

    proptest! {
        #[test]
        fn perf_metrics_sum_to_0xff_within_a_step(shares in prop::array::uniform4(0u64..1 << 40)) {
            prop_assume!(shares.iter().any(|&share| share > 0));
            let fractions = bytes(perf_metrics(&shares));
            prop_assert_eq!(fractions.iter().sum::<u64>(), 0xFF);
            let slots: u64 = shares.iter().sum();
            for (fraction, share) in fractions.iter().zip(shares) {
                let exact = share as f64 * 255.0 / slots as f64;
                prop_assert!((*fraction as f64 - exact).abs() < 1.0, "{fractions:?} for {shares:?}");
            }
        }
    }
}
