//! The CPU model the double presents, and CPUID rewriting.
//!
//! CPUID does not fault in user mode, so the loader rewrites every `cpuid` (0F A2) of the image into
//! `ud2` (0F 0B, same length), which raises SIGILL; the trap handler recognises a rewritten site by its
//! address (a `ud2` the driver itself contains, e.g. a Rust abort, is never taken for one) and answers
//! from the chosen model's table of leaves. Sites are found by decoding, with iced-x86, every function
//! range the image's `.pdata` (RUNTIME_FUNCTION entries) describes. A leaf function that needs no unwind
//! data has no `.pdata` entry; [`unlisted_cpuid_bytes`] counts 0F A2 byte pairs left in executable
//! sections so a test can show none was missed (a byte pair inside another instruction also counts).
//!
//! The model is chosen once per process ([`set_model`]) before the driver is loaded; without a choice
//! the double presents [`NO_PMU`], so no test depends on the host's processor.
//!
//! Register values come from crates/cpuid-dumps (InstLatx64 AIDA64 dumps and marked synthetic
//! entries), the table the driver's own detection tests read. A leaf not in the table reads as zeros
//! (raw-cpuid never reads past the maximum basic or extended leaf).

use crate::poison::IgnorePoison;
use std::collections::HashSet;
use std::sync::{OnceLock, RwLock};

use cpuid_dumps as dumps;
pub use cpuid_dumps::Leaf;

/// The vendor's PMU register layout the virtual PMU implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmuKind {
    /// No counters: every PMU MSR reads 0 and a write is a violation.
    None,
    /// Intel architectural performance monitoring (IA32_PMCx, IA32_FIXED_CTRx, GLOBAL_CTRL/STATUS).
    Intel { gp: u8, gp_width: u8, fixed: u8, fixed_width: u8 },
    /// AMD core counters (PerfCtl/PerfCtr at 0xC0010200+2i) and, with PerfMonV2, the global
    /// control/status registers; without it a counter enables itself and no overflow is reported.
    Amd { counters: u8, perfmon_v2: bool },
}

/// A processor as CPUID and its PMU present it.
#[derive(Debug)]
pub struct CpuModel {
    pub name: &'static str,
    pub leaves: &'static [Leaf],
    pub pmu: PmuKind,
    /// IA32_PERF_CAPABILITIES (0x345), readable where `CPUID.01H:ECX[15]` (PDCM) is set. Only the bits
    /// the double models are set: 13, full-width counter writes through IA32_A_PMCx, and 15,
    /// PERF_METRICS (Intel SDM Vol. 4, MSR 345H; Linux enables PERF_METRICS from Ice Lake on, for
    /// performance cores only).
    pub perf_capabilities: u64,
    /// A hybrid processor's second kind of core: the processors from a system index on that present
    /// another model (its own CPUID leaves, PMU and IA32_PERF_CAPABILITIES). `None`: every processor
    /// presents this model.
    pub other_cores: Option<OtherCores>,
}

/// The processors of a hybrid model that are another kind of core.
#[derive(Debug)]
pub struct OtherCores {
    /// The first system index of the other kind; every processor from it on is one.
    pub from: u32,
    pub model: &'static CpuModel,
}

/// IA32_PERF_CAPABILITIES bit 13: full-width writes (IA32_A_PMCx).
pub const PERF_CAPABILITIES_FW_WRITE: u64 = 1 << 13;
/// IA32_PERF_CAPABILITIES bit 15: IA32_PERF_METRICS.
pub const PERF_CAPABILITIES_PERF_METRICS: u64 = 1 << 15;

/// Core i7-6700K (Skylake-S): architectural perfmon version 4, 4 GP x 48 bits, 3 fixed x 48 bits.
pub static SKYLAKE: CpuModel = CpuModel {
    name: "Core i7-6700K (Skylake, perfmon v4)",
    leaves: dumps::SKYLAKE_I7_6700K.leaves,
    pmu: PmuKind::Intel { gp: 4, gp_width: 48, fixed: 3, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE,
    other_cores: None,
};

/// Core i9-12900K with its E-cores disabled (Alder Lake P-cores only): perfmon version 5, 8 GP x 48
/// bits, 4 fixed x 48 bits.
pub static ALDER_LAKE_P: CpuModel = CpuModel {
    name: "Core i9-12900K P-cores (Alder Lake, perfmon v5, 8 GP)",
    leaves: dumps::ALDER_LAKE_I9_12900K_P_ONLY.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: None,
};

/// Core i5-6400T (Skylake-S without Hyper-Threading): the i7-6700K's core, whose eight general-purpose
/// counters all belong to its one logical processor (Intel SDM Vol. 3B, "Counter Coalescence"), as on
/// an i7-6700K with Hyper-Threading off: perfmon version 4, 8 GP x 48 bits, 3 fixed x 48 bits.
pub static SKYLAKE_NO_HT: CpuModel = CpuModel {
    name: "Core i5-6400T (Skylake without Hyper-Threading, perfmon v4, 8 GP)",
    leaves: dumps::SKYLAKE_I5_6400T.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 3, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE,
    other_cores: None,
};

/// Core i7-1065G7 (Ice Lake client, Sunny Cove): perfmon version 5, 8 GP x 48 bits, 4 fixed x 48 bits
/// and IA32_PERF_METRICS (Linux commit "perf/x86/intel: Generic support for hardware TopDown metrics",
/// 2020, written for Ice Lake, the first core with it).
pub static ICE_LAKE: CpuModel = CpuModel {
    name: "Core i7-1065G7 (Ice Lake, perfmon v5, 8 GP)",
    leaves: dumps::ICE_LAKE_I7_1065G7.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: None,
};

/// Core i5-1135G7 (Tiger Lake-U, family 6 model 0x8C, Willow Cove): perfmon version 5, 8 GP x 48
/// bits, 4 fixed x 48 bits and IA32_PERF_METRICS, as on Ice Lake (Linux `intel_pmu_init` treats
/// Tiger Lake as Ice Lake). Its memory controller's free-running counters (`crate::platform`) are
/// what it is here for; not in [`MODELS`] until the driver reads them.
pub static TIGER_LAKE_U: CpuModel = CpuModel {
    name: "Core i5-1135G7 (Tiger Lake-U, perfmon v5, 8 GP)",
    leaves: dumps::TIGER_LAKE_I5_1135G7.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: None,
};

/// Xeon w9-3475X (Sapphire Rapids, Golden Cove without efficient cores): perfmon version 5, 8 GP x 48
/// bits, 4 fixed x 48 bits and IA32_PERF_METRICS, as on Ice Lake (Linux `intel_pmu_init` gives
/// Sapphire Rapids the top-down metric events).
pub static SAPPHIRE_RAPIDS: CpuModel = CpuModel {
    name: "Xeon w9-3475X (Sapphire Rapids, perfmon v5, 8 GP)",
    leaves: dumps::SAPPHIRE_RAPIDS_W9_3475X.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: None,
};

/// Every model of the double by the name `pmupcw-run --cpu-model` takes, which the configuration
/// matrix scenario runs too (tests/scenarios/config_matrix/).
pub static MODELS: [(&str, &CpuModel); 15] = [
    ("skylake", &SKYLAKE),
    ("skylake-no-ht", &SKYLAKE_NO_HT),
    ("ice-lake", &ICE_LAKE),
    ("alder-lake", &ALDER_LAKE_P),
    ("sapphire-rapids", &SAPPHIRE_RAPIDS),
    ("alder-lake-hybrid", &ALDER_LAKE_HYBRID),
    ("meteor-lake-hybrid", &METEOR_LAKE_HYBRID),
    ("hybrid-own-leaf-a", &HYBRID_OWN_LEAF_A),
    ("zen3", &ZEN3),
    ("zen4", &ZEN4),
    ("zen5", &ZEN5),
    ("hyperv-no-pmu", &HYPERV_GUEST_NO_PMU),
    ("kvm-emerald-rapids-no-pmu", &KVM_GUEST_EMERALD_RAPIDS),
    ("kvm-genoa-no-pmu", &KVM_GUEST_EPYC_GENOA),
    ("no-pmu", &NO_PMU),
];

/// The model named `name` in [`MODELS`].
pub fn model_named(name: &str) -> Option<&'static CpuModel> {
    MODELS.iter().find(|(known, _)| *known == name).map(|(_, model)| *model)
}

/// Ryzen 9 7950X (Zen 4, family 19h model 61h): PerfCtrExtCore and PerfMonV2 with 6 core counters.
pub static ZEN4: CpuModel = CpuModel {
    name: "Ryzen 9 7950X (Zen 4, PerfMonV2)",
    leaves: dumps::ZEN4_RYZEN9_7950X.leaves,
    pmu: PmuKind::Amd { counters: 6, perfmon_v2: true },
    perf_capabilities: 0,
    other_cores: None,
};

/// Ryzen 9 9950X (Zen 5, family 1Ah model 44h), from its InstLatx64 dump: PerfCtrExtCore, PerfMonV2
/// with 6 core counters (CPUID 0x80000022 EBX\[3:0\]) as on Zen 4, APERF/MPERF (leaf 6 ECX\[0\]).
pub static ZEN5: CpuModel = CpuModel {
    name: "Ryzen 9 9950X (Zen 5, PerfMonV2)",
    leaves: dumps::ZEN5_RYZEN9_9950X.leaves,
    pmu: PmuKind::Amd { counters: 6, perfmon_v2: true },
    perf_capabilities: 0,
    other_cores: None,
};

/// Ryzen 9 5900X (Zen 3, family 19h model 21h): PerfCtrExtCore, 6 core counters, no PerfMonV2 (leaf
/// 0x80000022 present but zero), so no global status and no overflow interrupt: the driver polls.
/// APERF/MPERF (leaf 6 ECX\[0\]).
pub static ZEN3: CpuModel = CpuModel {
    name: "Ryzen 9 5900X (Zen 3, no PerfMonV2)",
    leaves: dumps::ZEN3_RYZEN9_5900X.leaves,
    pmu: PmuKind::Amd { counters: 6, perfmon_v2: false },
    perf_capabilities: 0,
    other_cores: None,
};

/// Core i9-12900K (Alder Lake-S, hybrid): processors 0-15 are the 8 Golden Cove performance cores'
/// 16 threads, processors 16 and up its Gracemont efficient cores (8 on the real part; a topology with
/// more processors makes the rest efficient cores too). Each presents its own CPUID, as logical
/// processors #0 and #16 of the dump report it: the same leaf 0xA (6 GP, 3 fixed) everywhere, core
/// type 40H or 20H in leaf 0x1A. The PMUs are what the cores have (Linux `intel_pmu_init`, Alder
/// Lake: the performance-core PMU has two general-purpose and one fixed counter more than leaf 0xA
/// reports, and PERF_METRICS, which the efficient core lacks).
pub static ALDER_LAKE_HYBRID: CpuModel = CpuModel {
    name: "Core i9-12900K (Alder Lake hybrid, 8 P-cores x 2 threads + E-cores)",
    leaves: dumps::ALDER_LAKE_I9_12900K_P.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: Some(OtherCores { from: ALDER_LAKE_PERFORMANCE_THREADS, model: &ALDER_LAKE_EFFICIENT }),
};

/// Performance-core threads of [`ALDER_LAKE_HYBRID`].
pub const ALDER_LAKE_PERFORMANCE_THREADS: u32 = 16;

/// An efficient core of [`ALDER_LAKE_HYBRID`].
pub static ALDER_LAKE_EFFICIENT: CpuModel = CpuModel {
    name: "Core i9-12900K efficient core (Gracemont)",
    leaves: dumps::ALDER_LAKE_I9_12900K_E.leaves,
    pmu: PmuKind::Intel { gp: 6, gp_width: 48, fixed: 3, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE,
    other_cores: None,
};

/// Meteor Lake (Core Ultra, 06_AAH, hybrid), from the InstLatx64 dump in crates/cpuid-dumps: the
/// Redwood Cove performance cores first, then the Crestmont efficient cores (the dump numbers its
/// performance-core threads #0-1 and #10-15; the double numbers them 0-7). Both report 8 GP and 3
/// fixed counters in leaf 0xA; leaf 0x23 gives each type its own: 8 GP and 4 fixed on the performance
/// cores (fixed counter 3: top-down slots), 8 and 3 on the efficient ones (Linux
/// `arch/x86/events/intel/core.c`, `update_pmu_cap` reads leaf 0x23 on each core type). PERF_METRICS on
/// the performance cores only (Linux enables it for `cpu_core` alone).
pub static METEOR_LAKE_HYBRID: CpuModel = CpuModel {
    name: "Core Ultra (Meteor Lake hybrid, 4 P-cores x 2 threads + E-cores)",
    leaves: dumps::METEOR_LAKE_P.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: Some(OtherCores { from: METEOR_LAKE_PERFORMANCE_THREADS, model: &METEOR_LAKE_EFFICIENT }),
};

/// Performance-core threads of [`METEOR_LAKE_HYBRID`].
pub const METEOR_LAKE_PERFORMANCE_THREADS: u32 = 8;

/// An efficient core of [`METEOR_LAKE_HYBRID`].
pub static METEOR_LAKE_EFFICIENT: CpuModel = CpuModel {
    name: "Meteor Lake efficient core (Crestmont)",
    leaves: dumps::METEOR_LAKE_E.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 3, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE,
    other_cores: None,
};

/// *Synthetic*: [`ALDER_LAKE_HYBRID`] as if each core type reported its own counters in leaf 0xA (the
/// performance cores the i9-12900K's leaf 0xA with its efficient cores disabled, 8 GP and 4 fixed with
/// top-down slots), as a processor does that enumerates counters per core type. A driver that
/// detects on one processor and programs that everywhere programs counters the efficient cores lack.
pub static HYBRID_OWN_LEAF_A: CpuModel = CpuModel {
    name: "synthetic hybrid: each core type reports its own leaf 0xA",
    leaves: HYBRID_OWN_LEAF_A_PERFORMANCE,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: Some(OtherCores { from: ALDER_LAKE_PERFORMANCE_THREADS, model: &ALDER_LAKE_EFFICIENT }),
};

/// The performance core of [`HYBRID_OWN_LEAF_A`]: the hybrid dump's leaves with the 8 GP / 4 fixed
/// leaf 0xA.
const HYBRID_OWN_LEAF_A_PERFORMANCE: &[Leaf] = &[
    dumps::basic(0x20, dumps::INTEL),
    (0x1, 0, [0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF]),
    (0x6, 0, [0x00DFCFF5, 0x00000002, 0x00000409, 0x00000003]),
    (0x7, 0, [0x00000001, 0x239CA7EB, 0x98C027AC, 0xFC1CC410]),
    (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
    (0x1A, 0, [0x40000001, 0, 0, 0]),
    (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
    (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
];

/// *Synthetic*: a Hyper-V guest without PMU passthrough, leaf 0xA zero and 0x40000003 EDX bit 2
/// (PerformanceMonitorsAvailable) clear.
pub static HYPERV_GUEST_NO_PMU: CpuModel = CpuModel {
    name: "Hyper-V guest without PMU",
    leaves: dumps::HYPERV_GUEST_NO_PMU.leaves,
    pmu: PmuKind::None,
    perf_capabilities: 0,
    other_cores: None,
};

/// A Xeon (Emerald Rapids) cloud virtual machine under KVM without a virtual PMU, from a real dump
/// (crates/cpuid-dumps/cloud): leaf 0xA zero, no APERF/MPERF, no IA32_PERF_CAPABILITIES.
pub static KVM_GUEST_EMERALD_RAPIDS: CpuModel = CpuModel {
    name: "Xeon (Emerald Rapids), KVM cloud guest without PMU",
    leaves: dumps::KVM_GUEST_EMERALD_RAPIDS.leaves,
    pmu: PmuKind::None,
    perf_capabilities: 0,
    other_cores: None,
};

/// An EPYC (Genoa, Zen 4) cloud virtual machine under KVM without a virtual PMU, from a real dump
/// (crates/cpuid-dumps/cloud): PerfCtrExtCore clear, no PerfMonV2 leaf, no APERF/MPERF.
pub static KVM_GUEST_EPYC_GENOA: CpuModel = CpuModel {
    name: "EPYC (Genoa, Zen 4), KVM cloud guest without PMU",
    leaves: dumps::KVM_GUEST_EPYC_GENOA.leaves,
    pmu: PmuKind::None,
    perf_capabilities: 0,
    other_cores: None,
};

/// *Synthetic*: a KVM guest on the Ryzen 9 3950X (Zen 2) given the PMU (PerfCtrExtCore exposed) but
/// not APERF/MPERF (no leaf 6: KVM exposes them only when asked), as crates/cpuid-dumps'
/// KVM_GUEST_ZEN2 presents it: a usable PMU without the frequency MSRs. Not in [`MODELS`].
pub static KVM_GUEST_ZEN2_PMU_WITHOUT_MPERF: CpuModel = CpuModel {
    name: "synthetic: KVM guest on Zen 2 with PerfCtrExtCore, without APERF/MPERF",
    leaves: dumps::KVM_GUEST_ZEN2.leaves,
    pmu: PmuKind::Amd { counters: 6, perfmon_v2: false },
    perf_capabilities: 0,
    other_cores: None,
};

/// *Synthetic*: the Alder Lake P-cores of [`ALDER_LAKE_P`] in the Hyper-V root partition, with the
/// PMU passed through and IA32_PERF_CAPABILITIES as the hardware reports it (PERF_METRICS set), but
/// IA32_PERF_METRICS intercepted (see [`perf_metrics_intercepted`]).
pub static HYPERV_ROOT_ALDER_LAKE: CpuModel = CpuModel {
    name: "synthetic: Alder Lake P-cores, Hyper-V root with PMU",
    leaves: dumps::HYPERV_ROOT_ALDER_LAKE_P_ONLY.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: None,
};

/// *Synthetic*: [`HYPERV_ROOT_ALDER_LAKE`] as a Hyper-V guest given the PMU (`Set-VMProcessor
/// -Perfmon pmu`).
pub static HYPERV_GUEST_ALDER_LAKE_PMU: CpuModel = CpuModel {
    name: "synthetic: Alder Lake P-cores, Hyper-V guest with PMU",
    leaves: dumps::HYPERV_GUEST_ALDER_LAKE_P_ONLY_PMU.leaves,
    pmu: PmuKind::Intel { gp: 8, gp_width: 48, fixed: 4, fixed_width: 48 },
    perf_capabilities: PERF_CAPABILITIES_FW_WRITE | PERF_CAPABILITIES_PERF_METRICS,
    other_cores: None,
};

/// *Synthetic*: the i7-6700K with leaf 0xA all zero on bare metal, a machine with no architectural PMU
/// at all.
pub static NO_PMU: CpuModel = CpuModel {
    name: "Skylake with leaf 0xA zero (no PMU)",
    leaves: dumps::INTEL_LEAF_A_ZERO.leaves,
    pmu: PmuKind::None,
    perf_capabilities: 0,
    other_cores: None,
};

static MODEL: OnceLock<&'static CpuModel> = OnceLock::new();

/// Chooses the CPU model of this process. Call before loading the driver; a second, different choice
/// panics (the model is per process).
pub fn set_model(model: &'static CpuModel) {
    let chosen = *MODEL.get_or_init(|| model);
    assert!(std::ptr::eq(chosen, model), "the CPU model is already {}", chosen.name);
}

/// The model in effect ([`NO_PMU`] unless one was chosen).
pub fn model() -> &'static CpuModel {
    MODEL.get_or_init(|| &NO_PMU)
}

/// The model processor `vp` presents: the chosen model's, or its other kind of core's.
pub fn model_of(vp: u32) -> &'static CpuModel {
    let model = model();
    match &model.other_cores {
        Some(other) if vp >= other.from => other.model,
        _ => model,
    }
}

/// CPUID(leaf, subleaf) on the current virtual processor (processor 0 outside one): [EAX, EBX, ECX,
/// EDX], zeros for a leaf not in its model's table.
pub fn cpuid(leaf: u32, subleaf: u32) -> [u32; 4] {
    let vp = super::kpcr::current_if_any().map_or(0, super::kpcr::Kpcr::processor_index);
    cpuid_on(vp, leaf, subleaf)
}

/// Whether processor `vp` runs under the Microsoft hypervisor (CPUID.1:ECX\[31\] and leaf 0x40000000
/// "Microsoft Hv") and so has IA32_PERF_METRICS (0x329) intercepted: no public source says the
/// hypervisor implements that MSR, in the root partition or a guest, and an MSR it does not implement
/// raises #GP in the partition (QEMU commit e7ca549fc8ca, "WHPX: register for unrecognized MSR exits":
/// MSRs "that the Windows Hypervisor doesn't implement" cause "a GP to be returned to the guest").
/// IA32_PERF_CAPABILITIES may still report PERF_METRICS, as the hardware does.
pub fn perf_metrics_intercepted(vp: u32) -> bool {
    let signature = cpuid_on(vp, 0x4000_0000, 0);
    cpuid_on(vp, 1, 0)[2] & (1 << 31) != 0 && signature[1..] == dumps::MICROSOFT_HV
}

/// CPUID(leaf, subleaf) as processor `vp` answers it.
pub fn cpuid_on(vp: u32, leaf: u32, subleaf: u32) -> [u32; 4] {
    dumps::lookup(model_of(vp).leaves, leaf, subleaf)
}

/// Addresses of rewritten `cpuid` sites (now `ud2`).
static SITES: RwLock<Option<HashSet<u64>>> = RwLock::new(None);

/// Records `address` as a rewritten site.
pub(crate) fn add_site(address: u64) {
    SITES.write().ignore_poison().get_or_insert_with(HashSet::new).insert(address);
}

/// Forgets the sites in `[base, base + size)` (the image is going away).
pub(crate) fn remove_sites(base: u64, size: u64) {
    if let Some(sites) = SITES.write().ignore_poison().as_mut() {
        sites.retain(|&site| site < base || site >= base + size);
    }
}

/// Whether `address` is a rewritten `cpuid`. Called from the SIGILL handler.
pub fn is_site(address: u64) -> bool {
    SITES.read().is_ok_and(|sites| sites.as_ref().is_some_and(|sites| sites.contains(&address)))
}

/// Rewritten sites, in address order.
pub fn sites() -> Vec<u64> {
    let mut sites: Vec<u64> = SITES
        .read()
        .ignore_poison()
        .as_ref()
        .map(|sites| sites.iter().copied().collect())
        .unwrap_or_default();
    sites.sort_unstable();
    sites
}

/// 0F A2 byte pairs in `code` (executable section bytes after rewriting, where every rewritten site
/// reads 0F 0B): a `cpuid` the `.pdata` walk missed, or such a pair inside another instruction.
pub fn unlisted_cpuid_bytes(code: &[u8]) -> usize {
    code.windows(2).filter(|pair| pair == &[0x0F, 0xA2]).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every Intel model of one core type has the counters its CPUID leaf 0xA reports (Intel SDM Vol.
    /// 3B, "Architectural Performance Monitoring": EAX\[15:8\] general-purpose counters, EAX\[23:16\]
    /// their width, EDX\[4:0\] fixed counters, EDX\[12:5\] their width), so that a plan sized to the
    /// leaf finds each counter in the virtual PMU. (A hybrid part's cores report the common counters
    /// in leaf 0xA and their own in leaf 0x23: their models are checked by the hybrid scenarios.)
    #[test]
    fn intel_models_have_the_counters_of_their_leaf_0xa() {
        for (name, model) in MODELS.iter().filter(|(_, model)| model.other_cores.is_none()) {
            let PmuKind::Intel { gp, gp_width, fixed, fixed_width } = model.pmu else { continue };
            let [eax, _, _, edx] =
                model.leaves.iter().find(|leaf| (leaf.0, leaf.1) == (0xA, 0)).map_or([0; 4], |leaf| leaf.2);
            let leaf = (eax >> 8 & 0xFF, eax >> 16 & 0xFF, edx & 0x1F, edx >> 5 & 0xFF);
            let pmu = (u32::from(gp), u32::from(gp_width), u32::from(fixed), u32::from(fixed_width));
            assert_eq!(pmu, leaf, "{name}: (GP, GP width, fixed, fixed width) of the model and of leaf 0xA");
        }
    }
}
