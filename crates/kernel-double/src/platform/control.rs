//! Test control of the memory controller: the traffic the model moves (per controller, per virtual
//! second), the truth it has moved so far, and what a register reads; the driver calls none of it.

use super::{Counter, current, mmio, traffic};

pub use mmio::Mapping;
pub use traffic::LINE_BYTES;

/// Bytes a controller has moved so far: whole 64-byte lines, as its counters count them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bytes {
    pub read: u64,
    pub write: u64,
}

/// The current platform's controllers (1 where it models no memory controller).
pub fn controllers() -> u32 {
    current().memory.map_or(1, |memory| memory.controllers)
}

/// Sets the whole machine's DRAM traffic from now on: `read_bytes_per_second` and
/// `write_bytes_per_second` of virtual time, split evenly between the controllers (the remainder on
/// controller 0).
pub fn set_traffic(read_bytes_per_second: u64, write_bytes_per_second: u64) {
    let count = u64::from(controllers());
    for controller in 0..count {
        let first = controller == 0;
        let part = |total: u64| total / count + if first { total % count } else { 0 };
        traffic::set_rates(controller as usize, part(read_bytes_per_second), part(write_bytes_per_second));
    }
}

/// Sets one controller's traffic from now on.
pub fn set_controller_traffic(controller: u32, read_bytes_per_second: u64, write_bytes_per_second: u64) {
    traffic::set_rates(controller as usize, read_bytes_per_second, write_bytes_per_second);
}

/// How the request counters (GT, IA, IO, where the layout has them) split the traffic: relative
/// parts for the cores, the graphics engine and I/O (by default all the cores').
pub fn set_request_shares(ia: u64, gt: u64, io: u64) {
    traffic::set_shares(ia, gt, io);
}

/// What controller `controller` has moved so far.
pub fn truth(controller: u32) -> Bytes {
    let (read, write) = traffic::lines(controller as usize);
    Bytes { read: read * LINE_BYTES, write: write * LINE_BYTES }
}

/// What every controller has moved so far.
pub fn total() -> Bytes {
    (0..controllers()).map(truth).fold(Bytes::default(), |sum, part| Bytes {
        read: sum.read + part.read,
        write: sum.write + part.write,
    })
}

/// What `counter`'s register of controller `controller` reads now (wrapped at its width), or `None`
/// where the platform's layout has no such register.
pub fn register(controller: u32, counter: Counter) -> Option<u64> {
    let memory = current().memory?;
    memory
        .registers
        .iter()
        .any(|register| register.counter == counter)
        .then(|| mmio::register_value(controller, counter, memory.width))
}

/// Every MmMapIoSpaceEx mapping still held.
pub fn mappings() -> Vec<Mapping> {
    mmio::mappings()
}
