//! Upgrades: installing a newer package over an installed one must replace the running driver.
//!
//! - DriverVer (`mm/dd/yyyy,w.x.y.z`, https://learn.microsoft.com/windows-hardware/drivers/install/inf-driverver-directive)
//!   is what Windows prefers packages by, dates first and versions second. scripts/linux/driver-ver.sh
//!   stamps the build time's date and the Cargo version with a build number; run at chosen times, a
//!   package built later must outrank every package built before it.
//! - The image's VERSIONINFO says the version the INF's DriverVer does.
//! - A running driver keeps the image it was started from, so Install-Pmupcw.ps1 must hash the image
//!   loaded now (not the ImagePath configured since) and the package's pmupcw.sys, and stop and start
//!   the service when they differ, saying so; and it must check test signing in the running boot. The
//!   scripts are checked statically (no PowerShell here): their code, with strings and comments
//!   blanked, gives the structure; the text gives the commands.
//!
//! Each checker is shown to fail on a mutated copy: a fixed build number, a build number counted since
//! an epoch, an INF whose build number is not the image's, and install scripts that compare nothing,
//! branch on equal hashes, do not stop the service, do not say so, hash another file or the configured
//! image, read bcdedit's text or check test signing after installing.

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
        Err(error) => return vec![error.to_string()],
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

// -------------------------------------------------------------------------------------------------
// Install-Pmupcw.ps1 restarts a service that runs another image

/// `text` with every string and comment replaced by spaces (line breaks kept), so that brackets and
/// keywords are found only in code. PowerShell: `'...'` (`''` inside), `"..."` (backtick escapes),
/// `# ...` to the end of the line, `<# ... #>`.
pub(crate) fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut code = bytes.to_vec();
    let mut at = 0;
    while at < bytes.len() {
        let end = match bytes[at] {
            b'\'' => (at + 1..bytes.len())
                .find(|&i| bytes[i] == b'\'' && bytes.get(i + 1) != Some(&b'\''))
                .map_or(bytes.len(), |i| i + 1),
            b'"' => {
                let mut i = at + 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'`' { 2 } else { 1 };
                }
                (i + 1).min(bytes.len())
            }
            b'<' if bytes.get(at + 1) == Some(&b'#') => {
                text[at..].find("#>").map_or(bytes.len(), |offset| at + offset + 2)
            }
            b'#' => text[at..].find('\n').map_or(bytes.len(), |offset| at + offset),
            _ => {
                at += 1;
                continue;
            }
        };
        for byte in &mut code[at..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        at = end;
    }
    String::from_utf8(code).expect("only ASCII was written")
}

/// The index just past the bracket that closes the one at `open` (`(` or `{`) in `code`.
pub(crate) fn closing(code: &str, open: usize) -> Option<usize> {
    let (opening, closing) = match code.as_bytes()[open] {
        b'(' => (b'(', b')'),
        _ => (b'{', b'}'),
    };
    let mut depth = 0usize;
    for (index, &byte) in code.as_bytes().iter().enumerate().skip(open) {
        if byte == opening {
            depth += 1;
        } else if byte == closing {
            depth -= 1;
            if depth == 0 {
                return Some(index + 1);
            }
        }
    }
    None
}

/// Every `if (condition) { block }` of `code`: the ranges of the condition and of the block.
pub(crate) fn if_blocks(code: &str) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let mut blocks = Vec::new();
    for (at, _) in code.match_indices("if (") {
        let open = at + "if ".len();
        let Some(condition_end) = closing(code, open) else { continue };
        let Some(brace) = code[condition_end..].find('{').map(|offset| condition_end + offset) else {
            continue;
        };
        if !code[condition_end..brace].trim().is_empty() {
            continue;
        }
        if let Some(block_end) = closing(code, brace) {
            blocks.push((open..condition_end, brace..block_end));
        }
    }
    blocks
}

/// The right-hand sides of `$name = ...` lines in `text`.
pub(crate) fn assignments<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("${name} = ");
    text.lines().filter_map(|line| line.trim_start().strip_prefix(prefix.as_str())).collect()
}

/// The variable names `text` assigns on lines matching `matches` (`$name = ...`).
fn assigned_where(text: &str, matches: impl Fn(&str) -> bool) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix('$')?.split_once(" = "))
        .filter(|(_, value)| matches(value))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The names of the hash variables: assigned from `Get-FileHash -LiteralPath $path`, where `$path` is
/// assigned from something `path_matches` accepts.
fn hashes_of(script: &str, path_matches: impl Fn(&str) -> bool) -> BTreeSet<String> {
    assigned_where(script, |value| {
        let Some(path) = value.split("Get-FileHash -LiteralPath $").nth(1) else { return false };
        let path: String = path.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        assignments(script, &path).iter().any(|assigned| path_matches(assigned))
    })
}

const SC_STOP: &str = "Invoke-Tool sc.exe @('stop'";
const SC_START: &str = "Invoke-Tool sc.exe @('start'";

/// What is wrong with how `script` (importing the helper `module`) upgrades a running service: it
/// must hash the image loaded now (Get-LoadedDriverPath) and the package's driver (Get-PackagePath
/// $PackageFiles.Driver), and where the two differ stop the service (sc.exe stop, itself or through a
/// module function), say that it restarts it, and start it after.
fn restart_problems(script: &str, module: &str) -> Vec<String> {
    let service_hashes = hashes_of(script, |path| path.contains("Get-LoadedDriverPath"));
    let package_hashes = hashes_of(script, |path| path.contains("Get-PackagePath $PackageFiles.Driver"));
    let mut problems = Vec::new();
    if service_hashes.is_empty() {
        problems.push("hashes no loaded image (Get-FileHash of a Get-LoadedDriverPath path)".into());
    }
    if package_hashes.is_empty() {
        problems.push(
            "hashes no package pmupcw.sys (Get-FileHash of Get-PackagePath $PackageFiles.Driver)".into(),
        );
    }
    let differs = |condition: &str| {
        let words: Vec<&str> = condition.split([' ', '(', ')']).filter(|word| !word.is_empty()).collect();
        words.windows(3).any(|w| {
            let (left, right) = (w[0].trim_start_matches('$'), w[2].trim_start_matches('$'));
            w[1].eq_ignore_ascii_case("-ne")
                && (service_hashes.contains(left) && package_hashes.contains(right)
                    || package_hashes.contains(left) && service_hashes.contains(right))
        })
    };
    let stopping_functions = stopping_functions(module);
    let stops = |block: &str| {
        block.contains(SC_STOP) || stopping_functions.iter().any(|f| block.contains(f.as_str()))
    };

    let code = code_only(script);
    let branches: Vec<_> =
        if_blocks(&code).into_iter().filter(|(condition, _)| differs(&script[condition.clone()])).collect();
    if branches.is_empty() {
        problems.push(
            "no branch is taken when the service's image and the package's pmupcw.sys hash differently"
                .into(),
        );
        return problems;
    }
    let Some((_, block)) = branches.iter().find(|(_, block)| stops(&script[block.clone()])) else {
        problems.push("does not stop the service where the hashes differ".into());
        return problems;
    };
    if !says_restart(&script[block.clone()]) {
        problems.push("does not say (Write-Step) that it restarts the service".into());
    }
    if !script[block.end..].contains(SC_START) {
        problems.push("does not start the service after stopping it".into());
    }
    problems
}

/// The functions of `module` whose body runs `sc.exe stop`.
fn stopping_functions(module: &str) -> Vec<String> {
    let code = code_only(module);
    let body = |name: &str| {
        let at = code.find(&format!("function {name}"))?;
        let open = at + code[at..].find('{')?;
        Some(&module[open..closing(&code, open)?])
    };
    defined_functions(module)
        .into_iter()
        .filter(|name| body(name).is_some_and(|b| b.contains(SC_STOP)))
        .collect()
}

/// Whether a Write-Step of `block` (its message may span the next lines) speaks of restarting.
fn says_restart(block: &str) -> bool {
    block
        .split("Write-Step")
        .skip(1)
        .any(|message| message.lines().take(3).any(|line| line.to_ascii_lowercase().contains("restart")))
}

pub(crate) fn install_script_and_module() -> (String, String) {
    let dir = repository().join("scripts/windows");
    (read_text(&dir.join("Install-Pmupcw.ps1")), read_text(&dir.join(TOOLS_MODULE)))
}

#[test]
fn install_restarts_a_service_that_runs_another_image() {
    let (install, module) = install_script_and_module();
    let problems = restart_problems(&install, &module);
    assert!(problems.is_empty(), "Install-Pmupcw.ps1:\n{}", listed(&problems));
}

#[track_caller]
fn assert_restart_problem(script: &str, module: &str, expected: &str) {
    assert_reported(&restart_problems(script, module), expected);
}

/// `text` with `from` replaced by `to`, which must change it.
#[track_caller]
pub(crate) fn mutated(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the script has no {from:?} to mutate");
    text.replace(from, to)
}

#[test]
fn restart_checker_reports_a_script_that_compares_no_hashes() {
    let (install, module) = install_script_and_module();
    let script = mutated(&install, "Get-FileHash", "Get-Item");
    assert_restart_problem(&script, &module, "hashes no loaded image");
    assert_restart_problem(&script, &module, "hashes no package pmupcw.sys");
}

#[test]
fn restart_checker_reports_a_branch_on_equal_hashes_only() {
    let (install, module) = install_script_and_module();
    let script = mutated(&install, "$runningHash -ne $packageHash", "$runningHash -eq $packageHash");
    let script = mutated(&script, "$installedHash -ne $packageHash", "$installedHash -eq $packageHash");
    assert_restart_problem(&script, &module, "no branch is taken when");
}

#[test]
fn restart_checker_reports_a_branch_that_does_not_stop_the_service() {
    let (install, module) = install_script_and_module();
    let script = mutated(&install, "        Stop-DriverService $ServiceName\n", "");
    assert_restart_problem(&script, &module, "does not stop the service where the hashes differ");
    // The module's function is what stops: one that does not, does not count.
    let idle_module = mutated(&module, SC_STOP, "Invoke-Tool sc.exe @('query'");
    assert_restart_problem(&install, &idle_module, "does not stop the service where the hashes differ");
}

#[test]
fn restart_checker_reports_a_silent_restart_and_no_start_after_it() {
    let (install, module) = install_script_and_module();
    let silent = mutated(&install, "): restarting it\")", ")\")");
    assert_restart_problem(&silent, &module, "does not say (Write-Step) that it restarts the service");
    let no_start = mutated(&install, SC_START, "Invoke-Tool sc.exe @('query'");
    assert_restart_problem(&no_start, &module, "does not start the service after stopping it");
}

#[test]
fn restart_checker_reports_a_hash_of_another_package_file() {
    let (install, module) = install_script_and_module();
    let script = mutated(&install, "Get-FileHash -LiteralPath $driver", "Get-FileHash -LiteralPath $inf");
    assert_restart_problem(&script, &module, "hashes no package pmupcw.sys");
}

#[test]
fn restart_checker_reports_a_decision_from_the_configured_image() {
    // The service's ImagePath names the image it starts next time, not the one it runs.
    let (install, module) = install_script_and_module();
    let script = mutated(
        &install,
        "$runningImage = Get-LoadedDriverPath $PackageFiles.Driver",
        "$runningImage = Get-ServiceImagePath $ServiceName",
    );
    assert_restart_problem(&script, &module, "hashes no loaded image");
}
