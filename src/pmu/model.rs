//! What performance monitoring unit this processor has, decided from CPUID alone, before any MSR is
//! touched: a Hyper-V guest may get STATUS_SUCCESS from HalAllocateHardwareCounters without having
//! counters (observed in decompiled Windows 10/11 HAL builds).
//!
//! CPUID is decoded by `raw-cpuid`; no leaf is decoded by hand here. The one leaf raw-cpuid does not
//! decode, the Microsoft hypervisor's feature leaf 0x40000003, is read through the same
//! [`CpuIdReader`] that raw-cpuid uses (see [`detect`]). The driver detects on every processor, on
//! that processor; `super::hybrid` completes a hybrid core's own counters and combines the answers.
//!
//! The rules [`detect`] applies, in order, and the source of every fact they rest on: `docs/pmu.md`.

use raw_cpuid::{CpuId, CpuIdReader, Hypervisor, PerformanceMonitoringInfo};

/// The processor vendors whose PMU this driver programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Intel,
    Amd,
}

/// A set of Intel architectural events, in the bit order of CPUID.0AH:EBX.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArchEvents(u8);

impl ArchEvents {
    pub const NONE: Self = Self(0);
    /// UnHalted Core Cycles (EBX bit 0).
    pub const CORE_CYCLES: Self = Self(1 << 0);
    /// Instructions Retired (EBX bit 1).
    pub const INSTRUCTIONS: Self = Self(1 << 1);
    /// UnHalted Reference Cycles (EBX bit 2).
    pub const REFERENCE_CYCLES: Self = Self(1 << 2);
    /// LLC References (EBX bit 3).
    pub const LLC_REFERENCES: Self = Self(1 << 3);
    /// LLC Misses (EBX bit 4).
    pub const LLC_MISSES: Self = Self(1 << 4);
    /// Branch Instructions Retired (EBX bit 5).
    pub const BRANCHES: Self = Self(1 << 5);
    /// Branch Mispredicts Retired (EBX bit 6).
    pub const BRANCH_MISPREDICTS: Self = Self(1 << 6);
    /// The seven events above.
    #[cfg(test)]
    pub const ALL: Self = Self(0x7F);
    /// How many events this set can hold (bits 0..7 of EBX).
    #[cfg(test)]
    pub const COUNT: u8 = 7;

    #[cfg(test)]
    pub const fn bits(self) -> u8 {
        self.0
    }

    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    #[cfg(test)]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The PMU of one processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuModel {
    pub vendor: Vendor,
    /// Display family (CPUID.1:EAX, base + extended family where the vendor says so), as raw-cpuid
    /// computes it. AMD event encodings depend on it (see `events`).
    pub family: u8,
    /// Display model (extended model folded in), as raw-cpuid computes it.
    pub model: u8,
    /// Intel architectural performance monitoring version (`CPUID.0AH:EAX[7:0]`); 0 on AMD.
    pub version: u8,
    /// General-purpose counters per logical processor.
    pub gp_counters: u8,
    /// Their width in bits.
    pub gp_width: u8,
    /// Intel fixed-function counters (`CPUID.0AH:EDX[4:0]`, see rule 3 for the v2 quirk); 0 on AMD.
    pub fixed_counters: u8,
    /// Their width in bits; 0 on AMD.
    pub fixed_width: u8,
    /// Intel architectural events this processor does not count: the set bits of CPUID.0AH:EBX and
    /// every event at or past the EBX vector length `EAX[31:24]`. Empty on AMD (no such enumeration).
    pub unavailable: ArchEvents,
    /// AMD CPUID `0x80000001:ECX[23]` PerfCtrExtCore: 6 counters at PerfCtl 0xC0010200+2i and PerfCtr
    /// 0xC0010201+2i (else 4 legacy counters at 0xC0010000+i / 0xC0010004+i).
    pub amd_core_extended: bool,
    /// AMD CPUID `0x80000022:EAX[0]` PerfMonV2: global control/status MSRs, and `EBX[3:0]` counters.
    pub amd_perfmon_v2: bool,
    /// A PMI through the HAL's Overflow descriptor is usable (rule 6); otherwise counters are extended
    /// by polling often enough that no counter wraps twice between two polls.
    pub overflow_interrupt: bool,
    /// Intel fixed counter 3 counts TOPDOWN.SLOTS: `CPUID.0AH:EDX[4:0]` reports at least 4 fixed
    /// counters and EBX bit 7 (top-down slots) is within the EBX length and clear (Intel SDM Vol. 3B,
    /// "Architectural Performance Monitoring Version 5" and the pre-defined architectural events).
    pub topdown_slots: bool,
    /// Intel `CPUID.01H:ECX[15]` PDCM: IA32_PERF_CAPABILITIES (0x345) exists and may be read.
    pub perf_capabilities: bool,
    /// Intel `IA32_PERF_CAPABILITIES[15]` PERF_METRICS: IA32_PERF_METRICS (0x329) splits fixed counter
    /// 3's slots into the four top-down level 1 categories. CPUID does not tell; set by
    /// [`PmuModel::with_perf_capabilities`] from the MSR.
    pub perf_metrics: bool,
    /// `CPUID.06H:ECX[0]` (Intel: hardware coordination feedback; AMD: EffFreq): IA32_MPERF (0xE7)
    /// and IA32_APERF (0xE8) count, and may be read.
    pub aperf_mperf: bool,
    /// Bare metal or which hypervisor (`CPUID.1:ECX[31]` and leaf 0x40000000): a hypervisor decides
    /// which MSRs the partition may touch, and reports others as the hardware does.
    pub host: Host,
    /// An Intel Atom core of a hybrid processor (leaf 1AH core type 20H): its model-specific events
    /// (the top-down inputs) are the Atom PMU's, not the Core's (set by `super::hybrid::own_counters`).
    pub atom: bool,
}

/// IA32_PERF_CAPABILITIES bit 15: PERF_METRICS available (Intel SDM Vol. 3B, "Performance Monitoring
/// Capabilities"; Linux `PERF_CAP_METRICS_IDX`).
pub const PERF_CAPABILITIES_PERF_METRICS: u64 = 1 << 15;

impl PmuModel {
    /// The model with what IA32_PERF_CAPABILITIES (`read` reads it; called only when
    /// [`PmuModel::perf_capabilities`]) tells: whether IA32_PERF_METRICS exists.
    pub fn with_perf_capabilities(mut self, read: impl FnOnce() -> u64) -> Self {
        self.perf_metrics = self.vendor == Vendor::Intel
            && self.perf_capabilities
            && read() & PERF_CAPABILITIES_PERF_METRICS != 0;
        self
    }

    /// Fixed counter 3 and IA32_PERF_METRICS give top-down level 1 without a general-purpose counter:
    /// on bare metal only ([`Self::perf_metrics_withheld`]).
    pub const fn topdown_metrics(&self) -> bool {
        self.topdown_slots && self.perf_metrics && matches!(self.host, Host::BareMetal)
    }

    /// Fixed counter 3 and IA32_PERF_METRICS are reported, but a hypervisor is present, and no public
    /// source says any hypervisor passes IA32_PERF_METRICS (0x329, and RDPMC of it) through, the
    /// Microsoft hypervisor included (root partition with memory integrity on, or a guest). The HAL
    /// does not arbitrate it, and `IA32_PERF_CAPABILITIES[15]` may be passed through from the hardware
    /// while the hypervisor intercepts the register: an access would be a #GP, a bug check in kernel
    /// mode. So the driver does not use it there, and says so. The other MSRs the HAL does not
    /// arbitrate (IA32_PERF_CAPABILITIES, IA32_APERF/MPERF) are enumerated by CPUID bits the hypervisor
    /// itself answers, which hypervisors clear when they do not implement the registers (ACRN pull
    /// request 8177 removes `CPUID.06H:ECX[0]` and injects #GP on APERF/MPERF).
    pub const fn perf_metrics_withheld(&self) -> bool {
        self.topdown_slots && self.perf_metrics && !matches!(self.host, Host::BareMetal)
    }
}

/// Why the driver will not program the PMU of this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// Neither "GenuineIntel" nor "AuthenticAMD".
    UnknownVendor,
    /// Intel without architectural performance monitoring: leaf 0xA absent or version 0, on bare metal.
    NoArchitecturalPerfmon,
    /// Intel architectural performance monitoring version 1: no fixed counters, no global control.
    PerfmonVersionTooOld,
    /// A hypervisor that does not give this partition the PMU: the Microsoft hypervisor's
    /// PerformanceMonitorsAvailable is clear, or any hypervisor reports Intel perfmon version 0, or a
    /// non-Microsoft hypervisor hides AMD's PerfCtrExtCore.
    HypervisorWithoutPmu,
    /// Not enough counters to count instructions and core cycles at once.
    TooFewCounters,
}

impl Unusable {
    /// A short English reason, for debug output.
    #[cfg(test)]
    pub const fn as_str(self) -> &'static str {
        match self {
            Unusable::UnknownVendor => "unknown processor vendor",
            Unusable::NoArchitecturalPerfmon => "no Intel architectural performance monitoring",
            Unusable::PerfmonVersionTooOld => "Intel architectural performance monitoring version 1",
            Unusable::HypervisorWithoutPmu => "the hypervisor does not expose the PMU",
            Unusable::TooFewCounters => "too few performance counters",
        }
    }
}

/// The outcome of [`detect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detection {
    Usable(PmuModel),
    Unusable(Unusable),
}

/// Microsoft hypervisor leaf "Hypervisor Feature Identification" (HV_CPUID_FEATURES).
const HV_CPUID_FEATURES: u32 = 0x4000_0003;
/// Its EDX bit 2, PerformanceMonitorsAvailable.
const HV_PERFORMANCE_MONITORS_AVAILABLE: u32 = 1 << 2;

/// Width of every AMD core performance counter (AMD APM Vol. 2 §13.2; Linux `cntval_bits = 48`).
pub const AMD_COUNTER_WIDTH: u8 = 48;
/// AMD legacy counters PerfCtr0..3, present since K7.
pub const AMD_LEGACY_COUNTERS: u8 = 4;
/// AMD core counters with PerfCtrExtCore (Linux AMD64_NUM_COUNTERS_CORE).
pub const AMD_CORE_EXTENDED_COUNTERS: u8 = 6;
/// Intel fixed counters the plan knows: instructions, core cycles, reference cycles.
const INTEL_KNOWN_FIXED_COUNTERS: u8 = 3;

/// What the processor runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    BareMetal,
    /// The Microsoft hypervisor (leaf 0x40000000 "Microsoft Hv"): Hyper-V's root partition (Windows
    /// with VBS or memory integrity) or a guest.
    Microsoft,
    OtherHypervisor,
}

/// Detects the PMU of the processor that `reader` executes CPUID on (in the driver,
/// `raw_cpuid::CpuIdReaderNative` on the current processor).
///
/// Takes the reader rather than a `CpuId` because `CpuId` does not hand its reader back, and one leaf
/// raw-cpuid exposes no accessor for (Microsoft's 0x40000003 EDX) is read through it directly, after
/// raw-cpuid has established that a Microsoft hypervisor is present (rule 2 of the module docs).
pub fn detect<R: CpuIdReader>(reader: R) -> Detection {
    let cpuid = CpuId::with_cpuid_reader(reader.clone());
    let vendor = match cpuid.get_vendor_info() {
        Some(info) if info.as_str() == "GenuineIntel" => Vendor::Intel,
        Some(info) if info.as_str() == "AuthenticAMD" => Vendor::Amd,
        _ => return Detection::Unusable(Unusable::UnknownVendor),
    };
    let features = cpuid.get_feature_info();
    let (family, model) = features.as_ref().map_or((0, 0), |f| (f.family_id(), f.model_id()));
    let host = if !features.as_ref().is_some_and(|f| f.has_hypervisor()) {
        Host::BareMetal
    } else {
        match cpuid.get_hypervisor_info() {
            Some(info) if info.identify() == Hypervisor::HyperV => Host::Microsoft,
            _ => Host::OtherHypervisor,
        }
    };
    if host == Host::Microsoft
        && reader.cpuid1(HV_CPUID_FEATURES).edx & HV_PERFORMANCE_MONITORS_AVAILABLE == 0
    {
        return Detection::Unusable(Unusable::HypervisorWithoutPmu);
    }
    let model = match vendor {
        Vendor::Intel => intel(&cpuid, host, family, model),
        Vendor::Amd => amd(&cpuid, host, family, model),
    };
    match model {
        Ok(mut model) => {
            model.aperf_mperf =
                cpuid.get_thermal_power_info().is_some_and(|info| info.has_hw_coord_feedback());
            model.host = host;
            if vendor == Vendor::Intel {
                model.perf_capabilities = features.as_ref().is_some_and(|f| f.has_pdcm());
                model.topdown_slots = intel_topdown_slots(&reader, &model);
            }
            checked(model)
        }
        Err(reason) => Detection::Unusable(reason),
    }
}

fn intel<R: CpuIdReader>(cpuid: &CpuId<R>, host: Host, family: u8, model: u8) -> Result<PmuModel, Unusable> {
    let absent = if host == Host::BareMetal {
        Unusable::NoArchitecturalPerfmon
    } else {
        Unusable::HypervisorWithoutPmu
    };
    let info = cpuid.get_performance_monitoring_info().ok_or(absent)?;
    let version = info.version_id();
    match version {
        0 => return Err(absent),
        1 => return Err(Unusable::PerfmonVersionTooOld),
        _ => {}
    }
    let gp_width = info.counter_bit_width();
    let mut fixed_counters = info.fixed_function_counters();
    let mut fixed_width = info.fixed_function_counters_bit_width();
    if version <= 4 && host == Host::BareMetal && fixed_counters < INTEL_KNOWN_FIXED_COUNTERS {
        fixed_counters = INTEL_KNOWN_FIXED_COUNTERS;
        if fixed_width == 0 {
            fixed_width = gp_width;
        }
    }
    Ok(PmuModel {
        vendor: Vendor::Intel,
        family,
        model,
        version,
        gp_counters: info.number_of_counters(),
        gp_width,
        fixed_counters,
        fixed_width,
        unavailable: intel_unavailable(&info),
        amd_core_extended: false,
        amd_perfmon_v2: false,
        overflow_interrupt: true,
        topdown_slots: false,
        perf_capabilities: false,
        perf_metrics: false,
        aperf_mperf: false,
        host: Host::BareMetal,
        atom: false,
    })
}

/// Top-down slots (architectural event 7, EBX bit 7) is enumerated, available, and counted by fixed
/// counter 3. raw-cpuid has no accessor for bit 7, so EAX and EBX are read raw.
fn intel_topdown_slots<R: CpuIdReader>(reader: &R, model: &PmuModel) -> bool {
    const TOPDOWN_SLOTS: u8 = 7;
    let leaf = reader.cpuid2(0xA, 0);
    let enumerated = (leaf.eax >> 24) as u8;
    model.fixed_counters > 3 && enumerated > TOPDOWN_SLOTS && leaf.ebx & (1 << TOPDOWN_SLOTS) == 0
}

/// The events CPUID.0AH marks unavailable, plus those past its EBX vector length.
fn intel_unavailable(info: &PerformanceMonitoringInfo) -> ArchEvents {
    let marked = [
        (info.is_core_cyc_ev_unavailable(), ArchEvents::CORE_CYCLES),
        (info.is_inst_ret_ev_unavailable(), ArchEvents::INSTRUCTIONS),
        (info.is_ref_cycle_ev_unavailable(), ArchEvents::REFERENCE_CYCLES),
        (info.is_cache_ref_ev_unavailable(), ArchEvents::LLC_REFERENCES),
        (info.is_ll_cache_miss_ev_unavailable(), ArchEvents::LLC_MISSES),
        (info.is_branch_inst_ret_ev_unavailable(), ArchEvents::BRANCHES),
        (info.is_branch_midpred_ev_unavailable(), ArchEvents::BRANCH_MISPREDICTS),
    ];
    let enumerated = info.ebx_length();
    let mut unavailable = ArchEvents::NONE;
    for (bit, (is_unavailable, event)) in marked.into_iter().enumerate() {
        if is_unavailable || bit >= usize::from(enumerated) {
            unavailable = unavailable.union(event);
        }
    }
    unavailable
}

fn amd<R: CpuIdReader>(cpuid: &CpuId<R>, host: Host, family: u8, model: u8) -> Result<PmuModel, Unusable> {
    let core_extended =
        cpuid.get_extended_processor_and_feature_identifiers().is_some_and(|f| f.has_perf_cntr_extensions());
    let perfmon_v2 = cpuid.get_extended_performance_monitoring_and_debug().filter(|d| d.has_perf_mon_v2());
    if host == Host::OtherHypervisor && !core_extended {
        return Err(Unusable::HypervisorWithoutPmu);
    }
    let gp_counters = match &perfmon_v2 {
        Some(v2) => v2.num_perf_ctr_core(),
        None if core_extended => AMD_CORE_EXTENDED_COUNTERS,
        None => AMD_LEGACY_COUNTERS,
    };
    Ok(PmuModel {
        vendor: Vendor::Amd,
        family,
        model,
        version: 0,
        gp_counters,
        gp_width: AMD_COUNTER_WIDTH,
        fixed_counters: 0,
        fixed_width: 0,
        unavailable: ArchEvents::NONE,
        amd_core_extended: core_extended,
        amd_perfmon_v2: perfmon_v2.is_some(),
        // The AMD HAL calls no client overflow handler (rule 6).
        overflow_interrupt: false,
        topdown_slots: false,
        perf_capabilities: false,
        perf_metrics: false,
        aperf_mperf: false,
        host: Host::BareMetal,
        atom: false,
    })
}

/// Rule 5: `model` if it can count instructions and core cycles at once.
fn checked(model: PmuModel) -> Detection {
    let gp_needed = match model.vendor {
        // Fixed counter 0 counts instructions, fixed counter 1 core cycles.
        Vendor::Intel => u8::from(model.fixed_counters < 1) + u8::from(model.fixed_counters < 2),
        Vendor::Amd => 2,
    };
    if model.gp_counters < gp_needed {
        Detection::Unusable(Unusable::TooFewCounters)
    } else {
        Detection::Usable(model)
    }
}

#[cfg(test)]
pub(crate) mod tests;
