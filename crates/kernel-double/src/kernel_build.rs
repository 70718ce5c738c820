//! The Windows build the fake kernel presents. What ntoskrnl.exe exports depends on it: an image that
//! imports a routine the build lacks fails to load, as on Windows (the loader refuses an image with an
//! unresolved import), and MmGetSystemRoutineAddress does not find the routine there.

use std::sync::OnceLock;

/// Windows 10 version 1903, the oldest build the double presents: before it HalAllocateHardwareCounters
/// only grants the whole PMU (its Microsoft Learn page, remarks), while the double's HAL also takes a
/// resource list, so an older build would claim behaviour the double does not model.
pub const WINDOWS_10_1903: u32 = 18362;
/// Windows 10 version 2004, the first build that exports ExAllocatePool2.
pub const WINDOWS_10_2004: u32 = 19041;
/// Windows 11 version 22H2: its HAL checks a resource list against counter counts read once, on
/// processor 0 (`EmonReserveProfileResources`; see `crate::exports::hal`).
pub const WINDOWS_11_22H2: u32 = 22621;
/// Windows 11 version 24H2: the build presented unless another is chosen. Its HAL checks a resource
/// list against the calling processor's own counter table (`EmonReserveProfileResourcesEnhanced`).
pub const WINDOWS_11_24H2: u32 = 26100;

/// Exports that appeared after [`WINDOWS_10_1903`], with the first build that has them. Every other
/// export of the double exists on every build it presents.
const INTRODUCED: &[(&str, &str, u32)] = &[
    // https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-exallocatepool2,
    // Requirements: minimum supported client Windows 10, version 2004.
    ("ntoskrnl.exe", "ExAllocatePool2", WINDOWS_10_2004),
];

static BUILD: OnceLock<u32> = OnceLock::new();

/// Chooses the Windows build of this process. Call before loading the driver; a second, different
/// choice panics (the kernel is per process), and so does a build older than [`WINDOWS_10_1903`].
pub fn set(build: u32) {
    assert!(build >= WINDOWS_10_1903, "build {build} is older than the oldest the double presents");
    let chosen = *BUILD.get_or_init(|| build);
    assert_eq!(chosen, build, "the kernel build is already {chosen}");
}

/// The build in effect ([`WINDOWS_11_24H2`] unless one was chosen).
pub fn current() -> u32 {
    *BUILD.get_or_init(|| WINDOWS_11_24H2)
}

/// Whether `module!name`, an export of the double, exists on `build`.
pub fn exports(build: u32, module: &str, name: &str) -> bool {
    INTRODUCED
        .iter()
        .find(|(listed, routine, _)| listed.eq_ignore_ascii_case(module) && *routine == name)
        .is_none_or(|&(_, _, since)| build >= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exallocatepool2_exists_from_2004_and_everything_else_on_every_build() {
        assert!(!exports(WINDOWS_10_1903, "ntoskrnl.exe", "ExAllocatePool2"));
        assert!(!exports(WINDOWS_10_2004 - 1, "ntoskrnl.exe", "ExAllocatePool2"));
        assert!(exports(WINDOWS_10_2004, "ntoskrnl.exe", "ExAllocatePool2"));
        assert!(exports(WINDOWS_10_1903, "ntoskrnl.exe", "ExAllocatePoolWithTag"));
        assert!(exports(WINDOWS_10_1903, "HAL.dll", "HalAllocateHardwareCounters"));
    }
}
