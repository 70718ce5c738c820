//! Detection over the CPUID dump table (bare metal, the Hyper-V root and guests, KVM) and over host
//! bridge values: every refusal with its status, every listed model and ID accepted.

use super::*;
use crate::imc::models::{MODELS, SKL_IDS};
use crate::pmu::model::tests::{CpuIdTable, *};
use proptest::prelude::*;

fn values(cpu: &Cpu) -> CpuIdValues {
    CpuIdValues::read(&CpuIdTable(cpu.leaves))
}

fn bridge(device: u16, mchbar: u64) -> HostBridge {
    HostBridge {
        id: (u32::from(device) << 16) | u32::from(INTEL_VENDOR_ID),
        mchbar_low: mchbar as u32,
        mchbar_high: (mchbar >> 32) as u32,
    }
}

/// Every dump of the table that detection tests read.
const DUMPS: [&Cpu; 16] = [
    &SKYLAKE_I7_6700K,
    &SKYLAKE_I5_6400T,
    &ICE_LAKE_I7_1065G7,
    &ALDER_LAKE_I9_12900K_P,
    &METEOR_LAKE_P,
    &SAPPHIRE_RAPIDS_W9_3475X,
    &ZEN4_RYZEN9_7950X,
    &HYPERV_ROOT_XEON_W1290P,
    &HYPERV_ROOT_ALDER_LAKE_P_ONLY,
    &HYPERV_GUEST_ALDER_LAKE_P_ONLY_PMU,
    &HYPERV_GUEST_NO_PMU,
    &HYPERV_XEON_X7560,
    &HYPERV_ROOT_EPYC_7401P,
    &KVM_GUEST_EMERALD_RAPIDS,
    &KVM_GUEST_EPYC_GENOA,
    &LYNNFIELD_I7_860,
];

#[test]
fn family_and_model_decode_as_raw_cpuid_does() {
    for cpu in DUMPS {
        let features =
            raw_cpuid::CpuId::with_cpuid_reader(CpuIdTable(cpu.leaves)).get_feature_info().unwrap();
        let (family, model) = values(cpu).family_model();
        assert_eq!((family, model), (u32::from(features.family_id()), features.model_id()), "{}", cpu.name);
    }
}

#[test]
fn each_dump_gets_its_answer() {
    let model = |cpu: &Cpu| check_cpu(&values(cpu)).map(|entry| entry.linux_name);
    assert_eq!(model(&SKYLAKE_I7_6700K), Ok("SKYLAKE"));
    assert_eq!(model(&SKYLAKE_I5_6400T), Ok("SKYLAKE"));
    assert_eq!(model(&ICE_LAKE_I7_1065G7), Ok("ICELAKE_L"));
    assert_eq!(model(&ALDER_LAKE_I9_12900K_P), Ok("ALDERLAKE"));
    assert_eq!(model(&METEOR_LAKE_P), Ok("METEORLAKE_L"));
    // The Hyper-V root partition (VBS, memory integrity) owns the real host bridge: counted.
    assert_eq!(model(&HYPERV_ROOT_XEON_W1290P), Ok("COMETLAKE"));
    assert_eq!(model(&HYPERV_ROOT_ALDER_LAKE_P_ONLY), Ok("ALDERLAKE"));
    // The same processors in a child partition: refused before any configuration read.
    assert_eq!(model(&HYPERV_GUEST_NO_PMU), Err(Status::UnderHypervisor));
    assert_eq!(model(&HYPERV_GUEST_ALDER_LAKE_P_ONLY_PMU), Err(Status::UnderHypervisor));
    // Servers, older parts, AMD, whatever runs them.
    assert_eq!(model(&SAPPHIRE_RAPIDS_W9_3475X), Err(Status::UnsupportedModel));
    assert_eq!(model(&LYNNFIELD_I7_860), Err(Status::UnsupportedModel));
    assert_eq!(model(&ZEN4_RYZEN9_7950X), Err(Status::UnsupportedModel));
    assert_eq!(model(&HYPERV_XEON_X7560), Err(Status::UnsupportedModel));
    assert_eq!(model(&HYPERV_ROOT_EPYC_7401P), Err(Status::UnsupportedModel));
    assert_eq!(model(&KVM_GUEST_EMERALD_RAPIDS), Err(Status::UnsupportedModel));
    assert_eq!(model(&KVM_GUEST_EPYC_GENOA), Err(Status::UnsupportedModel));
}

#[test]
fn hosts_are_told_apart() {
    assert_eq!(values(&SKYLAKE_I7_6700K).host(), Host::BareMetal);
    assert_eq!(values(&HYPERV_ROOT_XEON_W1290P).host(), Host::MicrosoftRoot);
    assert_eq!(values(&HYPERV_GUEST_NO_PMU).host(), Host::MicrosoftGuest);
    assert_eq!(values(&KVM_GUEST_EMERALD_RAPIDS).host(), Host::OtherHypervisor);
    // A listed client model under KVM: refused as under a hypervisor, not as unsupported.
    let mut kvm_skylake = values(&SKYLAKE_I7_6700K);
    kvm_skylake.leaf1_ecx |= 1 << 31;
    kvm_skylake.hypervisor = [0x4000_0001, KVM[0], KVM[1], KVM[2]];
    assert_eq!(kvm_skylake.host(), Host::OtherHypervisor);
    assert_eq!(check_cpu(&kvm_skylake).map(|m| m.model), Err(Status::UnderHypervisor));
    // CreatePartitions alone is not enough: the vendor and the "Hv#1" interface must be Microsoft's.
    let mut root = values(&HYPERV_ROOT_XEON_W1290P);
    root.interface = 0;
    assert_eq!(root.host(), Host::OtherHypervisor);
    let mut root = values(&HYPERV_ROOT_XEON_W1290P);
    root.hypervisor[1] = KVM[0];
    assert_eq!(root.host(), Host::OtherHypervisor);
    // Bit 0 of EBX is the one that decides; no other privilege bit makes a guest the root.
    let mut guest = values(&HYPERV_GUEST_NO_PMU);
    guest.privileges_high = !HV_CREATE_PARTITIONS;
    assert_eq!(guest.host(), Host::MicrosoftGuest);
    guest.privileges_high = HV_CREATE_PARTITIONS;
    assert_eq!(guest.host(), Host::MicrosoftRoot);
}

#[test]
fn hypervisor_leaves_are_not_read_on_bare_metal() {
    // A reader that answers every leaf: bare metal (ECX[31] clear) must still leave them 0.
    let everything = |_: u32, _: u32| raw_cpuid::CpuIdResult { eax: 0x4000_0010, ebx: 1, ecx: 0, edx: 0 };
    let read = CpuIdValues::read(&everything);
    assert_eq!((read.hypervisor, read.interface, read.privileges_high), ([0; 4], 0, 0));
}

#[test]
fn the_bridge_step_refuses_with_the_reason() {
    let skylake = crate::imc::models::find(0x5E).unwrap();
    let ok = check_bridge(skylake, &bridge(0x191F, 0xFED1_0001)).unwrap();
    assert_eq!((ok.mchbar, ok.page(0).unwrap().physical), (0xFED1_0000, 0xFED1_5000));
    // The high DWORD is part of the address.
    assert_eq!(check_bridge(skylake, &bridge(0x191F, 0x4_FED1_0001)).unwrap().mchbar, 0x4_FED1_0000);
    let refused = |b: HostBridge| check_bridge(skylake, &b).err();
    // Hyper-V Generation 1's emulated 440BX, QEMU's Q35, an AMD root complex, no device at all.
    assert_eq!(refused(bridge(0x7192, 0xFED1_0001)), Some(Status::NoDevice));
    assert_eq!(refused(bridge(0x29C0, 0xFED1_0001)), Some(Status::NoDevice));
    assert_eq!(
        refused(HostBridge { id: 0x1450_1022, mchbar_low: 0xFED1_0001, mchbar_high: 0 }),
        Some(Status::NoDevice)
    );
    assert_eq!(
        refused(HostBridge { id: u32::MAX, mchbar_low: u32::MAX, mchbar_high: u32::MAX }),
        Some(Status::NoDevice)
    );
    // An Alder Lake host bridge ID on a Skylake: not this model's.
    assert_eq!(refused(bridge(0x4660, 0xFED1_0001)), Some(Status::NoDevice));
    assert_eq!(refused(bridge(0x191F, 0xFED1_0000)), Some(Status::MchbarDisabled));
    assert_eq!(refused(bridge(0x191F, 0x1)), Some(Status::MchbarDisabled));
    assert_eq!(refused(bridge(0x191F, 0xFED1_0801)), Some(Status::MchbarDisabled));
    assert_eq!(refused(bridge(0x191F, (1 << 52) | 1)), Some(Status::MchbarDisabled));
}

#[test]
fn detect_reads_the_bridge_only_after_the_processor_passes() {
    let reads = core::cell::Cell::new(0);
    let read = || {
        reads.set(reads.get() + 1);
        bridge(0x191F, 0xFED1_0001)
    };
    assert_eq!(detect(&values(&HYPERV_GUEST_NO_PMU), read).err(), Some(Status::UnderHypervisor));
    assert_eq!(detect(&values(&ZEN4_RYZEN9_7950X), read).err(), Some(Status::UnsupportedModel));
    assert_eq!(reads.get(), 0);
    assert_eq!(detect(&values(&SKYLAKE_I7_6700K), read).unwrap().mchbar, 0xFED1_0000);
    assert_eq!(reads.get(), 1);
}

proptest! {
    #[test]
    fn every_listed_id_with_a_valid_mchbar_gives_every_page(page in 1u64..(1 << 40)) {
        let mchbar = page * 0x1000;
        for model in MODELS {
            for &device in model.devices {
                let found = check_bridge(model, &bridge(device, mchbar | 1)).unwrap();
                prop_assert_eq!(found.mchbar, mchbar);
                for index in 0..model.layout.controllers {
                    prop_assert!(found.page(index).is_some());
                }
            }
        }
    }

    #[test]
    fn an_unlisted_id_is_no_device(device: u16, vendor: u16) {
        for model in MODELS {
            let listed = vendor == INTEL_VENDOR_ID && model.devices.contains(&device);
            let id = (u32::from(device) << 16) | u32::from(vendor);
            let result = check_bridge(model, &HostBridge { id, mchbar_low: 0xFED1_0001, mchbar_high: 0 });
            prop_assert_eq!(result.is_ok(), listed);
            if !listed {
                prop_assert_eq!(result.err(), Some(Status::NoDevice));
            }
        }
    }

    #[test]
    fn a_misaligned_mchbar_is_refused(low in 1u32..0x1000, base in 1u32..0xFFFF) {
        let value = (u64::from(base) << 12) | u64::from(low) | 1;
        let result = check_bridge(crate::imc::models::find(0x5E).unwrap(), &bridge(SKL_IDS[0], value));
        prop_assert_eq!(result.is_ok(), low | 1 == 1);
    }
}
