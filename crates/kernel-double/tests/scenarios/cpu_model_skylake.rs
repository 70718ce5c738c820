//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on Core i7-6700K (Skylake, perfmon v4).

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_skylake() {
    cpu_models::run(&cpuid::SKYLAKE, Ok(7));
}
