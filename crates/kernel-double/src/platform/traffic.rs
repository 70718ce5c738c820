//! The memory controller's traffic model: DRAM read and write bytes per virtual second for each
//! controller, integrated over the double's clock (KeQueryPerformanceCounter's 10 MHz, which tests move
//! with `control::hal::advance_clock`), so a 10-minute virtual sample at 60 GB/s crosses a 32-bit
//! counter's wrap (2^32 x 64 bytes = 256 GiB) several times.
//!
//! DRAM moves whole 64-byte lines, and a counter counts lines: after t ticks at r bytes per second a
//! controller has moved floor(r x t / (64 x 10^7)) lines, kept exactly (byte-ticks in u128 across rate
//! changes). What each counter reads is `count` modulo 2^width ([`super::mmio`]).

use super::Counter;
use crate::poison::IgnorePoison;
use std::sync::Mutex;

/// Clock ticks per second (`crate::exports::hal::PERFORMANCE_FREQUENCY`).
const TICKS_PER_SECOND: u128 = 10_000_000;
/// Bytes per count.
pub const LINE_BYTES: u64 = 64;
/// Controllers the model keeps (the most any layout has).
pub const MAX_CONTROLLERS: usize = 2;

/// One direction of one controller: its rate and the byte-ticks it moved before the last change.
#[derive(Clone, Copy)]
struct Flow {
    bytes_per_second: u64,
    byte_ticks: u128,
}

impl Flow {
    const IDLE: Flow = Flow { bytes_per_second: 0, byte_ticks: 0 };

    fn byte_ticks_at(&self, elapsed: u128) -> u128 {
        self.byte_ticks + u128::from(self.bytes_per_second) * elapsed
    }

    fn lines_at(&self, elapsed: u128) -> u64 {
        (self.byte_ticks_at(elapsed) / (u128::from(LINE_BYTES) * TICKS_PER_SECOND)) as u64
    }
}

struct State {
    /// The clock reading the flows' byte-ticks run up to (`None` before the first change).
    since: Option<i64>,
    /// [read, write] per controller.
    flows: [[Flow; 2]; MAX_CONTROLLERS],
    /// How requests split between the cores, the graphics engine and I/O (parts of the whole).
    shares: [u64; 3],
}

static STATE: Mutex<State> =
    Mutex::new(State { since: None, flows: [[Flow::IDLE; 2]; MAX_CONTROLLERS], shares: [1, 0, 0] });

fn now() -> i64 {
    crate::exports::ke::interrupt_time()
}

impl State {
    /// Ticks since `since` at clock reading `at`.
    fn elapsed(&self, at: i64) -> u128 {
        self.since.map_or(0, |since| (at - since).max(0) as u128)
    }

    /// Folds what every flow moved up to `at` into its byte-ticks, so a rate change applies from `at`.
    fn fold(&mut self, at: i64) {
        let elapsed = self.elapsed(at);
        for flow in self.flows.iter_mut().flatten() {
            flow.byte_ticks = flow.byte_ticks_at(elapsed);
        }
        self.since = Some(at);
    }
}

/// Sets controller `controller`'s read and write rates (bytes per virtual second) from now on.
pub(crate) fn set_rates(controller: usize, read_bytes_per_second: u64, write_bytes_per_second: u64) {
    assert!(controller < MAX_CONTROLLERS, "controller {controller} of at most {MAX_CONTROLLERS}");
    let mut state = STATE.lock().ignore_poison();
    state.fold(now());
    state.flows[controller][0].bytes_per_second = read_bytes_per_second;
    state.flows[controller][1].bytes_per_second = write_bytes_per_second;
}

/// Sets the split of requests between cores, graphics and I/O (relative parts, not all zero).
pub(crate) fn set_shares(ia: u64, gt: u64, io: u64) {
    assert!(ia + gt + io > 0, "the request shares cannot all be zero");
    STATE.lock().ignore_poison().shares = [ia, gt, io];
}

/// (read, write) lines controller `controller` has moved so far.
pub(crate) fn lines(controller: usize) -> (u64, u64) {
    let state = STATE.lock().ignore_poison();
    let elapsed = state.elapsed(now());
    let [read, write] = &state.flows[controller];
    (read.lines_at(elapsed), write.lines_at(elapsed))
}

/// What `counter` of controller `controller` has counted so far, unwrapped.
pub(crate) fn count(controller: usize, counter: Counter) -> u64 {
    let (read, write) = lines(controller);
    let total = read + write;
    let shares = STATE.lock().ignore_poison().shares;
    let share =
        |part: u64| (u128::from(total) * u128::from(part) / u128::from(shares.iter().sum::<u64>())) as u64;
    match counter {
        Counter::DataReads => read,
        Counter::DataWrites => write,
        Counter::DataTotal => total,
        Counter::IaRequests => share(shares[0]),
        Counter::GtRequests => share(shares[1]),
        Counter::IoRequests => share(shares[2]),
    }
}
