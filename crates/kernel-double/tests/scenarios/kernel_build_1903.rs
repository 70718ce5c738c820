//! The kernel build scenario (tests/scenarios/common/kernel_builds.rs) on Windows 10 1903 (build 18362), the
//! oldest the driver supports: no ExAllocatePool2, so the driver allocates with ExAllocatePoolWithTag.

use crate::common;

use kernel_double::kernel_build::WINDOWS_10_1903;

#[test]
fn kernel_build_1903() {
    common::kernel_builds::run(WINDOWS_10_1903);
}
