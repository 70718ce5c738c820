//! The runner sets the memory controllers' traffic and the kernel's clock, so it knows what each
//! controller moved between two samples: every `Memory Controller` instance's DRAM byte totals must
//! have grown by exactly that, and its rates be that over the interval, `_Total` the sum of all.
//! The ratio check cannot see a total that lost bytes (a wrap missed between two polls), because the
//! rate beside it loses them too.

use kernel_double::consumer::exactness::{self, Document};
use kernel_double::control::hal;
use kernel_double::control::memory::{self, Bytes};

const COUNTERSET: &str = "Memory Controller";
/// A rate within this fraction of the truth: the CSV prints six decimals of bytes a second.
const RATE_BOUND: f64 = 1e-9;

/// What every controller had moved when Memory Controller was sampled, and the clock then (seconds).
pub(super) struct Moved {
    controllers: Vec<Bytes>,
    total: Bytes,
    seconds: f64,
}

impl Moved {
    /// Right after the sample: the clock stands still while the runner samples, so this is what the
    /// collect read, at the time PDH divides its rates by.
    pub(super) fn now() -> Moved {
        Moved {
            controllers: (0..memory::controllers()).map(memory::truth).collect(),
            total: memory::total(),
            seconds: hal::clock() as f64 / hal::PERFORMANCE_FREQUENCY as f64,
        }
    }

    /// The bytes of `instance` ("0,c" or `_Total`), if the platform has it.
    fn of(&self, instance: &str) -> Option<Bytes> {
        if instance == "_Total" {
            return Some(self.total);
        }
        let controller = instance.strip_prefix("0,")?.parse::<usize>().ok()?;
        self.controllers.get(controller).copied()
    }
}

/// What `counter` must have shown over an interval of `seconds` in which `read` and `write` bytes
/// moved, or `None` for a counter this check does not cover (the request counts).
fn expected(counter: &str, read: u64, write: u64, seconds: f64) -> Option<f64> {
    Some(match counter {
        "DRAM Read Bytes" => read as f64,
        "DRAM Write Bytes" => write as f64,
        "DRAM Read Bytes/sec" => read as f64 / seconds,
        "DRAM Write Bytes/sec" => write as f64 / seconds,
        "DRAM Bytes/sec" => (read + write) as f64 / seconds,
        _ => return None,
    })
}

/// Compares every Memory Controller DRAM column of `document` between consecutive rows with what
/// `moved` says moved between them (`moved[i]` taken with row `i`) in the time between them.
/// Returns how many values were checked, how many had no value in either row (no instance: `_Total`
/// of none) and a line for each one that is off.
pub(super) fn check(document: &Document, moved: &[Moved]) -> (usize, usize, Vec<String>) {
    let mut checked = 0;
    let mut absent = 0;
    let mut off = Vec::new();
    for (column, path) in document.paths.iter().enumerate() {
        let Some((set, Some(instance), counter)) = exactness::split_path(path) else { continue };
        if set != COUNTERSET || expected(&counter, 0, 0, 1.0).is_none() {
            continue;
        }
        for (index, pair) in document.rows.windows(2).enumerate() {
            let sample = index + 2;
            let (Some(before), Some(after)) = (moved[index].of(&instance), moved[index + 1].of(&instance))
            else {
                off.push(format!("{path}: an instance the platform does not have"));
                break;
            };
            let rate = counter.ends_with("/sec");
            let shown = match (pair[0][column], pair[1][column]) {
                (_, Some(shown)) if rate => shown,
                (Some(first), Some(second)) => second - first,
                (None, None) => {
                    absent += 1;
                    continue;
                }
                _ => {
                    off.push(format!("{path}, sample {sample}: no value"));
                    continue;
                }
            };
            let seconds = moved[index + 1].seconds - moved[index].seconds;
            let truth = expected(&counter, after.read - before.read, after.write - before.write, seconds);
            let truth = truth.unwrap_or_default();
            checked += 1;
            let allowed = if rate { RATE_BOUND * truth } else { 0.0 };
            if (shown - truth).abs() > allowed {
                off.push(format!("{path}, sample {sample}: {shown:.6}, the traffic model moved {truth:.6}"));
            }
        }
    }
    (checked, absent, off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `read` and `write` bytes moved by `seconds`, half on each of two controllers.
    fn moved(read: u64, write: u64, seconds: f64) -> Moved {
        let half = Bytes { read: read / 2, write: write / 2 };
        Moved { controllers: vec![half, half], total: Bytes { read, write }, seconds }
    }

    fn document(rows: &[[f64; 4]]) -> Document {
        Document {
            paths: [
                r"\\VM\Memory Controller(0,0)\DRAM Read Bytes",
                r"\\VM\Memory Controller(0,1)\DRAM Write Bytes",
                r"\\VM\Memory Controller(_Total)\DRAM Bytes/sec",
                r"\\VM\Memory Controller(_Total)\GT Requests/sec",
            ]
            .map(String::from)
            .to_vec(),
            rows: rows.iter().map(|row| row.iter().map(|&value| Some(value)).collect()).collect(),
            stamps: rows.iter().enumerate().map(|(second, _)| Some(second as f64)).collect(),
        }
    }

    #[test]
    fn totals_and_rates_are_compared_with_what_moved() {
        let traffic = [moved(0, 0, 10.0), moved(2000, 1000, 12.0), moved(4000, 2000, 14.0)];
        let rows = [[0.0, 0.0, 0.0, 0.0], [1000.0, 500.0, 1500.0, 7.0], [2000.0, 1000.0, 1500.0, 7.0]];
        let (checked, absent, off) = check(&document(&rows), &traffic);
        assert_eq!((checked, absent, off.len()), (6, 0, 0), "{off:?}");
        // A wrap lost on controller 0 between samples 2 and 3, and a rate off.
        let rows = [[0.0, 0.0, 0.0, 0.0], [1000.0, 500.0, 1500.0, 7.0], [1936.0, 1000.0, 1400.0, 7.0]];
        let (_, _, off) = check(&document(&rows), &traffic);
        assert_eq!(off.len(), 2, "{off:?}");
        assert!(off[0].contains("(0,0)\\DRAM Read Bytes, sample 3: 936"), "{off:?}");
        assert!(off[1].contains("DRAM Bytes/sec, sample 3: 1400"), "{off:?}");
    }

    #[test]
    fn an_instance_the_platform_lacks_is_named() {
        let one = Moved { controllers: vec![Bytes::default()], total: Bytes::default(), seconds: 0.0 };
        let (_, _, off) = check(&document(&[[0.0; 4], [1.0; 4]]), &[one, moved(2, 2, 1.0)]);
        assert!(off.iter().any(|line| line.contains("(0,1)") && line.contains("does not have")), "{off:?}");
    }
}
