//! The cloud virtual machines' entries are the real dumps in `cloud/`: every leaf an entry keeps is
//! what processor 0 of its dump reported, and every processor of the dump reports the same PMU leaves
//! (so processor 0 stands for all of them).

use cpuid_dumps::{Cpu, KVM_GUEST_EMERALD_RAPIDS, KVM_GUEST_EPYC_GENOA};
use serde_json::Value;

/// The leaves detection reads that must agree on every processor (leaf 1 differs in the APIC id).
const PMU_LEAVES: [&str; 5] = ["0x6.0", "0xa.0", "0x80000000.0", "0x80000001.0", "0x40000000.0"];

fn registers(value: &Value) -> [u32; 4] {
    let array = value.as_array().expect("a leaf is [eax, ebx, ecx, edx]");
    std::array::from_fn(|i| {
        let text = array[i].as_str().expect("a register is a hex string");
        u32::from_str_radix(text.trim_start_matches("0x"), 16).expect("hex")
    })
}

fn check(cpu: &Cpu, file: &str) {
    let path = format!("{}/cloud/{file}", env!("CARGO_MANIFEST_DIR"));
    let dump: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).expect("JSON");
    let cpus = dump["cpus"].as_object().expect("cpus");
    let first = &cpus["0"]["cpuid"];
    for &(leaf, subleaf, kept) in cpu.leaves {
        let key = format!("{leaf:#x}.{subleaf}");
        assert_eq!(kept, registers(&first[&key]), "{}: leaf {key}", cpu.name);
    }
    for (number, processor) in cpus {
        for key in PMU_LEAVES {
            assert_eq!(
                registers(&processor["cpuid"][key]),
                registers(&first[key]),
                "{file}: processor {number}, {key}"
            );
        }
    }
}

#[test]
fn the_cloud_entries_are_their_dumps() {
    check(&KVM_GUEST_EMERALD_RAPIDS, "kvm-guest-xeon-emerald-rapids-no-vpmu.json");
    check(&KVM_GUEST_EPYC_GENOA, "kvm-guest-epyc-genoa-no-vpmu.json");
}
