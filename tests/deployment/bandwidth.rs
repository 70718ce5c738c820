//! Test-Pmupcw.ps1's memory bandwidth check decides from the DRAM totals and the copy, and skips
//! only where the memory controller is not counting.
//!
//! The script copies a buffer far beyond the last-level cache several times while typeperf samples
//! `\Memory Controller(_Total)\DRAM Read Bytes` and `DRAM Write Bytes`; the check passes only when
//! each total rose by at least the bytes every copy but the last sent to DRAM (the floor, from the
//! copy's own size and count) and by at most `$MaxDramFactor` times that, and, for any Memory
//! Controller State but 1 (counting), it is SKIP with the state's name and a reason, never FAIL or
//! PASS. Checked statically, as `rise_bound.rs` checks the sleep check; the states' names against
//! `docs/memory-controller.md`'s status table.
//!
//! The checker is shown to fail on copies: a PASS without the write floor, a PASS without the
//! ceiling, a floor that is a constant, a factor too loose to catch a wrong scale, a state other than
//! 1 that fails instead of skipping, and a state name that is not the documented one.

use super::upgrade::{assignments, closing, code_only, if_blocks, mutated};
use super::*;

fn test_script() -> String {
    read_text(&repository().join("scripts/windows/Test-Pmupcw.ps1"))
}

/// The text of the body of `function name` in `script`, and the same range of `code`.
fn body<'a>(script: &'a str, code: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
    let at = code.find(&format!("function {name}"))?;
    let open = at + code[at..].find('{')?;
    let end = closing(code, open)?;
    Some((&script[open..end], &code[open..end]))
}

/// The `N = 'name'` entries of the hashtable `$variable = @{ ... }` in `script`.
fn state_table(script: &str, variable: &str) -> Vec<(u32, String)> {
    let Some(at) = script.find(&format!("${variable} = @{{")) else { return Vec::new() };
    let open = at + script[at..].find('{').expect("found above");
    let Some(end) = closing(script, open) else { return Vec::new() };
    script[open + 1..end - 1]
        .split([';', '\n'])
        .filter_map(|entry| {
            let (number, name) = entry.split_once(" = ")?;
            let name = name.trim().strip_prefix('\'')?.split('\'').next()?;
            Some((number.trim().parse().ok()?, name.to_owned()))
        })
        .collect()
}

/// The status values and names of `docs/memory-controller.md`'s status table (`| 0 | idle | ...`).
fn documented_states() -> Vec<(u32, String)> {
    let doc = read_text(&repository().join("docs/memory-controller.md"));
    let table = doc.split("## Status values").nth(1).expect("docs/memory-controller.md has Status values");
    table
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let number = cells.next()?.parse().ok()?;
            Some((number, cells.next()?.to_owned()))
        })
        .collect()
}

/// What is wrong with the verdict's decision in `Get-BandwidthVerdict`.
fn verdict_problems(script: &str, code: &str, problems: &mut Vec<String>) {
    let Some((verdict, verdict_code)) = body(script, code, "Get-BandwidthVerdict") else {
        problems.push("defines no Get-BandwidthVerdict".into());
        return;
    };
    // The first decision that returns: any state but 1 returns SKIP, naming the state.
    let blocks = if_blocks(verdict_code);
    let first_return = blocks.iter().find(|(_, block)| verdict[block.clone()].contains("return"));
    let skips = first_return.is_some_and(|(condition, block)| {
        let block = &verdict[block.clone()];
        verdict[condition.clone()].contains("$State -ne 1")
            && block.contains("Verdict = 'SKIP'")
            && block.contains("return")
            && !block.contains("'FAIL'")
            && !block.contains("'PASS'")
            && block.contains("$State ($name)")
    });
    if !skips {
        problems.push("a Memory Controller State other than 1 is not first, and always, SKIP by name".into());
    }
    let ceiling = assignments(verdict, "ceiling").contains(&"$MaxDramFactor * $Floor");
    if !ceiling {
        problems.push("the ceiling is not $MaxDramFactor x the floor".into());
    }
    let within = |name: &str, rise: &str| {
        assignments(verdict, name).iter().any(|value| {
            value.contains(&format!("{rise} -ge $Floor")) && value.contains(&format!("{rise} -le $ceiling"))
        })
    };
    let pass = blocks
        .iter()
        .filter(|(_, block)| verdict[block.clone()].contains("Verdict = 'PASS'"))
        .min_by_key(|(_, block)| block.len());
    let guarded = pass.is_some_and(|(condition, _)| {
        let condition = &verdict[condition.clone()];
        ["readOk", "writeOk"].iter().all(|name| condition.contains(&format!("${name}")))
    });
    if !(guarded && within("readOk", "$ReadRise") && within("writeOk", "$WriteRise")) {
        problems.push("PASS does not need both DRAM totals' rises within [floor, ceiling]".into());
    }
    if !verdict.contains("$ReadRise / $Floor") || !verdict.contains("$WriteRise / $Floor") {
        problems.push("the verdict does not report each total's factor over the bytes copied".into());
    }
}

/// What is wrong with how `script` runs and judges the memory bandwidth check.
fn bandwidth_problems(script: &str) -> Vec<String> {
    let code = code_only(script);
    let mut problems = Vec::new();
    verdict_problems(script, &code, &mut problems);
    match assignments(script, "MaxDramFactor").first().and_then(|value| value.trim().parse::<u32>().ok()) {
        // The copy alone reads up to 2x (source and the destination's read for ownership); a count of
        // lines instead of bytes is 1/64 and must stay outside.
        Some(factor) if (2..=64).contains(&factor) => {}
        other => problems.push(format!("$MaxDramFactor {other:?} is not within 2 to 64")),
    }
    match body(script, &code, "Add-BandwidthCheck") {
        Some((check, _)) => {
            if !assignments(check, "floor")
                .iter()
                .any(|value| value.contains("($copy.Copies - 1) * $copy.BufferBytes"))
            {
                problems.push("the floor is not every copy but the last, from the copy made".into());
            }
            for (rise, path) in [("readRise", "$DramReadBytesPath"), ("writeRise", "$DramWriteBytesPath")] {
                let measured = assignments(check, rise).iter().any(|value| {
                    value.starts_with(&format!("Get-TotalRise $csv {path} $copy.Began $copy.Ended"))
                });
                if !measured {
                    problems.push(format!("${rise} is not {path}'s rise across the copy"));
                }
            }
            if !check.contains("Get-BandwidthVerdict $state $readRise $writeRise $floor") {
                problems.push("Add-BandwidthCheck does not judge by Get-BandwidthVerdict".into());
            }
        }
        None => problems.push("defines no Add-BandwidthCheck".into()),
    }
    let states = state_table(script, "MemoryControllerStates");
    if states != documented_states() {
        problems.push(format!("$MemoryControllerStates {states:?} is not docs/memory-controller.md's table"));
    }
    let reasons: Vec<u32> =
        state_table(script, "MemoryControllerSkipReasons").iter().map(|(n, _)| *n).collect();
    let skipped: Vec<u32> = states.iter().map(|(n, _)| *n).filter(|n| *n != 1).collect();
    if reasons != skipped {
        problems.push(format!("skip reasons for states {reasons:?}, want one for each of {skipped:?}"));
    }
    problems
}

#[track_caller]
fn assert_bandwidth_problem(script: &str, expected: &str) {
    assert_reported(&bandwidth_problems(script), expected);
}

#[test]
fn the_bandwidth_check_bounds_both_totals_and_skips_unless_counting() {
    let problems = bandwidth_problems(&test_script());
    assert!(problems.is_empty(), "Test-Pmupcw.ps1:\n{}", listed(&problems));
    assert_eq!(documented_states().len(), 8, "docs/memory-controller.md's status table: 0 to 7");
}

#[test]
fn bandwidth_checker_reports_a_missing_bound_a_constant_floor_and_a_failing_skip() {
    let script = test_script();
    for (from, to, expected) in [
        ("$WriteRise -ge $Floor -and ", "", "PASS does not need both"),
        (" -and $ReadRise -le $ceiling", "", "PASS does not need both"),
        ("if ($readOk -and $writeOk)", "if ($readOk)", "PASS does not need both"),
        ("[double]($copy.Copies - 1) * $copy.BufferBytes", "1e9", "the floor is not every copy but the last"),
        ("$MaxDramFactor = 20", "$MaxDramFactor = 1000", "$MaxDramFactor Some(1000) is not within 2 to 64"),
        (
            "return [pscustomobject]@{ Verdict = 'SKIP'",
            "return [pscustomobject]@{ Verdict = 'FAIL'",
            "is not first, and always, SKIP by name",
        ),
        ("5 = 'under a hypervisor'", "5 = 'virtual machine'", "is not docs/memory-controller.md's table"),
        (
            "$writeRise = Get-TotalRise $csv $DramWriteBytesPath",
            "$writeRise = Get-TotalRise $csv $DramReadBytesPath",
            "$writeRise is not $DramWriteBytesPath's rise",
        ),
    ] {
        assert_bandwidth_problem(&mutated(&script, from, to), expected);
    }
}
