//! The rates beside the totals: a `/sec` counter (`perf_counter_bulk_count`) must show its total's
//! growth over the time between the two rows, for every instance and `_Total`, and `DRAM Bytes/sec`
//! the growth of the read and write totals together. The rows' times are typeperf's timestamps,
//! to the millisecond: the bound is that resolution (a millisecond over the interval, relative).

use super::{Columns, Document, Verdict, split_path};

/// The rates that are not named after one total: (rate, the totals it sums).
const SUMS: &[(&str, &[&str])] = &[("DRAM Bytes/sec", &["DRAM Read Bytes", "DRAM Write Bytes"])];

/// The totals `counter` is the rate of, if it is a rate of totals the document has.
fn totals_of(counter: &str) -> Option<Vec<String>> {
    if let Some((_, totals)) = SUMS.iter().find(|(rate, _)| *rate == counter) {
        return Some(totals.iter().map(|total| total.to_string()).collect());
    }
    Some(vec![counter.strip_suffix("/sec")?.to_string()])
}

/// Adds to `verdict` every rate cell of `document` (whose `columns` these are) that has its totals
/// beside it.
pub(super) fn check(document: &Document, columns: &Columns, verdict: &mut Verdict) {
    for (index, path) in document.paths.iter().enumerate() {
        let Some((set, instance, counter)) = split_path(path) else { continue };
        let Some(totals) = totals_of(&counter) else { continue };
        let Some(totals) = totals
            .iter()
            .map(|total| columns.get(&(set.clone(), instance.clone(), total.clone())).copied())
            .collect::<Option<Vec<usize>>>()
        else {
            continue;
        };
        for (row, pair) in document.rows.windows(2).enumerate() {
            let sample = row + 2;
            let seconds = match (document.stamps[row], document.stamps[row + 1]) {
                (Some(before), Some(after)) if after > before => after - before,
                _ => {
                    verdict.violations.push(format!("{path}, sample {sample}: no time between the rows"));
                    continue;
                }
            };
            let grew =
                totals.iter().try_fold(0.0, |sum, &total| Some(sum + pair[1][total]? - pair[0][total]?));
            let (Some(grew), Some(shown)) = (grew, pair[1][index]) else {
                // No instance to aggregate: `_Total` has no rate (PDH_CSTATUS_NO_INSTANCE), and where
                // nothing moved there is nothing to show.
                if !matches!((grew, pair[1][index]), (None | Some(0.0), None)) {
                    verdict.violations.push(format!("{path}, sample {sample}: a value is missing"));
                }
                continue;
            };
            verdict.rates += 1;
            let expected = grew / seconds;
            let allowed = expected.abs() * 0.001 / seconds + 1e-6;
            if (shown - expected).abs() > allowed {
                verdict.violations.push(format!(
                    "{path}, sample {sample}: {shown:.6}, where the totals grew by {grew} in {seconds:.3} s \
                     ({expected:.6} a second)"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{columns, parse};
    use super::*;

    fn check_all(document: &Document, verdict: &mut Verdict) {
        check(document, &columns(document), verdict);
    }

    #[test]
    fn rates_are_their_totals_growth_over_the_rows_times() {
        let header = r#""(PDH-CSV 4.0)","\\H\Memory Controller(0,0)\DRAM Read Bytes/sec","\\H\Memory Controller(0,0)\DRAM Bytes/sec","\\H\Memory Controller(0,0)\DRAM Read Bytes","\\H\Memory Controller(0,0)\DRAM Write Bytes","\\H\Memory Controller(0,0)\GT Requests/sec""#;
        let first = r#""01/01/1970 00:00:00.000"," "," ","1000.000000","0.000000"," ""#;
        let csv = |rate: &str| {
            let second =
                r#""01/01/1970 00:00:02.000","RATE","1500.000000","3000.000000","1000.000000","9.0""#;
            format!("\n{header}\n{first}\n{}\n", second.replace("RATE", rate))
        };
        let mut verdict = Verdict::default();
        check_all(&parse(&csv("1000.000000")).unwrap(), &mut verdict);
        assert_eq!((verdict.rates, verdict.violations.len()), (2, 0), "{:?}", verdict.violations);
        let mut verdict = Verdict::default();
        check_all(&parse(&csv("1002.000000")).unwrap(), &mut verdict);
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(verdict.violations[0].contains("DRAM Read Bytes/sec, sample 2"), "{:?}", verdict.violations);
    }
}
