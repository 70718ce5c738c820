//! Loom models of collects racing for the fresh read (`cargo make loom`). In the driver any number
//! of threads run PcwCallbackCollectData at once, each with its own clock reading, and each asks
//! [`Throttle::fresh_due`] whether it reads every processor or is served from the last read; a
//! collect that found no session withdraws its grant while others ask.
//!
//! The properties: fresh reads are never closer than the interval (the bound on what consumers
//! cost); collects that all come past the interval are not all served from the old read (one of
//! them reads, the others are served from that read, which runs while they do); and a withdrawn
//! grant serves nobody after it while a later grant stays.

use super::*;
use loom::sync::Arc;
use loom::thread;

const MS: u64 = HUNDRED_NS_PER_MS;
const INTERVAL: u64 = DEFAULT_INTERVAL_MS as u64 * MS;

/// Collects at `readings` (one thread each): the fresh ones' clock readings.
fn collects(throttle: &Arc<Throttle>, readings: &[u64]) -> Vec<(u64, bool)> {
    let threads: Vec<_> = readings
        .iter()
        .map(|&now| {
            let throttle = throttle.clone();
            thread::spawn(move || (now, throttle.fresh_due(now)))
        })
        .collect();
    threads.into_iter().map(|thread| thread.join().unwrap()).collect()
}

#[test]
fn racing_collects_never_get_two_fresh_reads_within_the_interval() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new());
        // A fresh read at 100 ms, then three collects: two within one interval of each other, one
        // an interval later than the first.
        assert!(throttle.fresh_due(100 * MS));
        let outcomes = collects(&throttle, &[112 * MS, 115 * MS, 122 * MS]);
        let mut grants: Vec<u64> = outcomes.iter().filter(|(_, fresh)| *fresh).map(|(now, _)| *now).collect();
        grants.push(100 * MS);
        for (index, first) in grants.iter().enumerate() {
            for second in &grants[index + 1..] {
                assert!(
                    first.abs_diff(*second) >= INTERVAL,
                    "fresh reads at {first} and {second}: {outcomes:?}"
                );
            }
        }
        // Every collect comes 12 ms or more after the last fresh read: one served is served from
        // the fresh read of a collect racing it, never from the read older than the interval.
        assert!(grants.len() >= 2, "every collect was served from the read at 100 ms: {outcomes:?}");
    });
}

#[test]
fn a_withdrawn_grant_serves_nobody_and_a_later_grant_stays() {
    loom::model(|| {
        // Collect A is granted a fresh read at 100 ms but finds no session and withdraws, while
        // collect B asks at 103 ms (within A's interval) or 115 ms (past it).
        for b_reading in [103 * MS, 115 * MS] {
            let throttle = Arc::new(Throttle::new());
            let a = {
                let throttle = throttle.clone();
                thread::spawn(move || {
                    let granted = throttle.fresh_due(100 * MS);
                    if granted {
                        throttle.withdraw(100 * MS);
                    }
                    granted
                })
            };
            let b_fresh = throttle.fresh_due(b_reading);
            let a_fresh = a.join().unwrap();
            // Whatever the order, the next collect, 1 ms after B, is served if and only if B's read
            // (which happened) is within the interval: A's withdrawn grant serves nobody.
            let next_fresh = throttle.fresh_due(b_reading + MS);
            assert_eq!(next_fresh, !b_fresh, "A fresh {a_fresh}, B at {b_reading} fresh {b_fresh}");
        }
    });
}
