//! The core PMU as a counter source: its mechanics, which the session's policy (`super::client`)
//! drives. The HAL request (`request`), each core type's session (`core_type_session`) with its
//! counters' read recipe (`count_table`), what the overflow handler folds into (`overflow_target`),
//! each processor's state (`processor_state`), starting, reading and repairing one processor
//! (`start`, `read`, `repair`) and the Top-down Source rule (`topdown_source`).
//!
//! A second counter source (the memory controllers' free-running counters: its own detection,
//! ownership and countersets) is a sibling of this folder, driven by the same policy:
//! `docs/ARCHITECTURE.md`, "Two counter sources".

pub(super) mod core_type_session;
pub(super) mod count_table;
pub(super) mod overflow_target;
pub(super) mod processor_state;
pub(super) mod read;
pub(super) mod repair;
pub(super) mod request;
pub(super) mod start;
pub(super) mod topdown_source;
