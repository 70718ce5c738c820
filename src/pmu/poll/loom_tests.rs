//! Loom model of polling: a timer poll (DISPATCH_LEVEL, the main thread) interrupted by a collect's
//! poll (IPI_LEVEL, another thread) on the same processor while the counter counts and wraps. Run:
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --lib pmu::poll`
//!
//! A mutex stands for the processor: the interrupting poll holds it for its
//! whole run; the timer poll holds it except at the interrupt points its raw-read closure opens (before
//! and after the read, i.e. between its state load, its raw read and its compare-exchange).
//! Checked: every poll returns the exact count at its raw read, the state only moves forward and never
//! past the true count, and a quiet poll at the end is exact; and a poll that reads the counter before
//! loading the state (the order Linux's x86_perf_event_update avoids) must fail.

use super::*;
use crate::pmu::extend::{advance, counter_mask};
use loom::sync::atomic::AtomicU64;
use loom::sync::atomic::Ordering::SeqCst;
use loom::sync::{Arc, Mutex};

const W: u8 = 4;
const START: u64 = (1 << W) - 2;
const EVENTS: u64 = 3;

/// A poll under test: (state, raw reader) -> the value it reports.
type Poller = fn(&PollCounters, &mut dyn FnMut() -> u64) -> u64;

/// The real poll.
fn real(polled: &PollCounters, raw: &mut dyn FnMut() -> u64) -> u64 {
    polled.poll(0, W, raw).unwrap()
}

/// Broken: the raw read before the state load, so an interrupting poll between them leaves a state
/// newer than the raw value.
fn raw_read_first(polled: &PollCounters, raw: &mut dyn FnMut() -> u64) -> u64 {
    let raw = raw();
    let previous = polled.extended[0].load(Ordering::Relaxed);
    let now = previous.wrapping_add(advance(previous, raw, W));
    let _ = polled.extended[0].compare_exchange(previous, now, Ordering::Relaxed, Ordering::Relaxed);
    now
}

struct Machine {
    cells: [AtomicU64; TABLE],
    count: AtomicU64,
    processor: Mutex<()>,
    poller: Poller,
}

impl Machine {
    /// Polls counter 0, checking the value against the count at the raw read.
    fn poll(&self, mut interrupt_point: impl FnMut()) -> u64 {
        let mut count_at_raw = 0;
        let polled = PollCounters::over(&self.cells);
        let value = (self.poller)(&polled, &mut || {
            interrupt_point();
            count_at_raw = self.count.load(SeqCst);
            interrupt_point();
            count_at_raw & counter_mask(W)
        });
        assert_eq!(value, count_at_raw, "poll not exact");
        let state = polled.last(0).unwrap();
        assert!(state <= self.count.load(SeqCst), "state ahead of the counter");
        value
    }
}

/// Explores every schedule of the model with `poller` (exhaustively: about 84,000); returns how many.
fn check(poller: Poller) -> usize {
    let schedules = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&schedules);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = None;
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let machine = Arc::new(Machine {
            cells: core::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(START),
            processor: Mutex::new(()),
            poller,
        });
        PollCounters::over(&machine.cells).start(0, START, W).unwrap();
        let hardware = {
            let machine = Arc::clone(&machine);
            loom::thread::spawn(move || {
                for _ in 0..EVENTS {
                    machine.count.fetch_add(1, SeqCst);
                }
            })
        };
        let collect = {
            let machine = Arc::clone(&machine);
            loom::thread::spawn(move || {
                let _processor = machine.processor.lock().unwrap();
                machine.poll(|| {})
            })
        };

        let mut held = Some(machine.processor.lock().unwrap());
        let before = PollCounters::over(&machine.cells).last(0).unwrap();
        let value = machine.poll(|| {
            drop(held.take());
            held = Some(machine.processor.lock().unwrap());
        });
        assert!(PollCounters::over(&machine.cells).last(0).unwrap() >= before, "state went backwards");
        drop(held);

        hardware.join().unwrap();
        let collected = collect.join().unwrap();
        assert!(value >= START && collected >= START);
        let last = machine.poll(|| {});
        assert_eq!(last, START + EVENTS);
        assert_eq!(PollCounters::over(&machine.cells).last(0), Some(START + EVENTS));
    });
    schedules.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn interrupted_polls_are_exact() {
    let schedules = check(real);
    println!("{schedules} schedules explored");
    assert!(schedules > 10_000, "{schedules}");
}

#[test]
#[should_panic(expected = "poll not exact")]
fn with_the_raw_read_first_loom_finds_a_wrong_poll() {
    check(raw_read_first);
}
