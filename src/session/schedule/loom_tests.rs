//! Loom models of the activity schedule (`cargo make loom`): in the driver, collects update it on
//! any number of threads while the housekeeping thread reads it to decide when to release the
//! counters, and a collect above PASSIVE_LEVEL hands an acquisition to that thread and wakes it.
//!
//! The properties: once the housekeeping thread has seen a collect as running, it never finds the
//! counters due for release before the idle limit from that collect's end (no moment where the
//! collect counts neither as running nor as activity); activity never moves back when collects
//! finish out of order; and a deferred acquisition is never lost between the hand-over and the wake.

use super::*;
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

const S: u64 = 10_000_000;

#[test]
fn a_collect_seen_running_holds_off_the_release_until_the_idle_limit_after_its_end() {
    loom::model(|| {
        let schedule = Arc::new(Schedule::new());
        // A collect that starts at 9 s and ends at 11.5 s, while the housekeeping thread checks the
        // release at 11.6 s, twice (as `tick` checks before and under the session lock).
        let collect = {
            let schedule = schedule.clone();
            thread::spawn(move || {
                schedule.collect_started(9 * S);
                schedule.collect_ended(11 * S + S / 2);
            })
        };
        let now = 11 * S + 6 * S / 10;
        let first = schedule.until_release(now);
        let second = schedule.until_release(now);
        collect.join().unwrap();
        // 0 only before the collect started (no activity at all); once it is seen, the counters
        // stay owned for the hysteresis from its end.
        if first != 0 {
            assert!(
                second >= RELEASE_HYSTERESIS_100NS - S / 10,
                "released {second} after seeing the collect"
            );
        }
        assert_eq!(schedule.until_release(now), RELEASE_HYSTERESIS_100NS - S / 10);
    });
}

#[test]
fn activity_never_moves_back_when_collects_end_out_of_order() {
    loom::model(|| {
        let schedule = Arc::new(Schedule::new());
        // Two collects read the clock at 10 s and 11 s; either may store first.
        let threads: Vec<_> = [10 * S, 11 * S]
            .into_iter()
            .map(|now| {
                let schedule = schedule.clone();
                thread::spawn(move || {
                    schedule.collect_started(now);
                    schedule.collect_ended(now);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        // The idle time counts from the later collect, whatever the order (the idle limit depends
        // on it: the interval between the two is 1 s, or 0 when the later clock reading came first).
        assert_eq!(schedule.idle_limit() - schedule.until_release(12 * S), S, "idle since the 10 s collect");
    });
}

/// The housekeeping thread's wake event: a synchronization event (KeSetEvent / KeWaitForSingleObject;
/// Microsoft Learn, "KeInitializeEvent function": a SynchronizationEvent resets when it satisfies a
/// wait), set by a wake whether or not the thread waits yet.
#[derive(Default)]
struct Event {
    signalled: Mutex<bool>,
    waiters: Condvar,
}

impl Event {
    fn set(&self) {
        *self.signalled.lock().unwrap() = true;
        self.waiters.notify_one();
    }

    fn wait(&self) {
        let mut signalled = self.signalled.lock().unwrap();
        while !*signalled {
            signalled = self.waiters.wait(signalled).unwrap();
        }
        *signalled = false;
    }
}

#[test]
fn a_deferred_acquisition_is_never_lost_between_the_hand_over_and_the_wake() {
    loom::model(|| {
        let schedule = Arc::new(Schedule::new());
        let event = Arc::new(Event::default());
        // A collect above PASSIVE_LEVEL hands the acquisition over as PmuClient::demand does: the
        // deferral, then the wake.
        let collect = {
            let (schedule, event) = (schedule.clone(), event.clone());
            thread::spawn(move || {
                schedule.defer_acquire();
                event.set();
            })
        };
        // The housekeeping thread: `next_tick` sleeps unless an acquisition was handed over, `tick`
        // takes it. A lost hand-over leaves it asleep for ever, which loom reports as a deadlock.
        let mut acquisitions = 0;
        while acquisitions == 0 {
            if !schedule.acquire_deferred() {
                event.wait();
            }
            if schedule.take_deferred() {
                acquisitions += 1;
            }
        }
        collect.join().unwrap();
        assert_eq!(acquisitions, 1);
    });
}
