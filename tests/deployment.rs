//! Deployment checks on the package that `cargo make package` (scripts/linux/package.sh) produces:
//!
//! - the stamped INF (`pmupcw.inf`, from `inf/pmupcw.inx`) has the structure of a primitive driver
//!   that installs pmupcw.sys as a kernel service started at boot and places the manifest beside it,
//!   with DriverVer stamped from the Cargo version and a build number, and names exactly its files;
//! - a package built later outranks the ones built before it (DriverVer), the image's VERSIONINFO says
//!   the INF's DriverVer version, and Install-Pmupcw.ps1 restarts a service that runs another image
//!   than the package's (tests/deployment/upgrade.rs);
//! - every package file the Windows scripts (`scripts/windows/*.ps1`) name exists in the package;
//! - the package holds the INF, the manifest, the certificate, the driver, the scripts and the PDH
//!   harness;
//! - every counter path the scripts and the documentation quote (`\Counterset(Instance)\Counter`)
//!   names a counterset and counter of `manifests/pmupcw.man`, with an instance exactly where the
//!   counterset has instances;
//! - Test-Pmupcw.ps1 installs and enables Driver Verifier through the package's own scripts.
//! - pmupcw-package.zip holds exactly the package's files, with its SHA-256 beside it
//!   (tests/deployment/download.rs);
//! - every PowerShell file parses with tree-sitter-powershell, no script reads localized text, and the
//!   install decision holds on every boot state and package signature
//!   (tests/deployment/powershell.rs, tests/deployment/boot_checks.rs).
//!
//! Then each checker is shown to fail on mutated copies (no AddService, wrong start type, unstamped
//! template, a file missing from the package, a script naming a file the package lacks, a misspelt
//! counter, a test script that installs by itself).
//!
//! The package is `$PMUPCW_PACKAGE_DIR` (default target/package/pmupcw). A missing package fails these
//! tests: they must not pass by checking nothing.
//!
//! The INF is read by crates/driver-catalog's parser (`driver_catalog::inf`), the one the catalog
//! generator uses to find the package's files: `[section]` headers (names compare
//! case-insensitively), `key = value` entries and bare lines, `;` comments outside double quotes.
//! It does not expand `%strings%`; the checks below only make sure each one is defined.

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use driver_catalog::inf::{Inf, fields, unquote};

// DriverVer ordering and the build number, the image's version against the INF's, and the install
// script's restart of a service that runs another image than the package's.
#[path = "deployment/upgrade.rs"]
mod upgrade;

// Install-Pmupcw.ps1 checks test signing in the running boot, and says to restart first.
#[path = "deployment/boot_checks.rs"]
mod boot_checks;

// The attestation-submission cabinet beside the package.
#[path = "deployment/submission.rs"]
mod submission;

// The build time is the source's, and packaging an unchanged source again changes nothing.
#[path = "deployment/reproducible.rs"]
mod reproducible;

// Microsoft's signed files put back into the package, without the test certificate.
#[path = "deployment/production.rs"]
mod production;

// pmupcw-package.zip and its checksum, the package to download.
#[path = "deployment/download.rs"]
mod download;

// Every PowerShell file parsed with a real PowerShell grammar; no script reads localized text; the
// install decision's functions evaluated from their syntax tree.
#[path = "deployment/powershell.rs"]
mod powershell;

// Test-Pmupcw.ps1's sleep check bounds the rise by elapsed time and the processor's clock.
#[path = "deployment/rise_bound.rs"]
mod rise_bound;

// Test-Pmupcw.ps1's memory bandwidth check bounds both DRAM totals by the bytes copied.
#[path = "deployment/bandwidth.rs"]
mod bandwidth;

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn package_dir() -> PathBuf {
    env::var_os("PMUPCW_PACKAGE_DIR")
        .map_or_else(|| repository().join("target/package/pmupcw"), PathBuf::from)
}

/// The package folder, or a failure that says how to make it.
#[track_caller]
fn require_package(dir: &Path) -> PathBuf {
    assert!(
        dir.join("pmupcw.inf").is_file(),
        "{} holds no pmupcw.inf: run `cargo make package` first (it builds, signs and packages the driver)",
        dir.display()
    );
    dir.to_path_buf()
}

/// File names in the package folder.
fn package_files(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("package entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[track_caller]
fn read_text(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// The scripts in the repository (`scripts/windows/*.ps1`) and the module they share (`*.psm1`), sorted
/// by name.
fn repository_scripts() -> Vec<PathBuf> {
    let dir = repository().join("scripts/windows");
    let mut scripts: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("script entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "ps1" || extension == "psm1"))
        .collect();
    scripts.sort();
    scripts
}

fn listed(problems: &[String]) -> String {
    problems.iter().map(|problem| format!("  - {problem}\n")).collect()
}

/// `check`'s problems with each of `files`, file by file; empty when there are none.
fn report_files(files: &[PathBuf], check: impl Fn(&str) -> Vec<String>) -> String {
    let mut report = String::new();
    for file in files {
        let problems = check(&read_text(file));
        if !problems.is_empty() {
            report.push_str(&format!("{}:\n{}", file.display(), listed(&problems)));
        }
    }
    report
}

/// A checker's `problems` include one naming `expected`: the checker caught the fault a mutation
/// test planted.
#[track_caller]
fn assert_reported(problems: &[String], expected: &str) {
    assert!(
        problems.iter().any(|problem| problem.contains(expected)),
        "expected a problem containing {expected:?}, got:\n{}",
        listed(problems)
    );
}

// -------------------------------------------------------------------------------------------------
// INF structure

const ARCH_DEFAULT_INSTALL: &str = "DefaultInstall.NTamd64";
const SERVICE_NAME: &str = "pmupcw";
const DRIVER_FILE: &str = "pmupcw.sys";
/// The files the INF must take from the package (SourceDisksFiles, CopyFiles), exactly.
const INF_PAYLOAD: &[&str] = &["pmupcw.man", "pmupcw.sys"];

/// Every structural problem of a stamped pmupcw INF; `package` is the package folder's file list.
fn check_inf(text: &str, cargo_version: &str, package: &BTreeSet<String>) -> Vec<String> {
    let inf = match Inf::parse(text) {
        Ok(inf) => inf,
        Err(error) => return vec![error.to_string()],
    };
    let mut problems = Vec::new();
    check_stamped(&inf, &mut problems);
    check_version(&inf, cargo_version, &mut problems);
    check_primitive_layout(&inf, &mut problems);
    let copied = check_copy_files(&inf, &mut problems);
    check_source_disks(&inf, package, &mut problems);
    check_service(&inf, &copied, &mut problems);
    check_strings_defined(&inf, &mut problems);
    problems
}

/// The files the INF must take from the package, as a set.
fn inf_payload() -> BTreeSet<String> {
    INF_PAYLOAD.iter().map(|file| (*file).to_owned()).collect()
}

/// Nothing left for stampinf.
fn check_stamped(inf: &Inf, problems: &mut Vec<String>) {
    for section in &inf.sections {
        if section.name.contains("$ARCH$") {
            problems.push(format!("[{}]: the $ARCH$ placeholder is not stamped", section.name));
        }
        for entry in &section.entries {
            let text = format!("{}{}", entry.key.as_deref().unwrap_or(""), entry.value);
            if text.contains("$ARCH$") {
                problems.push(format!("line {}: the $ARCH$ placeholder is not stamped", entry.line));
            }
        }
    }
}

/// [Version]: complete, as a primitive driver needs.
fn check_version(inf: &Inf, cargo_version: &str, problems: &mut Vec<String>) {
    match inf.section("Version") {
        None => problems.push("no [Version] section".to_owned()),
        Some(version) => {
            if !version
                .value("Signature")
                .is_some_and(|value| unquote(value).eq_ignore_ascii_case("$WINDOWS NT$"))
            {
                problems.push("[Version] Signature is not \"$WINDOWS NT$\"".to_owned());
            }
            for key in ["Provider", "Class", "ClassGuid"] {
                if version.value(key).is_none_or(str::is_empty) {
                    problems.push(format!("[Version] has no {key} (a primitive driver needs it filled in)"));
                }
            }
            match version.value("DriverVer") {
                None | Some("") => problems.push("[Version] DriverVer is missing or not stamped".to_owned()),
                Some(value) => {
                    for message in upgrade::driver_ver_problems(value, cargo_version) {
                        problems.push(format!("[Version] {message}"));
                    }
                }
            }
            if !version.value("CatalogFile").is_some_and(|value| value.eq_ignore_ascii_case("pmupcw.cat")) {
                problems.push("[Version] CatalogFile is not pmupcw.cat".to_owned());
            }
            if version.value("PnpLockdown") != Some("1") {
                problems.push("[Version] PnpLockdown is not 1".to_owned());
            }
        }
    }
}

/// Primitive driver: decorated [DefaultInstall], no [Manufacturer], no undecorated or uninstall sections.
fn check_primitive_layout(inf: &Inf, problems: &mut Vec<String>) {
    for forbidden in ["Manufacturer", "DefaultInstall", "DefaultInstall.Services", "DefaultUninstall"] {
        if inf.section(forbidden).is_some() {
            problems.push(format!("[{forbidden}] must not be present in a primitive driver INF"));
        }
    }
    if inf.sections.iter().any(|section| section.name.to_ascii_lowercase().starts_with("defaultuninstall")) {
        problems
            .push("a [DefaultUninstall...] section must not be present in a primitive driver INF".to_owned());
    }
    for name in [ARCH_DEFAULT_INSTALL.to_owned(), format!("{ARCH_DEFAULT_INSTALL}.Services")] {
        if inf.sections_named(&name).len() > 1 {
            problems.push(format!("[{name}] appears more than once"));
        }
    }
}

/// CopyFiles copies exactly the payload, to DIRID 13; returns each copied file with its DIRID.
fn check_copy_files(inf: &Inf, problems: &mut Vec<String>) -> Vec<(String, Option<String>)> {
    let destination_dirs = inf.section("DestinationDirs");
    let dirid_of = |list: &str| -> Option<String> {
        let dirs = destination_dirs?;
        dirs.value(list).or_else(|| dirs.value("DefaultDestDir")).map(|value| fields(value)[0].to_owned())
    };
    let mut copied: Vec<(String, Option<String>)> = Vec::new();
    match inf.section(ARCH_DEFAULT_INSTALL) {
        None => problems.push(format!("no [{ARCH_DEFAULT_INSTALL}] section")),
        Some(install) => {
            let lists = install.values("CopyFiles");
            if lists.is_empty() {
                problems.push(format!("[{ARCH_DEFAULT_INSTALL}] has no CopyFiles"));
            }
            for list in lists.iter().flat_map(|value| fields(value)) {
                if let Some(single) = list.strip_prefix('@') {
                    copied.push((single.to_owned(), dirid_of("DefaultDestDir")));
                    continue;
                }
                match inf.section(list) {
                    None => problems.push(format!("CopyFiles names [{list}], which does not exist")),
                    Some(files) => {
                        for entry in &files.entries {
                            let name = fields(&entry.value)[0].to_owned();
                            copied.push((entry.key.clone().unwrap_or(name), dirid_of(list)));
                        }
                    }
                }
            }
        }
    }
    for (file, dirid) in &copied {
        if dirid.as_deref() != Some("13") {
            problems.push(format!("{file} is copied to DIRID {dirid:?}, not 13 (run from the driver store)"));
        }
    }
    let copied_names: BTreeSet<String> = copied.iter().map(|(file, _)| file.to_ascii_lowercase()).collect();
    let payload = inf_payload();
    if copied_names != payload {
        problems.push(format!("CopyFiles copies {copied_names:?}, not exactly {payload:?}"));
    }
    copied
}

/// SourceDisksNames/SourceDisksFiles: exactly the payload, from declared disks, all in the package.
fn check_source_disks(inf: &Inf, package: &BTreeSet<String>, problems: &mut Vec<String>) {
    let payload = inf_payload();
    let disks: BTreeSet<String> = inf
        .section("SourceDisksNames")
        .map(|names| names.entries.iter().filter_map(|entry| entry.key.clone()).collect())
        .unwrap_or_default();
    if disks.is_empty() {
        problems.push("no [SourceDisksNames] disk".to_owned());
    }
    match inf.section("SourceDisksFiles") {
        None => problems.push("no [SourceDisksFiles] section".to_owned()),
        Some(source) => {
            let mut named = BTreeSet::new();
            for entry in &source.entries {
                let file = entry.key.clone().unwrap_or_else(|| entry.value.clone()).to_ascii_lowercase();
                let disk = fields(&entry.value)[0];
                if !disks.contains(disk) {
                    problems.push(format!(
                        "[SourceDisksFiles] {file} is on disk {disk:?}, not in [SourceDisksNames]"
                    ));
                }
                if fields(&entry.value).get(2).is_some_and(|subdir| !subdir.is_empty()) {
                    problems.push(format!("[SourceDisksFiles] {file} names a subdirectory"));
                }
                named.insert(file);
            }
            if named != payload {
                problems.push(format!("[SourceDisksFiles] names {named:?}, not exactly {payload:?}"));
            }
        }
    }
    for file in &payload {
        if !package.contains(file) {
            problems.push(format!("the INF installs {file}, which is not in the package"));
        }
    }
}

/// The service: AddService=pmupcw with a system-start kernel-driver install section (loaded at every
/// boot; inf/pmupcw.inx says why this start type).
fn check_service(inf: &Inf, copied: &[(String, Option<String>)], problems: &mut Vec<String>) {
    let services_name = format!("{ARCH_DEFAULT_INSTALL}.Services");
    let add_services =
        inf.section(&services_name).map(|services| services.values("AddService")).unwrap_or_default();
    if add_services.is_empty() {
        problems.push(format!("[{services_name}] has no AddService"));
    }
    for add_service in add_services {
        let parts = fields(add_service);
        if !parts[0].eq_ignore_ascii_case(SERVICE_NAME) {
            problems.push(format!("AddService names service {:?}, not {SERVICE_NAME}", parts[0]));
        }
        let Some(install_name) = parts.get(2).filter(|name| !name.is_empty()) else {
            problems.push(format!("AddService {add_service:?} names no service-install section"));
            continue;
        };
        let Some(install) = inf.section(install_name) else {
            problems.push(format!("AddService names [{install_name}], which does not exist"));
            continue;
        };
        for (key, expected, meaning) in [
            ("ServiceType", "1", "SERVICE_KERNEL_DRIVER"),
            ("StartType", "1", "SERVICE_SYSTEM_START"),
            ("ErrorControl", "1", "SERVICE_ERROR_NORMAL"),
        ] {
            if install.value(key) != Some(expected) {
                problems.push(format!(
                    "[{install_name}] {key} is {:?}, not {expected} ({meaning})",
                    install.value(key)
                ));
            }
        }
        let binary = install.value("ServiceBinary").unwrap_or("");
        let copied_sys = copied.iter().find(|(file, _)| file.eq_ignore_ascii_case(DRIVER_FILE));
        let expected =
            copied_sys.and_then(|(_, dirid)| dirid.as_ref()).map(|dirid| format!("%{dirid}%\\{DRIVER_FILE}"));
        if expected.as_deref().is_none_or(|expected| !binary.eq_ignore_ascii_case(expected)) {
            problems.push(format!(
                "[{install_name}] ServiceBinary {binary:?} is not where CopyFiles puts {DRIVER_FILE} ({expected:?})"
            ));
        }
    }
}

/// Every %string% is defined (DIRIDs such as %13% are numbers, not strings).
fn check_strings_defined(inf: &Inf, problems: &mut Vec<String>) {
    let strings: BTreeSet<String> = inf
        .section("Strings")
        .map(|strings| {
            strings.entries.iter().filter_map(|e| e.key.as_ref().map(|k| k.to_ascii_lowercase())).collect()
        })
        .unwrap_or_default();
    for section in &inf.sections {
        for entry in &section.entries {
            for token in entry.value.split('%').skip(1).step_by(2) {
                if !token.is_empty()
                    && !token.bytes().all(|byte| byte.is_ascii_digit())
                    && !strings.contains(&token.to_ascii_lowercase())
                {
                    problems.push(format!("line {}: %{token}% is not defined in [Strings]", entry.line));
                }
            }
        }
    }
}

fn stamped_inf() -> (String, BTreeSet<String>) {
    let dir = require_package(&package_dir());
    (read_text(&dir.join("pmupcw.inf")), package_files(&dir))
}

#[track_caller]
fn assert_inf_problem(text: &str, package: &BTreeSet<String>, expected: &str) {
    assert_reported(&check_inf(text, env!("CARGO_PKG_VERSION"), package), expected);
}

#[test]
fn stamped_inf_installs_the_driver_as_a_kernel_service_started_at_boot() {
    let (text, package) = stamped_inf();
    let problems = check_inf(&text, env!("CARGO_PKG_VERSION"), &package);
    assert!(problems.is_empty(), "pmupcw.inf:\n{}", listed(&problems));
}

#[test]
fn every_file_the_inf_names_is_in_the_package() {
    let (text, package) = stamped_inf();
    let inf = Inf::parse(&text).expect("pmupcw.inf parses");
    // SourceDisksFiles lists every file the INF takes from the package (CopyFiles must agree: see
    // check_inf); these are the files driver-catalog puts in the catalog beside the INF.
    let named: BTreeSet<String> = inf.source_disks_files().into_iter().collect();
    assert!(!named.is_empty(), "[SourceDisksFiles] is empty");
    let catalog = inf.catalog_file().unwrap_or_default();
    let catalog = catalog.as_str();
    let missing: Vec<&String> = named.iter().filter(|file| !package.contains(*file)).collect();
    assert!(missing.is_empty(), "the INF names {missing:?}, not in the package {package:?}");
    // The catalog, which pnputil requires: crates/driver-catalog makes it (inf2cat's job).
    assert_eq!(catalog, "pmupcw.cat");
    assert!(package.contains(catalog), "the INF's catalog {catalog} is not in the package {package:?}");
}

#[test]
fn inf_checker_reports_a_missing_add_service() {
    let (text, package) = stamped_inf();
    let mutated: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("AddService"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_ne!(mutated, text, "the stamped INF has an AddService line to remove");
    assert_inf_problem(&mutated, &package, "has no AddService");
}

#[test]
fn inf_checker_reports_a_wrong_service_start_type() {
    let (text, package) = stamped_inf();
    // Demand start: nothing would load the driver after a restart.
    let mutated = text.replacen("StartType     = 1", "StartType     = 3", 1);
    assert_ne!(mutated, text, "the stamped INF has a StartType line to change");
    assert_inf_problem(&mutated, &package, "StartType is Some(\"3\"), not 1");
}

#[test]
fn inf_checker_reports_an_unstamped_template() {
    let template = read_text(&repository().join("inf/pmupcw.inx"));
    let package: BTreeSet<String> = INF_PAYLOAD.iter().map(|file| (*file).to_owned()).collect();
    assert_inf_problem(&template, &package, "DriverVer is missing or not stamped");
    assert_inf_problem(&template, &package, "the $ARCH$ placeholder is not stamped");
}

#[test]
fn inf_checker_reports_a_driver_ver_that_is_not_the_cargo_version() {
    let (text, package) = stamped_inf();
    let problems = check_inf(&text, "9.8.7", &package);
    assert!(
        problems.iter().any(|problem| problem.contains("does not start with the Cargo version 9.8.7")),
        "{}",
        listed(&problems)
    );
}

#[test]
fn inf_checker_reports_a_file_missing_from_the_package_and_an_extra_source_file() {
    let (text, mut package) = stamped_inf();
    package.remove("pmupcw.man");
    assert_inf_problem(&text, &package, "installs pmupcw.man, which is not in the package");
    let (text, package) = stamped_inf();
    let mutated = text.replacen("pmupcw.man = 1,,", "pmupcw.man = 1,,\npmupcw.dll = 1,,", 1);
    assert_ne!(mutated, text);
    assert_inf_problem(&mutated, &package, "[SourceDisksFiles] names");
}

#[test]
fn inf_checker_reports_a_device_driver_layout() {
    let (text, package) = stamped_inf();
    let mutated = format!("{text}\n[Manufacturer]\n%ProviderName% = Models,NTamd64\n");
    assert_inf_problem(&mutated, &package, "[Manufacturer] must not be present");
}

// -------------------------------------------------------------------------------------------------
// Scripts

const SCRIPT_FILE_VARIABLE: &str = "$PackageFiles";
/// The helper module the scripts share (scripts/windows/PmupcwTools.psm1).
const TOOLS_MODULE: &str = "PmupcwTools.psm1";
/// Extensions of package files a script may name as `pmupcw.<extension>`.
const PACKAGE_EXTENSIONS: &[&str] = &["cat", "cer", "inf", "man", "pdb", "sys"];
/// Programs the package ships beside the scripts (package.sh cross-compiles the PDH harness).
const PACKAGE_PROGRAMS: &[&str] = &["pdh-harness.exe"];

/// The quoted values of a `$Variable = @{ Key = 'value' ... }` hashtable in a script, or None.
fn script_hashtable(text: &str, variable: &str) -> Option<Vec<String>> {
    let start = text.find(&format!("{variable} = @{{"))?;
    let body = &text[start..];
    let body = &body[body.find('{')? + 1..body.find('}')?];
    Some(
        body.lines()
            .filter_map(|line| line.split_once('='))
            .map(|(_, value)| value.trim().trim_matches(['\'', '"']).to_owned())
            .collect(),
    )
}

/// Package-file names a script mentions anywhere: `pmupcw.<extension>`, `<Name>.ps1` and `<Name>.psm1`.
fn named_in_script(text: &str) -> BTreeSet<String> {
    let is_name = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_';
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    let lower = text.to_ascii_lowercase();
    for (at, _) in lower.match_indices("pmupcw.") {
        if at > 0 && is_name(bytes[at - 1]) {
            continue;
        }
        let extension_start = at + "pmupcw.".len();
        let extension_end = (extension_start..bytes.len())
            .find(|&index| !bytes[index].is_ascii_alphanumeric())
            .unwrap_or(bytes.len());
        let extension = &lower[extension_start..extension_end];
        if PACKAGE_EXTENSIONS.contains(&extension) {
            names.insert(format!("pmupcw.{extension}"));
        }
    }
    for program in PACKAGE_PROGRAMS {
        if lower.contains(program) {
            names.insert((*program).to_owned());
        }
    }
    for suffix in [".ps1", ".psm1"] {
        for (at, _) in lower.match_indices(suffix) {
            let start = (0..at).rev().take_while(|&index| is_name(bytes[index])).last().unwrap_or(at);
            if start < at {
                names.insert(text[start..at + suffix.len()].to_owned());
            }
        }
    }
    names
}

/// Every problem with the package files a script names; `package` is the package folder's file list.
fn check_script(text: &str, package: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(declared) = script_hashtable(text, SCRIPT_FILE_VARIABLE) else {
        return vec![format!("no `{SCRIPT_FILE_VARIABLE} = @{{ ... }}` list of the package files it uses")];
    };
    if declared.is_empty() {
        problems.push(format!("{SCRIPT_FILE_VARIABLE} is empty"));
    }
    for file in &declared {
        if !package.contains(file) {
            problems.push(format!("{SCRIPT_FILE_VARIABLE} names {file}, which is not in the package"));
        }
    }
    for name in named_in_script(text) {
        if !declared.iter().any(|file| file.eq_ignore_ascii_case(&name)) {
            problems.push(format!("names {name} without declaring it in {SCRIPT_FILE_VARIABLE}"));
        }
    }
    problems
}

#[test]
fn every_file_the_scripts_name_is_in_the_package() {
    let dir = require_package(&package_dir());
    let package = package_files(&dir);
    let scripts: Vec<&String> = package.iter().filter(|file| file.ends_with(".ps1")).collect();
    assert!(!scripts.is_empty(), "no scripts in {}", dir.display());
    let mut report = String::new();
    for script in scripts {
        let problems = check_script(&read_text(&dir.join(script)), &package);
        if !problems.is_empty() {
            report.push_str(&format!("{script}:\n{}", listed(&problems)));
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn script_checker_reports_a_file_the_package_lacks_and_an_undeclared_name() {
    let dir = require_package(&package_dir());
    let package = package_files(&dir);
    let install = read_text(&dir.join("Install-Pmupcw.ps1"));

    let mutated =
        install.replacen("$PackageFiles = @{", "$PackageFiles = @{\n    Symbols2 = 'pmupcw2.pdb'", 1);
    assert_ne!(mutated, install);
    let problems = check_script(&mutated, &package);
    assert!(
        problems.iter().any(|problem| problem.contains("names pmupcw2.pdb, which is not in the package")),
        "{}",
        listed(&problems)
    );

    let mutated = format!("{install}\n# see .\\Repair-Pmupcw.ps1, pmupcw.pdb and .\\pdh-harness.exe\n");
    let problems = check_script(&mutated, &package);
    for name in ["Repair-Pmupcw.ps1", "pmupcw.pdb", "pdh-harness.exe"] {
        assert!(
            problems.iter().any(|problem| problem.contains(&format!("names {name} without declaring it"))),
            "{name}:\n{}",
            listed(&problems)
        );
    }

    let problems = check_script("Write-Host 'no list'", &package);
    assert!(problems[0].contains("no `$PackageFiles = @{ ... }`"), "{}", listed(&problems));
}

// -------------------------------------------------------------------------------------------------
// Package contents

#[test]
fn package_holds_the_inf_manifest_certificate_driver_and_scripts() {
    let dir = require_package(&package_dir());
    let package = package_files(&dir);
    for file in ["pmupcw.inf", "pmupcw.man", "pmupcw.cer", "pmupcw.sys", "pmupcw.pdb"] {
        assert!(package.contains(file), "{file} is not in {}: {package:?}", dir.display());
    }
    let scripts = repository_scripts();
    let names: Vec<String> =
        scripts.iter().map(|path| path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in
        ["Install-Pmupcw.ps1", "Uninstall-Pmupcw.ps1", "Enable-Verifier.ps1", "Test-Pmupcw.ps1", TOOLS_MODULE]
    {
        assert!(names.iter().any(|name| name == expected), "scripts/windows/ has no {expected}");
    }
    for (path, name) in scripts.iter().zip(&names) {
        let packaged = dir.join(name);
        assert!(packaged.is_file(), "{name} is not in the package {}", dir.display());
        assert_eq!(
            read_text(&packaged),
            read_text(path),
            "the package's {name} is not scripts/windows/{name}"
        );
    }
    assert_eq!(
        read_text(&dir.join("pmupcw.man")),
        read_text(&repository().join("manifests/pmupcw.man")),
        "the package's pmupcw.man is not manifests/pmupcw.man"
    );
    // The harness Test-Pmupcw.ps1 runs.
    for program in PACKAGE_PROGRAMS {
        let bytes = fs::read(dir.join(program))
            .unwrap_or_else(|error| panic!("{program} is not in the package {}: {error}", dir.display()));
        assert!(is_pe_image(&bytes), "the package's {program} is not a PE image");
    }
}

/// Whether `bytes` start as a Windows executable does: `MZ`, and at the offset stored at 0x3C the PE
/// signature `PE\0\0` (Microsoft's PE format specification, "MS-DOS Stub" and "Signature").
fn is_pe_image(bytes: &[u8]) -> bool {
    let Some(offset) =
        bytes.get(0x3c..0x40).map(|field| u32::from_le_bytes(field.try_into().unwrap()) as usize)
    else {
        return false;
    };
    bytes.starts_with(b"MZ") && bytes.get(offset..offset.saturating_add(4)) == Some(b"PE\0\0".as_slice())
}

#[test]
fn pe_image_check_rejects_a_script_and_a_truncated_executable() {
    let dir = require_package(&package_dir());
    let harness = fs::read(dir.join(PACKAGE_PROGRAMS[0])).expect("the packaged harness");
    assert!(is_pe_image(&harness));
    let offset = u32::from_le_bytes(harness[0x3c..0x40].try_into().unwrap()) as usize;
    assert!(!is_pe_image(&harness[..offset + 2]), "cut inside the PE signature");
    assert!(!is_pe_image(read_text(&dir.join("Test-Pmupcw.ps1")).as_bytes()));
    assert!(!is_pe_image(b"MZ"));
}

#[test]
fn a_missing_package_fails_with_how_to_make_it() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-package");
    let result = std::panic::catch_unwind(|| require_package(&missing));
    let payload = result.expect_err("a missing package must fail");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_default();
    assert!(message.contains("run `cargo make package`"), "{message}");
}

// -------------------------------------------------------------------------------------------------
// The scripts' shared module

/// Names of the functions `text` defines (`function Name`), in order.
fn defined_functions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("function "))
        .map(|rest| {
            rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next().unwrap_or("").to_owned()
        })
        .collect()
}

/// The functions the module's `Export-ModuleMember -Function a, b, ...` names.
fn exported_functions(module: &str) -> Vec<String> {
    module
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("Export-ModuleMember -Function "))
        .flat_map(|list| list.split(',').map(|name| name.trim().to_owned()))
        .collect()
}

/// What is wrong with how `script` uses the module that exports `exported`: it must import the module
/// (from its own folder), must not define a function of the module again, and every module function it
/// calls must be exported.
fn check_module_use(script: &str, module: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let (defined, exported) = (defined_functions(module), exported_functions(module));
    if !script.contains("Import-Module $tools")
        || !script.contains("Join-Path $PSScriptRoot $PackageFiles.Tools")
    {
        problems.push(format!("does not import {TOOLS_MODULE} from its own folder"));
    }
    for function in defined_functions(script) {
        if defined.contains(&function) {
            problems.push(format!("defines {function} again ({TOOLS_MODULE} has it)"));
        }
    }
    for function in &defined {
        if script.contains(function.as_str()) && !exported.contains(function) {
            problems.push(format!("calls {function}, which {TOOLS_MODULE} does not export"));
        }
    }
    problems
}

#[test]
fn scripts_import_the_shared_module_and_call_only_what_it_exports() {
    let dir = repository().join("scripts/windows");
    let module = read_text(&dir.join(TOOLS_MODULE));
    let mut defined = defined_functions(&module);
    let mut exported = exported_functions(&module);
    defined.sort();
    exported.sort();
    assert!(!defined.is_empty(), "{TOOLS_MODULE} defines no function");
    assert_eq!(exported, defined, "{TOOLS_MODULE} must export exactly the functions it defines");
    let mut report = String::new();
    for script in repository_scripts().iter().filter(|path| path.extension().is_some_and(|e| e == "ps1")) {
        let problems = check_module_use(&read_text(script), &module);
        if !problems.is_empty() {
            report.push_str(&format!("{}:\n{}", script.display(), listed(&problems)));
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn module_checker_reports_a_missing_import_a_redefinition_and_an_unexported_call() {
    let dir = repository().join("scripts/windows");
    let module = read_text(&dir.join(TOOLS_MODULE));
    let install = read_text(&dir.join("Install-Pmupcw.ps1"));
    assert_eq!(check_module_use(&install, &module), Vec::<String>::new());

    let problems = check_module_use(&install.replace("Import-Module $tools", "# no import"), &module);
    assert!(problems.iter().any(|problem| problem.contains("does not import")), "{}", listed(&problems));

    let again = format!("{install}\nfunction Invoke-Tool {{ }}\n");
    let problems = check_module_use(&again, &module);
    assert!(
        problems.iter().any(|problem| problem.contains("defines Invoke-Tool again")),
        "{}",
        listed(&problems)
    );

    let hidden = module.replace(", Get-CounterProvider", "");
    assert_ne!(hidden, module);
    let problems = check_module_use(&install, &hidden);
    assert!(
        problems.iter().any(|problem| problem.contains("calls Get-CounterProvider, which")),
        "{}",
        listed(&problems)
    );
}

// -------------------------------------------------------------------------------------------------
// Counter paths in the scripts and the documentation

/// A counter path as PDH and typeperf take it: `\Counterset(Instance)\Counter` or `\Counterset\Counter`.
#[derive(Debug, PartialEq)]
struct CounterPath {
    set: String,
    instance: Option<String>,
    counter: String,
}

/// Object manager directories: `\Callback\PowerState` and the like name kernel objects, not counters.
const OBJECT_DIRECTORIES: &[&str] = &["Callback", "Device", "Driver", "BaseNamedObjects", "KernelObjects"];

/// The path `text` holds, if it is one: one leading backslash (two would name a machine), a counterset
/// name without parentheses (and not an object manager directory), an optional `(instance)`, one more
/// backslash and the counter.
fn parse_counter_path(text: &str) -> Option<CounterPath> {
    let rest = text.strip_prefix('\\')?;
    if rest.starts_with('\\') || text.contains('$') {
        return None;
    }
    let (head, counter) = rest.split_once('\\')?;
    if counter.is_empty() || counter.contains('\\') {
        return None;
    }
    let (set, instance) = match head.split_once('(') {
        Some((set, instance)) => (set, Some(instance.strip_suffix(')')?.to_owned())),
        None => (head, None),
    };
    if set.is_empty()
        || set.contains(')')
        || !set.starts_with(|c: char| c.is_ascii_alphabetic())
        || OBJECT_DIRECTORIES.contains(&set)
    {
        return None;
    }
    Some(CounterPath { set: set.to_owned(), instance, counter: counter.to_owned() })
}

/// The counter paths `text` quotes ('...', "..." or `...` on one line; strings that expand a `$`
/// variable are not literal paths and are left out).
fn quoted_counter_paths(text: &str) -> Vec<CounterPath> {
    let mut paths = Vec::new();
    for line in text.lines() {
        for quote in ['\'', '"', '`'] {
            paths.extend(line.split(quote).skip(1).step_by(2).filter_map(parse_counter_path));
        }
    }
    paths
}

/// Every counter path in `text` that `manifest` does not declare.
fn check_counter_paths(text: &str, manifest: &counter_manifest::Manifest) -> Vec<String> {
    let mut problems = Vec::new();
    for path in quoted_counter_paths(text) {
        let Some(set) = manifest.counter_sets.iter().find(|set| set.name.eq_ignore_ascii_case(&path.set))
        else {
            problems.push(format!("names counterset {:?}, which the manifest does not declare", path.set));
            continue;
        };
        match (&path.instance, set.instances.is_multiple()) {
            (None, true) => problems.push(format!("names no instance of multi-instance {:?}", set.name)),
            (Some(instance), false) => {
                problems.push(format!("names instance {instance:?} of single-instance {:?}", set.name))
            }
            _ => {}
        }
        if path.counter != "*"
            && !set.counters.iter().any(|counter| {
                counter.name.as_deref().is_some_and(|name| name.eq_ignore_ascii_case(&path.counter))
            })
        {
            problems.push(format!("names counter {:?}, which {:?} does not declare", path.counter, set.name));
        }
    }
    problems
}

fn manifest() -> counter_manifest::Manifest {
    let path = repository().join("manifests/pmupcw.man");
    let text = read_text(&path);
    counter_manifest::parse(&path.to_string_lossy(), &text).expect("the manifest compiles")
}

/// The files whose counter paths must exist: the scripts, the README and the fleet-collection guide.
fn documents_with_counter_paths() -> Vec<PathBuf> {
    let mut files = repository_scripts();
    files.push(repository().join("README.md"));
    files.push(repository().join("docs/fleet-collection.md"));
    files
}

#[test]
fn scripts_and_documentation_name_only_counters_the_manifest_declares() {
    let manifest = manifest();
    let report = report_files(&documents_with_counter_paths(), |text| check_counter_paths(text, &manifest));
    assert!(report.is_empty(), "{report}");
    // The check reads paths where they are: every counterset in the test script, the smoke query's.
    let dir = repository().join("scripts/windows");
    let test = quoted_counter_paths(&read_text(&dir.join("Test-Pmupcw.ps1")));
    for set in manifest.counter_sets.iter().map(|set| set.name.as_str()) {
        assert!(test.iter().any(|path| path.set == set), "Test-Pmupcw.ps1 quotes no path of {set}: {test:?}");
    }
    assert!(!quoted_counter_paths(&read_text(&dir.join("Install-Pmupcw.ps1"))).is_empty());
}

#[test]
fn counter_path_checker_reports_a_misspelt_counter_counterset_and_instance() {
    let manifest = manifest();
    let test = read_text(&repository().join("scripts/windows/Test-Pmupcw.ps1"));
    assert_eq!(check_counter_paths(&test, &manifest), Vec::<String>::new());
    for (from, to, expected) in [
        (
            "'\\Hardware Counters(_Total)\\Instructions per Cycle'",
            "'\\Hardware Counters(_Total)\\Instruction per Cycle'",
            "names counter \"Instruction per Cycle\", which \"Hardware Counters\" does not declare",
        ),
        (
            "'\\Hardware Counters Driver\\*'",
            "'\\Hardware Counter Driver\\*'",
            "names counterset \"Hardware Counter Driver\", which the manifest does not declare",
        ),
        (
            "'\\Hardware Counters Driver\\PMU State'",
            "'\\Hardware Counters Driver(_Total)\\PMU State'",
            "names instance \"_Total\" of single-instance \"Hardware Counters Driver\"",
        ),
        (
            "'\\Hardware Counters(*)\\Instructions Retired'",
            "'\\Hardware Counters\\Instructions Retired'",
            "names no instance of multi-instance \"Hardware Counters\"",
        ),
    ] {
        let mutated = test.replacen(from, to, 1);
        assert_ne!(mutated, test, "Test-Pmupcw.ps1 quotes {from}");
        let problems = check_counter_paths(&mutated, &manifest);
        assert!(problems.iter().any(|problem| problem == expected), "{to}:\n{}", listed(&problems));
    }
    // Not paths: a machine-qualified column name, a string that expands variables, a regex, a kernel
    // callback object's name.
    assert!(
        quoted_counter_paths(r#"'\\HOST\Set(0)\C' "\$Set\$Counter" '\s+' '\(\*\)' `\Callback\PowerState`"#)
            .is_empty()
    );
}

// -------------------------------------------------------------------------------------------------
// The one-command test delegates to the package's scripts

/// What is wrong with how the test script installs and enables Driver Verifier: it must run
/// Install-Pmupcw.ps1 and Enable-Verifier.ps1 (through `$PackageFiles`), not pnputil, lodctr or
/// verifier's settings itself, so that what it proves is what those scripts do.
fn check_test_delegates(script: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for role in ["InstallScript", "VerifierScript"] {
        if !script.contains(&format!("Invoke-PackageScript $PackageFiles.{role}")) {
            problems.push(format!("does not run $PackageFiles.{role} (Invoke-PackageScript)"));
        }
    }
    let lower = script.to_ascii_lowercase();
    // How the scripts call them: Invoke-Tool pnputil.exe ..., verifier.exe @('/standard', ...).
    for own in ["pnputil.exe", "lodctr.exe", "'/standard'", "'/reset'"] {
        if lower.contains(own) {
            problems.push(format!("runs {own} itself"));
        }
    }
    problems
}

#[test]
fn test_script_installs_and_enables_verifier_through_the_package_scripts() {
    let test = read_text(&repository().join("scripts/windows/Test-Pmupcw.ps1"));
    assert_eq!(check_test_delegates(&test), Vec::<String>::new());

    let mutated = test.replacen(
        "Invoke-PackageScript $PackageFiles.InstallScript",
        "Invoke-Tool pnputil.exe @('/add-driver', 'pmupcw.inf', '/install') #",
        1,
    );
    assert_ne!(mutated, test);
    let problems = check_test_delegates(&mutated);
    for expected in ["does not run $PackageFiles.InstallScript", "runs pnputil.exe itself"] {
        assert!(
            problems.iter().any(|problem| problem.starts_with(expected)),
            "{expected}:\n{}",
            listed(&problems)
        );
    }
}
