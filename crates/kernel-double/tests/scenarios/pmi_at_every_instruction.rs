//! A PMI before every instruction of the read worker (tests/scenarios/common/pmi_sweep.rs) on a Core i7-6700K
//! (Skylake, perfmon v4: fixed and general-purpose counters, IA32_PERF_GLOBAL_STATUS).

use crate::common;

use kernel_double::cpu::cpuid;

#[test]
fn pmi_at_every_instruction_skylake() {
    common::pmi_sweep::run(&cpuid::SKYLAKE);
}
