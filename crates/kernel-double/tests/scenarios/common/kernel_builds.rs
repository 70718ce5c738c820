//! The scenario every kernel build runs (one test per build, each its own process): the CPU
//! model scenario on Skylake (load, own, count exactly across an overflow, unload clean) on that
//! Windows build, and every allocation made through the routine the build offers: ExAllocatePool2,
//! found with MmGetSystemRoutineAddress, from Windows 10 2004 on; ExAllocatePoolWithTag before.

use super::cpu_models;
use kernel_double::control::pool;
use kernel_double::cpu::cpuid;
use kernel_double::kernel_build::{self, WINDOWS_10_2004};

pub fn run(build: u32) {
    kernel_build::set(build);
    cpu_models::run(&cpuid::SKYLAKE, Ok(7));
    let (used, unused) = if build >= WINDOWS_10_2004 {
        ("ExAllocatePool2", "ExAllocatePoolWithTag")
    } else {
        ("ExAllocatePoolWithTag", "ExAllocatePool2")
    };
    assert!(pool::allocation_count_by(used) > 0, "nothing was allocated through {used}");
    assert_eq!(pool::allocation_count_by(unused), 0, "{unused} was called on build {build}");
    assert_eq!(pool::allocation_count(), pool::allocation_count_by(used));
}
