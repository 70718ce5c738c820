//! Detection on real processors: a table of CPUID register values, leaf by leaf, and the model (or
//! the reason it is unusable) each must produce.
//!
//! Unless marked *synthetic*, every value is copied from an AIDA64 CPUID dump in the InstLatx64
//! collection (github.com/InstLatx64/InstLatx64, snapshot 087af2c), file named in each entry, logical
//! processor #0 unless said otherwise. Only the leaves detection can read are kept; any other leaf
//! reads as zeros, as leaves beyond the maximum roughly do (raw-cpuid never reads past the maximum
//! basic or extended leaf).

use super::*;
use raw_cpuid::{CpuIdReader, CpuIdResult};

/// One CPUID leaf: (EAX input, ECX input, [EAX, EBX, ECX, EDX] output).
pub(crate) type Leaf = (u32, u32, [u32; 4]);

/// A processor as its CPUID leaves describe it.
pub(crate) struct Cpu {
    pub name: &'static str,
    pub leaves: &'static [Leaf],
}

/// A [`CpuIdReader`] answering from a table; unknown leaves read as zeros.
#[derive(Clone, Copy)]
pub(crate) struct CpuIdTable(pub &'static [Leaf]);

impl CpuIdReader for CpuIdTable {
    fn cpuid2(&self, leaf: u32, subleaf: u32) -> CpuIdResult {
        let regs =
            self.0.iter().find(|(l, s, _)| (*l, *s) == (leaf, subleaf)).map_or([0; 4], |(_, _, regs)| *regs);
        CpuIdResult { eax: regs[0], ebx: regs[1], ecx: regs[2], edx: regs[3] }
    }
}

impl Cpu {
    pub(crate) fn detect(&self) -> Detection {
        detect(CpuIdTable(self.leaves))
    }

    pub(crate) fn model(&self) -> PmuModel {
        match self.detect() {
            Detection::Usable(model) => model,
            Detection::Unusable(reason) => panic!("{}: unusable ({reason:?})", self.name),
        }
    }
}

// Vendor strings (leaf 0 EBX, EDX, ECX) and hypervisor signatures (leaf 0x40000000 EBX, ECX, EDX).
const INTEL: [u32; 3] = [0x756E6547, 0x6C65746E, 0x49656E69]; // "GenuineIntel": EBX, ECX, EDX
const AMD: [u32; 3] = [0x68747541, 0x444D4163, 0x69746E65]; // "AuthenticAMD": EBX, ECX, EDX
const MICROSOFT_HV: [u32; 3] = [0x7263694D, 0x666F736F, 0x76482074]; // "Microsoft Hv"
const HV_INTERFACE: [u32; 4] = [0x31237648, 0, 0, 0]; // "Hv#1"

const fn basic(max: u32, vendor: [u32; 3]) -> Leaf {
    (0, 0, [max, vendor[0], vendor[1], vendor[2]])
}

const fn hypervisor(max: u32, vendor: [u32; 3]) -> Leaf {
    (0x4000_0000, 0, [max, vendor[0], vendor[1], vendor[2]])
}

/// Core i7-6700K (Skylake-S, 06_5EH), GenuineIntel00506E3_SkyLake_01_CPUID.txt. Leaf 0xA
/// 07300404/0/0/603: version 4, 4 GP x 48 bits, EBX vector 7, 3 fixed x 48 bits. The same values are
/// in GenuineIntel00506E3_Skylake_02_CPUID.txt (another 6700K).
pub(crate) const SKYLAKE_I7_6700K: Cpu = Cpu {
    name: "Core i7-6700K (Skylake)",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF]),
        (0xA, 0, [0x07300404, 0x00000000, 0x00000000, 0x00000603]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// Core i9-12900K (Alder Lake-S, 06_97H, 8 P + 8 E cores), GenuineIntel0090672_AlderLake_01_LC_BC_CPUID.txt,
/// logical processor #0, a Golden Cove P-core (leaf 0x1A EAX 40000001). All 24 logical processors of
/// this dump report the same leaf 0xA, 07300605/0/7/8603: version 5, 6 GP x 48, 3 fixed x 48: the
/// E-core's counts, not the P-core's 8 GP / 4 fixed (see ALDER_LAKE_I9_12900K_P_ONLY).
pub(crate) const ALDER_LAKE_I9_12900K_P: Cpu = Cpu {
    name: "Core i9-12900K P-core, hybrid",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0xA, 0, [0x07300605, 0x00000000, 0x00000007, 0x00008603]),
        (0x1A, 0, [0x40000001, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// The same dump, logical processor #16, a Gracemont E-core (leaf 0x1A EAX 20000001).
pub(crate) const ALDER_LAKE_I9_12900K_E: Cpu = Cpu {
    name: "Core i9-12900K E-core, hybrid",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x40800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0xA, 0, [0x07300605, 0x00000000, 0x00000007, 0x00008603]),
        (0x1A, 0, [0x20000001, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// The same i9-12900K with its E-cores disabled ("OctalCore"),
/// GenuineIntel0090672_AlderLake_01_BC_AVX512_CPUID.txt: leaf 0xA 08300805/0/F/8604, the P-core's own
/// 8 GP x 48 and 4 fixed x 48 (fixed 3: topdown slots).
pub(crate) const ALDER_LAKE_I9_12900K_P_ONLY: Cpu = Cpu {
    name: "Core i9-12900K, E-cores disabled",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Core i7 860 (Lynnfield, 06_1EH), GenuineIntel00106E5_Lynnfield_CPUID.txt. Leaf 0xA
/// 07300403/44/0/603: version 3, and EBX 44H marks reference cycles (bit 2) and branch mispredicts
/// (bit 6) unavailable.
pub(crate) const LYNNFIELD_I7_860: Cpu = Cpu {
    name: "Core i7 860 (Lynnfield)",
    leaves: &[
        basic(0xB, INTEL),
        (0x1, 0, [0x000106E5, 0x00100800, 0x0098E3FD, 0xBFEBFBFF]),
        (0xA, 0, [0x07300403, 0x00000044, 0x00000000, 0x00000603]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000001, 0x28100000]),
    ],
};

/// Core 2 Extreme X6800 (Conroe, 06_0FH), GenuineIntel00006F6_Conroe_CPUID.txt. Leaf 0xA
/// 07280202/0/0/0: version 2 with 2 GP x 40 bits, and EDX reports no fixed counters (the quirk of
/// rule 3; later Core 2 steppings report EDX 503H, 3 fixed x 40, e.g. GenuineIntel0010676_Penryn).
pub(crate) const CONROE_X6800: Cpu = Cpu {
    name: "Core 2 Extreme X6800 (Conroe)",
    leaves: &[
        basic(0xA, INTEL),
        (0x1, 0, [0x000006F6, 0x00020800, 0x0000E3BD, 0xBFEBFBFF]),
        (0xA, 0, [0x07280202, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000001, 0x20100000]),
    ],
};

/// Celeron 215 (Yonah core, 06_0EH), GenuineIntel00006E8_PM_Yonah_CPUID.txt. Leaf 0xA 07280201:
/// architectural perfmon version 1.
pub(crate) const YONAH_CELERON_215: Cpu = Cpu {
    name: "Celeron 215 (Yonah)",
    leaves: &[
        basic(0xA, INTEL),
        (0x1, 0, [0x000006E8, 0x00010800, 0x0000C109, 0xAFE9FBFF]),
        (0xA, 0, [0x07280201, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000000, 0x00100000]),
    ],
};

/// Pentium M 730 (Dothan, 06_0DH), GenuineIntel00006D8_PM_Dothan_CPUID.txt: maximum basic leaf 2,
/// so no leaf 0xA at all.
pub(crate) const DOTHAN_PENTIUM_M_730: Cpu = Cpu {
    name: "Pentium M 730 (Dothan)",
    leaves: &[
        basic(0x2, INTEL),
        (0x1, 0, [0x000006D8, 0x00000816, 0x00000180, 0xAFE9FBFF]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000000, 0x00100000]),
    ],
};

/// *Synthetic*: the i7-6700K with leaf 0xA all zero and no hypervisor, a machine with no PMU at all.
/// (No bare-metal Intel dump in the collection with leaf 0xA in range reports version 0.)
pub(crate) const INTEL_LEAF_A_ZERO: Cpu = Cpu {
    name: "synthetic: Skylake, leaf 0xA zero",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// Ryzen 9 3950X (Matisse, Zen 2, family 17h model 71h), AuthenticAMD0870F10_K17_Matisse_CPUID_7.txt.
/// 0x80000001 ECX 75C237FF: bit 23 PerfCtrExtCore set; maximum extended leaf 0x80000020, so no
/// 0x80000022 (no PerfMonV2). The Ryzen 5 3600X dump (..._Matisse_01_CPUID.txt) has the same leaves.
pub(crate) const ZEN2_RYZEN9_3950X: Cpu = Cpu {
    name: "Ryzen 9 3950X (Zen 2)",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00870F10, 0x00200800, 0x7ED8320B, 0x178BFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000020, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00870F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF]),
    ],
};

/// Ryzen 9 5900X (Vermeer, Zen 3, family 19h model 21h), AuthenticAMD0A20F10_K19_Vermeer2_CPUID.txt.
/// PerfCtrExtCore set; leaf 0x80000022 present but zero (no PerfMonV2).
pub(crate) const ZEN3_RYZEN9_5900X: Cpu = Cpu {
    name: "Ryzen 9 5900X (Zen 3)",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00A20F10, 0x00180800, 0x7ED8320B, 0x178BFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000023, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00A20F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF]),
        (0x8000_0022, 0, [0, 0, 0, 0]),
    ],
};

/// Ryzen 9 7950X (Raphael, Zen 4, family 19h model 61h), AuthenticAMD0A60F12_K19_Raphael_04_CPUID.txt.
/// 0x80000022 00000003/00084106/3/0: PerfMonV2 (EAX bit 0), 6 core counters (EBX[3:0]).
pub(crate) const ZEN4_RYZEN9_7950X: Cpu = Cpu {
    name: "Ryzen 9 7950X (Zen 4)",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00A60F12, 0x00200800, 0x7EF8320B, 0x178BFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000028, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00A60F12, 0x00000000, 0x75C237FF, 0x2FD3FBFF]),
        (0x8000_0022, 0, [0x00000003, 0x00084106, 0x00000003, 0x00000000]),
    ],
};

/// Xeon W-1290P (Comet Lake, 06_A5H) in the Hyper-V root partition (Windows with Hyper-V/VBS),
/// GenuineIntel00A0654_CometLake_CPUID.txt: hypervisor bit set, "Microsoft Hv", 0x40000003 EBX bit 0
/// (CreatePartitions: the root) and EDX 19FFFBF6 with bit 2 PerformanceMonitorsAvailable set; leaf
/// 0xA as on bare metal. (GenuineIntel00A0671_RocketLake_CPUID4 and ..._ICX_01v_ look alike.)
pub(crate) const HYPERV_ROOT_XEON_W1290P: Cpu = Cpu {
    name: "Xeon W-1290P, Hyper-V root with PMU",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000A0654, 0x00200800, 0xFEFAF387, 0xBFEBFBFF]),
        (0xA, 0, [0x07300404, 0x00000000, 0x00000000, 0x00000603]),
        hypervisor(0x4000000B, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FF, 0x00000002, 0x19FFFBF6]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// Xeon X7560 (Beckton, 06_2EH) under Hyper-V, GenuineIntel00206E6_Beckton_CPUID2.txt: "Microsoft
/// Hv", 0x40000003 EDX 3BB3 (bit 2 clear), leaf 0xA all zero.
pub(crate) const HYPERV_XEON_X7560: Cpu = Cpu {
    name: "Xeon X7560, Hyper-V without PMU",
    leaves: &[
        basic(0xB, INTEL),
        (0x1, 0, [0x000206E6, 0x00200800, 0x80B86381, 0xBFCBFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        hypervisor(0x40000006, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00001FFF, 0x000039FF, 0x00000012, 0x00003BB3]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000001, 0x28100800]),
    ],
};

/// EPYC 7401P (Naples, Zen 1, family 17h model 01h) in the Hyper-V root partition,
/// AuthenticAMD0800F12_K17_Zen_CPUID4.txt: 0x40000003 EDX 000FFBF2 (bit 2 clear), and Hyper-V hides
/// PerfCtrExtCore (0x80000001 ECX 004023F3, bit 23 clear). AuthenticAMD0850F00_K17_Zen_CPUID3 and
/// AuthenticAMD0700F01_K16_Kabini3 (Jaguar) show the same bit clear.
pub(crate) const HYPERV_ROOT_EPYC_7401P: Cpu = Cpu {
    name: "EPYC 7401P, Hyper-V root without PMU",
    leaves: &[
        basic(0xD, AMD),
        (0x1, 0, [0x00800F12, 0x00300800, 0xFED83203, 0x178BFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        hypervisor(0x4000000A, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FF, 0x00000002, 0x000FFBF2]),
        (0x8000_0000, 0, [0x8000001E, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00800F12, 0x40000000, 0x004023F3, 0x2FD3FBFF]),
    ],
};

/// *Synthetic*: a Hyper-V guest without PMU passthrough (the host has not run
/// `Set-VMProcessor -Perfmon`): the W-1290P's leaves with leaf 0xA zero, CreatePartitions (0x40000003
/// EBX bit 0) clear as in a child partition, and PerformanceMonitorsAvailable clear.
pub(crate) const HYPERV_GUEST_NO_PMU: Cpu = Cpu {
    name: "synthetic: Hyper-V guest without PMU",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000A0654, 0x00200800, 0xFEFAF387, 0xBFEBFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        hypervisor(0x4000000B, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FE, 0x00000002, 0x19FFFBF2]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// *Synthetic*: a Hyper-V guest given the PMU but whose leaf 0xA still reads zero: the hypervisor's
/// bit says yes, the processor says no, and the processor wins.
pub(crate) const HYPERV_GUEST_PMU_BIT_LEAF_A_ZERO: Cpu = Cpu {
    name: "synthetic: Hyper-V guest, PMU bit set, leaf 0xA zero",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000A0654, 0x00200800, 0xFEFAF387, 0xBFEBFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        hypervisor(0x4000000B, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FE, 0x00000002, 0x19FFFBF6]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// "KVMKVMKVM\0\0\0", KVM's leaf 0x40000000 signature.
const KVM: [u32; 3] = [0x4B4D564B, 0x564B4D56, 0x0000004D];

/// *Synthetic*: a KVM guest with its PMU disabled (QEMU `-cpu ...,pmu=off` zeroes leaf 0xA): the
/// i7-6700K's leaves with the hypervisor bit set and KVM's signature.
pub(crate) const KVM_GUEST_NO_PMU: Cpu = Cpu {
    name: "synthetic: KVM guest without PMU",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0xFFFAFBBF, 0xBFEBFBFF]),
        (0xA, 0, [0, 0, 0, 0]),
        hypervisor(0x40000001, KVM),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// *Synthetic*: a KVM guest on the Ryzen 9 3950X with PerfCtrExtCore hidden (rule 4's heuristic).
pub(crate) const KVM_GUEST_ZEN2_NO_PERFCTR_CORE: Cpu = Cpu {
    name: "synthetic: KVM guest on Zen 2 without PerfCtrExtCore",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00870F10, 0x00200800, 0xFED8320B, 0x178BFBFF]),
        hypervisor(0x40000001, KVM),
        (0x8000_0000, 0, [0x80000020, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00870F10, 0x20000000, 0x754237FF, 0x2FD3FBFF]),
    ],
};

/// *Synthetic*: the same KVM guest with PerfCtrExtCore exposed (KVM does when its PMU is on).
pub(crate) const KVM_GUEST_ZEN2: Cpu = Cpu {
    name: "synthetic: KVM guest on Zen 2 with PerfCtrExtCore",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00870F10, 0x00200800, 0xFED8320B, 0x178BFBFF]),
        hypervisor(0x40000001, KVM),
        (0x8000_0000, 0, [0x80000020, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00870F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF]),
    ],
};

/// Zhaoxin KaiXian KX-6000, CentaurHauls/CentaurHauls00307B2_KX6000_01_CPUID.txt: vendor
/// "CentaurHauls", although its leaf 0xA (07300402/0/0/603) looks like Intel's.
pub(crate) const ZHAOXIN_KX6000: Cpu = Cpu {
    name: "Zhaoxin KX-6000 (CentaurHauls)",
    leaves: &[
        (0, 0, [0x0000000D, 0x746E6543, 0x736C7561, 0x48727561]),
        (0x1, 0, [0x000307B2, 0x00040800, 0x7FDA63EB, 0xBFCBFBFF]),
        (0xA, 0, [0x07300402, 0x00000000, 0x00000000, 0x00000603]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// *Synthetic*: an Intel hypervisor guest reporting version 2 with no counters beyond one fixed.
pub(crate) const INTEL_ONE_FIXED_NO_GP: Cpu = Cpu {
    name: "synthetic: version 2, 0 GP, 1 fixed, under KVM",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0xFFFAFBBF, 0xBFEBFBFF]),
        (0xA, 0, [0x07300002, 0x00000000, 0x00000000, 0x00000601]),
        hypervisor(0x40000001, KVM),
    ],
};

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
};

pub(crate) const SKYLAKE_MODEL: PmuModel = PmuModel { model: 0x5E, version: 4, gp_counters: 4, ..INTEL_BASE };
pub(crate) const ALDER_LAKE_HYBRID_MODEL: PmuModel =
    PmuModel { model: 0x97, version: 5, gp_counters: 6, ..INTEL_BASE };
pub(crate) const ALDER_LAKE_P_ONLY_MODEL: PmuModel =
    PmuModel { model: 0x97, version: 5, gp_counters: 8, fixed_counters: 4, ..INTEL_BASE };
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
    PmuModel { model: 0xA5, version: 4, gp_counters: 4, ..INTEL_BASE };
pub(crate) const ZEN2_MODEL: PmuModel = PmuModel { model: 0x71, ..AMD_BASE };
pub(crate) const ZEN3_MODEL: PmuModel = PmuModel { family: 0x19, model: 0x21, ..AMD_BASE };
pub(crate) const ZEN4_MODEL: PmuModel =
    PmuModel { family: 0x19, model: 0x61, amd_perfmon_v2: true, overflow_interrupt: true, ..AMD_BASE };

/// Every processor of the table and what detection must say.
pub(crate) const TABLE: [(&Cpu, Detection); 22] = [
    (&SKYLAKE_I7_6700K, Detection::Usable(SKYLAKE_MODEL)),
    (&ALDER_LAKE_I9_12900K_P, Detection::Usable(ALDER_LAKE_HYBRID_MODEL)),
    (&ALDER_LAKE_I9_12900K_E, Detection::Usable(ALDER_LAKE_HYBRID_MODEL)),
    (&ALDER_LAKE_I9_12900K_P_ONLY, Detection::Usable(ALDER_LAKE_P_ONLY_MODEL)),
    (&LYNNFIELD_I7_860, Detection::Usable(LYNNFIELD_MODEL)),
    (&CONROE_X6800, Detection::Usable(CONROE_MODEL)),
    (&YONAH_CELERON_215, Detection::Unusable(Unusable::PerfmonVersionTooOld)),
    (&DOTHAN_PENTIUM_M_730, Detection::Unusable(Unusable::NoArchitecturalPerfmon)),
    (&INTEL_LEAF_A_ZERO, Detection::Unusable(Unusable::NoArchitecturalPerfmon)),
    (&ZEN2_RYZEN9_3950X, Detection::Usable(ZEN2_MODEL)),
    (&ZEN3_RYZEN9_5900X, Detection::Usable(ZEN3_MODEL)),
    (&ZEN4_RYZEN9_7950X, Detection::Usable(ZEN4_MODEL)),
    (&HYPERV_ROOT_XEON_W1290P, Detection::Usable(HYPERV_ROOT_XEON_W1290P_MODEL)),
    (&HYPERV_XEON_X7560, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&HYPERV_ROOT_EPYC_7401P, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&HYPERV_GUEST_NO_PMU, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&HYPERV_GUEST_PMU_BIT_LEAF_A_ZERO, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_NO_PMU, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_ZEN2_NO_PERFCTR_CORE, Detection::Unusable(Unusable::HypervisorWithoutPmu)),
    (&KVM_GUEST_ZEN2, Detection::Usable(ZEN2_MODEL)),
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
fn hybrid_alder_lake_reports_the_common_counters_on_both_core_types() {
    assert_eq!(ALDER_LAKE_I9_12900K_P.model(), ALDER_LAKE_I9_12900K_E.model());
}

#[test]
fn common_of_alder_lake_p_core_and_hybrid_is_the_hybrid_model() {
    let p_only = ALDER_LAKE_I9_12900K_P_ONLY.model();
    let hybrid = ALDER_LAKE_I9_12900K_E.model();
    assert_eq!(common(&p_only, &hybrid), ALDER_LAKE_HYBRID_MODEL);
    assert_eq!(common(&hybrid, &p_only), ALDER_LAKE_HYBRID_MODEL);
    assert_eq!(common(&p_only, &p_only), p_only);
}

#[test]
fn common_takes_minimums_and_the_union_of_unavailable_events() {
    let a = PmuModel {
        version: 5,
        gp_counters: 8,
        gp_width: 48,
        fixed_counters: 4,
        fixed_width: 48,
        unavailable: ArchEvents::BRANCHES,
        ..INTEL_BASE
    };
    let b = PmuModel {
        version: 4,
        gp_counters: 6,
        gp_width: 40,
        fixed_counters: 3,
        fixed_width: 44,
        unavailable: ArchEvents::LLC_MISSES,
        overflow_interrupt: false,
        ..INTEL_BASE
    };
    let expected = PmuModel {
        version: 4,
        gp_counters: 6,
        gp_width: 40,
        fixed_counters: 3,
        fixed_width: 44,
        unavailable: ArchEvents::BRANCHES.union(ArchEvents::LLC_MISSES),
        overflow_interrupt: false,
        ..INTEL_BASE
    };
    assert_eq!(common(&a, &b), expected);
    assert_eq!(common(&b, &a), expected);
    let zen4 = ZEN4_MODEL;
    let zen4_without_v2 = PmuModel { amd_perfmon_v2: false, overflow_interrupt: false, ..zen4 };
    assert_eq!(common(&zen4, &zen4_without_v2), zen4_without_v2);
}

#[test]
fn detections_fold_to_the_first_unusable_reason_or_the_common_model() {
    let p_only = ALDER_LAKE_I9_12900K_P_ONLY.detect();
    let hybrid = ALDER_LAKE_I9_12900K_E.detect();
    assert_eq!(p_only.and(hybrid), Detection::Usable(ALDER_LAKE_HYBRID_MODEL));
    let unusable = Detection::Unusable(Unusable::HypervisorWithoutPmu);
    assert_eq!(p_only.and(unusable), unusable);
    assert_eq!(unusable.and(p_only), unusable);
    assert_eq!(unusable.and(Detection::Unusable(Unusable::TooFewCounters)), unusable);
    // Two usable models whose intersection cannot count instructions and cycles at once.
    let only_fixed =
        Detection::Usable(PmuModel { gp_counters: 0, fixed_counters: 3, version: 2, ..INTEL_BASE });
    let only_general =
        Detection::Usable(PmuModel { gp_counters: 2, fixed_counters: 0, version: 2, ..INTEL_BASE });
    assert_eq!(only_fixed.and(only_general), Detection::Unusable(Unusable::TooFewCounters));
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
    assert_eq!(CONROE_UNDER_KVM.model(), PmuModel { fixed_counters: 0, fixed_width: 0, ..CONROE_MODEL });
}

#[test]
fn arch_events_bits_follow_cpuid_0ah_ebx() {
    assert_eq!(ArchEvents::CORE_CYCLES.bits(), 1);
    assert_eq!(ArchEvents::INSTRUCTIONS.bits(), 2);
    assert_eq!(ArchEvents::BRANCH_MISPREDICTS.bits(), 0x40);
    assert_eq!(ArchEvents::from_bits(0xFF), ArchEvents::ALL);
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
