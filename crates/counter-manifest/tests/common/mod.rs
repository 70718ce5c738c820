//! What several test files share.

use counter_manifest::VersionInfo;

/// The VERSIONINFO the tests give tests/golden/small.man's driver, `small.sys`.
pub fn small_version_info(version: &str) -> VersionInfo {
    VersionInfo {
        version: version.to_owned(),
        company: "small developers".to_owned(),
        description: "small test driver".to_owned(),
        product: "small".to_owned(),
        copyright: "MIT OR Apache-2.0".to_owned(),
    }
}
