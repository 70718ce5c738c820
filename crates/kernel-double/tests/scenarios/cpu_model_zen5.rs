//! The CPU model scenario (tests/scenarios/common/cpu_models.rs) on the Ryzen 9 9950X (Zen 5, from its
//! CPUID dump): PerfMonV2 with 6 core counters, as on Zen 4. Instructions, core cycles and the four L2
//! and branch events take the six; reference cycles come from MPERF (the scenario checks them
//! against the virtual MPERF's count, not a core counter's).

use crate::common;

use common::cpu_models;
use kernel_double::cpu::cpuid;

#[test]
fn cpu_model_zen5() {
    cpu_models::run(&cpuid::ZEN5, Ok(6));
}
