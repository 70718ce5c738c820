//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on Core i9-12900K P-cores (Alder Lake, perfmon v5, 8 GP).

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_alder_lake() {
    // Seven events, and fixed counter 3 for top-down (IA32_PERF_METRICS).
    cpu_models::run(&cpuid::ALDER_LAKE_P, Ok(8));
}
