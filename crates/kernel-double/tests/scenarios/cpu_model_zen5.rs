//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on a synthetic Zen 5 whose PerfMonV2
//! leaf (CPUID 0x80000022 EBX[3:0]) reports 8 core counters: all seven events get a counter, which
//! only a driver that takes the count from CPUID can program (6 is what earlier Zen parts have).

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_zen5() {
    cpu_models::run(&cpuid::ZEN5, Ok(8));
}
