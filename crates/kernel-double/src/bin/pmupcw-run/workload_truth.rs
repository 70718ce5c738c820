//! On the virtual clock the runner knows what every processor ran in each interval: each processor's
//! `Unhalted Core Cycles` in the CSV must have grown by exactly those cycles, sample after sample.
//! The ratio check alone holds for counts lost on both sides alike (a release in the middle of an
//! interval, a processor never programmed); this one does not.

use kernel_double::consumer::exactness::{self, Document};

/// The counter whose growth is compared, in the counterset that has an instance per processor.
const COUNTERSET: &str = "Hardware Counters";
const COUNTER: &str = "Unhalted Core Cycles";

/// Compares each processor's `Unhalted Core Cycles` between consecutive rows of `document` with
/// `expected(vp)`, the core cycles processor `vp` ran in every interval. Returns how many differences
/// were checked and a line for each one that is off.
pub(super) fn check(document: &Document, expected: impl Fn(u32) -> u64) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut off = Vec::new();
    for (column, path) in document.paths.iter().enumerate() {
        let Some((set, Some(instance), counter)) = exactness::split_path(path) else { continue };
        if set != COUNTERSET || counter != COUNTER {
            continue;
        }
        let Some(vp) = processor_index(&instance) else { continue };
        for (sample, pair) in document.rows.windows(2).enumerate() {
            checked += 1;
            let (Some(before), Some(after)) = (pair[0][column], pair[1][column]) else {
                off.push(format!("{path}, sample {}: no value", sample + 2));
                continue;
            };
            let grew = after - before;
            if grew != expected(vp) as f64 {
                off.push(format!(
                    "{path}, sample {}: grew by {grew}, the processor ran {}",
                    sample + 2,
                    expected(vp)
                ));
            }
        }
    }
    (checked, off)
}

/// The processor index of an instance named "group,number" (64 processors to a group).
fn processor_index(instance: &str) -> Option<u32> {
    let (group, number) = instance.split_once(',')?;
    Some(group.parse::<u32>().ok()? * 64 + number.parse::<u32>().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(values: &[[f64; 2]]) -> Document {
        Document {
            paths: vec![
                r"\\VM\Hardware Counters(0,0)\Unhalted Core Cycles".into(),
                r"\\VM\Hardware Counters(1,2)\Unhalted Core Cycles".into(),
                r"\\VM\Hardware Counters(_Total)\Unhalted Core Cycles".into(),
            ],
            rows: values.iter().map(|row| vec![Some(row[0]), Some(row[1]), Some(row[0] + row[1])]).collect(),
            stamps: values.iter().enumerate().map(|(second, _)| Some(second as f64)).collect(),
        }
    }

    #[test]
    fn every_processor_interval_is_compared_and_a_short_one_is_named() {
        let expected = |vp: u32| if vp == 0 { 10 } else { 66 };
        let (checked, off) = check(&document(&[[0.0, 0.0], [10.0, 66.0], [20.0, 132.0]]), expected);
        assert_eq!((checked, off.len()), (4, 0));
        let (_, off) = check(&document(&[[0.0, 0.0], [10.0, 66.0], [20.0, 100.0]]), expected);
        assert_eq!(off.len(), 1);
        assert!(off[0].contains("(1,2)") && off[0].contains("sample 3"), "{off:?}");
    }
}
