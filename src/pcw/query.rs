//! What a PCW consumer asks for, and where the provider puts its answer: the safe form of
//! PCW_MASK_INFORMATION that the kernel boundary (kernel/pcw.rs) builds for every Enumerate and
//! Collect callback.

use super::wildcard;

/// PCW_ANY_INSTANCE_ID: the consumer wants every instance.
pub const ANY_INSTANCE_ID: u32 = 0xFFFF_FFFF;

/// One Enumerate or Collect request.
#[derive(Clone, Copy, Debug)]
pub struct Query<'a> {
    /// Bit `i` set: the consumer reads counter id `i`. Counters it does not read may be left 0.
    pub counter_mask: u64,
    /// The instance-name wildcard (`*`, `?`, case-insensitive), as UTF-16 code units; `None` when the
    /// consumer passed no mask, which means every instance.
    pub instance_mask: Option<&'a [u16]>,
    /// Only this instance id, unless it is [`ANY_INSTANCE_ID`].
    pub instance_id: u32,
}

impl Query<'_> {
    /// A query for everything: every counter of every instance.
    #[cfg(test)]
    pub const ALL: Query<'static> =
        Query { counter_mask: u64::MAX, instance_mask: None, instance_id: ANY_INSTANCE_ID };

    /// Whether every instance is asked for: any id, and no mask or the mask `*` (what PDH passes for a
    /// wildcard query). Lets a provider skip the per-instance match.
    pub fn selects_every_instance(&self) -> bool {
        self.instance_id == ANY_INSTANCE_ID && matches!(self.instance_mask, None | Some([0x2A]))
    }

    /// Whether the instance `id` named `name` is one the consumer asked for.
    pub fn selects(&self, id: u32, name: &[u16], upcase: impl Fn(u16) -> u16) -> bool {
        if self.instance_id != ANY_INSTANCE_ID && self.instance_id != id {
            return false;
        }
        wildcard::matches_optional(self.instance_mask, name, upcase)
    }
}

/// Why an instance could not be handed to PCW: the NTSTATUS PcwAddInstance returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddInstanceFailed(pub i32);

use super::{Counterset, CountersetBlock};

/// Where a provider puts the instances of counterset `S` it reports: PcwAddInstance in the driver, a
/// recorder in tests. Only `S`'s data block can be added.
pub trait InstanceSink<S: Counterset> {
    /// Adds one instance. `data` is `None` for an Enumerate request, where PCW needs only names and
    /// ids (PcwAddInstance with Count 0 and no data).
    fn add(&mut self, name: &[u16], id: u32, data: Option<&S::Values>) -> Result<(), AddInstanceFailed>;

    /// Adds one instance with counter data `block`, which may be an atomic block that is being
    /// updated meanwhile: PcwAddInstance copies it as it is (a sink that keeps values loads them).
    fn add_block<B: CountersetBlock<Counterset = S>>(
        &mut self,
        name: &[u16],
        id: u32,
        block: &B,
    ) -> Result<(), AddInstanceFailed> {
        self.add(name, id, Some(&block.values()))
    }
}

/// A counterset's answer to PCW's four callback types.
pub trait CountersetCallback: Sync {
    /// The counterset answered: its name and descriptors are what gets registered with this callback,
    /// and its block is all the callback can report.
    type Counterset: Counterset;
    /// PcwCallbackAddCounter: a consumer started reading counters of this counterset.
    fn counter_added(&self, counter_mask: u64);
    /// PcwCallbackRemoveCounter: a consumer stopped reading counters of this counterset.
    fn counter_removed(&self, counter_mask: u64);
    /// PcwCallbackEnumerateInstances: report the matching instances' names and ids.
    fn enumerate<K: InstanceSink<Self::Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed>;
    /// PcwCallbackCollectData: report the matching instances with their counter values.
    fn collect<K: InstanceSink<Self::Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed>;
}
