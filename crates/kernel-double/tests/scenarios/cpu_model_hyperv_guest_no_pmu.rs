//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on Hyper-V guest without PMU.

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_hyperv_guest_no_pmu() {
    cpu_models::run(&cpuid::HYPERV_GUEST_NO_PMU, Err(cpu_models::UNSUPPORTED_HYPERVISOR));
}
