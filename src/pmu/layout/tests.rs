//! The register map of every processor of the detection table, and what CPUID's counter counts
//! become within it.

use super::*;
use crate::pmu::model::Detection;
use crate::pmu::model::tests::TABLE;

#[test]
fn every_general_purpose_counter_is_at_its_architectural_registers() {
    for (cpu, detection) in TABLE {
        let Detection::Usable(model) = detection else { continue };
        let layout = RegisterLayout::of(&model);
        assert!(layout.general_purpose <= model.gp_counters.min(MAX_GENERAL_PURPOSE as u8), "{}", cpu.name);
        for counter in 0..layout.general_purpose {
            let i = u32::from(counter);
            let expected = match model.vendor {
                Vendor::Intel => (0xC1 + i, 0x186 + i),
                Vendor::Amd if model.amd_core_extended || model.amd_perfmon_v2 => {
                    (0xC001_0201 + 2 * i, 0xC001_0200 + 2 * i)
                }
                Vendor::Amd => (0xC001_0004 + i, 0xC001_0000 + i),
            };
            assert_eq!(layout.general_purpose_registers(counter), expected, "{}", cpu.name);
            let rdpmc = model.vendor == Vendor::Intel || counter < 6;
            assert_eq!(layout.rdpmc(counter), rdpmc.then_some(i), "{}", cpu.name);
        }
        let global = model.vendor == Vendor::Intel || model.amd_perfmon_v2;
        assert_eq!(layout.global.is_some(), global, "{}", cpu.name);
    }
}

#[test]
fn counter_counts_are_capped_at_the_registers_the_layout_names() {
    let intel = crate::pmu::model::tests::SKYLAKE_MODEL;
    let amd = crate::pmu::model::tests::ZEN4_MODEL;
    let extended = PmuModel { amd_perfmon_v2: false, amd_core_extended: true, ..amd };
    let legacy = PmuModel { amd_core_extended: false, ..extended };
    for (model, cap) in [(intel, 8), (amd, 8), (extended, 6), (legacy, 4)] {
        assert_eq!(RegisterLayout::of(&PmuModel { gp_counters: 16, ..model }).general_purpose, cap);
        assert_eq!(RegisterLayout::of(&PmuModel { gp_counters: 2, ..model }).general_purpose, 2);
    }
}
