//! The Windows build the fake kernel presents. What ntoskrnl.exe exports depends on it: an image that
//! imports a routine the build lacks fails to load, as on Windows (the loader refuses an image with an
//! unresolved import), and MmGetSystemRoutineAddress does not find the routine there.

use std::sync::OnceLock;

/// Windows 10 version 1903, the oldest build the double presents and the oldest pmupcw supports (the
/// README's "Supported Windows versions", which a test here holds to it): before it
/// HalAllocateHardwareCounters only grants the whole PMU (its Microsoft Learn page, remarks), while the
/// double's HAL also takes a resource list, so an older build would claim behaviour the double does not
/// model.
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

    #[test]
    #[should_panic(expected = "older than the oldest the double presents")]
    fn windows_server_2019_is_not_presented() {
        set(17763);
    }

    fn repository_file(path: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    /// The README's "Supported Windows versions" table: each row's name, the builds its Build column
    /// names, and whether it says supported.
    fn readme_versions() -> (String, Vec<(String, Vec<u32>, bool)>) {
        let readme = repository_file("README.md");
        let section = readme
            .split("\n## Supported Windows versions\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("the README's Supported Windows versions section")
            .to_owned();
        let rows = section
            .lines()
            .filter(|line| line.starts_with("| ") && !line.starts_with("| Windows | Build |"))
            .map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let builds = cells[2]
                    .split(|c: char| !c.is_ascii_digit())
                    .filter_map(|number| number.parse().ok())
                    .collect();
                assert!(!cells[4].is_empty(), "a row without its reason: {line}");
                (cells[1].to_owned(), builds, cells[3] == "yes")
            })
            .collect();
        (section, rows)
    }

    /// The README names every supported client and server version from the oldest build the double
    /// presents on, and excludes exactly the older ones, Windows Server 2019 (17763) among them.
    #[test]
    fn the_readme_supports_the_builds_from_the_oldest_the_double_presents() {
        let (section, rows) = readme_versions();
        assert!(section.contains(&format!("The oldest supported build is {WINDOWS_10_1903}")), "{section}");
        for (name, builds, supported) in &rows {
            assert!(!builds.is_empty(), "{name}: no build number");
            for &build in builds {
                assert_eq!(build >= WINDOWS_10_1903, *supported, "{name}: build {build}");
            }
        }
        let oldest = rows.iter().filter(|row| row.2).flat_map(|row| row.1.iter().copied()).min();
        assert_eq!(oldest, Some(WINDOWS_10_1903));
        for version in
            ["Windows 10", "Windows 11", "Windows Server 2019", "Windows Server 2022", "Windows Server 2025"]
        {
            assert!(rows.iter().any(|row| row.0.contains(version)), "the table does not name {version}");
        }
        assert!(rows.iter().any(|(name, builds, supported)| name.contains("Windows Server 2019")
            && builds == &[17763]
            && !supported));
        assert!(section.contains("Why not 17763"), "the reason for excluding 17763");
    }

    /// The floor the README gives rests on the INF being a primitive driver, which Plug and Play
    /// handles from Windows 10 1903 on (Microsoft Learn, "Creating a new primitive driver"): no
    /// [Manufacturer] section (where a TargetOSVersion decoration could set another floor), a
    /// [DefaultInstall] decorated by architecture, and no down-level [DefaultUninstall].
    #[test]
    fn the_inf_is_the_primitive_driver_the_readme_describes() {
        let inf = repository_file("inf/pmupcw.inx");
        let sections: Vec<String> = inf
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with('['))
            .map(str::to_ascii_lowercase)
            .collect();
        assert!(!sections.iter().any(|s| s.starts_with("[manufacturer]")), "{sections:?}");
        assert!(sections.iter().any(|s| s == "[defaultinstall.nt$arch$]"), "{sections:?}");
        assert!(!sections.iter().any(|s| s == "[defaultinstall]" || s.starts_with("[defaultuninstall")));
    }
}
