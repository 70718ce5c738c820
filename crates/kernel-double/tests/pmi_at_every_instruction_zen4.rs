//! A PMI before every instruction of the read worker (tests/common/pmi_sweep.rs) on a Ryzen 9 7950X
//! (Zen 4: core counters, PerfMonV2's PerfCntrGlobalStatus).

mod common;

use kernel_double::cpu::cpuid;

#[test]
fn pmi_at_every_instruction_zen4() {
    common::pmi_sweep::run(&cpuid::ZEN4);
}
