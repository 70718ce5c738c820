//! Install-Pmupcw.ps1 checks test signing in the running boot, before it changes anything.
//!
//! `bcdedit /set testsigning on` applies from the next boot, and bcdedit's `/enum` text is localized
//! ("Yes" is "Ja" on a German Windows), so the script must ask the kernel what this boot enforces
//! (NtQuerySystemInformation with SystemCodeIntegrityInformation, 103, whose CodeIntegrityOptions
//! carry CODEINTEGRITY_OPTION_TESTSIGN, 0x02:
//! https://learn.microsoft.com/windows/win32/api/winternl/nf-winternl-ntquerysysteminformation), do it
//! before pnputil, and where the boot entry already has test signing on but this boot does not, say
//! to restart first. Checked statically, as tests/deployment/upgrade.rs checks the upgrade: code with
//! strings and comments blanked gives the structure, the text the commands and messages.
//!
//! Each check is shown to fail on a mutated copy: a script that parses bcdedit, one that runs pnputil
//! before the check, one without the restart-first message, and a module that queries another class
//! or tests another bit.

use super::upgrade::{assignments, closing, code_only, if_blocks, install_script_and_module, mutated};
use super::*;

const PNPUTIL: &str = "Invoke-Tool pnputil.exe";

/// The text of the body of `function name` in `module`, if it defines one.
fn function_body<'a>(module: &'a str, name: &str) -> Option<&'a str> {
    let code = code_only(module);
    let at = code.find(&format!("function {name}"))?;
    let open = at + code[at..].find('{')?;
    Some(&module[open..closing(&code, open)?])
}

/// What is wrong with how `script` (importing `module`) checks test signing.
fn test_signing_problems(script: &str, module: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let code = code_only(script);
    let lower = code.to_ascii_lowercase();
    if lower.contains("bcdedit") {
        problems.push("runs bcdedit, whose output is localized".to_owned());
    }
    match (code.find("Get-CodeIntegrityState"), code.find(PNPUTIL)) {
        (None, _) => problems.push("does not call Get-CodeIntegrityState".to_owned()),
        (Some(check), Some(pnputil)) if pnputil < check => {
            problems.push("runs pnputil before it checks the running boot's code integrity".to_owned())
        }
        _ => {}
    }
    let blocks = if_blocks(&code);
    let throws_when = |condition: &dyn Fn(&str) -> bool, message: &str| {
        blocks.iter().any(|(cond, block)| {
            condition(&script[cond.clone()])
                && code[block.clone()].contains("throw")
                && script[block.clone()].to_ascii_lowercase().contains(message)
        })
    };
    if !throws_when(&|condition| condition.contains(".TestSigning"), "testsigning on") {
        problems.push("does not stop, saying how to turn test signing on, when the boot lacks it".to_owned());
    }
    let configured: Vec<String> = script
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('$')?.split_once(" = "))
        .filter(|(_, value)| value.contains("Get-BcdTestSigning"))
        .map(|(name, _)| format!("${name}"))
        .collect();
    let names_setting = |condition: &str| configured.iter().any(|name| condition.contains(name.as_str()));
    if configured.is_empty() || !throws_when(&names_setting, "restart first") {
        problems.push(
            "does not say to restart first where the boot entry has test signing on (Get-BcdTestSigning)"
                .to_owned(),
        );
    }
    match function_body(module, "Get-CodeIntegrityState") {
        None => problems.push(format!("{TOOLS_MODULE} defines no Get-CodeIntegrityState")),
        Some(body) => {
            if !body.contains("NtQuerySystemInformation(103,") {
                problems.push(
                    "Get-CodeIntegrityState does not query SystemCodeIntegrityInformation (103)".into(),
                );
            }
            let tests_bit = assignments(body, "options").iter().any(|value| value.contains("ToUInt32"))
                && body.contains("TestSigning = ($options -band 0x2) -ne 0");
            if !tests_bit {
                problems
                    .push("Get-CodeIntegrityState does not test CODEINTEGRITY_OPTION_TESTSIGN (0x2)".into());
            }
        }
    }
    problems
}

#[track_caller]
fn assert_signing_problem(script: &str, module: &str, expected: &str) {
    assert_reported(&test_signing_problems(script, module), expected);
}

#[test]
fn install_checks_test_signing_in_the_running_boot_before_installing() {
    let (install, module) = install_script_and_module();
    let problems = test_signing_problems(&install, &module);
    assert!(problems.is_empty(), "Install-Pmupcw.ps1:\n{}", listed(&problems));
}

#[test]
fn signing_checker_reports_a_bcdedit_parse_and_a_check_after_pnputil() {
    let (install, module) = install_script_and_module();
    // What the script did before: bcdedit's English text.
    let bcdedit = mutated(
        &install,
        "$integrity = Get-CodeIntegrityState",
        "$bcd = Invoke-Tool bcdedit.exe @('/enum', '{current}') -Quiet\n    $integrity = Get-CodeIntegrityState",
    );
    assert_signing_problem(&bcdedit, &module, "runs bcdedit");
    let late = mutated(
        &install,
        "    # 1. Test signing",
        "    $early = Invoke-Tool pnputil.exe @('/add-driver', $inf, '/install')\n    # 1. Test signing",
    );
    assert_signing_problem(&late, &module, "runs pnputil before");
}

#[test]
fn signing_checker_reports_a_missing_restart_first_message() {
    let (install, module) = install_script_and_module();
    let script = mutated(&install, "Restart first (Restart-Computer)", "Try again");
    assert_signing_problem(&script, &module, "does not say to restart first");
    let unread = mutated(&install, "$configured = Get-BcdTestSigning", "$configured = $null");
    assert_signing_problem(&unread, &module, "does not say to restart first");
}

#[test]
fn signing_checker_reports_another_information_class_or_bit() {
    let (install, module) = install_script_and_module();
    let class = mutated(&module, "NtQuerySystemInformation(103,", "NtQuerySystemInformation(104,");
    assert_signing_problem(&install, &class, "does not query SystemCodeIntegrityInformation");
    // 0x1 is CODEINTEGRITY_OPTION_ENABLED, set on every boot.
    let bit = mutated(&module, "-band 0x2)", "-band 0x1)");
    assert_signing_problem(&install, &bit, "does not test CODEINTEGRITY_OPTION_TESTSIGN");
}
