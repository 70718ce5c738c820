//! Whether the ratios a typeperf CSV shows are the ratios of the 64-bit totals beside them: for every
//! sample after the first, every instance and `_Total`, each ratio counter against its numerator's
//! and its base's totals (`perf_counter_large_rawcount` columns, which PDH shows as they are) over the
//! same two samples. Reads the CSV as printed ([`parse`], with the `csv` crate), so it checks what a user sees.
//!
//! The bounds: a ratio (instructions per cycle) within 1e-4 of the totals' ratio, relative; a
//! percentage within 0.01 points of 100 x the totals' ratio. A ratio cell without a value (`" "`)
//! where the totals moved is a violation too: the sample is missing.
//!
//! `_Total` means what it says: its ratio is the ratio of the totals of the processors that count
//! both sides (a processor counting LLC misses but not LLC references has no miss rate, and its
//! misses are not over anyone's references), so its expected value is summed from the instances whose
//! numerator and base totals are both above 0 in the row (every event the double's workload makes
//! moves where it is counted), not from `_Total`'s own totals, which sum every processor's.

mod rates;

/// One parsed typeperf CSV: the counter paths of the header, one row of cells per sample (None for
/// `" "`) and each row's time in seconds since the Unix epoch (None where it does not parse).
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub paths: Vec<String>,
    pub rows: Vec<Vec<Option<f64>>>,
    pub stamps: Vec<Option<f64>>,
}

/// `MM/DD/YYYY HH:MM:SS.mmm` (UTC, as [`super::csv::timestamp`] writes it) in seconds since 1970.
fn stamp(text: &str) -> Option<f64> {
    let (date, clock) = text.split_once(' ')?;
    let numbers = |text: &str, separator: char| -> Option<Vec<u32>> {
        text.split(separator).map(|part| part.parse().ok()).collect()
    };
    let [month, day, year] = numbers(date, '/')?[..] else { return None };
    let (clock, millis) = clock.split_once('.')?;
    let [hour, minute, second] = numbers(clock, ':')?[..] else { return None };
    let date =
        time::Date::from_calendar_date(year as i32, time::Month::try_from(month as u8).ok()?, day as u8)
            .ok()?;
    let time =
        time::Time::from_hms_milli(hour as u8, minute as u8, second as u8, millis.parse().ok()?).ok()?;
    let at = time::PrimitiveDateTime::new(date, time).assume_utc();
    Some(at.unix_timestamp_nanos() as f64 / 1e9)
}

/// Parses typeperf's CSV (the lines of [`super::csv::document`]; lines starting with `#` are the
/// run's comments and are skipped): from its header line to the first empty line after it, read by the
/// `csv` crate.
pub fn parse(text: &str) -> Result<Document, String> {
    let block: String = text
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| !line.starts_with('#'))
        .skip_while(|line| !line.starts_with("\"(PDH-CSV 4.0)"))
        .take_while(|line| !line.is_empty())
        .flat_map(|line| [line, "\n"])
        .collect();
    let mut reader =
        ::csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(block.as_bytes());
    let mut records = reader.records();
    let header = records.next().ok_or_else(|| "no typeperf header line".to_string())?;
    let paths: Vec<String> =
        header.map_err(|error| format!("the header: {error}"))?.iter().skip(1).map(String::from).collect();
    let mut rows = Vec::new();
    let mut stamps = Vec::new();
    for record in records {
        let cells = record.map_err(|error| format!("a row: {error}"))?;
        if cells.len() != paths.len() + 1 {
            return Err(format!("a row has {} fields, the header {}", cells.len(), paths.len() + 1));
        }
        let row = cells
            .iter()
            .skip(1)
            .map(|cell| match cell {
                " " => Ok(None),
                number => number.parse::<f64>().map(Some).map_err(|_| format!("not a number: {number:?}")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(row);
        stamps.push(stamp(&cells[0]));
    }
    Ok(Document { paths, rows, stamps })
}

/// `\\HOST\Set(Instance)\Counter` as (set, instance, counter); a single-instance set has no instance.
pub fn split_path(path: &str) -> Option<(String, Option<String>, String)> {
    let rest = path.strip_prefix("\\\\")?;
    let (_host, rest) = rest.split_once('\\')?;
    let (object, counter) = rest.rsplit_once('\\')?;
    match object.split_once('(') {
        Some((set, instance)) => {
            Some((set.to_string(), Some(instance.strip_suffix(')')?.to_string()), counter.to_string()))
        }
        None => Some((object.to_string(), None, counter.to_string())),
    }
}

/// How close a shown ratio must be to the totals' ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Relative to the totals' ratio.
    Relative(f64),
    /// In the shown unit (percentage points).
    Absolute(f64),
}

/// One ratio counter and the 64-bit totals it is the ratio of: shown = scale x numerator / base.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub ratio: &'static str,
    pub numerator: &'static str,
    pub base: &'static str,
    pub scale: f64,
    pub bound: Bound,
}

const fn percent(ratio: &'static str, numerator: &'static str, base: &'static str) -> Rule {
    Rule { ratio, numerator, base, scale: 100.0, bound: Bound::Absolute(0.01) }
}

/// Every ratio counter of Hardware Counters and Hardware Counters by Core Type with 64-bit totals for
/// both sides. Instructions per cycle under either of its names: as a ratio, or per 100 cycles.
pub const RULES: &[Rule] = &[
    Rule {
        ratio: "Relative Frequency",
        numerator: "APERF Cycles",
        base: "MPERF Cycles",
        scale: 1.0,
        bound: Bound::Relative(1e-4),
    },
    Rule {
        ratio: "Instructions per Cycle",
        numerator: "Instructions Retired",
        base: "Unhalted Core Cycles",
        scale: 1.0,
        bound: Bound::Relative(1e-4),
    },
    Rule {
        ratio: "Instructions per 100 Cycles",
        numerator: "Instructions Retired",
        base: "Unhalted Core Cycles",
        scale: 100.0,
        bound: Bound::Relative(1e-4),
    },
    percent("% LLC Misses", "LLC Misses", "LLC References"),
    percent("% Branch Mispredicts", "Branch Mispredicts", "Branch Instructions"),
    percent("% Retiring", "Retiring Slots", "Top-down Slots"),
    percent("% Bad Speculation", "Bad Speculation Slots", "Top-down Slots"),
    percent("% Frontend Bound", "Frontend Bound Slots", "Top-down Slots"),
    percent("% Backend Bound", "Backend Bound Slots", "Top-down Slots"),
];

/// What was checked, and what did not hold.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Ratio cells compared with their totals.
    pub checked: usize,
    /// Ratio cells whose totals did not move (shown must be 0).
    pub idle: usize,
    /// Rate cells compared with their totals' growth.
    pub rates: usize,
    pub violations: Vec<String>,
}

/// Each column of `document` by its (set, instance, counter).
type Columns = std::collections::HashMap<(String, Option<String>, String), usize>;

fn columns(document: &Document) -> Columns {
    document.paths.iter().enumerate().filter_map(|(index, path)| Some((split_path(path)?, index))).collect()
}

/// Checks every ratio cell of `document` from its second row on against its totals (see the module
/// docs), and every rate against its totals' growth over the rows' times (`rates.rs`).
pub fn check(document: &Document) -> Verdict {
    let columns = columns(document);
    let column = |set: &str, instance: &Option<String>, counter: &str| {
        columns.get(&(set.to_string(), instance.clone(), counter.to_string())).copied()
    };
    let mut verdict = Verdict::default();
    for (index, path) in document.paths.iter().enumerate() {
        let Some((set, instance, counter)) = split_path(path) else { continue };
        let Some(rule) = RULES.iter().find(|rule| rule.ratio == counter) else { continue };
        let (Some(numerator), Some(base)) =
            (column(&set, &instance, rule.numerator), column(&set, &instance, rule.base))
        else {
            continue;
        };
        // _Total's expected value sums the instances that count both sides (none for an instance).
        let sides: Vec<(usize, usize)> = if instance.as_deref() == Some("_Total") {
            columns
                .iter()
                .filter(|((other_set, other, name), _)| {
                    *other_set == set
                        && other.as_deref().is_some_and(|other| other != "_Total")
                        && name == rule.numerator
                })
                .filter_map(|((_, other, _), &n)| Some((n, column(&set, other, rule.base)?)))
                .collect()
        } else {
            Vec::new()
        };
        for (row, pair) in document.rows.windows(2).enumerate() {
            let [before, now] = pair else { continue };
            let delta = |at: usize| Some(now[at]? - before[at]?);
            let both =
                |&&(n, d): &&(usize, usize)| now[n].unwrap_or(0.0) > 0.0 && now[d].unwrap_or(0.0) > 0.0;
            let sum = |side: fn(&(usize, usize)) -> usize| {
                sides.iter().filter(both).try_fold(0.0, |sum, pair| Some(sum + delta(side(pair))?))
            };
            // An instance, or a CSV of `_Total` alone (no instances to sum): its own totals.
            let (n, d) =
                if sides.is_empty() { (delta(numerator), delta(base)) } else { (sum(|p| p.0), sum(|p| p.1)) };
            let (Some(n), Some(d)) = (n, d) else {
                verdict.violations.push(format!("{path}, sample {}: a total has no value", row + 2));
                continue;
            };
            let expected = if d == 0.0 { 0.0 } else { rule.scale * n / d };
            if d == 0.0 {
                verdict.idle += 1;
            }
            verdict.checked += 1;
            let Some(shown) = now[index] else {
                verdict.violations.push(format!(
                    "{path}, sample {}: no value, where the totals give {expected:.6} ({n} / {d})",
                    row + 2
                ));
                continue;
            };
            let allowed = match rule.bound {
                Bound::Relative(fraction) => fraction * expected.abs(),
                Bound::Absolute(points) => points,
            };
            if (shown - expected).abs() > allowed {
                verdict.violations.push(format!(
                    "{path}, sample {}: {shown:.6}, where the totals give {expected:.6} ({} x {n} / {d}), \
                     off by {:.6} (allowed {allowed:.6})",
                    row + 2,
                    rule.scale,
                    (shown - expected).abs()
                ));
            }
        }
    }
    rates::check(document, &columns, &mut verdict);
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = concat!(
        "\n",
        r#""(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\H\Hardware Counters(0,0)\% LLC Misses","\\H\Hardware Counters(0,0)\LLC Misses","\\H\Hardware Counters(0,0)\LLC References","\\H\Hardware Counters(_Total)\Instructions per Cycle","\\H\Hardware Counters(_Total)\Instructions Retired","\\H\Hardware Counters(_Total)\Unhalted Core Cycles""#,
        "\n",
        r#""01/01/1970 00:00:00.000"," ","100.000000","200.000000"," ","1000.000000","1000.000000""#,
        "\n",
        r#""01/01/1970 00:00:01.000","50.000000","200.000000","400.000000","0.500000","2000.000000","3000.000000""#,
        "\n",
        r#""01/01/1970 00:00:02.000","50.256000","300.000000","600.000000","0.500100","3000.000000","5000.000000""#,
        "\n"
    );

    #[test]
    fn parses_typeperf_csv() {
        let document = parse(CSV).unwrap();
        assert_eq!(document.paths.len(), 6);
        assert_eq!(document.rows.len(), 3);
        assert_eq!(document.rows[0][0], None);
        assert_eq!(document.rows[2][0], Some(50.256));
        assert_eq!(
            split_path(&document.paths[3]),
            Some(("Hardware Counters".into(), Some("_Total".into()), "Instructions per Cycle".into()))
        );
        assert_eq!(split_path(r"\\H\Hardware Counters Driver\PMU State").unwrap().1, None);
        assert!(parse("\n\"(PDH-CSV 4.0)\",\"\\\\H\\S\\C\"\n\"t\",\"x\"\n").is_err());
    }

    #[test]
    fn finds_ratios_off_their_totals() {
        let verdict = check(&parse(CSV).unwrap());
        assert_eq!(verdict.checked, 4);
        // Sample 3: % LLC Misses 50.256 for 100 / 200 (0.256 points off); IPC 0.5001 for 1000 / 2000
        // (2e-4 relative).
        assert_eq!(verdict.violations.len(), 2, "{:#?}", verdict.violations);
        assert!(verdict.violations[0].contains("% LLC Misses, sample 3"), "{:?}", verdict.violations);
        assert!(
            verdict.violations[1].contains("Instructions per Cycle, sample 3"),
            "{:?}",
            verdict.violations
        );
    }

    #[test]
    fn total_is_the_ratio_of_the_processors_counting_both_sides() {
        // Processor 0,1 counts misses but no references (an efficient core in the topdown profile).
        let csv = |total: &str| {
            let header = r#""(PDH-CSV 4.0)","\\H\Hardware Counters(0,0)\LLC Misses","\\H\Hardware Counters(0,0)\LLC References","\\H\Hardware Counters(0,1)\LLC Misses","\\H\Hardware Counters(0,1)\LLC References","\\H\Hardware Counters(_Total)\% LLC Misses","\\H\Hardware Counters(_Total)\LLC Misses","\\H\Hardware Counters(_Total)\LLC References""#;
            let first =
                r#""t","100.000000","200.000000","500.000000","0.000000"," ","600.000000","200.000000""#;
            let second =
                r#""t","200.000000","400.000000","900.000000","0.000000","TOTAL","1100.000000","400.000000""#;
            format!("\n{header}\n{first}\n{}\n", second.replace("TOTAL", total))
        };
        let verdict = check(&parse(&csv("50.000000")).unwrap());
        assert_eq!((verdict.checked, verdict.violations.len()), (1, 0), "{:?}", verdict.violations);
        // All misses over the references of one: what PCW's separate sums give.
        let verdict = check(&parse(&csv("250.000000")).unwrap());
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(
            verdict.violations[0].contains("where the totals give 50.000000"),
            "{:?}",
            verdict.violations
        );
    }
}
