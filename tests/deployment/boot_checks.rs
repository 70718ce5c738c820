//! Install-Pmupcw.ps1 decides from the package's signature and the running boot, before it changes
//! anything.
//!
//! `bcdedit /set testsigning on` applies from the next boot, and bcdedit's `/enum` text is localized
//! ("Yes" is "Ja" on a German Windows), so the script must ask the kernel what this boot enforces
//! (NtQuerySystemInformation with SystemCodeIntegrityInformation, 103, whose CodeIntegrityOptions
//! carry CODEINTEGRITY_OPTION_TESTSIGN, 0x02:
//! https://learn.microsoft.com/windows/win32/api/winternl/nf-winternl-ntquerysysteminformation), and
//! read the package's signature as data (Get-AuthenticodeSignature's Status enum and the signer
//! certificate's thumbprint and enhanced key usages), do both before pnputil, and import the test
//! certificate only for a test-signed package.
//!
//! The decision itself is run, not read: PmupcwTools.psm1's `Get-SignatureKind` and
//! `Get-InstallRefusal` are evaluated from their PowerShell syntax tree (tests/deployment/powershell.rs)
//! on every package signature (test-signed, production-signed, unsigned, changed after signing) and
//! every boot (test signing on or off, Secure Boot on, off or unknown, the boot entry's test signing
//! on, off or unknown), and each outcome is checked against the table docs/install.md gives: what
//! installs, and each refusal with its message. The wiring around it (what the script passes, where
//! it throws, where it imports the certificate) is checked on the script's text and tree.
//!
//! Each check is shown to fail on a mutated copy: a script that parses bcdedit, one that runs pnputil
//! before the check, one that passes no boot-entry setting, one that imports the certificate for any
//! package, a decision that lets a test-signed package through under Secure Boot or loses its
//! restart-first message, a classification that takes any valid signature for Microsoft's, and a
//! module that queries another class or tests another bit.

use super::powershell::{Script, Value};
use super::upgrade::{assignments, closing, code_only, install_script_and_module, mutated};
use super::*;

const PNPUTIL: &str = "Invoke-Tool pnputil.exe";

/// The text of the body of `function name` in `module`, if it defines one.
fn function_body<'a>(module: &'a str, name: &str) -> Option<&'a str> {
    let code = code_only(module);
    let at = code.find(&format!("function {name}"))?;
    let open = at + code[at..].find('{')?;
    Some(&module[open..closing(&code, open)?])
}

/// What is wrong with how `script` (importing `module`) wires the decision: what it reads, what it
/// passes, where it stops and where it imports the certificate.
fn test_signing_problems(script: &str, module: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let code = code_only(script);
    let lower = code.to_ascii_lowercase();
    if lower.contains("bcdedit") {
        problems.push("runs bcdedit, whose output is localized".to_owned());
    }
    let pnputil = code.find(PNPUTIL).unwrap_or(code.len());
    match code.find("Get-CodeIntegrityState") {
        None => problems.push("does not call Get-CodeIntegrityState".to_owned()),
        Some(check) if pnputil < check => {
            problems.push("runs pnputil before it checks the running boot's code integrity".to_owned())
        }
        _ => {}
    }
    if !script.contains("$signature = Get-PackageSignature $driver $catalog $testCertificate") {
        problems.push("does not read the signature of the package's pmupcw.sys and pmupcw.cat".to_owned());
    }
    // The call, as one line of code (its continuation backticks joined).
    let call = script.replace("`\n", " ");
    let call = call.split_whitespace().collect::<Vec<_>>().join(" ");
    for argument in [
        "-Signature $signature.Kind",
        "-TestSigning $integrity.TestSigning",
        "-SecureBoot $integrity.SecureBoot",
        "-Configured (Get-BcdTestSigning)",
        "-Options $options",
    ] {
        if !call.contains("$refusal = Get-InstallRefusal ") || !call.contains(argument) {
            problems.push(format!("does not pass {argument} to Get-InstallRefusal"));
        }
    }
    match code.find("if ($refusal) { throw $refusal }") {
        Some(stop) if stop < pnputil => {}
        _ => problems.push("does not stop with Get-InstallRefusal's message before pnputil".to_owned()),
    }
    problems.extend(certificate_import_problems(script));
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
    match function_body(module, "Get-FileSignature") {
        Some(body) if body.contains("$signature.Status") && !body.contains("StatusMessage") => {}
        _ => problems.push("Get-FileSignature does not classify by the Status enum alone".to_owned()),
    }
    problems
}

/// The certificate goes into a store only inside `if ($signature.Kind -eq 'Test')`, and only there.
fn certificate_import_problems(script: &str) -> Vec<String> {
    let tree = Script::parse(script);
    let adds: Vec<usize> = script.match_indices("$store.Add(").map(|(at, _)| at).collect();
    if adds.is_empty() {
        return vec!["imports no certificate for a test-signed package".to_owned()];
    }
    let guarded = |at: usize| {
        tree.nodes("if_statement").into_iter().any(|statement| {
            let condition = statement.child_by_field_name("condition").map(|node| tree.text(node));
            condition.as_deref() == Some("$signature.Kind -eq 'Test'") && statement.byte_range().contains(&at)
        })
    };
    if adds.iter().all(|&at| guarded(at)) {
        Vec::new()
    } else {
        vec!["imports the certificate outside `if ($signature.Kind -eq 'Test')`".to_owned()]
    }
}

// -------------------------------------------------------------------------------------------------
// The decision table, run

/// A package signature as Get-AuthenticodeSignature would give it on the target, before the test
/// certificate is imported: (name, Status, signer thumbprint, test certificate's thumbprint, signer
/// has a Microsoft driver-signing usage).
type SignatureFacts = (&'static str, &'static str, &'static str, &'static str, bool);

const TEST_THUMBPRINT: &str = "0123456789ABCDEF0123456789ABCDEF01234567";
const MICROSOFT_THUMBPRINT: &str = "89ABCDEF0123456789ABCDEF0123456789ABCDEF";

const PACKAGES: &[SignatureFacts] = &[
    // A self-signed root not yet in Root: UnknownError; after the import, Valid.
    ("test-signed", "UnknownError", TEST_THUMBPRINT, TEST_THUMBPRINT, false),
    ("test-signed, certificate imported", "Valid", TEST_THUMBPRINT, TEST_THUMBPRINT, false),
    ("production-signed", "Valid", MICROSOFT_THUMBPRINT, "", true),
    ("unsigned", "NotSigned", "", "", false),
    ("changed after signing", "HashMismatch", TEST_THUMBPRINT, TEST_THUMBPRINT, false),
];

/// What must happen: install, or refuse with a message holding each of these phrases and none of
/// the `absent` ones.
#[derive(Debug)]
enum Outcome {
    Install,
    Refuse { phrases: Vec<&'static str>, absent: Vec<&'static str> },
}

/// docs/install.md's decision table.
fn expected(kind: &str, test_signing: bool, secure_boot: Option<bool>, configured: Option<bool>) -> Outcome {
    let refuse = |phrases: Vec<&'static str>, absent: Vec<&'static str>| Outcome::Refuse { phrases, absent };
    match kind {
        "Unsigned" => {
            refuse(vec!["carry no signature", "pmupcw.sys and pmupcw.cat", "status NotSigned"], vec![])
        }
        "Invalid" => refuse(
            vec![
                "neither this package's test signature nor Microsoft's driver signing",
                "pmupcw-package.zip.sha256",
            ],
            vec![],
        ),
        "Production" => Outcome::Install,
        _ if test_signing => Outcome::Install,
        _ if secure_boot == Some(true) => refuse(
            vec![
                "test-signed",
                "0x00000001",
                "Secure Boot is on",
                "install a production-signed package",
                "docs/signing.md",
            ],
            vec!["Restart first"],
        ),
        _ if configured == Some(true) => {
            refuse(vec!["0x00000001", "Restart first (Restart-Computer)"], vec!["Run 'bcdedit"])
        }
        _ => {
            let mut phrases = vec!["0x00000001: no TESTSIGN", "Run 'bcdedit /set testsigning on'"];
            let mut absent = vec![];
            match secure_boot {
                None => phrases.push("With Secure Boot on, bcdedit refuses"),
                _ => absent.push("Secure Boot"),
            }
            match configured {
                None => phrases.push("If you have already run it, restart first."),
                _ => absent.push("already run it"),
            }
            refuse(phrases, absent)
        }
    }
}

fn option_value(value: Option<bool>) -> Value {
    value.map_or(Value::Null, Value::Bool)
}

/// Every cell of the table where `module`'s functions disagree with [`expected`].
fn decision_problems(module: &str) -> Vec<String> {
    let module = Script::parse(module);
    let mut problems = Vec::new();
    for &(name, status, signer, test_signer, verification) in PACKAGES {
        let kind = module.call(
            "Get-SignatureKind",
            &[
                ("Status", Value::Str(status.into())),
                ("Signer", Value::Str(signer.into())),
                ("TestSigner", Value::Str(test_signer.into())),
                ("DriverVerification", Value::Bool(verification)),
            ],
        );
        let Value::Str(kind) = kind else {
            problems.push(format!("{name}: Get-SignatureKind returns {kind:?}"));
            continue;
        };
        let detail = format!("pmupcw.sys: status {status}; pmupcw.cat: status {status}");
        for test_signing in [true, false] {
            for secure_boot in [Some(true), Some(false), None] {
                for configured in [Some(true), Some(false), None] {
                    let cell = format!(
                        "{name} ({kind}), test signing {test_signing}, Secure Boot {secure_boot:?}, boot entry {configured:?}"
                    );
                    let refusal = module.call(
                        "Get-InstallRefusal",
                        &[
                            ("Signature", Value::Str(kind.clone())),
                            ("Files", Value::Str("pmupcw.sys and pmupcw.cat".into())),
                            ("Detail", Value::Str(detail.clone())),
                            ("TestSigning", Value::Bool(test_signing)),
                            ("SecureBoot", option_value(secure_boot)),
                            ("Configured", option_value(configured)),
                            ("Options", Value::Str("0x00000001".into())),
                        ],
                    );
                    match (expected(&kind, test_signing, secure_boot, configured), refusal) {
                        (Outcome::Install, Value::Null) => {}
                        (Outcome::Install, refusal) => problems.push(format!("{cell}: refused: {refusal:?}")),
                        (Outcome::Refuse { .. }, Value::Null) => problems.push(format!("{cell}: installs")),
                        (Outcome::Refuse { phrases, absent }, Value::Str(message)) => {
                            for phrase in phrases.iter().filter(|phrase| !message.contains(**phrase)) {
                                problems.push(format!("{cell}: the message lacks {phrase:?}: {message}"));
                            }
                            for phrase in absent.iter().filter(|phrase| message.contains(**phrase)) {
                                problems.push(format!("{cell}: the message says {phrase:?}: {message}"));
                            }
                        }
                        (_, other) => problems.push(format!("{cell}: Get-InstallRefusal returns {other:?}")),
                    }
                }
            }
        }
    }
    problems
}

/// Get-SignatureKind on every Status (the SignatureStatus enum's names) and signer.
fn signature_kind_problems(module: &str) -> Vec<String> {
    let module = Script::parse(module);
    let mut problems = Vec::new();
    let statuses = [
        "Valid",
        "UnknownError",
        "NotSigned",
        "HashMismatch",
        "NotTrusted",
        "NotSupportedFileFormat",
        "Incompatible",
    ];
    for status in statuses {
        for (signer, test_signer) in [
            (TEST_THUMBPRINT, TEST_THUMBPRINT),
            (MICROSOFT_THUMBPRINT, TEST_THUMBPRINT),
            (MICROSOFT_THUMBPRINT, ""),
            ("", ""),
        ] {
            for verification in [true, false] {
                let want = match status {
                    "NotSigned" => "Unsigned",
                    "HashMismatch" => "Invalid",
                    // Valid once pmupcw.cer is in Root; UnknownError or NotTrusted before.
                    "Valid" | "UnknownError" | "NotTrusted"
                        if !test_signer.is_empty() && signer == test_signer =>
                    {
                        "Test"
                    }
                    _ if !test_signer.is_empty() && signer == test_signer => "Invalid",
                    "Valid" if verification => "Production",
                    _ => "Invalid",
                };
                let got = module.call(
                    "Get-SignatureKind",
                    &[
                        ("Status", Value::Str(status.into())),
                        ("Signer", Value::Str(signer.into())),
                        ("TestSigner", Value::Str(test_signer.into())),
                        ("DriverVerification", Value::Bool(verification)),
                    ],
                );
                if got != Value::Str(want.into()) {
                    problems.push(format!(
                        "status {status}, signer {signer:?}, test certificate {test_signer:?}, driver signing {verification}: {got:?}, not {want}"
                    ));
                }
            }
        }
    }
    problems
}

#[test]
fn the_install_decision_table_holds_with_each_refusal_s_message() {
    let (_, module) = install_script_and_module();
    let problems = decision_problems(&module);
    assert!(problems.is_empty(), "{TOOLS_MODULE}:\n{}", listed(&problems));
    let problems = signature_kind_problems(&module);
    assert!(problems.is_empty(), "{TOOLS_MODULE}:\n{}", listed(&problems));
}

#[test]
fn decision_checker_reports_a_test_package_let_through_under_secure_boot() {
    let (_, module) = install_script_and_module();
    let open = mutated(
        &module,
        "    if ($TestSigning) { return $null }",
        "    if ($TestSigning -or $SecureBoot) { return $null }",
    );
    assert_reported(
        &decision_problems(&open),
        "test-signed (Test), test signing false, Secure Boot Some(true), boot entry Some(true): installs",
    );
    let lost = mutated(&module, "Restart first (Restart-Computer)", "Try again");
    assert_reported(&decision_problems(&lost), "the message lacks \"Restart first (Restart-Computer)\"");
    let any =
        mutated(&module, "if ($Status -eq 'Valid' -and $DriverVerification)", "if ($Status -eq 'Valid')");
    assert_reported(&signature_kind_problems(&any), "driver signing false: Str(\"Production\"), not Invalid");
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
        "    # 1. The package's signature",
        "    $early = Invoke-Tool pnputil.exe @('/add-driver', $inf, '/install')\n    # 1. The package's signature",
    );
    assert_signing_problem(&late, &module, "runs pnputil before");
}

#[test]
fn signing_checker_reports_an_unread_boot_entry_and_an_unguarded_import() {
    let (install, module) = install_script_and_module();
    let unread = mutated(&install, "-Configured (Get-BcdTestSigning)", "-Configured $null");
    assert_signing_problem(&unread, &module, "does not pass -Configured (Get-BcdTestSigning)");
    let any = mutated(&install, "if ($signature.Kind -eq 'Test') {", "if ($true) {");
    assert_signing_problem(&any, &module, "imports the certificate outside");
    let late = mutated(&install, "    if ($refusal) { throw $refusal }\n", "");
    assert_signing_problem(&late, &module, "does not stop with Get-InstallRefusal's message");
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

// -------------------------------------------------------------------------------------------------
// Uninstall-Pmupcw.ps1 -RemoveCertificate

/// What is wrong with how the uninstall script removes the test certificate on request: a
/// `[switch]$RemoveCertificate`, and under `if ($RemoveCertificate)` the package's pmupcw.cer found by
/// thumbprint and removed from both stores the install script imports it into.
fn certificate_removal_problems(script: &str) -> Vec<String> {
    let tree = Script::parse(script);
    let mut problems = Vec::new();
    if !script.contains("[switch]$RemoveCertificate") {
        problems.push("declares no [switch]$RemoveCertificate".to_owned());
    }
    let branch = tree.nodes("if_statement").into_iter().find(|statement| {
        statement
            .child_by_field_name("condition")
            .is_some_and(|condition| tree.text(condition) == "$RemoveCertificate")
    });
    let Some(branch) = branch else {
        problems.push("has no `if ($RemoveCertificate)` branch".to_owned());
        return problems;
    };
    let body = tree.text(branch);
    for (needed, problem) in [
        ("$PackageFiles.Certificate", "does not read the package's pmupcw.cer"),
        (
            "foreach ($storeName in 'Root', 'TrustedPublisher')",
            "does not remove it from both Root and TrustedPublisher",
        ),
        (
            "[System.Security.Cryptography.X509Certificates.X509Store]::new($storeName, 'LocalMachine')",
            "does not open the LocalMachine stores",
        ),
        (
            "Find('FindByThumbprint', $cert.Thumbprint, $false)",
            "does not find the certificate by its thumbprint",
        ),
        ("RemoveRange($found)", "does not remove what it found"),
    ] {
        if !body.contains(needed) {
            problems.push(problem.to_owned());
        }
    }
    problems
}

#[test]
fn uninstall_removes_the_test_certificate_by_thumbprint_from_both_stores() {
    let uninstall = read_text(&repository().join("scripts/windows/Uninstall-Pmupcw.ps1"));
    let problems = certificate_removal_problems(&uninstall);
    assert!(problems.is_empty(), "Uninstall-Pmupcw.ps1:\n{}", listed(&problems));
    let one_store = mutated(&uninstall, "'Root', 'TrustedPublisher')", "'Root')");
    assert_reported(&certificate_removal_problems(&one_store), "both Root and TrustedPublisher");
    let by_name = mutated(
        &uninstall,
        "Find('FindByThumbprint', $cert.Thumbprint, $false)",
        "Find('FindBySubjectName', 'pmupcw Test Signing', $false)",
    );
    assert_reported(&certificate_removal_problems(&by_name), "by its thumbprint");
    let never = mutated(&uninstall, "if ($RemoveCertificate) {", "if ($false) {");
    assert_reported(&certificate_removal_problems(&never), "no `if ($RemoveCertificate)` branch");
}
