//! Loom models of collects racing the ownership changes, over the fake platform: whatever the
//! interleaving, the HAL is asked once per session (the fake fails a second ownership), a collect
//! during a change reads nothing and waits for nothing, and no count goes backwards; and the memory
//! controller's poll racing a collect's read extends each reading once.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test --release --lib session::` (Makefile.toml's loom task).

use super::fake::*;
use super::*;
use loom::sync::Arc;
use loom::thread;

/// Explores every interleaving with up to two preemptions: the per-processor counts are loom atomics
/// too (src/pmu/fold.rs), so an unbounded search over four processors' reads does not end in test time;
/// the races that matter here need one preemption at the lock (Loom's documentation recommends a
/// bound of 2 or 3 for the same reason). One execution reads four processors' counters through those
/// atomics several times: more branches than loom's default allows.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.max_branches = 100_000;
    builder.check(f);
}

#[test]
fn collects_racing_to_acquire_own_the_counters_once() {
    model(|| {
        let client = Arc::new(skylake(&[]));
        let other = client.clone();
        let racer = thread::spawn(move || other.collect());
        client.collect();
        racer.join().unwrap();
        assert!(client.owns());
        assert_eq!(client.asked().len(), 1, "the HAL was asked twice");
        assert_eq!(client.state(), PmuState::Active as u32);
    });
}

#[test]
fn a_collect_racing_a_release_never_goes_backwards() {
    model(|| {
        let client = Arc::new(skylake(&[]));
        client.collect();
        client.set_msr(1, IA32_FIXED_CTR0, 4_000);
        client.collect();
        let before = client.values(1).instructions_retired;
        assert_eq!(before, 4_000);
        client.advance(3 * SECOND);
        let housekeeping = client.clone();
        let release = thread::spawn(move || housekeeping.tick());
        client.collect();
        release.join().unwrap();
        assert!(client.values(1).instructions_retired >= before, "a count went backwards");
        // Whoever came second decides: released and idle, or owned again by the collect.
        assert_eq!(client.owns(), client.state() == PmuState::Active as u32);
        assert!(client.asked().len() <= 2);
    });
}

#[test]
fn an_add_counter_racing_a_release_leaves_a_consistent_state() {
    model(|| {
        let client = Arc::new(skylake(&[]));
        client.collect();
        client.advance(3 * SECOND);
        let housekeeping = client.clone();
        let release = thread::spawn(move || housekeeping.tick());
        client.query_added();
        release.join().unwrap();
        assert_eq!(client.owns(), client.state() == PmuState::Active as u32);
        assert_eq!(client.status.block().counters_owned.load(Ordering::Relaxed) > 0, client.owns());
    });
}

#[test]
fn the_poll_racing_a_collect_extends_each_memory_reading_once() {
    use crate::pcw::memory_controller::MemorySource;
    model(|| {
        // Skylake's 32-bit reads counter, mapped, about to wrap: the housekeeping thread's poll and a
        // collect's fresh read race for the one reader's place; whoever loses reads nothing and is
        // served what the winner stores, so the wrap is counted once, never twice or not at all.
        let client = Arc::new(skylake_with_memory());
        client.platform.io.set(PAGE, 0x50, 0xFFFF_FFF0);
        client.memory_query_added();
        client.platform.io.set(PAGE, 0x50, 0x10);
        client.advance(SECOND);
        let housekeeping = client.clone();
        let poll = thread::spawn(move || housekeeping.tick());
        client.memory_refresh();
        client.memory_collect_done();
        poll.join().unwrap();
        // Either reader may have been the one; one more read publishes what the last one extended.
        client.advance(SECOND);
        client.memory_refresh();
        assert_eq!(client.memory_values(0).read_bytes, 0x20 * 64, "the wrap was counted once");
    });
}
