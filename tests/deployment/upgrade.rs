//! Upgrades: a package built later must replace the one installed before it.
//!
//! - DriverVer (`mm/dd/yyyy,w.x.y.z`, https://learn.microsoft.com/windows-hardware/drivers/install/inf-driverver-directive)
//!   is what Windows prefers packages by, dates first and versions second. scripts/linux/driver-ver.sh
//!   stamps the build time's date and the Cargo version with a build number; run at chosen times, a
//!   package built later must outrank every package built before it.
//! - The image's VERSIONINFO says the version the INF's DriverVer does.
//!
//! Each checker is shown to fail on a mutated copy: a fixed build number, a build number counted since
//! an epoch, an INF whose build number is not the image's.

use std::cmp::Ordering;
use std::process::Command;

use super::*;

/// The build number of the day's last 2-second step, 86400 / 2 - 1 (scripts/linux/driver-ver.sh).
const LAST_BUILD_NUMBER: u16 = 43_199;

/// A DriverVer value. The derived order is Windows' preference: the date first, then the version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DriverVer {
    /// Year, month, day.
    date: (u16, u8, u8),
    version: [u16; 4],
}

impl DriverVer {
    /// Parses `mm/dd/yyyy,w.x.y.z`: a two-digit month and day, a four-digit year, and four numbers each
    /// "greater than or equal to zero and less than 65535" (the DriverVer directive).
    pub fn parse(value: &str) -> Result<DriverVer, String> {
        let (date, version) = value
            .split_once(',')
            .ok_or_else(|| format!("DriverVer {value:?} is not `mm/dd/yyyy,w.x.y.z`"))?;
        let date_parts: Vec<&str> = date.trim().split('/').collect();
        let digits_ok = date_parts.len() == 3
            && [2, 2, 4].iter().zip(&date_parts).all(|(length, part)| {
                part.len() == *length && part.bytes().all(|byte| byte.is_ascii_digit())
            });
        let number = |index: usize| date_parts[index].parse::<u16>().unwrap_or(0);
        if !digits_ok || !(1..=12).contains(&number(0)) || !(1..=31).contains(&number(1)) {
            return Err(format!("DriverVer date {date:?} is not mm/dd/yyyy"));
        }
        let version_text = version.trim();
        let numbers: Vec<u16> = version_text
            .split('.')
            .map(|part| part.parse::<u16>().ok().filter(|number| *number < u16::MAX))
            .collect::<Option<_>>()
            .filter(|numbers: &Vec<u16>| numbers.len() == 4)
            .ok_or_else(|| format!("DriverVer version {version_text:?} is not four numbers below 65535"))?;
        Ok(DriverVer {
            date: (number(2), number(0) as u8, number(1) as u8),
            version: [numbers[0], numbers[1], numbers[2], numbers[3]],
        })
    }
}

/// The Cargo version's major, minor and patch numbers (a pre-release or build suffix dropped).
fn cargo_numbers(cargo_version: &str) -> Vec<u16> {
    let core = cargo_version.split(['-', '+']).next().unwrap_or(cargo_version);
    core.split('.').map(|part| part.parse().unwrap_or(u16::MAX)).collect()
}

/// What is wrong with a stamped DriverVer `value` for a package of `cargo_version`: it must parse, and
/// its version must be the Cargo version followed by a build number of one day's 2-second steps.
pub fn driver_ver_problems(value: &str, cargo_version: &str) -> Vec<String> {
    let stamp = match DriverVer::parse(value) {
        Ok(stamp) => stamp,
        Err(error) => return vec![error],
    };
    let [major, minor, patch, build] = stamp.version;
    let mut problems = Vec::new();
    if cargo_numbers(cargo_version) != [major, minor, patch] {
        problems.push(format!(
            "DriverVer version {major}.{minor}.{patch}.{build} does not start with the Cargo version {cargo_version}"
        ));
    }
    if build > LAST_BUILD_NUMBER {
        problems.push(format!("DriverVer build number {build} is above {LAST_BUILD_NUMBER}, a day's last"));
    }
    problems
}

// -------------------------------------------------------------------------------------------------
// A later package outranks an earlier one

fn driver_ver_script() -> PathBuf {
    repository().join("scripts/linux/driver-ver.sh")
}

/// The DriverVer `script` (a copy of scripts/linux/driver-ver.sh) stamps for `cargo_version` at `epoch`.
fn stamp(script: &Path, cargo_version: &str, epoch: i64) -> Result<String, String> {
    let output = Command::new("bash")
        .args(["-c", r#"source "$1" && driver_ver "$2" "$3""#, "bash"])
        .arg(script)
        .args([cargo_version, &epoch.to_string()])
        .output()
        .map_err(|error| format!("cannot run bash: {error}"))?;
    if !output.status.success() {
        return Err(format!("{} failed: {}", script.display(), String::from_utf8_lossy(&output.stderr)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// 2026-11-23 00:00:00 UTC.
const DAY: i64 = 1_795_392_000;

/// Pairs of build times (seconds since 1970, UTC), earlier first, and what separates them.
const REBUILDS: &[(i64, i64, &str)] = &[
    (DAY + 36_000, DAY + 36_002, "2 s later"),
    (DAY + 36_000, DAY + 36_060, "a minute later"),
    (DAY + 86_398, DAY + 86_400, "across midnight"),
    (DAY + 86_399, DAY + 86_401, "across midnight from the day's last second"),
    (DAY + 80_000, DAY + 3 * 86_400 + 60, "days later at an earlier hour"),
];

/// What is wrong with the DriverVers `script` stamps for builds at [`REBUILDS`]' times: each must be
/// well formed, and the later of each pair must outrank the earlier.
fn rebuild_problems(script: &Path) -> Vec<String> {
    let cargo_version = env!("CARGO_PKG_VERSION");
    let mut problems = Vec::new();
    for &(earlier, later, what) in REBUILDS {
        let (old, new) = match (stamp(script, cargo_version, earlier), stamp(script, cargo_version, later)) {
            (Ok(old), Ok(new)) => (old, new),
            (Err(error), _) | (_, Err(error)) => {
                problems.push(error);
                continue;
            }
        };
        let stamp_problems: Vec<String> =
            [&old, &new].iter().flat_map(|value| driver_ver_problems(value, cargo_version)).collect();
        if !stamp_problems.is_empty() {
            problems.extend(stamp_problems);
            continue;
        }
        let order = DriverVer::parse(&new).unwrap().cmp(&DriverVer::parse(&old).unwrap());
        if order != Ordering::Greater {
            problems.push(format!("a package built {what} ({new}) does not outrank the earlier one ({old})"));
        }
    }
    problems
}

#[test]
fn a_package_built_later_outranks_every_earlier_one() {
    let problems = rebuild_problems(&driver_ver_script());
    assert!(problems.is_empty(), "scripts/linux/driver-ver.sh:\n{}", listed(&problems));
}

/// driver-ver.sh with its build number computed by `expression` instead (from the epoch in `$1`).
fn with_build_number(name: &str, expression: &str) -> PathBuf {
    let text = read_text(&driver_ver_script());
    let original = "echo $(($1 % 86400 / 2))";
    assert!(text.contains(original), "driver-ver.sh computes the build number as {original}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    fs::write(&path, text.replace(original, &format!("echo {expression}"))).unwrap();
    path
}

#[test]
fn a_fixed_build_number_does_not_outrank_a_same_day_package() {
    // What DriverVer was before it had a build number: the Cargo version and 0.
    let problems = rebuild_problems(&with_build_number("driver-ver-fixed.sh", "0"));
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("a package built 2 s later")
                && problem.contains("does not outrank")),
        "{}",
        listed(&problems)
    );
}

#[test]
fn a_build_number_counted_since_an_epoch_overflows_a_version_field() {
    // Minutes since 1970 are far beyond 65534.
    let problems = rebuild_problems(&with_build_number("driver-ver-epoch.sh", "$(($1 / 60))"));
    assert!(problems.iter().any(|problem| problem.contains("is not four numbers below 65535")), "{}", {
        listed(&problems)
    });
}

#[test]
fn driver_ver_orders_dates_before_versions() {
    let parse = |value| DriverVer::parse(value).unwrap();
    assert!(parse("11/24/2026,0.1.0.0") > parse("11/23/2026,0.1.0.43199"));
    assert!(parse("01/01/2027,0.1.0.0") > parse("12/31/2026,0.1.0.5"));
    assert!(parse("11/23/2026,0.1.0.2") > parse("11/23/2026,0.1.0.1"));
    assert_eq!(parse("11/23/2026,0.1.0.1"), parse("11/23/2026,0.1.0.1"));
    for bad in ["11/23/2026,0.1.0.65535", "13/01/2026,0.1.0.0", "11/23/26,0.1.0.0", "11/23/2026,0.1.0"] {
        assert!(DriverVer::parse(bad).is_err(), "{bad} parsed");
    }
}

// -------------------------------------------------------------------------------------------------
// The image says the INF's version

/// What is wrong between a stamped INF and the image it installs: the image's FileVersion must be the
/// INF's DriverVer version.
fn version_agreement_problems(inf_text: &str, image: &[u8]) -> Vec<String> {
    let inf = match Inf::parse(inf_text) {
        Ok(inf) => inf,
        Err(error) => return vec![error],
    };
    let value = inf.section("Version").and_then(|version| version.value("DriverVer")).unwrap_or("");
    let stamp = match DriverVer::parse(value) {
        Ok(stamp) => stamp,
        Err(error) => return vec![error],
    };
    let file_version = match driver_image_checks::version_info(image) {
        Ok(info) => info.file_version,
        Err(error) => return vec![format!("the image's version resource: {error}")],
    };
    if file_version == stamp.version {
        return Vec::new();
    }
    vec![format!(
        "the image's FileVersion {file_version:?} is not the INF's DriverVer version {:?}",
        stamp.version
    )]
}

fn package_inf_and_image() -> (String, Vec<u8>) {
    let dir = require_package(&package_dir());
    let image = fs::read(dir.join(DRIVER_FILE)).unwrap_or_else(|error| panic!("{DRIVER_FILE}: {error}"));
    (read_text(&dir.join("pmupcw.inf")), image)
}

#[test]
fn the_image_says_the_inf_driver_ver_version() {
    let (inf, image) = package_inf_and_image();
    let problems = version_agreement_problems(&inf, &image);
    assert!(problems.is_empty(), "{}", listed(&problems));
}

#[test]
fn version_checker_reports_an_inf_whose_build_number_is_not_the_image_s() {
    let (inf, image) = package_inf_and_image();
    let line = inf.lines().find(|line| line.starts_with("DriverVer")).expect("a DriverVer line");
    let build = line.rsplit('.').next().unwrap().trim().parse::<u16>().expect("a build number");
    let other = format!("{}.{}", line.rsplit_once('.').unwrap().0, (build + 1) % LAST_BUILD_NUMBER);
    let mutated = inf.replacen(line, &other, 1);
    let problems = version_agreement_problems(&mutated, &image);
    assert!(
        problems.iter().any(|problem| problem.contains("is not the INF's DriverVer version")),
        "{}",
        listed(&problems)
    );
}
