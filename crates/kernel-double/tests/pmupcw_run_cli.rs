//! `pmupcw-run` (`cargo make run`) behaves like a tool: `--help` prints on stdout and exits 0, a value
//! outside what the double supports is refused with a message naming the option and exit code 2
//! before anything is loaded, and the end-of-options marker cargo-make passes on is taken as nothing.
//! Runs that load the driver are the scenarios' (`consumer_typeperf`, `ratio_exactness`).

use std::process::{Command, Output};

/// Runs pmupcw-run with `arguments`, a leading `--` first as `cargo make run -- ...` passes it.
fn run(arguments: &[&str]) -> Output {
    let (marker, arguments) = match arguments.split_first() {
        Some((&"--", rest)) => (&["--"][..], rest),
        _ => (&[][..], arguments),
    };
    Command::new(env!("CARGO_BIN_EXE_pmupcw-run"))
        .args(marker)
        // A driver path that does not exist: an argument the parser let through would fail later, at
        // the load, with exit code 1 instead of 2.
        .args(["--driver", "/nonexistent/pmupcw.sys"])
        .args(arguments)
        .output()
        .expect("running pmupcw-run")
}

#[test]
fn help_goes_to_stdout_and_exits_0_with_every_model_and_build() {
    for arguments in [&["--help"][..], &["--", "--help"], &["-h"]] {
        let output = run(arguments);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{arguments:?}: {stdout}");
        assert!(output.stderr.is_empty(), "{arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains("Usage: pmupcw-run [OPTIONS]"), "{stdout}");
    }
    let stdout = String::from_utf8(run(&["--help"]).stdout).unwrap();
    for (name, _) in kernel_double::cpu::cpuid::MODELS {
        assert!(stdout.lines().any(|line| line.trim_start().starts_with(&format!("{name} "))), "{name}");
    }
    assert!(stdout.lines().any(|line| line.trim_start().starts_with("18362 ")), "{stdout}");
}

#[test]
fn values_outside_what_the_double_supports_are_refused_with_a_message() {
    for (arguments, option) in [
        (&["--processors", "0"][..], "--processors"),
        (&["--processors", "2049"], "--processors"),
        (&["--samples", "0"], "--samples"),
        (&["--kernel-build", "99999"], "--kernel-build"),
        (&["--kernel-build", "17763"], "--kernel-build"),
        (&["--cpu-model", "zen2"], "--cpu-model"),
        (&["--virtual-interval", "0.05"], "--virtual-interval"),
        (&["--virtual-interval", "1", "--interval-ms", "5"], "--interval-ms"),
        (&["--consumer", "wmi"], "--consumer"),
        (&["--profile", "fast"], "--profile"),
        (&["--profile", "topdown", "--custom-event", "event=0xC4"], "--custom-event"),
        (&["--no-such-option"], "--no-such-option"),
    ] {
        let output = run(arguments);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
        assert!(stderr.contains(option), "{arguments:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{arguments:?}: nothing ran");
    }
}

#[test]
fn accepted_values_reach_the_load() {
    // Every model `--help` lists, the range ends and both spellings of the custom events parse: the run
    // goes on to load the driver, which the missing image fails with exit code 1, not 2.
    let mut cases: Vec<Vec<&str>> =
        kernel_double::cpu::cpuid::MODELS.iter().map(|(name, _)| vec!["--cpu-model", *name]).collect();
    cases.extend([
        vec!["--cpu-model", "hyperv-root-alder-lake", "--processors", "1"],
        vec!["--cpu-model", "hyperv-guest-alder-lake-pmu", "--processors", "2048"],
        vec!["--", "--kernel-build", "18362", "--samples", "10000"],
        vec!["--virtual-interval", "600", "--consumer", "unbalanced"],
        vec!["--custom-events", "event=0xC4,umask=0x00,name=branches", "--custom-event", "event=0xC5"],
        vec!["--profile", "topdown"],
    ]);
    for arguments in &cases {
        let output = run(arguments);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{arguments:?}: {stderr}");
        assert!(stderr.contains("loading /nonexistent/pmupcw.sys"), "{arguments:?}: {stderr}");
    }
}

#[test]
fn every_model_the_readme_names_is_one_pmupcw_run_takes() {
    // The support matrix names each cell's double model as "Double: `model`, `model`".
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    let mut named = Vec::new();
    for cell in readme.split("Double: ").skip(1) {
        let list = cell.split(['|', '.']).next().unwrap_or_default();
        named.extend(list.split('`').skip(1).step_by(2).map(str::to_string));
    }
    assert!(named.len() >= 10, "{named:?}");
    for model in &named {
        assert!(help.lines().any(|line| line.trim_start().starts_with(&format!("{model} "))), "{model}");
    }
}
