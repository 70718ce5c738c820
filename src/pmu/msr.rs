//! Model-specific registers of the performance-monitoring unit that the driver names: Intel's
//! architectural MSRs (Intel SDM Vol. 4, "Architectural MSRs") and AMD's core PMU registers (AMD APM
//! Vol. 2, "Performance Monitoring Counters"; Linux `arch/x86/include/asm/msr-index.h`).

/// IA32_PMC0, the first Intel general-purpose counter; counter i is `IA32_PMC0 + i`. A read returns
/// the full counter width; a write is sign-extended from bit 31 (a full-width write needs the
/// IA32_A_PMCi alias, available when `IA32_PERF_CAPABILITIES[13]` is set).
pub const IA32_PMC0: u32 = 0xC1;
/// IA32_PERFEVTSEL0, the event select of IA32_PMC0; counter i is `IA32_PERFEVTSEL0 + i`.
pub const IA32_PERFEVTSEL0: u32 = 0x186;
/// IA32_FIXED_CTR0 (instructions retired); fixed counter j is `IA32_FIXED_CTR0 + j` (j = 1 core
/// cycles, j = 2 reference cycles).
pub const IA32_FIXED_CTR0: u32 = 0x309;
/// IA32_FIXED_CTR_CTRL: one 4-bit field per fixed counter (OS, USR, AnyThread, PMI).
pub const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
/// IA32_PERF_GLOBAL_STATUS: overflow bits, GP i = bit i, fixed j = bit 32 + j.
pub const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
/// IA32_PERF_GLOBAL_CTRL: enable bits, GP i = bit i, fixed j = bit 32 + j.
pub const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
/// IA32_PERF_GLOBAL_OVF_CTRL (IA32_PERF_GLOBAL_STATUS_RESET from version 4): writing 1 clears the
/// matching IA32_PERF_GLOBAL_STATUS bit.
pub const IA32_PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
/// IA32_FIXED_CTR3: TOPDOWN.SLOTS, the pipeline slots IA32_PERF_METRICS divides (Intel SDM Vol. 3B,
/// "Performance Monitoring (Topdown Microarchitecture Analysis)").
pub const IA32_FIXED_CTR3: u32 = 0x30C;
/// IA32_PERF_METRICS: four 8-bit fractions (of 0xFF) of the slots fixed counter 3 counted since
/// both were last zeroed: bits 7:0 retiring, 15:8 bad speculation, 23:16 frontend bound, 31:24
/// backend bound (Linux `arch/x86/events/intel/core.c`, `icl_get_metrics_event_value`).
pub const IA32_PERF_METRICS: u32 = 0x329;
/// IA32_PERF_CAPABILITIES: read-only capabilities, present when `CPUID.01H:ECX[15]` (PDCM).
pub const IA32_PERF_CAPABILITIES: u32 = 0x345;
/// IA32_MPERF (AMD MPERF, same number): counts at a fixed frequency while in C0. Read only: the
/// operating system owns it.
pub const IA32_MPERF: u32 = 0xE7;
/// IA32_APERF (AMD APERF): counts at the actual frequency while in C0. Read only, like IA32_MPERF.
pub const IA32_APERF: u32 = 0xE8;
/// AMD legacy PerfEvtSel0 (MSRC001_0000, Linux MSR_K7_EVNTSEL0); counter i is `+ i`, i < 4.
pub const AMD_PERF_EVT_SEL0: u32 = 0xC001_0000;
/// AMD legacy PerfCtr0 (MSRC001_0004, Linux MSR_K7_PERFCTR0); counter i is `+ i`, i < 4.
pub const AMD_PERF_CTR0: u32 = 0xC001_0004;
/// AMD core PerfCtl0 with PerfCtrExtCore (MSRC001_0200, Linux MSR_F15H_PERF_CTL); counter i is
/// `+ 2 * i`.
pub const AMD_PERF_CTL_CORE0: u32 = 0xC001_0200;
/// AMD core PerfCtr0 with PerfCtrExtCore (MSRC001_0201, Linux MSR_F15H_PERF_CTR); counter i is
/// `+ 2 * i`.
pub const AMD_PERF_CTR_CORE0: u32 = 0xC001_0201;
/// AMD PerfMonV2 PerfCntrGlobalStatus (Linux MSR_AMD64_PERF_CNTR_GLOBAL_STATUS): overflow bit i
/// for counter i.
pub const AMD_PERF_CNTR_GLOBAL_STATUS: u32 = 0xC000_0300;
/// AMD PerfMonV2 PerfCntrGlobalCtl (Linux MSR_AMD64_PERF_CNTR_GLOBAL_CTL): enable bit i for counter
/// i, ANDed with each PerfCtl's EN bit.
pub const AMD_PERF_CNTR_GLOBAL_CTL: u32 = 0xC000_0301;
/// AMD PerfMonV2 PerfCntrGlobalStatusClr (Linux MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR): writing 1
/// clears the matching status bit.
pub const AMD_PERF_CNTR_GLOBAL_STATUS_CLR: u32 = 0xC000_0302;
