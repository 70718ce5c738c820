//! Test control of the fake dpc exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// The DPC runs so far (the first [`EXECUTIONS_KEPT`]).
pub fn executions() -> Vec<Execution> {
    with_queues(|queues| queues.executed.clone())
}

/// DPC objects queued or running (counted once if both) whose routine lies in `start..start + length`
/// (an image).
pub fn pending_in(start: usize, length: usize) -> usize {
    let inside = |routine: usize| lies_in(routine, start, length);
    with_queues(|queues| {
        let mut pending: Vec<usize> = queues
            .queued
            .iter()
            .flatten()
            .copied()
            .filter(|&dpc| inside(routine_of(dpc)))
            .chain(queues.running.iter().filter(|&&(_, routine)| inside(routine)).map(|&(dpc, _)| dpc))
            .collect();
        pending.sort_unstable();
        pending.dedup();
        pending.len()
    })
}

/// Stops running and queueing the DPCs of the image at `start..start + length` (after the driver
/// unloaded with some pending), dropping those queued and waiting for those running.
pub fn halt(start: usize, length: usize) {
    let mut guard = queues();
    let queues = guard.get_or_insert_with(Queues::default);
    queues.halted.push((start, length));
    for queue in &mut queues.queued {
        queue.retain(|&dpc| !lies_in(routine_of(dpc), start, length));
    }
    while guard
        .as_ref()
        .is_some_and(|queues| queues.running.iter().any(|&(_, routine)| lies_in(routine, start, length)))
    {
        guard = CHANGED.wait(guard).ignore_poison();
    }
}

/// DPCs queued or running, in all.
pub fn outstanding() -> usize {
    with_queues(|queues| queues.outstanding())
}
