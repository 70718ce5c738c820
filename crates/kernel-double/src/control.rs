//! Test control: what the scenarios, the benchmarks and `pmupcw-run` call to steer the double and to
//! inspect it (fault injection, the other PMU client, sleep and resume, registry values, PCW's
//! consumer side, the memory controller's traffic, counts of calls and leaks).
//!
//! The rule: `crate::exports` holds only what the driver image imports, with its documented
//! semantics; everything else about a fake export lives in that export module's child `control`
//! module (which reaches the export's private state) and is gathered here, with the types it takes
//! and returns. Nothing here is reachable from the driver.

pub mod callback {
    pub use crate::exports::callback::control::*;
}

pub mod dbg {
    pub use crate::exports::dbg::DebugLine;
    pub use crate::exports::dbg::control::*;
}

pub mod dpc {
    pub use crate::exports::dpc::control::*;
    pub use crate::exports::dpc::{EXECUTIONS_KEPT, Execution};
}

pub mod hal {
    pub use crate::exports::hal::control::*;
    pub use crate::exports::hal::{Allocation, ListRefusal, Owner, PERFORMANCE_FREQUENCY};
}

pub mod memory {
    pub use crate::platform::control::*;
    pub use crate::platform::{Counter, PLATFORMS, Platform, current, named, set};
}

pub mod ke {
    pub use crate::exports::ke::control::*;
}

pub mod pcw {
    pub use crate::exports::pcw::control::*;
    pub use crate::exports::pcw::{CountersetInfo, Descriptor, InstanceRecord, PCW_ANY_INSTANCE_ID, Query};
}

pub mod pool {
    pub use crate::exports::pool::Allocation;
    pub use crate::exports::pool::control::*;
}

pub mod ps {
    pub use crate::exports::ps::control::*;
}

pub mod registry {
    pub use crate::exports::registry::control::*;
    pub use crate::exports::registry::{PARAMETERS_KEY, REG_DWORD, REG_MULTI_SZ, REG_SZ, SERVICE_KEY};
}
