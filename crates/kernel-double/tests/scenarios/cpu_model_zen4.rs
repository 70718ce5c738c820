//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on Ryzen 9 7950X (Zen 4, PerfMonV2).

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_zen4() {
    cpu_models::run(&cpuid::ZEN4, Ok(6));
}
