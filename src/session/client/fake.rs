//! A fake platform for the session's host tests and loom models: an MSR file per processor, a HAL
//! whose answers a test chooses, a clock a test moves and an IRQL a test sets.

use super::*;
use crate::imc::detect::HostBridge;
use crate::imc::models::ControllerPage;
pub(super) use crate::pmu::model::tests::{Detect, SKYLAKE_I7_6700K, ZEN4_RYZEN9_7950X};
use crate::pmu::placement::CounterPlan;
use crate::session::CoreTypeSession;
use crate::session::fake_io::{FakeIo, FakePage};
use crate::session::platform::Form;
use crate::settings::{HEADER_UNITS, Setting};
use crate::sync::unmodelled::AtomicU64;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

pub(super) const PROCESSORS: usize = 4;
pub(super) const SECOND: u64 = 10_000_000;
pub(super) const IA32_FIXED_CTR0: u32 = 0x309;

pub(super) type MsrFile = Arc<Vec<Mutex<BTreeMap<u32, u64>>>>;

/// What the HAL was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Asked {
    /// Every list's counters in turn, and each list's core type (`None`: every processor).
    Listed {
        counters: Vec<u32>,
        overflow_interrupt: bool,
        core_types: Vec<Option<u8>>,
    },
    WholePmu,
}

pub(super) struct FakePlatform {
    pub(super) now: AtomicU64,
    pub(super) passive: AtomicBool,
    pub(super) wakes: AtomicUsize,
    pub(super) msrs: MsrFile,
    /// The HAL's answers to the next requests, in order; success once they run out.
    pub(super) answers: Mutex<VecDeque<i32>>,
    pub(super) asked: Mutex<Vec<Asked>>,
    /// Ownerships alive.
    pub(super) owned: Arc<AtomicUsize>,
    /// How far the clock moves during one all-processor call.
    pub(super) call_time: AtomicU64,
    /// The Parameters key's values: name, registry type, data.
    pub(super) settings: Mutex<Vec<(&'static str, u32, Vec<u16>)>>,
    /// Device 00:00.0 and the memory controller's pages.
    pub(super) io: Arc<FakeIo>,
    /// The boot guard's marker as the registry holds it, and the MSR writes made when it was last
    /// written (so a test sees it was set before the first programming).
    pub(super) marker: Mutex<Option<(bool, usize)>>,
    /// Whether writing the marker fails.
    pub(super) marker_fails: AtomicBool,
}

pub(super) struct FakeOwnership(Arc<AtomicUsize>);

impl Drop for FakeOwnership {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(super) struct FakeMsrs {
    file: MsrFile,
    processor: usize,
}

impl Msrs for FakeMsrs {
    fn read(&self, msr: u32) -> u64 {
        self.file[self.processor].lock().unwrap().get(&msr).copied().unwrap_or(0)
    }
    fn write(&mut self, msr: u32, value: u64) {
        self.file[self.processor].lock().unwrap().insert(msr, value);
    }
}

impl Platform for FakePlatform {
    type Ownership = FakeOwnership;
    type Msrs = FakeMsrs;
    type Processors = Vec<ProcessorState>;
    type Table<T: Send + Sync + 'static> = Vec<Option<T>>;
    type CounterPage = FakePage;

    fn allocate(
        &self,
        form: Form<'_>,
        _target: &OverflowTarget<Self::Processors>,
    ) -> Result<FakeOwnership, i32> {
        self.asked.lock().unwrap().push(match form {
            Form::Listed { lists, overflow_interrupt } => {
                let counters = lists.iter().flat_map(|list| list.counters.iter().copied()).collect();
                let core_types = lists.iter().map(|list| list.core_type).collect();
                Asked::Listed { counters, overflow_interrupt, core_types }
            }
            Form::WholePmu => Asked::WholePmu,
        });
        match self.answers.lock().unwrap().pop_front() {
            Some(status) => Err(status),
            None => {
                assert_eq!(self.owned.fetch_add(1, Ordering::SeqCst), 0, "owned twice");
                Ok(FakeOwnership(self.owned.clone()))
            }
        }
    }

    fn on_every_processor<F: Fn(u32, &mut FakeMsrs) + Sync>(&self, _ownership: &FakeOwnership, work: &F) {
        self.now.fetch_add(self.call_time.load(Ordering::SeqCst), Ordering::SeqCst);
        for processor in 0..PROCESSORS {
            work(processor as u32, &mut FakeMsrs { file: self.msrs.clone(), processor });
        }
    }

    fn now_100ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn at_passive_level(&self) -> bool {
        self.passive.load(Ordering::SeqCst)
    }

    fn wake_housekeeping(&self) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }

    fn log(&self, _line: core::fmt::Arguments<'_>) {}

    fn read_setting<'b>(&self, name: &str, buffer: &'b mut [u16]) -> Setting<'b> {
        let settings = self.settings.lock().unwrap();
        let Some((_, kind, data)) = settings.iter().find(|(key, _, _)| key.eq_ignore_ascii_case(name)) else {
            return Setting::Missing;
        };
        let room = &mut buffer[HEADER_UNITS..];
        if data.len() > room.len() {
            return Setting::TooLong;
        }
        room[..data.len()].copy_from_slice(data);
        Setting::Value { kind: *kind, units: &room[..data.len()], odd: false }
    }

    fn write_guard_marker(&self, set: bool) -> bool {
        if self.marker_fails.load(Ordering::SeqCst) {
            return false;
        }
        let writes = self.msrs.iter().map(|file| file.lock().unwrap().len()).sum();
        *self.marker.lock().unwrap() = Some((set, writes));
        true
    }

    fn read_host_bridge(&self) -> HostBridge {
        self.io.read_host_bridge()
    }

    fn map_counter_page(&self, page: &ControllerPage) -> Option<FakePage> {
        self.io.map(page)
    }
}

pub(super) fn client_for(model: Option<PmuModel>, answers: &[i32]) -> PmuClient<FakePlatform> {
    let detection = model.map_or(Detection::Unusable(Unusable::UnknownVendor), Detection::Usable);
    let status = Box::leak(Box::new(DriverStatus::new()));
    let processors = (0..PROCESSORS).map(|_| ProcessorState::default()).collect();
    let (sessions, plans) = tables_for(detection);
    PmuClient::new(fake_platform(answers), detection, processors, sessions, plans, status)
}

/// The core type sessions and last plans of `machine`: one each per core type it has.
pub(super) fn tables_for(
    machine: impl Into<Machine>,
) -> (Vec<Option<CoreTypeSession>>, Vec<Option<CounterPlan>>) {
    let machine = machine.into();
    (machine.models().map(|_| None).collect(), machine.models().map(|_| None).collect())
}

/// A platform of [`PROCESSORS`] processors whose HAL gives `answers` to the first allocations.
pub(super) fn fake_platform(answers: &[i32]) -> FakePlatform {
    FakePlatform {
        now: AtomicU64::new(100 * SECOND),
        passive: AtomicBool::new(true),
        wakes: AtomicUsize::new(0),
        msrs: Arc::new((0..PROCESSORS).map(|_| Mutex::new(BTreeMap::new())).collect()),
        answers: Mutex::new(answers.iter().copied().collect()),
        asked: Mutex::new(Vec::new()),
        owned: Arc::new(AtomicUsize::new(0)),
        call_time: AtomicU64::new(0),
        settings: Mutex::new(Vec::new()),
        io: Arc::new(FakeIo::default()),
        marker: Mutex::new(None),
        marker_fails: AtomicBool::new(false),
    }
}

/// MCHBAR as a Skylake's firmware sets it (enabled), and the 32-bit counters' page.
pub(super) const MCHBAR: u64 = 0xFED1_0000;
pub(super) const PAGE: u64 = MCHBAR + 0x5000;

/// CPUID of a bare-metal Skylake (family 6, model 0x5E): "GenuineIntel" in EBX, EDX, ECX.
pub(super) fn skylake_cpu() -> CpuIdValues {
    CpuIdValues {
        leaf0: [0x16, 0x756E_6547, 0x6C65_746E, 0x4965_6E69],
        leaf1_eax: 0x0005_06E3,
        ..CpuIdValues::default()
    }
}

/// A client whose platform shows a Skylake host bridge (8086:191F) with MCHBAR enabled, detected.
pub(super) fn skylake_with_memory() -> PmuClient<FakePlatform> {
    let mut client = skylake(&[]);
    *client.platform.io.bridge.lock().unwrap() =
        HostBridge { id: 0x191F_8086, mchbar_low: MCHBAR as u32 | 1, mchbar_high: 0 };
    client.detect_memory_controller(&skylake_cpu());
    client
}

pub(super) fn skylake(answers: &[i32]) -> PmuClient<FakePlatform> {
    client_for(Some(SKYLAKE_I7_6700K.model()), answers)
}

impl PmuClient<FakePlatform> {
    /// One collect as PCW's callback makes it: refresh, then (instances handed over) done. Each
    /// processor's published block must then show its counts (see [`Self::assert_published`]).
    /// A consumer's sample, no sooner than the default minimum collect interval after the last: a
    /// fresh read.
    pub(super) fn collect(&self) {
        self.advance(u64::from(super::throttle::DEFAULT_INTERVAL_MS) * SECOND / 1000);
        self.collect_now();
    }
    /// A collect at the clock's time as it is (served if within the interval of the last read).
    pub(super) fn collect_now(&self) {
        self.refresh();
        self.assert_published();
        self.collect_done();
    }
    /// What the reads stored field by field into each processor's block is the block of its counts,
    /// assembled whole.
    pub(super) fn assert_published(&self) {
        let last_plan = self.last_plan.read();
        for (index, processor) in self.target.processors.iter().enumerate() {
            let plan = last_plan.get(processor.pmu.core_type()).and_then(Option::as_ref);
            let whole = counts_under(processor, plan, &self.machine).values();
            assert_eq!(self.values(index as u32), whole, "processor {index}'s published block");
        }
    }
    pub(super) fn advance(&self, by: u64) {
        self.platform.now.fetch_add(by, Ordering::SeqCst);
    }
    pub(super) fn asked(&self) -> Vec<Asked> {
        self.platform.asked.lock().unwrap().clone()
    }
    pub(super) fn owns(&self) -> bool {
        self.platform.owned.load(Ordering::SeqCst) == 1
    }
    pub(super) fn state(&self) -> u32 {
        self.status.pmu_state()
    }
    pub(super) fn msr(&self, processor: usize, msr: u32) -> u64 {
        FakeMsrs { file: self.platform.msrs.clone(), processor }.read(msr)
    }
    pub(super) fn set_msr(&self, processor: usize, msr: u32, value: u64) {
        FakeMsrs { file: self.platform.msrs.clone(), processor }.write(msr, value);
    }
    pub(super) fn reprograms(&self) -> u32 {
        self.status.block().pmu_reprograms.load(Ordering::Relaxed)
    }
    /// Sets a Parameters value (REG_SZ for one string, REG_MULTI_SZ for several).
    pub(super) fn set_setting(&self, name: &'static str, kind: u32, strings: &[&str]) {
        let mut data: Vec<u16> = Vec::new();
        for string in strings {
            data.extend(string.encode_utf16());
            data.push(0);
        }
        if kind == crate::settings::REG_MULTI_SZ {
            data.push(0);
        }
        let mut settings = self.platform.settings.lock().unwrap();
        settings.retain(|(key, _, _)| *key != name);
        settings.push((name, kind, data));
    }
    /// (Active Profile, Rejected Custom Events).
    pub(super) fn profile_status(&self) -> (u32, u32) {
        let block = self.status.block();
        (block.active_profile.load(Ordering::Relaxed), block.rejected_custom_events.load(Ordering::Relaxed))
    }
}
