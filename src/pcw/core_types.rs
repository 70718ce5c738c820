//! The "Hardware Counters by Core Type" counterset: one instance per kind of core the machine has,
//! whose counters sum the processors of that kind.
//!
//! * Id: the core type, as the Core Type counters show it: 0 on a processor that is not hybrid, 1 for
//!   performance cores, 2 for efficient cores.
//! * Name: `All`, `Performance`, `Efficient`. Only the kinds some processor is are instances, so a
//!   uniform machine has the one instance `All` and a hybrid one `Performance` and `Efficient`.
//!
//! Pure like [`super::hardware_counters`]: the sums come from the same [`CountSource`].

use super::hardware_counters::{CountSource, collect_refreshed};
use super::query::{AddInstanceFailed, CountersetCallback, InstanceSink, Query};
use crate::counters::hardware_counters_by_core_type::Counterset;
use crate::text::ascii_to_utf16;

/// Each core type's instance name, indexed by its id.
const NAMES: [&[u16]; 3] =
    [&ascii_to_utf16(b"All"), &ascii_to_utf16(b"Performance"), &ascii_to_utf16(b"Efficient")];

/// The counterset's callback state: the source of the counts, which also knows each processor's
/// core type.
pub struct CoreTypeCounters<S> {
    source: S,
    upcase: fn(u16) -> u16,
}

impl<S: CountSource> CoreTypeCounters<S> {
    pub fn new(source: S, upcase: fn(u16) -> u16) -> Self {
        CoreTypeCounters { source, upcase }
    }

    /// The (id, name) of every core type some processor is, that `query` selects.
    fn selected<'q>(&'q self, query: &Query<'q>) -> impl Iterator<Item = (u8, &'static [u16])> + 'q {
        let (query, upcase) = (*query, self.upcase);
        (0u8..).zip(NAMES).filter(move |&(core_type, name)| {
            self.source.has_core_type(core_type) && query.selects(u32::from(core_type), name, upcase)
        })
    }
}

impl<S: CountSource> CountersetCallback for CoreTypeCounters<S> {
    type Counterset = Counterset;

    fn counter_added(&self, _counter_mask: u64) {
        self.source.query_added();
    }

    fn counter_removed(&self, _counter_mask: u64) {}

    fn enumerate<K: InstanceSink<Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed> {
        for (core_type, name) in self.selected(query) {
            sink.add(name, u32::from(core_type), None)?;
        }
        Ok(())
    }

    fn collect<K: InstanceSink<Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed> {
        collect_refreshed(&self.source, || {
            self.selected(query).try_for_each(|(core_type, name)| {
                let mut values = self.source.core_type_values(core_type);
                values.clear_unrequested(query.counter_mask);
                sink.add(name, u32::from(core_type), Some(&values))
            })
        })
    }
}

#[cfg(test)]
mod tests;
