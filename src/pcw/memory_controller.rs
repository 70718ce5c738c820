//! The "Memory Controller" counterset: one instance per memory controller the source detected,
//! named `package,controller` (id `package * 64 + controller`), whose counters are the controller's
//! DRAM byte totals and request counts; perflib sums them into `_Total`. Where the source maps
//! nothing (Hardware Counters Driver\Memory Controller State says why) it has no instance.
//!
//! Pure like [`super::hardware_counters`]: the values come from a [`MemorySource`], the memory
//! controller source in the driver.

use super::query::{AddInstanceFailed, CountersetCallback, InstanceSink, Query};
use crate::counters::memory_controller::{Counterset, Values};
use crate::text::ascii_to_utf16;

/// Where the Memory Controller blocks come from: the client's memory controller source.
pub trait MemorySource: Sync {
    /// Reads every controller (or, within the minimum collect interval of the last read, leaves the
    /// blocks as it left them), once per collect, before [`MemorySource::memory_values`]; maps the
    /// controllers' pages first if nothing is mapped.
    fn memory_refresh(&self);
    /// The collect that [`MemorySource::memory_refresh`] began has handed every instance to PCW.
    fn memory_collect_done(&self);
    /// A consumer added counters of the counterset (AddCounter).
    fn memory_query_added(&self);
    /// The controllers detected (0 where none may be mapped), all of package 0: the client
    /// processors the source supports have one package.
    fn memory_controllers(&self) -> u8;
    /// Controller `index`'s block as of the last read.
    fn memory_values(&self, index: usize) -> Values;
}

/// Each controller's instance name, by index: package 0.
const NAMES: [&[u16]; 2] = [&ascii_to_utf16(b"0,0"), &ascii_to_utf16(b"0,1")];

/// The counterset's callback state.
pub struct MemoryControllerCounters<S> {
    source: S,
    upcase: fn(u16) -> u16,
}

impl<S: MemorySource> MemoryControllerCounters<S> {
    pub fn new(source: S, upcase: fn(u16) -> u16) -> Self {
        MemoryControllerCounters { source, upcase }
    }

    /// The (index, id, name) of every controller `query` selects.
    fn selected<'q>(&'q self, query: &Query<'q>) -> impl Iterator<Item = (usize, u32, &'static [u16])> + 'q {
        let (query, upcase) = (*query, self.upcase);
        let controllers = usize::from(self.source.memory_controllers()).min(NAMES.len());
        (0..controllers)
            .map(|index| (index, index as u32, NAMES[index]))
            .filter(move |&(_, id, name)| query.selects(id, name, upcase))
    }
}

impl<S: MemorySource> CountersetCallback for MemoryControllerCounters<S> {
    type Counterset = Counterset;

    fn counter_added(&self, _counter_mask: u64) {
        self.source.memory_query_added();
    }

    fn counter_removed(&self, _counter_mask: u64) {}

    fn enumerate<K: InstanceSink<Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed> {
        for (_, id, name) in self.selected(query) {
            sink.add(name, id, None)?;
        }
        Ok(())
    }

    fn collect<K: InstanceSink<Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed> {
        self.source.memory_refresh();
        let added = self.selected(query).try_for_each(|(index, id, name)| {
            let mut values = self.source.memory_values(index);
            values.clear_unrequested(query.counter_mask);
            sink.add(name, id, Some(&values))
        });
        self.source.memory_collect_done();
        added
    }
}
