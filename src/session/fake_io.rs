//! A fake host bridge and memory controller pages for the session's host tests: the configuration
//! DWORDs a test chooses, pages whose counters a test sets, and a count of the mappings alive, so
//! a test sees what is mapped and when it is unmapped.

use super::platform::CounterPage;
use crate::imc::detect::HostBridge;
use crate::imc::models::{ControllerPage, PageCounter};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The device side: what configuration space reads, each page's raw counter values (by physical
/// page and offset), and the mappings made.
pub struct FakeIo {
    pub bridge: Mutex<HostBridge>,
    /// Raw register values by (physical page, offset in page); missing ones read 0.
    pub registers: Mutex<BTreeMap<(u64, u16), u64>>,
    /// Mappings alive.
    pub mapped: AtomicUsize,
    /// Mappings made since the start.
    pub maps: AtomicUsize,
    /// Host bridge reads since the start.
    pub bridge_reads: AtomicUsize,
    /// Whether MmMapIoSpaceEx fails.
    pub fail_maps: AtomicBool,
}

impl Default for FakeIo {
    fn default() -> Self {
        FakeIo {
            // No device: what PCI returns for a missing function.
            bridge: Mutex::new(HostBridge { id: u32::MAX, mchbar_low: u32::MAX, mchbar_high: u32::MAX }),
            registers: Mutex::new(BTreeMap::new()),
            mapped: AtomicUsize::new(0),
            maps: AtomicUsize::new(0),
            bridge_reads: AtomicUsize::new(0),
            fail_maps: AtomicBool::new(false),
        }
    }
}

impl FakeIo {
    pub fn read_host_bridge(&self) -> HostBridge {
        self.bridge_reads.fetch_add(1, Ordering::SeqCst);
        *self.bridge.lock().unwrap()
    }

    pub fn map(self: &Arc<Self>, page: &ControllerPage) -> Option<FakePage> {
        if self.fail_maps.load(Ordering::SeqCst) {
            return None;
        }
        self.mapped.fetch_add(1, Ordering::SeqCst);
        self.maps.fetch_add(1, Ordering::SeqCst);
        Some(FakePage { io: self.clone(), physical: page.physical, counters: page.counters })
    }

    /// Sets the register at `offset_in_page` of the page at `physical`.
    pub fn set(&self, physical: u64, offset_in_page: u16, value: u64) {
        self.registers.lock().unwrap().insert((physical, offset_in_page), value);
    }
}

/// A mapped page: reads its counters' registers, cut to their width.
pub struct FakePage {
    io: Arc<FakeIo>,
    physical: u64,
    counters: [Option<PageCounter>; crate::imc::models::MAX_COUNTERS],
}

impl CounterPage for FakePage {
    fn load(&self, index: usize) -> Option<u64> {
        let counter = self.counters.get(index).copied().flatten()?;
        let raw = self.io.registers.lock().unwrap().get(&(self.physical, counter.offset_in_page)).copied();
        let mask = if counter.width == 64 { u64::MAX } else { (1 << counter.width) - 1 };
        Some(raw.unwrap_or(0) & mask)
    }
}

impl Drop for FakePage {
    fn drop(&mut self) {
        self.io.mapped.fetch_sub(1, Ordering::SeqCst);
    }
}
