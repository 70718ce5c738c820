//! Detection on real processors: a table of CPUID register values, leaf by leaf, and the model (or
//! the reason it is unusable) each must produce.
//!
//! The register values are in crates/cpuid-dumps (InstLatx64 AIDA64 dumps and marked synthetic
//! entries), shared with the kernel double's CPU models.

use super::*;
pub(crate) use cpuid_dumps::*;
use raw_cpuid::{CpuIdReader, CpuIdResult};

/// A [`CpuIdReader`] answering from a table; unknown leaves read as zeros.
#[derive(Clone, Copy)]
pub(crate) struct CpuIdTable(pub &'static [Leaf]);

impl CpuIdReader for CpuIdTable {
    fn cpuid2(&self, leaf: u32, subleaf: u32) -> CpuIdResult {
        let [eax, ebx, ecx, edx] = lookup(self.0, leaf, subleaf);
        CpuIdResult { eax, ebx, ecx, edx }
    }
}

/// Detection run on a table entry.
pub(crate) trait Detect {
    fn detect(&self) -> Detection;
    /// The usable model (panics if the entry is unusable).
    fn model(&self) -> PmuModel;
}

impl Detect for Cpu {
    fn detect(&self) -> Detection {
        detect(CpuIdTable(self.leaves))
    }

    fn model(&self) -> PmuModel {
        match self.detect() {
            Detection::Usable(model) => model,
            Detection::Unusable(reason) => panic!("{}: unusable ({reason:?})", self.name),
        }
    }
}

/// The model every Intel processor of the table shares, varied per entry with struct update syntax.
const INTEL_BASE: PmuModel = PmuModel {
    vendor: Vendor::Intel,
    family: 6,
    model: 0,
    version: 0,
    gp_counters: 0,
    gp_width: 48,
    fixed_counters: 3,
    fixed_width: 48,
    unavailable: ArchEvents::NONE,
    amd_core_extended: false,
    amd_perfmon_v2: false,
    overflow_interrupt: true,
    topdown_slots: false,
    perf_capabilities: true,
    perf_metrics: false,
    aperf_mperf: false,
    host: Host::BareMetal,
    atom: false,
};

const AMD_BASE: PmuModel = PmuModel {
    vendor: Vendor::Amd,
    family: 0x17,
    model: 0,
    version: 0,
    gp_counters: 6,
    gp_width: 48,
    fixed_counters: 0,
    fixed_width: 0,
    unavailable: ArchEvents::NONE,
    amd_core_extended: true,
    amd_perfmon_v2: false,
    overflow_interrupt: false,
    topdown_slots: false,
    perf_capabilities: false,
    perf_metrics: false,
    aperf_mperf: false,
    host: Host::BareMetal,
    atom: false,
};

pub(crate) const SKYLAKE_MODEL: PmuModel =
    PmuModel { model: 0x5E, version: 4, gp_counters: 4, aperf_mperf: true, ..INTEL_BASE };
pub(crate) const ALDER_LAKE_HYBRID_MODEL: PmuModel =
    PmuModel { model: 0x97, version: 5, gp_counters: 6, aperf_mperf: true, ..INTEL_BASE };
/// Meteor Lake's leaf 0xA on either core type: the 8 GP and 3 fixed counters both have (leaf 0x23
/// tells each type's own: `crate::pmu::hybrid::own_counters`).
pub(crate) const METEOR_LAKE_MODEL: PmuModel =
    PmuModel { model: 0xAA, version: 5, gp_counters: 8, aperf_mperf: true, ..INTEL_BASE };
pub(crate) const ALDER_LAKE_P_ONLY_MODEL: PmuModel = PmuModel {
    model: 0x97,
    version: 5,
    gp_counters: 8,
    fixed_counters: 4,
    topdown_slots: true,
    aperf_mperf: true,
    ..INTEL_BASE
};
pub(crate) const SKYLAKE_NO_HT_MODEL: PmuModel = PmuModel { gp_counters: 8, ..SKYLAKE_MODEL };
/// Ice Lake client and Sapphire Rapids: the same architectural PMU as the Alder Lake P-cores.
pub(crate) const ICE_LAKE_MODEL: PmuModel = PmuModel { model: 0x7E, ..ALDER_LAKE_P_ONLY_MODEL };
pub(crate) const SAPPHIRE_RAPIDS_MODEL: PmuModel = PmuModel { model: 0x8F, ..ALDER_LAKE_P_ONLY_MODEL };
pub(crate) const LYNNFIELD_MODEL: PmuModel = PmuModel {
    model: 0x1E,
    version: 3,
    gp_counters: 4,
    unavailable: ArchEvents::REFERENCE_CYCLES.union(ArchEvents::BRANCH_MISPREDICTS),
    ..INTEL_BASE
};
pub(crate) const CONROE_MODEL: PmuModel =
    PmuModel { model: 0x0F, version: 2, gp_counters: 2, gp_width: 40, fixed_width: 40, ..INTEL_BASE };
pub(crate) const HYPERV_ROOT_XEON_W1290P_MODEL: PmuModel =
    PmuModel { model: 0xA5, version: 4, gp_counters: 4, host: Host::Microsoft, ..INTEL_BASE };
/// The i9-12900K's P-cores under Hyper-V: as on bare metal, but for the host.
pub(crate) const HYPERV_ALDER_LAKE_P_ONLY_MODEL: PmuModel =
    PmuModel { host: Host::Microsoft, ..ALDER_LAKE_P_ONLY_MODEL };
pub(crate) const ZEN2_MODEL: PmuModel = PmuModel { model: 0x71, ..AMD_BASE };
pub(crate) const ZEN3_MODEL: PmuModel = PmuModel { family: 0x19, model: 0x21, aperf_mperf: true, ..AMD_BASE };
/// The Ryzen 9 9950X: 6 core counters, as on Zen 4.
pub(crate) const ZEN5_MODEL: PmuModel =
    PmuModel { family: 0x1A, model: 0x44, amd_perfmon_v2: true, aperf_mperf: true, ..AMD_BASE };
pub(crate) const ZEN5_8_COUNTERS_MODEL: PmuModel = PmuModel {
    family: 0x1A,
    model: 0x44,
    gp_counters: 8,
    amd_perfmon_v2: true,
    aperf_mperf: true,
    ..AMD_BASE
};
pub(crate) const ZEN4_MODEL: PmuModel =
    PmuModel { family: 0x19, model: 0x61, amd_perfmon_v2: true, aperf_mperf: true, ..AMD_BASE };

/// Every processor of the table and what detection must say.
pub(crate) const TABLE: [(&Cpu, Detection); 32] = [
    (&SKYLAKE_I7_6700K, Detection::Usable(SKYLAKE_MODEL)),
    (&SKYLAKE_I5_6400T, Detection::Usable(SKYLAKE_NO_HT_MODEL)),
    (&ICE_LAKE_I7_1065G7, Detection::Usable(ICE_LAKE_MODEL)),
    (&SAPPHIRE_RAPIDS_W9_3475X, Detection::Usable(SAPPHIRE_RAPIDS_MODEL)),
    (&ALDER_LAKE_I9_12900K_P, Detection::Usable(ALDER_LAKE_HYBRID_MODEL)),
    (&ALDER_LAKE_I9_12900K_E, Detection::Usable(ALDER_LAKE_HYBRID_MODEL)),
    (&ALDER_LAKE_I9_12900K_P_ONLY, Detection::Usable(ALDER_LAKE_P_ONLY_MODEL)),
    (&METEOR_LAKE_P, Detection::Usable(METEOR_LAKE_MODEL)),
    (&METEOR_LAKE_E, Detection::Usable(METEOR_LAKE_MODEL)),
    (&LYNNFIELD_I7_860, Detection::Usable(LYNNFIELD_MODEL)),
    (&CONROE_X6800, Detection::Usable(CONROE_MODEL)),
    (&YONAH_CELERON_215, Detection::Unusable(Unusable::PerfmonVersionTooOld)),
    (&DOTHAN_PENTIUM_M_730, Detection::Unusable(Unusable::NoArchitecturalPerfmon)),
    (&INTEL_LEAF_A_ZERO, Detection::Unusable(Unusable::NoArchitecturalPerfmon)),
    (&ZEN2_RYZEN9_3950X, Detection::Usable(ZEN2_MODEL)),
    (&ZEN3_RYZEN9_5900X, Detection::Usable(ZEN3_MODEL)),
    (&ZEN4_RYZEN9_7950X, Detection::Usable(ZEN4_MODEL)),
    (&ZEN5_RYZEN9_9950X, Detection::Usable(ZEN5_MODEL)),
    (&ZEN5_SYNTHETIC_8_COUNTERS, Detection::Usable(ZEN5_8_COUNTERS_MODEL)),
    (&HYPERV_ROOT_XEON_W1290P, Detection::Usable(HYPERV_ROOT_XEON_W1290P_MODEL)),
    (&HYPERV_ROOT_ALDER_LAKE_P_ONLY, Detection::Usable(HYPERV_ALDER_LAKE_P_ONLY_MODEL)),
    (&HYPERV_GUEST_ALDER_LAKE_P_ONLY_PMU, Detection::Usable(HYPERV_ALDER_LAKE_P_ONLY_MODEL)),
    (&HYPERV_XEON_X7560, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&HYPERV_ROOT_EPYC_7401P, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&HYPERV_GUEST_NO_PMU, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&HYPERV_GUEST_PMU_BIT_LEAF_A_ZERO, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_EMERALD_RAPIDS, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_EPYC_GENOA, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_ZEN2_NO_PERFCTR_CORE, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_ZEN2, Detection::Usable(PmuModel { host: Host::OtherHypervisor, ..ZEN2_MODEL })),
    (&ZHAOXIN_KX6000, Detection::Unusable(Unusable::UnknownVendor)),
    (&INTEL_ONE_FIXED_NO_GP, Detection::Unusable(Unusable::TooFewCounters)),
];

#[test]
fn every_processor_of_the_table_is_detected_as_documented() {
    for (cpu, expected) in TABLE {
        assert_eq!(cpu.detect(), expected, "{}", cpu.name);
    }
}

#[test]
fn perf_metrics_are_used_on_bare_metal_only() {
    let read = || PERF_CAPABILITIES_PERF_METRICS;
    let bare_metal = ALDER_LAKE_I9_12900K_P_ONLY.model().with_perf_capabilities(read);
    assert!(bare_metal.topdown_metrics() && !bare_metal.perf_metrics_withheld());
    for partition in [&HYPERV_ROOT_ALDER_LAKE_P_ONLY, &HYPERV_GUEST_ALDER_LAKE_P_ONLY_PMU] {
        let model = partition.model().with_perf_capabilities(read);
        assert!(model.perf_metrics, "{}: IA32_PERF_CAPABILITIES says it exists", partition.name);
        assert!(!model.topdown_metrics() && model.perf_metrics_withheld(), "{}", partition.name);
    }
    // Without PERF_METRICS reported, nothing is withheld.
    assert!(!HYPERV_ROOT_ALDER_LAKE_P_ONLY.model().with_perf_capabilities(|| 0).perf_metrics_withheld());
}

#[test]
fn hybrid_alder_lake_reports_the_common_counters_on_both_core_types() {
    assert_eq!(ALDER_LAKE_I9_12900K_P.model(), ALDER_LAKE_I9_12900K_E.model());
}

#[test]
fn events_past_the_ebx_vector_length_are_unavailable() {
    // *Synthetic*: the i7-6700K's leaf 0xA with an EBX vector length of 4 (EAX[31:24]) and EBX bit 1 set.
    const SHORT_VECTOR: Cpu = Cpu {
        name: "synthetic: EBX vector length 4",
        leaves: &[
            basic(0x16, INTEL),
            (0x1, 0, [0x000506E3, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF]),
            (0xA, 0, [0x04300404, 0x00000002, 0x00000000, 0x00000603]),
        ],
    };
    let expected = ArchEvents::INSTRUCTIONS
        .union(ArchEvents::LLC_MISSES)
        .union(ArchEvents::BRANCHES)
        .union(ArchEvents::BRANCH_MISPREDICTS);
    assert_eq!(SHORT_VECTOR.model().unavailable, expected);
}

#[test]
fn the_fixed_counter_quirk_applies_to_bare_metal_only() {
    // *Synthetic*: the Conroe's leaves under KVM: the hypervisor's EDX (no fixed counters) is believed.
    const CONROE_UNDER_KVM: Cpu = Cpu {
        name: "synthetic: Conroe under KVM",
        leaves: &[
            basic(0xA, INTEL),
            (0x1, 0, [0x000006F6, 0x00020800, 0x8000E3BD, 0xBFEBFBFF]),
            (0xA, 0, [0x07280202, 0x00000000, 0x00000000, 0x00000000]),
            hypervisor(0x40000001, KVM),
        ],
    };
    assert_eq!(
        CONROE_UNDER_KVM.model(),
        PmuModel { fixed_counters: 0, fixed_width: 0, host: Host::OtherHypervisor, ..CONROE_MODEL }
    );
}

#[test]
fn arch_events_bits_follow_cpuid_0ah_ebx() {
    assert_eq!(ArchEvents::CORE_CYCLES.bits(), 1);
    assert_eq!(ArchEvents::INSTRUCTIONS.bits(), 2);
    assert_eq!(ArchEvents::BRANCH_MISPREDICTS.bits(), 0x40);
    assert!(ArchEvents::ALL.contains(ArchEvents::LLC_MISSES));
    assert!(!ArchEvents::LLC_REFERENCES.contains(ArchEvents::LLC_MISSES));
    assert!(ArchEvents::NONE.is_empty());
}

#[test]
fn every_unusable_reason_has_a_description() {
    for reason in [
        Unusable::UnknownVendor,
        Unusable::NoArchitecturalPerfmon,
        Unusable::PerfmonVersionTooOld,
        Unusable::HypervisorWithoutPmu,
        Unusable::TooFewCounters,
    ] {
        assert!(!reason.as_str().is_empty());
    }
}

/// The processor running the tests: whatever it is (CI runs in virtual machines), detection reads only
/// CPUID and never panics.
#[cfg(target_arch = "x86_64")]
#[test]
fn detection_runs_on_the_host_processor() {
    let detection = detect(raw_cpuid::CpuIdReaderNative);
    println!("host processor: {detection:?}");
    if let Detection::Usable(model) = detection {
        assert!(model.gp_counters >= 2 || model.fixed_counters >= 1);
    }
}
