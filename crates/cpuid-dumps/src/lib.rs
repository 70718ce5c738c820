//! CPUID register values of real and synthetic processors, leaf by leaf: the one table that the driver's
//! PMU detection tests (`src/pmu/model/tests.rs`, which says what each must be detected as) and the
//! kernel double's CPU models (`crates/kernel-double/src/cpu/cpuid.rs`) both read.
//!
//! Unless marked *synthetic*, every value is copied from an AIDA64 CPUID dump in the InstLatx64
//! collection (github.com/InstLatx64/InstLatx64, snapshot 087af2c), file named in each entry, logical
//! processor #0 unless said otherwise; the two cloud virtual machines (`KVM_GUEST_EMERALD_RAPIDS`,
//! `KVM_GUEST_EPYC_GENOA`) come from the dumps in `cloud/` (its README says where they were taken), which
//! a test compares them with. Only the leaves PMU detection can read are kept; any other leaf
//! reads as zeros, as leaves beyond the maximum roughly do (raw-cpuid never reads past the maximum
//! basic or extended leaf).

/// One CPUID leaf: (EAX input, ECX input, [EAX, EBX, ECX, EDX] output).
pub type Leaf = (u32, u32, [u32; 4]);

/// A processor as its CPUID leaves describe it.
#[derive(Debug)]
pub struct Cpu {
    pub name: &'static str,
    pub leaves: &'static [Leaf],
}

/// Leaf (`leaf`, `subleaf`) of `leaves` as [EAX, EBX, ECX, EDX]; zeros for a leaf the table lacks.
pub fn lookup(leaves: &[Leaf], leaf: u32, subleaf: u32) -> [u32; 4] {
    leaves.iter().find(|(l, s, _)| (*l, *s) == (leaf, subleaf)).map_or([0; 4], |(_, _, regs)| *regs)
}

// Vendor strings (leaf 0 EBX, EDX, ECX) and hypervisor signatures (leaf 0x40000000 EBX, ECX, EDX).
pub const INTEL: [u32; 3] = [0x756E6547, 0x6C65746E, 0x49656E69]; // "GenuineIntel": EBX, ECX, EDX
pub const AMD: [u32; 3] = [0x68747541, 0x444D4163, 0x69746E65]; // "AuthenticAMD": EBX, ECX, EDX
pub const MICROSOFT_HV: [u32; 3] = [0x7263694D, 0x666F736F, 0x76482074]; // "Microsoft Hv"
pub const HV_INTERFACE: [u32; 4] = [0x31237648, 0, 0, 0]; // "Hv#1"

/// Leaf 0: the maximum basic leaf and the vendor string.
pub const fn basic(max: u32, vendor: [u32; 3]) -> Leaf {
    (0, 0, [max, vendor[0], vendor[1], vendor[2]])
}

/// Leaf 0x40000000: the maximum hypervisor leaf and its signature.
pub const fn hypervisor(max: u32, vendor: [u32; 3]) -> Leaf {
    (0x4000_0000, 0, [max, vendor[0], vendor[1], vendor[2]])
}

/// Core i7-6700K (Skylake-S, 06_5EH), GenuineIntel00506E3_SkyLake_01_CPUID.txt. Leaf 0xA
/// 07300404/0/0/603: version 4, 4 GP x 48 bits, EBX vector 7, 3 fixed x 48 bits. The same values are
/// in GenuineIntel00506E3_Skylake_02_CPUID.txt (another 6700K). Leaf 6 000027F5/2/9/0: ECX\[0\],
/// IA32_APERF and IA32_MPERF.
pub const SKYLAKE_I7_6700K: Cpu = Cpu {
    name: "Core i7-6700K (Skylake)",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF]),
        (0x6, 0, [0x000027F5, 0x00000002, 0x00000009, 0x00000000]),
        (0xA, 0, [0x07300404, 0x00000000, 0x00000000, 0x00000603]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// Core i9-12900K (Alder Lake-S, 06_97H, 8 P + 8 E cores), GenuineIntel0090672_AlderLake_01_LC_BC_CPUID.txt,
/// logical processor #0, a Golden Cove P-core (leaf 0x1A EAX 40000001). All 24 logical processors of
/// this dump report the same leaf 0xA, 07300605/0/7/8603: version 5, 6 GP x 48, 3 fixed x 48: the
/// E-core's counts, not the P-core's 8 GP / 4 fixed (see ALDER_LAKE_I9_12900K_P_ONLY). Leaf 7 EDX
/// FC1CC410 has bit 15, Hybrid, on every logical processor; leaf 6 ECX\[0\] (APERF/MPERF) likewise.
pub const ALDER_LAKE_I9_12900K_P: Cpu = Cpu {
    name: "Core i9-12900K P-core, hybrid",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DFCFF5, 0x00000002, 0x00000409, 0x00000003]),
        (0x7, 0, [0x00000001, 0x239CA7EB, 0x98C027AC, 0xFC1CC410]),
        (0xA, 0, [0x07300605, 0x00000000, 0x00000007, 0x00008603]),
        (0x1A, 0, [0x40000001, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// The same dump, logical processor #16, a Gracemont E-core (leaf 0x1A EAX 20000001); leaf 6 as
/// logical processor #20 reports it (its EDX, the thermal-feedback row, differs from core to core).
pub const ALDER_LAKE_I9_12900K_E: Cpu = Cpu {
    name: "Core i9-12900K E-core, hybrid",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x40800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DFCFF5, 0x00000002, 0x00000409, 0x00090003]),
        (0x7, 0, [0x00000001, 0x239CA7EB, 0x98C027AC, 0xFC1CC410]),
        (0xA, 0, [0x07300605, 0x00000000, 0x00000007, 0x00008603]),
        (0x1A, 0, [0x20000001, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Leaf 7 subleaf 1 of the Meteor Lake dump's processors, which the dump as stored here does not
/// list (leaf 7 EAX says subleaf 2 is the last): only EAX bit 8, ArchPerfmonExt, is modelled, the
/// bit by which the Intel SDM (Vol. 2A, CPUID, leaf 07H subleaf 1) enumerates leaf 0x23, which these
/// processors answer; Linux reads leaf 0x23 only under it (`X86_FEATURE_ARCH_PERFMON_EXT`,
/// arch/x86/events/intel/core.c `update_pmu_cap`) and so does the Windows HAL
/// (`EmonInitializeProfilingEnhanced`). The subleaf's other bits are left 0: nothing here reads them.
const METEOR_LAKE_LEAF_7_1: Leaf = (0x7, 1, [0x0000_0100, 0, 0, 0]);

/// Core Ultra 7 155H class (Meteor Lake, 06_AAH, Redwood Cove P-cores + Crestmont E-cores),
/// GenuineIntel00A06A4_MeteorLake_07_CPUID.txt, logical processor #0, a P-core (leaf 0x1A EAX
/// 40000002). Every logical processor reports leaf 0xA 07300805/0/7/8603 (8 GP x 48, EBX vector
/// length 7, 3 fixed x 48): the common counters. Leaf 0x23 (Architectural Performance Monitoring
/// Extended, maximum basic leaf 23H) enumerates each core type's own: subleaf 0 EAX 0000000B (bit 0:
/// subleaf 1 valid, bit 3: subleaf 3 valid), subleaf 1 EAX 000000FF / EBX 0000000F (general-purpose and
/// fixed counter bitmaps: 8 and 4, fixed counter 3 the top-down slots), subleaf 3 EAX 00000DFF
/// (architectural events, bit 7 top-down slots).
pub const METEOR_LAKE_P: Cpu = Cpu {
    name: "Meteor Lake P-core (Redwood Cove), hybrid",
    leaves: &[
        basic(0x23, INTEL),
        (0x1, 0, [0x000A06A4, 0x20800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DF8FF7, 0x00000002, 0x00000409, 0x00040003]),
        (0x7, 0, [0x00000002, 0x239C27EB, 0x994007AC, 0xFC18C410]),
        METEOR_LAKE_LEAF_7_1,
        (0xA, 0, [0x07300805, 0x00000000, 0x00000007, 0x00008603]),
        (0x1A, 0, [0x40000002, 0, 0, 0]),
        (0x23, 0, [0x0000000B, 0x00000000, 0x00000000, 0x00000000]),
        (0x23, 1, [0x000000FF, 0x0000000F, 0x00000000, 0x00000000]),
        (0x23, 3, [0x00000DFF, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// The same dump, logical processor #2, a Crestmont E-core (leaf 0x1A EAX 20000002): leaf 0x23
/// subleaf 1 EAX 000000FF / EBX 00000007 (8 general-purpose and 3 fixed counters), subleaf 3 EAX
/// 0000007F (the seven events of leaf 0xA, no top-down slots).
pub const METEOR_LAKE_E: Cpu = Cpu {
    name: "Meteor Lake E-core (Crestmont), hybrid",
    leaves: &[
        basic(0x23, INTEL),
        (0x1, 0, [0x000A06A4, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DF8FF7, 0x00000002, 0x00000409, 0x00080003]),
        (0x7, 0, [0x00000002, 0x239C27EB, 0x994007AC, 0xFC18C410]),
        METEOR_LAKE_LEAF_7_1,
        (0xA, 0, [0x07300805, 0x00000000, 0x00000007, 0x00008603]),
        (0x1A, 0, [0x20000002, 0, 0, 0]),
        (0x23, 0, [0x0000000B, 0x00000000, 0x00000006, 0x00000000]),
        (0x23, 1, [0x000000FF, 0x00000007, 0x00000000, 0x00000000]),
        (0x23, 3, [0x0000007F, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// The same i9-12900K with its E-cores disabled ("OctalCore"),
/// GenuineIntel0090672_AlderLake_01_BC_AVX512_CPUID.txt: leaf 0xA 08300805/0/F/8604, the P-core's own
/// 8 GP x 48 and 4 fixed x 48 (fixed 3: topdown slots; EBX vector length 8, bit 7 clear). Leaf 6
/// 00DFCFF7/2/409/3 of logical processor #0: ECX\[0\], IA32_APERF and IA32_MPERF.
pub const ALDER_LAKE_I9_12900K_P_ONLY: Cpu = Cpu {
    name: "Core i9-12900K, E-cores disabled",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DFCFF7, 0x00000002, 0x00000409, 0x00000003]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Core i5-6400T (Skylake-S, 06_5EH, 4 cores without Hyper-Threading), GenuineIntel00506E3_Skylake_CPUID.txt.
/// Leaf 0xA 07300804/0/0/603: the i7-6700K's core and leaf 0xA but 8 GP counters, because no second
/// logical processor shares the core (Intel SDM Vol. 3B, "Counter Coalescence": a core's eight
/// general-purpose counters are split four and four between two logical processors, and all eight
/// are visible, CPUID.0AH:EAX\[15:8\] = 8, when the core is not shared; an i7-6700K with Hyper-Threading
/// off in its firmware is such a core). GenuineIntel00506E3_Skylake_CPUID4.txt (Pentium G4400, no
/// Hyper-Threading either) reports the same leaf 0xA. Leaf 6 000007F5/2/9/0: ECX\[0\], IA32_APERF and
/// IA32_MPERF.
pub const SKYLAKE_I5_6400T: Cpu = Cpu {
    name: "Core i5-6400T (Skylake, no Hyper-Threading)",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0x7FFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x000007F5, 0x00000002, 0x00000009, 0x00000000]),
        (0x7, 0, [0x00000000, 0x029C67AF, 0x00000000, 0x00000000]),
        (0xA, 0, [0x07300804, 0x00000000, 0x00000000, 0x00000603]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Core i7-1065G7 (Ice Lake-U, Sunny Cove, 06_7EH), GenuineIntel00706E5_IceLakeY_CPUID.txt. Leaf 0xA
/// 08300805/0/F/8604: version 5, 8 GP x 48 (per logical processor, with Hyper-Threading on), EBX
/// vector length 8 with bit 7 (top-down slots) clear, 4 fixed x 48. Leaf 7 EDX BC000410: bit 15
/// (Hybrid) clear. Leaf 6 0007AFF5/2/9/0: ECX\[0\], IA32_APERF and IA32_MPERF. The Tiger Lake
/// (GenuineIntel00806C1_TigerLake_01_CPUID.txt) and Rocket Lake (GenuineIntel00A0671_RocketLake_01_CPUID.txt)
/// dumps report the same leaf 0xA.
pub const ICE_LAKE_I7_1065G7: Cpu = Cpu {
    name: "Core i7-1065G7 (Ice Lake client)",
    leaves: &[
        basic(0x1B, INTEL),
        (0x1, 0, [0x000706E5, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF]),
        (0x6, 0, [0x0007AFF5, 0x00000002, 0x00000009, 0x00000000]),
        (0x7, 0, [0x00000000, 0xF2BF27EF, 0x40405F4E, 0xBC000410]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Core i5-1135G7 (Tiger Lake-UP3, Willow Cove, 06_8CH), GenuineIntel00806C1_TigerLake_01_CPUID.txt
/// (InstLatx64, taken on an Intel NUC11TN). Leaf 0xA 08300805/0/F/8604 as on Ice Lake: version 5,
/// 8 GP x 48, 4 fixed x 48. Leaf 7 EDX FC100510: bit 15 (Hybrid) clear. Leaf 6 0017EFF7/2/9/0:
/// ECX\[0\], IA32_APERF and IA32_MPERF.
pub const TIGER_LAKE_I5_1135G7: Cpu = Cpu {
    name: "Core i5-1135G7 (Tiger Lake-U)",
    leaves: &[
        basic(0x1B, INTEL),
        (0x1, 0, [0x000806C1, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF]),
        (0x6, 0, [0x0017EFF7, 0x00000002, 0x00000009, 0x00000000]),
        (0x7, 0, [0x00000000, 0xF3BFA7EB, 0x18C05FCE, 0xFC100510]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Xeon w9-3475X (Sapphire Rapids, Golden Cove server cores, 06_8FH), brand string from leaves
/// 0x80000002-4, GenuineIntel00806F8_SapphireRapids_06_CPUID.txt. Leaf 0xA 08300805/0/F/8604 as on
/// Ice Lake: 8 GP x 48, 4 fixed x 48 with top-down slots. Leaf 7 EDX FFDD4430: bit 15 (Hybrid) clear.
/// Leaf 6 0045CEF7/2/9/0: ECX\[0\], IA32_APERF and IA32_MPERF. The w7-2475X dump
/// (GenuineIntel00806F8_SapphireRapids_05_CPUID.txt) has the same leaves.
pub const SAPPHIRE_RAPIDS_W9_3475X: Cpu = Cpu {
    name: "Xeon w9-3475X (Sapphire Rapids)",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x000806F8, 0x00800800, 0x7FFEFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x0045CEF7, 0x00000002, 0x00000009, 0x00000000]),
        (0x7, 0, [0x00000002, 0xF3BFBFFB, 0xBB417FEE, 0xFFDD4430]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Core i7 860 (Lynnfield, 06_1EH), GenuineIntel00106E5_Lynnfield_CPUID.txt. Leaf 0xA
/// 07300403/44/0/603: version 3, and EBX 44H marks reference cycles (bit 2) and branch mispredicts
/// (bit 6) unavailable.
pub const LYNNFIELD_I7_860: Cpu = Cpu {
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
pub const CONROE_X6800: Cpu = Cpu {
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
pub const YONAH_CELERON_215: Cpu = Cpu {
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
pub const DOTHAN_PENTIUM_M_730: Cpu = Cpu {
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
pub const INTEL_LEAF_A_ZERO: Cpu = Cpu {
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
pub const ZEN2_RYZEN9_3950X: Cpu = Cpu {
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
/// PerfCtrExtCore set; leaf 0x80000022 present but zero (no PerfMonV2). Leaf 6 4/0/1/0: ECX\[0\]
/// EffFreq, MPERF and APERF.
pub const ZEN3_RYZEN9_5900X: Cpu = Cpu {
    name: "Ryzen 9 5900X (Zen 3)",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00A20F10, 0x00180800, 0x7ED8320B, 0x178BFBFF]),
        (0x6, 0, [0x00000004, 0x00000000, 0x00000001, 0x00000000]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000023, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00A20F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF]),
        (0x8000_0022, 0, [0, 0, 0, 0]),
    ],
};

/// Ryzen 9 7950X (Raphael, Zen 4, family 19h model 61h), AuthenticAMD0A60F12_K19_Raphael_04_CPUID.txt.
/// 0x80000022 00000003/00084106/3/0: PerfMonV2 (EAX bit 0), 6 core counters (EBX\[3:0\]). Leaf 6 4/0/1/0:
/// ECX\[0\] EffFreq, MPERF and APERF.
pub const ZEN4_RYZEN9_7950X: Cpu = Cpu {
    name: "Ryzen 9 7950X (Zen 4)",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00A60F12, 0x00200800, 0x7EF8320B, 0x178BFBFF]),
        (0x6, 0, [0x00000004, 0x00000000, 0x00000001, 0x00000000]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000028, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00A60F12, 0x00000000, 0x75C237FF, 0x2FD3FBFF]),
        (0x8000_0022, 0, [0x00000003, 0x00084106, 0x00000003, 0x00000000]),
    ],
};

/// Ryzen 9 9950X (Granite Ridge, Zen 5, family 1Ah model 44h), AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt,
/// logical processor #0. 0x80000022 00000007/00084106/3/0: PerfMonV2 (EAX bit 0) and **6** core
/// counters (EBX\[3:0\]), as on Zen 4. Leaf 6 4/0/1/0: ECX\[0\] EffFreq, MPERF and APERF. The Ryzen 7
/// 9700 and 9800 dumps (..._GraniteRidge_03 and _04) report the same leaf 0x80000022.
pub const ZEN5_RYZEN9_9950X: Cpu = Cpu {
    name: "Ryzen 9 9950X (Zen 5)",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00B40F40, 0x00200800, 0x7ED8320B, 0x178BFBFF]),
        (0x6, 0, [0x00000004, 0x00000000, 0x00000001, 0x00000000]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000028, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00B40F40, 0x00000000, 0x75C237FF, 0x2FD3FBFF]),
        (0x8000_0022, 0, [0x00000007, 0x00084106, 0x00000003, 0x00000000]),
    ],
};

/// *Synthetic*: [`ZEN5_RYZEN9_9950X`] with **8** core counters in 0x80000022 EBX\[3:0\], a count no
/// real part reports, so that detection shows the counter count comes from CPUID (Linux
/// `amd_core_pmu_init`: `ebx.split.num_core_pmc`), not from the family.
pub const ZEN5_SYNTHETIC_8_COUNTERS: Cpu = Cpu {
    name: "synthetic: Zen 5 (family 1Ah model 44h), PerfMonV2 with 8 core counters",
    leaves: &[
        basic(0x10, AMD),
        (0x1, 0, [0x00B40F40, 0x00200800, 0x7ED8320B, 0x178BFBFF]),
        (0x6, 0, [0x00000004, 0x00000000, 0x00000001, 0x00000000]),
        (0xA, 0, [0, 0, 0, 0]),
        (0x8000_0000, 0, [0x80000028, AMD[0], AMD[1], AMD[2]]),
        (0x8000_0001, 0, [0x00B40F40, 0x00000000, 0x75C237FF, 0x2FD3FBFF]),
        (0x8000_0022, 0, [0x00000007, 0x00084108, 0x00000003, 0x00000000]),
    ],
};

/// Xeon W-1290P (Comet Lake, 06_A5H) in the Hyper-V root partition (Windows with Hyper-V/VBS),
/// GenuineIntel00A0654_CometLake_CPUID.txt: hypervisor bit set, "Microsoft Hv", 0x40000003 EBX bit 0
/// (CreatePartitions: the root) and EDX 19FFFBF6 with bit 2 PerformanceMonitorsAvailable set; leaf
/// 0xA as on bare metal. (GenuineIntel00A0671_RocketLake_CPUID4 and ..._ICX_01v_ look alike.)
pub const HYPERV_ROOT_XEON_W1290P: Cpu = Cpu {
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

/// *Synthetic*: the i9-12900K with its E-cores disabled (ALDER_LAKE_I9_12900K_P_ONLY: 8 GP, 4 fixed with
/// top-down slots) in the Hyper-V root partition (Windows with memory integrity on): leaf 1 ECX with
/// the hypervisor bit 31 set, and the hypervisor leaves of HYPERV_ROOT_XEON_W1290P (CreatePartitions and
/// PerformanceMonitorsAvailable set). A processor that reports PERF_METRICS in IA32_PERF_CAPABILITIES
/// under a hypervisor.
pub const HYPERV_ROOT_ALDER_LAKE_P_ONLY: Cpu = Cpu {
    name: "synthetic: i9-12900K P-cores, Hyper-V root with PMU",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x00800800, 0xFFFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DFCFF7, 0x00000002, 0x00000409, 0x00000003]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        hypervisor(0x4000000B, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FF, 0x00000002, 0x19FFFBF6]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// *Synthetic*: HYPERV_ROOT_ALDER_LAKE_P_ONLY as a Hyper-V guest given the PMU (the host ran
/// `Set-VMProcessor -Perfmon pmu`): CreatePartitions (0x40000003 EBX bit 0) clear as in a child
/// partition, PerformanceMonitorsAvailable set.
pub const HYPERV_GUEST_ALDER_LAKE_P_ONLY_PMU: Cpu = Cpu {
    name: "synthetic: i9-12900K P-cores, Hyper-V guest with PMU",
    leaves: &[
        basic(0x20, INTEL),
        (0x1, 0, [0x00090672, 0x00800800, 0xFFFAFBFF, 0xBFEBFBFF]),
        (0x6, 0, [0x00DFCFF7, 0x00000002, 0x00000409, 0x00000003]),
        (0xA, 0, [0x08300805, 0x00000000, 0x0000000F, 0x00008604]),
        hypervisor(0x4000000B, MICROSOFT_HV),
        (0x4000_0001, 0, HV_INTERFACE),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FE, 0x00000002, 0x19FFFBF6]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100000]),
    ],
};

/// Xeon X7560 (Beckton, 06_2EH) under Hyper-V, GenuineIntel00206E6_Beckton_CPUID2.txt: "Microsoft
/// Hv", 0x40000003 EDX 3BB3 (bit 2 clear), leaf 0xA all zero.
pub const HYPERV_XEON_X7560: Cpu = Cpu {
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
pub const HYPERV_ROOT_EPYC_7401P: Cpu = Cpu {
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
pub const HYPERV_GUEST_NO_PMU: Cpu = Cpu {
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
pub const HYPERV_GUEST_PMU_BIT_LEAF_A_ZERO: Cpu = Cpu {
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
pub const KVM: [u32; 3] = [0x4B4D564B, 0x564B4D56, 0x0000004D];

/// A Xeon (Emerald Rapids, 06_CFH) cloud virtual machine under KVM without a virtual PMU, processor 0
/// of `cloud/kvm-guest-xeon-emerald-rapids-no-vpmu.json` (a real dump, see `cloud/README.md`): the
/// hypervisor bit (CPUID.1:ECX\[31\]) and "KVMKVMKVM", leaf 0xA all zero, leaf 6 ECX\[0\] clear (no
/// APERF/MPERF), PDCM (CPUID.1:ECX\[15\]) clear.
pub const KVM_GUEST_EMERALD_RAPIDS: Cpu = Cpu {
    name: "Xeon (Emerald Rapids), KVM cloud guest without PMU",
    leaves: &[
        (0x0, 0, [0x00000020, 0x756E6547, 0x6C65746E, 0x49656E69]),
        (0x1, 0, [0x000C06F2, 0x00100800, 0xFFFA3203, 0x1F8BFBFF]),
        (0x6, 0, [0x00000004, 0x00000000, 0x00000000, 0x00000000]),
        (0x7, 0, [0x00000002, 0xF1BF27EB, 0x1B415FDE, 0xBFD14410]),
        (0x7, 1, [0x00001C30, 0x00000000, 0x00000000, 0x00000000]),
        (0xA, 0, [0x00000000, 0x00000000, 0x00000000, 0x00000000]),
        (0x1A, 0, [0x00000000, 0x00000000, 0x00000000, 0x00000000]),
        (0x4000_0000, 0, [0x40000001, 0x4B4D564B, 0x564B4D56, 0x0000004D]),
        (0x4000_0001, 0, [0x01007EFB, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0000, 0, [0x80000008, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
};

/// An EPYC (Genoa, Zen 4, family 19h model 11h) cloud virtual machine under KVM without a virtual PMU,
/// processor 0 of `cloud/kvm-guest-epyc-genoa-no-vpmu.json` (a real dump): the hypervisor bit and
/// "KVMKVMKVM", PerfCtrExtCore (0x80000001 ECX\[23\]) clear, maximum extended leaf 0x80000021 (no
/// PerfMonV2 leaf), leaf 6 ECX\[0\] clear.
pub const KVM_GUEST_EPYC_GENOA: Cpu = Cpu {
    name: "EPYC (Genoa, Zen 4), KVM cloud guest without PMU",
    leaves: &[
        (0x0, 0, [0x0000001C, 0x68747541, 0x444D4163, 0x69746E65]),
        (0x1, 0, [0x00A10F11, 0x00020800, 0xFFFA3203, 0x178BFBFF]),
        (0x6, 0, [0x00000004, 0x00000000, 0x00000000, 0x00000000]),
        (0x7, 0, [0x00000001, 0xF1BF07AB, 0x00405FC6, 0x00000010]),
        (0x7, 1, [0x00000020, 0x00000000, 0x00000000, 0x00000000]),
        (0xA, 0, [0x00000000, 0x00000000, 0x00000000, 0x00000000]),
        (0x4000_0000, 0, [0x40000001, 0x4B4D564B, 0x564B4D56, 0x0000004D]),
        (0x4000_0001, 0, [0x01007EFB, 0x00000000, 0x00000000, 0x00000000]),
        (0x8000_0000, 0, [0x80000021, 0x68747541, 0x444D4163, 0x69746E65]),
        (0x8000_0001, 0, [0x00A10F11, 0x40000000, 0x004003F3, 0x2FD3FBFF]),
    ],
};

/// *Synthetic*: a KVM guest on the Ryzen 9 3950X with PerfCtrExtCore hidden (rule 4's heuristic).
pub const KVM_GUEST_ZEN2_NO_PERFCTR_CORE: Cpu = Cpu {
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
pub const KVM_GUEST_ZEN2: Cpu = Cpu {
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
pub const ZHAOXIN_KX6000: Cpu = Cpu {
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
pub const INTEL_ONE_FIXED_NO_GP: Cpu = Cpu {
    name: "synthetic: version 2, 0 GP, 1 fixed, under KVM",
    leaves: &[
        basic(0x16, INTEL),
        (0x1, 0, [0x000506E3, 0x00100800, 0xFFFAFBBF, 0xBFEBFBFF]),
        (0xA, 0, [0x07300002, 0x00000000, 0x00000000, 0x00000601]),
        hypervisor(0x40000001, KVM),
    ],
};
