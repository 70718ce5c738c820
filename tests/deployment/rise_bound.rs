//! Test-Pmupcw.ps1's sleep check bounds how far a count may rise, not only that it rises.
//!
//! A counter the driver reprogrammed at resume without its old value, or a 48-bit counter that
//! wrapped, shows as a jump of up to 2^48 that "never went backwards" passes. So each processor's
//! Instructions Retired may rise between two samples by at most the seconds between them x the
//! highest clock (Win32_Processor MaxClockSpeed with a turbo allowance) x the most instructions a core
//! retires in a cycle, and the sleep check passes only when no rise exceeds that. Checked statically,
//! as tests/deployment/upgrade.rs checks the install script.
//!
//! The checker is shown to fail on copies: a PASS that ignores the bound, a bound without elapsed
//! time, a bound without the processor's clock.

use super::upgrade::{assignments, closing, code_only, if_blocks, mutated};
use super::*;

fn test_script() -> String {
    read_text(&repository().join("scripts/windows/Test-Pmupcw.ps1"))
}

/// The text of the body of `function name` in `script`, if it defines one.
fn body<'a>(script: &'a str, code: &str, name: &str) -> Option<&'a str> {
    let at = code.find(&format!("function {name}"))?;
    let open = at + code[at..].find('{')?;
    Some(&script[open..closing(code, open)?])
}

/// What is wrong with how `script` bounds the rise its sleep check accepts.
fn rise_bound_problems(script: &str) -> Vec<String> {
    let code = code_only(script);
    let mut problems = Vec::new();
    match body(script, &code, "Get-RiseBound") {
        Some(bound) if bound.contains("$Seconds * $MaxHz * $MaxInstructionsPerCycle") => {}
        _ => problems.push("Get-RiseBound is not elapsed seconds x the clock x instructions a cycle".into()),
    }
    match body(script, &code, "Find-ImplausibleRises") {
        Some(find) => {
            let elapsed = assignments(find, "seconds").iter().any(|value| value.contains(".TotalSeconds"));
            let bounded =
                assignments(find, "bound").iter().any(|value| value.contains("Get-RiseBound $seconds"));
            if !(elapsed && bounded && find.contains("$rise -gt $bound")) {
                problems.push(
                    "Find-ImplausibleRises does not compare each rise with the bound for its elapsed time"
                        .into(),
                );
            }
        }
        None => problems.push("defines no Find-ImplausibleRises".into()),
    }
    if !assignments(script, "maxHz").iter().any(|value| value.contains("$cpu.MaxClockSpeed")) {
        problems.push("$maxHz does not come from the processor's MaxClockSpeed".into());
    }
    let checked: Vec<String> = script
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('$')?.split_once(" = "))
        .filter(|(_, value)| value.contains("Find-ImplausibleRises $sleepCsv") && value.contains("$maxHz"))
        .map(|(name, _)| format!("${name}.Count -eq 0"))
        .collect();
    let pass = "Add-Check 'sleep and resume' PASS";
    let guarded = if_blocks(&code)
        .into_iter()
        .filter(|(_, block)| script[block.clone()].contains(pass))
        .min_by_key(|(_, block)| block.len())
        .is_some_and(|(condition, _)| {
            checked.iter().any(|check| script[condition.clone()].contains(check.as_str()))
        });
    if !guarded {
        problems
            .push("the sleep check passes without every rise of the sleep's samples within the bound".into());
    }
    problems
}

#[track_caller]
fn assert_rise_problem(script: &str, expected: &str) {
    assert_reported(&rise_bound_problems(script), expected);
}

#[test]
fn the_sleep_check_bounds_each_rise_by_elapsed_time_and_clock() {
    let problems = rise_bound_problems(&test_script());
    assert!(problems.is_empty(), "Test-Pmupcw.ps1:\n{}", listed(&problems));
}

#[test]
fn rise_checker_reports_an_unbounded_pass_a_timeless_bound_and_a_fixed_clock() {
    let script = test_script();
    let unbounded = mutated(
        &script,
        " -and (Test-Rising $after) -and $implausible.Count -eq 0)",
        " -and (Test-Rising $after))",
    );
    assert_rise_problem(&unbounded, "passes without every rise");
    let timeless =
        mutated(&script, "$Seconds * $MaxHz * $MaxInstructionsPerCycle", "$MaxHz * $MaxInstructionsPerCycle");
    assert_rise_problem(&timeless, "Get-RiseBound is not elapsed seconds");
    let fixed = mutated(&script, "[double]$cpu.MaxClockSpeed * 1e6", "6e9");
    assert_rise_problem(&fixed, "does not come from the processor's MaxClockSpeed");
}
