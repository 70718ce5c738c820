//! The virtual PMU: one per virtual processor, behind the MSR map, for the chosen CPU model's layout.
//!
//! * Intel architectural semantics: IA32_PERFEVTSELx (EN bit 22, INT bit 20, USR 16 / OS 17),
//!   IA32_FIXED_CTR_CTRL (4-bit fields: OS, USR, AnyThread, PMI), IA32_PERF_GLOBAL_CTRL (a counter
//!   counts only when both its own enable and its global bit are set), W-bit counters, legacy IA32_PMCx
//!   writes sign-extended from bit 31 (IA32_A_PMCx writes the full width), IA32_PERF_GLOBAL_STATUS set
//!   on a wrap and read-only (a write is a violation), IA32_PERF_GLOBAL_OVF_CTRL clearing it.
//! * AMD core counters: PerfCtl/PerfCtr at 0xC0010200+2i / +2i+1 (legacy aliases 0xC0010000+i /
//!   0xC0010004+i for i < 4); with PerfMonV2, PerfCntrGlobalStatus / GlobalCtl / GlobalStatusClr at
//!   0xC0000300..302 (a counter needs both its EN and its global bit); without it, EN alone enables a
//!   counter and a wrap is reported nowhere (the driver extends such counters by polling).
//!
//! **Workload.** Counters advance only when the test steps a virtual processor ([`step`]): `units` of
//! work make [`RATES`] events of each kind (instructions, core cycles, reference cycles, LLC
//! references, LLC misses, branches, branch mispredicts), except that [`set_workload`] changes the
//! instructions, core cycles and reference cycles of a unit ([`rate`]): IPC from 0.2 to 4 and a
//! frequency from 50 % to 140 % of the reference one. [`counted`] is the exact total each event's
//! counter has accumulated since the driver first programmed it (including [`preload`] jumps): what the
//! driver must report.
//!
//! **Overflow interrupts.** A wrap sets the counter's global status bit; if the counter's INT/PMI bit is
//! set and the HAL has an overflow handler registered, the processor has a PMI pending. Each virtual
//! processor has an *occupancy* lock standing for "this processor is executing something at raised
//! IRQL": KeIpiGenericCall holds it while the broadcast worker runs on that processor. A pending PMI is
//! delivered between instructions of whoever occupies the processor, at the points where the double
//! regains control: after every trapped instruction (rdmsr, wrmsr, cr8, cli/sti, cpuid) and when the
//! worker returns, provided the occupant's IRQL is below PROFILE_LEVEL (15, as on x64: so a PMI *does*
//! interrupt an IPI_LEVEL (14) worker). When nobody occupies the processor, the stepping thread itself
//! takes the occupancy and delivers the PMI as that processor. Delivery runs the registered handler at
//! PROFILE_LEVEL with the processor's identity and the global status bits, then clears those status
//! bits, as the HAL does. A processor is not stepped again until its PMI has been delivered (a real PMI
//! arrives within a few hundred cycles, long before a 48-bit counter can wrap again).
//!
//! Limits: in ordinary runs the interrupt cannot land *inside* a run of driver instructions that do not
//! trap (between two plain loads, say); only at trap points. A test that single-steps the driver's
//! broadcast worker lands it between any two instructions with [`overflow_between_instructions`]
//! (tests/scenarios/common/pmi_sweep.rs does, before every instruction of the read worker).

use super::atom::Atom;
use super::cpuid::{self, PmuKind};
use super::{Kpcr, PROFILE_LEVEL, topology};
use crate::poison::IgnorePoison;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

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
const FIXED_EVENTS: [usize; 4] = [INSTRUCTIONS, CORE_CYCLES, REFERENCE_CYCLES, TOPDOWN_SLOTS];
/// How each workload unit's top-down slots divide into retiring, bad speculation, frontend bound and
/// backend bound (IA32_PERF_METRICS byte order); they sum to `RATES[TOPDOWN_SLOTS]`.
pub const TOPDOWN_RATES: [u64; 4] = [54, 11, 24, 31];
const _: () = assert!(TOPDOWN_RATES[0] + TOPDOWN_RATES[1] + TOPDOWN_RATES[2] + TOPDOWN_RATES[3] == RATES[7]);

const IA32_PMC0: u32 = 0xC1;
const IA32_A_PMC0: u32 = 0x4C1;
const IA32_PERFEVTSEL0: u32 = 0x186;
const IA32_FIXED_CTR0: u32 = 0x309;
const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
const IA32_PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
const IA32_PERF_METRICS: u32 = 0x329;
const IA32_PERF_CAPABILITIES: u32 = 0x345;
const AMD_PERF_EVT_SEL0: u32 = 0xC001_0000;
const AMD_PERF_CTR0: u32 = 0xC001_0004;
const AMD_PERF_CTL_CORE0: u32 = 0xC001_0200;
const AMD_GLOBAL_STATUS: u32 = 0xC000_0300;
const AMD_GLOBAL_CTL: u32 = 0xC000_0301;
const AMD_GLOBAL_STATUS_CLR: u32 = 0xC000_0302;

const EN: u64 = 1 << 22;
const INT: u64 = 1 << 20;
const USR_OS: u64 = 3 << 16;

/// No PMI pending, one pending, one being delivered.
const PMI_NONE: u8 = 0;
const PMI_PENDING: u8 = 1;
const PMI_DELIVERING: u8 = 2;

/// One counter of one virtual processor.
#[derive(Clone, Copy, Debug, Default)]
struct Counter {
    value: u64,
    /// IA32_PERFEVTSELx / PerfCtl (GP counters only).
    control: u64,
}

#[derive(Debug, Default)]
struct VpPmu {
    gp: Vec<Counter>,
    fixed: Vec<Counter>,
    fixed_ctrl: u64,
    global_ctrl: u64,
    global_status: u64,
    counted: [u64; EVENTS],
    /// Top-down slots per category since IA32_PERF_METRICS was last zeroed.
    metrics: [u64; 4],
    /// Top-down slots per category since the start: the ground truth of the category totals.
    topdown_counted: [u64; 4],
}

struct Processor {
    /// The PMU of this processor's kind of core (hybrid models differ between processors).
    kind: PmuKind,
    /// Its Atom top-down pipeline, on an efficient core of a hybrid part.
    atom: Option<Atom>,
    /// Its IA32_PERF_CAPABILITIES, and whether CPUID.01H:ECX[15] (PDCM) says the register exists.
    perf_capabilities: Option<u64>,
    pmu: Mutex<VpPmu>,
    pmi: AtomicU8,
    occupancy: Mutex<()>,
    /// The KPCR address of the thread occupying the processor, 0 if none.
    occupant: AtomicUsize,
    /// The overflow handler the HAL calls for this processor and the handle it passes (0: none): the
    /// allocation whose group affinity holds the processor.
    handler: AtomicUsize,
    handle: AtomicUsize,
}

struct Pmu {
    processors: Vec<Processor>,
}

static PMU: OnceLock<Pmu> = OnceLock::new();
static DELIVERING: AtomicUsize = AtomicUsize::new(0);
static DELIVERED: AtomicU64 = AtomicU64::new(0);
static DELIVERED_TO_OCCUPANT: AtomicU64 = AtomicU64::new(0);

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
                    atom: super::atom::of(vp),
                    perf_capabilities: pdcm.then_some(model.perf_capabilities),
                    pmu: Mutex::new(VpPmu {
                        gp: vec![Counter::default(); usize::from(gp)],
                        fixed: vec![Counter::default(); usize::from(fixed)],
                        global_ctrl: power_on_global_ctrl(kind),
                        ..VpPmu::default()
                    }),
                    pmi: AtomicU8::new(PMI_NONE),
                    occupancy: Mutex::new(()),
                    occupant: AtomicUsize::new(0),
                    handler: AtomicUsize::new(0),
                    handle: AtomicUsize::new(0),
                }
            })
            .collect();
        Pmu { processors }
    })
}

fn processor(vp: u32) -> &'static Processor {
    &pmu().processors[vp as usize]
}

fn lock(vp: u32) -> MutexGuard<'static, VpPmu> {
    processor(vp).pmu.lock().ignore_poison()
}

fn mask(width: u8) -> u64 {
    if width >= 64 { u64::MAX } else { (1 << width) - 1 }
}

/// Which register a PMU MSR is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Register {
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
fn decode(vp: u32, msr: u32) -> Option<Register> {
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

fn widths(kind: PmuKind) -> (u8, u8) {
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
fn perf_metrics(metrics: &[u64; 4]) -> u64 {
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
const EN_PERF_METRICS: u64 = 1 << 48;
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

/// The event a GP counter's control selects (index into [`RATES`]), if it is one the workload makes.
fn gp_event(kind: PmuKind, control: u64) -> Option<usize> {
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

/// Advances every enabled counter of `vp` by `units` of work; returns the status bits that raised an
/// interrupt request.
fn advance(kind: PmuKind, atom: Option<Atom>, state: &mut VpPmu, units: u64) -> u64 {
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

/// How each workload unit's top-down slots divide into the four categories now.
static TOPDOWN_MIX: Mutex<[u64; 4]> = Mutex::new(TOPDOWN_RATES);

/// Sets how each workload unit's `RATES[TOPDOWN_SLOTS]` slots divide into retiring, bad speculation,
/// frontend bound and backend bound from now on (every processor), as a program's phases change it.
/// Panics unless the four sum to `RATES[TOPDOWN_SLOTS]`.
pub fn set_topdown_mix(mix: [u64; 4]) {
    assert_eq!(mix.iter().sum::<u64>(), RATES[TOPDOWN_SLOTS], "a top-down mix splits one unit's slots");
    *TOPDOWN_MIX.lock().ignore_poison() = mix;
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

/// Runs `units` of work on virtual processor `vp` (counters advance, wraps set status bits) and
/// delivers the overflow interrupt this raises before returning (see the module docs). Called by
/// tests, from any thread that is not running driver code.
pub fn step(vp: u32, units: u64) {
    let processor = processor(vp);
    wait_delivered(vp);
    super::frequency::advance(vp, units);
    let pmi = advance(processor.kind, processor.atom, &mut lock(vp), units);
    if pmi != 0 && processor.handler.load(Ordering::Acquire) != 0 {
        processor.pmi.store(PMI_PENDING, Ordering::Release);
        wait_delivered(vp);
    } else if pmi != 0 {
        interrupt_without_handler(vp, pmi);
    }
}

/// A counter with its interrupt bit set wrapped while the HAL has no overflow handler for the owner:
/// the whole-PMU form registers none, and the AMD HAL never calls one. The interrupt reaches no
/// client, so a driver that relies on it loses the wrap.
fn interrupt_without_handler(vp: u32, bits: u64) {
    crate::violations::record(
        "virtual PMU",
        None,
        format!(
            "processor {vp}: counters {bits:#x} raised an overflow interrupt, but the HAL has no \
             overflow handler to call (whole-PMU ownership, or AMD)"
        ),
    );
}

/// Runs `units` of work on virtual processor `vp` from *between two instructions of driver code* on this
/// thread (a test's single-step trap handler), and takes the overflow interrupt this raises right there
/// if this thread occupies `vp` below PROFILE_LEVEL, as a real PMI lands between any two instructions.
/// Otherwise the interrupt stays pending for the occupant's next interruptible point (or the next
/// [`step`]). Returns whether the handler ran here. `vp` must have no PMI pending, and the interrupted
/// code must be the driver's (which never holds the double's locks).
pub fn overflow_between_instructions(vp: u32, units: u64) -> bool {
    let processor = processor(vp);
    assert_eq!(processor.pmi.load(Ordering::Acquire), PMI_NONE, "a PMI is already pending on {vp}");
    super::frequency::advance(vp, units);
    let pmi = advance(processor.kind, processor.atom, &mut lock(vp), units);
    let handler = processor.handler.load(Ordering::Acquire);
    if pmi != 0 && handler == 0 {
        interrupt_without_handler(vp, pmi);
    }
    if pmi == 0 || handler == 0 {
        return false;
    }
    processor.pmi.store(PMI_PENDING, Ordering::Release);
    let kpcr = super::current();
    kpcr.processor_index() == vp
        && processor.occupant.load(Ordering::Acquire) == kpcr as *const Kpcr as usize
        && deliver(vp, kpcr)
}

/// Waits until `vp` has no PMI pending, delivering it on this thread when the processor is free.
fn wait_delivered(vp: u32) {
    let processor = processor(vp);
    while processor.pmi.load(Ordering::Acquire) != PMI_NONE {
        if let Ok(_occupied) = processor.occupancy.try_lock() {
            let kpcr = super::current();
            let (home, irql) = (kpcr.processor_index(), kpcr.irql());
            kpcr.set_processor(vp);
            processor.occupant.store(kpcr as *const Kpcr as usize, Ordering::Release);
            deliver(vp, kpcr);
            processor.occupant.store(0, Ordering::Release);
            kpcr.set_processor(home);
            kpcr.set_irql(irql);
        } else {
            std::thread::yield_now();
        }
    }
}

/// Delivers `vp`'s pending PMI on the calling thread, which occupies `vp` (KPCR `kpcr`), if its IRQL
/// lets it through. Returns whether it ran the handler.
fn deliver(vp: u32, kpcr: &Kpcr) -> bool {
    let processor = processor(vp);
    // A maskable interrupt waits while RFLAGS.IF is clear (Intel SDM Vol. 3A, "Masking Maskable
    // Hardware Interrupts"), and while the IRQL masks PROFILE_LEVEL.
    if kpcr.irql() >= PROFILE_LEVEL || !kpcr.interrupts_enabled() {
        return false;
    }
    if processor
        .pmi
        .compare_exchange(PMI_PENDING, PMI_DELIVERING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    DELIVERING.fetch_add(1, Ordering::SeqCst);
    let handler = processor.handler.load(Ordering::SeqCst);
    if handler != 0 {
        let bits = lock(vp).global_status;
        let previous = kpcr.raise_irql(PROFILE_LEVEL);
        // SAFETY: the HAL's Overflow descriptor named a PHYSICAL_COUNTER_OVERFLOW_HANDLER,
        // `VOID (*)(ULONGLONG OverflowBits, HANDLE OwningHandle)`, registered until HalFreeHardwareCounters,
        // which waits for deliveries in progress.
        let handler: extern "win64" fn(u64, usize) = unsafe { std::mem::transmute(handler) };
        handler(bits, processor.handle.load(Ordering::SeqCst));
        if kpcr.irql() != PROFILE_LEVEL {
            crate::violations::record(
                "overflow handler",
                None,
                format!("returned at IRQL {} on processor {vp}", kpcr.irql()),
            );
        }
        kpcr.set_irql(previous);
        lock(vp).global_status &= !bits;
        DELIVERED.fetch_add(1, Ordering::Relaxed);
    }
    DELIVERING.fetch_sub(1, Ordering::SeqCst);
    processor.pmi.store(PMI_NONE, Ordering::Release);
    handler != 0
}

/// A trap point or the end of a broadcast worker on the thread of `kpcr`: delivers its processor's
/// pending PMI if this thread occupies the processor and its IRQL is below PROFILE_LEVEL.
pub(crate) fn interruptible_point(kpcr: &Kpcr) {
    let Some(pmu) = PMU.get() else { return };
    let vp = kpcr.processor_index();
    let Some(processor) = pmu.processors.get(vp as usize) else { return };
    if processor.pmi.load(Ordering::Acquire) == PMI_PENDING
        && processor.occupant.load(Ordering::Acquire) == kpcr as *const Kpcr as usize
        && deliver(vp, kpcr)
    {
        DELIVERED_TO_OCCUPANT.fetch_add(1, Ordering::Relaxed);
    }
}

/// Occupancy of a processor by a broadcast worker (KeIpiGenericCall).
pub(crate) struct Occupied {
    _guard: MutexGuard<'static, ()>,
    processor: &'static Processor,
}

impl Drop for Occupied {
    fn drop(&mut self) {
        self.processor.occupant.store(0, Ordering::Release);
    }
}

/// Makes the thread of `kpcr` the occupant of `vp` (waiting for another occupant to leave).
pub(crate) fn occupy(vp: u32, kpcr: &Kpcr) -> Occupied {
    let processor = processor(vp);
    let guard = processor.occupancy.lock().ignore_poison();
    processor.occupant.store(kpcr as *const Kpcr as usize, Ordering::Release);
    Occupied { _guard: guard, processor }
}

/// The HAL registers (`Some((handler, handle))`) or withdraws the overflow handler of the processors
/// `on` selects (an allocation's group affinity). Withdrawing waits for deliveries in progress: no
/// handler runs after HalFreeHardwareCounters returns.
pub(crate) fn set_overflow_handler(on: impl Fn(u32) -> bool, handler: Option<(usize, usize)>) {
    let processors = pmu().processors.iter().enumerate().filter(|(vp, _)| on(*vp as u32));
    match handler {
        Some((handler, handle)) => {
            for (_, processor) in processors {
                processor.handle.store(handle, Ordering::SeqCst);
                processor.handler.store(handler, Ordering::SeqCst);
            }
        }
        None => {
            let processors: Vec<_> = processors.map(|(_, processor)| processor).collect();
            for processor in &processors {
                processor.handler.store(0, Ordering::SeqCst);
            }
            while DELIVERING.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
            for processor in processors {
                let _ = processor.pmi.compare_exchange(
                    PMI_PENDING,
                    PMI_NONE,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        }
    }
}

/// The allocation slots per core cycle of `vp`'s Atom top-down events, on an efficient core of a
/// hybrid part (`super::atom`).
pub fn atom_width(vp: u32) -> Option<u64> {
    processor(vp).atom.map(|atom| atom.width)
}

/// Whether `vp` has an overflow interrupt waiting for delivery.
pub fn pending(vp: u32) -> bool {
    processor(vp).pmi.load(Ordering::Acquire) == PMI_PENDING
}

/// Overflow interrupts delivered to the driver's handler so far.
pub fn delivered() -> u64 {
    DELIVERED.load(Ordering::Relaxed)
}

/// Of [`delivered`], those taken by the processor's occupant (a broadcast worker, between its
/// instructions or as it returned) rather than by the stepping thread.
pub fn delivered_to_occupant() -> u64 {
    DELIVERED_TO_OCCUPANT.load(Ordering::Relaxed)
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
