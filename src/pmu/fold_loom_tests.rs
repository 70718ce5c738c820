//! Loom model of the read protocol: the counter hardware, the overflow interrupt and a DISPATCH_LEVEL
//! reader racing on one processor. Run (see fold.rs):
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --lib pmu::fold`
//!
//! The model:
//!
//! - **Hardware** (its own thread; it never waits for the processor): a 4-bit counter, preloaded 2
//!   events before its wrap and counting 3 events. The true count, the counter and its status bit are
//!   one atomic word and an event is one `fetch_add`, so the wrap and the status bit appear in one step
//!   (the documented hardware assumption).
//! - **Overflow interrupt** (its own thread): if the status bit is set, the HAL calls the handler
//!   ([`ProcessorCounters::fold`], the real code) with the status bits, then clears the status bit.
//!   Whatever it finds pending at the end is delivered after the threads join.
//! - **Reader** (the main thread): the real [`ProcessorCounters::read_extended`], twice.
//!
//! An interrupt runs between two instructions of the code it interrupts, never in the middle of one
//! and never half-way itself. The model enforces that with a mutex standing for "this processor": the
//! interrupt holds it for its whole run, the reader holds it all the time except at the interrupt
//! points its MSR-reading closures open, before and after each status read, which lie between every
//! two steps of an attempt (o1 | s1 | raw | s2 | o2). Between attempts the reader keeps no state, so
//! an interrupt there is the same as one before the attempt.
//!
//! Checked: every accepted value is the exact event count at the instant of its raw read (so never
//! above the count at the end of the read nor below the count at its start), the second read is not
//! below the first, and after the pending interrupt a quiet read is the final count. Two broken
//! protocols (no o1/o2 re-check; no second status read) must fail the same checks.
//!
//! Why every thread starts with a read-modify-write or a lock and never with a plain load: an earlier
//! version of this model whose hardware thread began with a load (a `fetch_update`) was "exhaustively"
//! checked in 81,000 schedules that missed the counterexample of the broken protocol without the
//! o1/o2 re-check, found with a preemption bound of 3; the same model with `fetch_add` has 14.6
//! million schedules unbounded. That matches loom issue #392 (github.com/tokio-rs/loom/issues/392,
//! "Atomic load makes threads not explore at all"): a thread whose first operation is an atomic load
//! can be skipped by its DPOR. The should-panic tests are what shows the exploration is not vacuous.

use super::*;
use crate::pmu::extend::counter_mask;
use loom::sync::atomic::AtomicU64;
use loom::sync::atomic::Ordering::SeqCst;
use loom::sync::{Arc, Mutex, MutexGuard};
use std::cell::{Cell, RefCell};

/// Counter width: 16 values, so the model's 3 events wrap once.
const W: u8 = 4;
/// Fixed counter 1; the session also owns GP counter 0, so the fold must find slot 1 by rank.
const BIT: u8 = 33;
const OWNED: u64 = (1 << 0) | (1 << BIT);
/// Hardware word: the true event count in bits 31..0 (raw = count mod 2^W) and the wraps the HAL has
/// cleared in bits 47..32; the status bit is set while the count's wraps exceed the cleared ones. So an
/// event (and with it a wrap and its status bit) is one `fetch_add`, and so is the HAL's clear.
const COUNT: u64 = 0xFFFF_FFFF;
const CLEARED: u64 = 1 << 32;
const START: u64 = (1 << W) - 2;
const EVENTS: u64 = 3;

fn status_set(word: u64) -> bool {
    let wraps = (word & COUNT) >> W;
    let cleared = word >> 32;
    assert!(wraps <= cleared + 1, "model outside its assumption: a second wrap while one is pending");
    wraps > cleared
}

struct Machine {
    counters: ProcessorCounters,
    hardware: AtomicU64,
    processor: Mutex<()>,
}

impl Machine {
    fn new() -> Self {
        Machine {
            counters: ProcessorCounters::new(),
            hardware: AtomicU64::new(START),
            processor: Mutex::new(()),
        }
    }

    fn owned() -> OwnedMask {
        OwnedMask::new(OWNED).unwrap()
    }

    /// One event: the counter increments; on a wrap the status bit is set in the same step.
    fn count_one(&self) {
        let before = self.hardware.fetch_add(1, SeqCst);
        status_set(before + 1);
    }

    /// The overflow interrupt, on this processor: the HAL reads the status, calls the handler with the
    /// set bits (plus an unowned one), then clears what it passed.
    fn interrupt(&self) {
        let _processor = self.processor.lock().unwrap();
        if status_set(self.hardware.load(SeqCst)) {
            self.counters.fold((1 << BIT) | (1 << 62), Self::owned());
            self.hardware.fetch_add(CLEARED, SeqCst);
        }
    }

    fn count(&self) -> u64 {
        self.hardware.load(SeqCst) & COUNT
    }
}

/// A read protocol under test: (overflows, status reader, raw reader) -> accepted value.
type Protocol = fn(&Machine, &mut dyn FnMut() -> u64, &mut dyn FnMut() -> u64) -> Option<u64>;

/// The real protocol.
fn real(machine: &Machine, status: &mut dyn FnMut() -> u64, raw: &mut dyn FnMut() -> u64) -> Option<u64> {
    let at = Placement { owned: Machine::owned(), bit: BIT, width: W };
    machine.counters.read_extended(at, 3, status, raw).ok().map(|read| read.value)
}

/// Broken: no o1/o2 re-check (only the status re-check).
fn without_overflow_recheck(
    machine: &Machine,
    status: &mut dyn FnMut() -> u64,
    raw: &mut dyn FnMut() -> u64,
) -> Option<u64> {
    let slot = Machine::owned().slot_of(BIT).unwrap();
    for _ in 0..3 {
        let o1 = machine.counters.overflows[slot].load(Ordering::Relaxed);
        let s1 = status() & (1 << BIT);
        let value = raw();
        let s2 = status() & (1 << BIT);
        if s1 == s2 {
            return Some(extend(o1, value, s1 != 0, W));
        }
    }
    None
}

/// Broken: `o1, status, raw, o2` (no second status read).
fn without_status_recheck(
    machine: &Machine,
    status: &mut dyn FnMut() -> u64,
    raw: &mut dyn FnMut() -> u64,
) -> Option<u64> {
    let slot = Machine::owned().slot_of(BIT).unwrap();
    for _ in 0..3 {
        let o1 = machine.counters.overflows[slot].load(Ordering::Relaxed);
        let s = status() & (1 << BIT);
        let value = raw();
        let o2 = machine.counters.overflows[slot].load(Ordering::Relaxed);
        if o1 == o2 {
            return Some(extend(o1, value, s != 0, W));
        }
    }
    None
}

/// One read by `protocol` on the processor (holding it except at the interrupt points); returns the
/// value and the true count at the accepted raw read.
fn read(machine: &Machine, protocol: Protocol) -> (u64, u64) {
    let held: RefCell<Option<MutexGuard<'_, ()>>> = RefCell::new(Some(machine.processor.lock().unwrap()));
    let interrupt_point = || {
        drop(held.borrow_mut().take());
        *held.borrow_mut() = Some(machine.processor.lock().unwrap());
    };
    let count_at_raw = Cell::new(u64::MAX);
    let mut status = || {
        interrupt_point();
        let word = machine.hardware.load(SeqCst);
        interrupt_point();
        // Status in IA32_PERF_GLOBAL_STATUS layout, with an unrelated bit always set.
        (1 << 62) | if status_set(word) { 1 << BIT } else { 0 }
    };
    let mut raw = || {
        let word = machine.hardware.load(SeqCst);
        count_at_raw.set(word & COUNT);
        word & counter_mask(W)
    };
    let value = protocol(machine, &mut status, &mut raw).expect("three attempts suffice in the model");
    drop(held.borrow_mut().take());
    (value, count_at_raw.get())
}

/// Explores the schedules of the model with `protocol` with at most 4 preemptions (about 290,000
/// schedules, 10 s); returns how many. `LOOM_MAX_PREEMPTIONS=n` sets another bound, and
/// `PMUPCW_LOOM_EXHAUSTIVE=1` removes it (14.6 million schedules, 9 minutes on 2 cores).
fn check(protocol: Protocol) -> usize {
    let schedules = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = if std::env::var_os("PMUPCW_LOOM_EXHAUSTIVE").is_some() {
        None
    } else {
        builder.preemption_bound.or(Some(4))
    };
    let counted = std::sync::Arc::clone(&schedules);
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let machine = Arc::new(Machine::new());
        let hardware = {
            let machine = Arc::clone(&machine);
            loom::thread::spawn(move || {
                for _ in 0..EVENTS {
                    machine.count_one();
                }
            })
        };
        let interrupt = {
            let machine = Arc::clone(&machine);
            loom::thread::spawn(move || machine.interrupt())
        };

        let (first, first_truth) = read(&machine, protocol);
        assert_eq!(
            first, first_truth,
            "read not exact: {first} reported, {first_truth} counted at the raw read"
        );
        let (second, second_truth) = read(&machine, protocol);
        assert_eq!(
            second, second_truth,
            "read not exact: {second} reported, {second_truth} counted at the raw read"
        );
        assert!(second >= first, "reads went backwards: {first} then {second}");

        hardware.join().unwrap();
        interrupt.join().unwrap();
        // The interrupt of a wrap the interrupt thread found not yet happened arrives now.
        machine.interrupt();
        let (last, truth) = read(&machine, real);
        assert_eq!((last, truth), (START + EVENTS, START + EVENTS));
        assert_eq!(machine.count(), START + EVENTS);
        assert_eq!(machine.counters.overflows(1), Some(1));
    });
    schedules.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn the_protocol_is_exact_and_monotonic() {
    let schedules = check(real);
    println!("{schedules} schedules explored");
    // Not a vacuous model: tens of thousands of interleavings of the three threads.
    assert!(schedules > 10_000, "{schedules}");
}

#[test]
#[should_panic(expected = "read not exact")]
fn without_the_overflow_recheck_loom_finds_a_wrong_read() {
    check(without_overflow_recheck);
}

#[test]
#[should_panic(expected = "read not exact")]
fn without_the_second_status_read_loom_finds_a_wrong_read() {
    check(without_status_recheck);
}
