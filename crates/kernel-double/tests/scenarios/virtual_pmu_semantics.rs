//! The virtual PMU's Intel architectural semantics, through real faulting rdmsr/wrmsr executed as
//! Windows x64 code (as in cr8_emulation.rs), on the Skylake model (4 GP and 3 fixed counters, 48 bits):
//! legacy IA32_PMCx writes sign-extended from bit 31 and IA32_A_PMCx full-width writes; a counter
//! counts only with its enable bit, a privilege level and its IA32_PERF_GLOBAL_CTRL bit; a wrap sets
//! IA32_PERF_GLOBAL_STATUS, which is read-only (a write is a violation) and cleared through
//! IA32_PERF_GLOBAL_OVF_CTRL; a counter the model lacks and its global bits do not exist (#GP);
//! IA32_FIXED_CTR_CTRL fields; and a write without owning the PMU stays a violation. On Alder Lake:
//! fixed counter 3 and IA32_PERF_METRICS (fractions summing to 0xFF, left by zeroing fixed counter 3
//! alone, and fixed counter 3 counting the reader's own instructions while it counts).

use crate::common;

use common::machine_code;
use kernel_double::cpu::{self, cpuid, pmu};
use kernel_double::violations;

const IA32_PMC0: u64 = 0xC1;
const IA32_A_PMC0: u64 = 0x4C1;
const IA32_PERFEVTSEL0: u64 = 0x186;
const IA32_FIXED_CTR1: u64 = 0x30A;
const IA32_FIXED_CTR_CTRL: u64 = 0x38D;
const IA32_PERF_GLOBAL_STATUS: u64 = 0x38E;
const IA32_PERF_GLOBAL_CTRL: u64 = 0x38F;
const IA32_PERF_GLOBAL_OVF_CTRL: u64 = 0x390;
/// Instructions retired (C0H), USR | OS | INT | EN.
const INSTRUCTIONS_EVTSEL: u64 = 0xC0 | 1 << 16 | 1 << 17 | 1 << 20 | 1 << 22;

#[test]
fn intel_architectural_semantics() {
    cpuid::set_model(&cpuid::SKYLAKE);
    let _kpcr = cpu::enter(0);
    let (rdmsr, wrmsr) = (machine_code::rdmsr(), machine_code::wrmsr());
    let handle = common::own_whole_pmu();

    // Legacy writes sign-extend from bit 31 to the 48-bit width; the full-width alias does not.
    wrmsr(IA32_PMC0, 0x8000_0000);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0xFFFF_8000_0000);
    wrmsr(IA32_PMC0, 0x1_7FFF_FFFF);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0x7FFF_FFFF);
    wrmsr(IA32_A_PMC0, 0xFFFF_1234_5678_9ABC);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0x1234_5678_9ABC, "masked to 48 bits");
    wrmsr(IA32_A_PMC0, 0);

    // IA32_PERF_GLOBAL_CTRL comes up with every general-purpose enable set and the fixed ones clear.
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_CTRL, 0), 0xF, "power-on value");
    wrmsr(IA32_PERF_GLOBAL_CTRL, 0);
    // Counting needs EN, a privilege level and the global enable.
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL);
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_PMC0, 0), 0, "counted without its IA32_PERF_GLOBAL_CTRL bit");
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1);
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_PMC0, 0), 160);
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL & !(3 << 16));
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_PMC0, 0), 160, "counted with neither USR nor OS");
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL);

    // A wrap sets the status bit (no overflow handler is registered, so it stays set).
    wrmsr(IA32_A_PMC0, (1 << 48) - 5);
    pmu::step(0, 1);
    assert_eq!(rdmsr(IA32_PMC0, 0), 11);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS, 0), 1);
    assert_eq!(pmu::delivered(), 0);
    // Its INT bit asked for an interrupt that no handler receives.
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("no overflow handler"), "{}", found[0]);
    wrmsr(IA32_PERF_GLOBAL_STATUS, 0);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("read-only global status"), "{}", found[0]);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS, 0), 1, "a refused write changed the status");
    wrmsr(IA32_PERF_GLOBAL_OVF_CTRL, 1);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS, 0), 0, "OVF_CTRL clears the status bit");
    // Four counters per logical processor: IA32_PMC4 does not exist, nor do its global bits.
    wrmsr(IA32_PERF_GLOBAL_OVF_CTRL, 1 << 4);
    wrmsr(IA32_PMC0 + 4, 0);
    let found = violations::take();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].message.contains("counters this processor lacks"), "{}", found[0]);
    assert!(found[1].message.contains("does not exist"), "{}", found[1]);

    // Fixed counter 1 (core cycles): its 4-bit field (OS = bit 0) and global bit 33.
    wrmsr(IA32_FIXED_CTR_CTRL, 0b0001 << 4);
    pmu::step(0, 3);
    assert_eq!(rdmsr(IA32_FIXED_CTR1, 0), 0, "counted without global bit 33");
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1 | 1 << 33);
    pmu::step(0, 3);
    assert_eq!(rdmsr(IA32_FIXED_CTR1, 0), 60);
    assert_eq!(pmu::counted(0, pmu::CORE_CYCLES), 60);
    // Other processors have their own PMU.
    cpu::current().set_processor(1);
    assert_eq!(rdmsr(IA32_FIXED_CTR1, 0), 0);
    cpu::current().set_processor(0);

    // Given back with general-purpose enables 1-3 clear: the HAL's view of a foreign modification.
    common::free_pmu(handle);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("processor 0") && found[0].message.contains("bits 0xe cleared"),
        "{}",
        found[0]
    );
    wrmsr(IA32_PERF_GLOBAL_CTRL, 0);
    let found = violations::take();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("without owning the PMU"), "{}", found[0]);
}

const IA32_FIXED_CTR3: u64 = 0x30C;
const IA32_PERF_METRICS: u64 = 0x329;

#[test]
fn intel_perf_metrics_semantics() {
    cpuid::set_model(&cpuid::ALDER_LAKE_P);
    let _kpcr = cpu::enter(0);
    let (rdmsr, wrmsr) = (machine_code::rdmsr(), machine_code::wrmsr());
    let handle = common::own_whole_pmu();
    let reader = pmu::RATES[pmu::TOPDOWN_SLOTS] * pmu::READER_SLOTS_UNITS;

    // Fixed counter 3 (OS and USR) with its global bit 35 and EN_PERF_METRICS (bit 48).
    wrmsr(IA32_FIXED_CTR_CTRL, 0b0011 << 12);
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1 << 35 | 1 << 48);
    pmu::step(0, 10);
    // Each rdmsr counts its own slots before it reads.
    assert_eq!(rdmsr(IA32_FIXED_CTR3, 0), 1_200 + reader);
    // 54, 11, 24, 31 of each 120 slots: 114.75, 23.375, 51, 65.875 of 0xFF, rounded down (253) and
    // the two steps left to the largest remainders: 0x73, 0x17, 0x33, 0x42, summing to 0xFF.
    let metrics = rdmsr(IA32_PERF_METRICS, 0);
    assert_eq!(metrics, 0x42_33_17_73);
    // Stopped by its global bit: the write itself still counts, nothing after it.
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1 << 48);
    let stopped = 1_200 + 3 * reader;
    assert_eq!(rdmsr(IA32_FIXED_CTR3, 0), stopped);
    pmu::step(0, 10);
    assert_eq!(rdmsr(IA32_FIXED_CTR3, 0), stopped);
    assert_eq!(pmu::counted(0, pmu::TOPDOWN_SLOTS), stopped);
    assert_eq!(pmu::topdown_counted(0).iter().sum::<u64>(), stopped);
    // Zeroing fixed counter 3 alone leaves the fractions of the slots it no longer holds.
    wrmsr(IA32_FIXED_CTR3, 0);
    assert_eq!(rdmsr(IA32_PERF_METRICS, 0), metrics);
    wrmsr(IA32_PERF_METRICS, 0);
    assert_eq!(rdmsr(IA32_PERF_METRICS, 0), 0);

    // A mix that changes: the fractions are of the slots since the register was zeroed.
    wrmsr(IA32_PERF_GLOBAL_CTRL, 1 << 35 | 1 << 48);
    pmu::set_topdown_mix([120, 0, 0, 0]);
    pmu::step(0, 1);
    pmu::set_topdown_mix([0, 0, 0, 120]);
    pmu::step(0, 2);
    pmu::set_topdown_mix(pmu::TOPDOWN_RATES);
    wrmsr(IA32_PERF_GLOBAL_CTRL, 0);
    // 120 retiring, 240 backend bound, and the write's own 120 in the default mix: 480 slots.
    // Exactly 0xFF x (174, 11, 24, 271) / 480 = 92.4375, 5.84375, 12.75, 143.96875: 0x5C, 0x06,
    // 0x0D, 0x90 once the three steps left go to the largest remainders.
    assert_eq!(rdmsr(IA32_FIXED_CTR3, 0), 480);
    assert_eq!(rdmsr(IA32_PERF_METRICS, 0), 0x90_0D_06_5C);

    wrmsr(IA32_FIXED_CTR3, 0);
    wrmsr(IA32_PERF_METRICS, 0);
    wrmsr(IA32_FIXED_CTR_CTRL, 0);
    wrmsr(IA32_PERF_GLOBAL_CTRL, 0xFF);
    common::free_pmu(handle);
    let found = violations::take();
    assert!(found.is_empty(), "{found:?}");
}
