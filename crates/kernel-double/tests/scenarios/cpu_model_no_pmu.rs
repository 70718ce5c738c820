//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on Skylake with leaf 0xA zero (no PMU).

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_no_pmu() {
    cpu_models::run(&cpuid::NO_PMU, Err(cpu_models::NO_ARCHITECTURAL_PERFMON));
}
