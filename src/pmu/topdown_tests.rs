use super::*;
use std::collections::HashMap;

#[derive(Default)]
struct MsrFile(HashMap<u32, u64>);

impl Msrs for MsrFile {
    fn read(&self, msr: u32) -> u64 {
        self.0.get(&msr).copied().unwrap_or(0)
    }
    fn write(&mut self, msr: u32, value: u64) {
        self.0.insert(msr, value);
    }
}

#[test]
fn split_follows_the_metric_bytes() {
    // Retiring 0x66 (40%), bad speculation 0x19, frontend 0x33, backend 0x4D: 0xFF in all.
    let metrics = 0x4D_33_19_66;
    assert_eq!(split(255_000, metrics), [102_000, 25_000, 51_000, 77_000]);
    assert_eq!(split(0, metrics), [0; 4]);
    assert_eq!(split(1 << 47, 0xFF), [1 << 47, 0, 0, 0]);
    // Bytes above the four categories are ignored.
    assert_eq!(split(255, 0xFFFF_FFFF_0000_0000), [0; 4]);
}

#[test]
fn a_read_adds_and_zeroes_both_registers() {
    let counters = TopdownCounters::new();
    let mut msrs = MsrFile::default();
    msrs.write(msr::IA32_FIXED_CTR3, 2_550);
    msrs.write(msr::IA32_PERF_METRICS, 0x33_33_33_66);
    counters.read(&mut msrs);
    assert_eq!(msrs.read(msr::IA32_FIXED_CTR3), 0);
    assert_eq!(msrs.read(msr::IA32_PERF_METRICS), 0);
    msrs.write(msr::IA32_FIXED_CTR3, 510);
    msrs.write(msr::IA32_PERF_METRICS, 0xFF_00_00_00);
    counters.read(&mut msrs);
    let totals = counters.totals();
    assert_eq!(totals.slots, 3_060);
    assert_eq!(totals.categories, [1_020, 510, 510, 510 + 510]);
}
