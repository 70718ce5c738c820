//! The kernel build scenario (tests/scenarios/common/kernel_builds.rs) on Windows 10 2004 (build 19041), the
//! first with ExAllocatePool2, which the driver finds at run time and allocates with.

use crate::common;

use kernel_double::kernel_build::WINDOWS_10_2004;

#[test]
fn kernel_build_2004() {
    common::kernel_builds::run(WINDOWS_10_2004);
}
