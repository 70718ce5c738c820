//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on Ryzen 9 5900X (Zen 3, no PerfMonV2): no
//! overflow interrupt, so the wrap is found by the driver's polling on collect.

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_zen3() {
    cpu_models::run(&cpuid::ZEN3, Ok(6));
}
