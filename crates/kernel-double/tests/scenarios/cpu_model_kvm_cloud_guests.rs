//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on the two cloud virtual machines
//! whose real CPUID dumps are in crates/cpuid-dumps/cloud: KVM guests without a virtual PMU (an
//! Emerald Rapids Xeon and a Genoa EPYC). Neither has a PMU to own, so PMU State says why (3, a
//! hypervisor that does not pass the PMU through) and no MSR is ever touched.

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_kvm_emerald_rapids_without_pmu() {
    cpu_models::run(&cpuid::KVM_GUEST_EMERALD_RAPIDS, Err(cpu_models::UNSUPPORTED_HYPERVISOR));
}

#[test]
fn cpu_model_kvm_genoa_without_pmu() {
    cpu_models::run(&cpuid::KVM_GUEST_EPYC_GENOA, Err(cpu_models::UNSUPPORTED_HYPERVISOR));
}
