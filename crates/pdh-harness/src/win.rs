//! The thin Windows layer: PDH (`pdh.dll`) behind the `Pdh`/`PdhQuery` traits, the service control
//! manager (`advapi32.dll`) behind `ServiceControl`, and the program's `main`. All checking is in the
//! portable modules.

use std::fs::File;
use std::io::BufWriter;
use std::thread;
use std::time::{Duration, Instant};

use windows::Win32::Foundation::{ERROR_SERVICE_ALREADY_RUNNING, ERROR_SERVICE_NOT_ACTIVE};
use windows::Win32::System::Performance::{
    PDH_FMT, PDH_FMT_COUNTERVALUE_ITEM_W, PDH_FMT_DOUBLE, PDH_HCOUNTER, PDH_HQUERY, PDH_MORE_DATA,
    PDH_NOEXPANDINSTANCES, PDH_RAW_COUNTER_ITEM_W, PdhAddEnglishCounterW, PdhCloseQuery, PdhCollectQueryData,
    PdhExpandWildCardPathW, PdhGetFormattedCounterArrayW, PdhGetRawCounterArrayW, PdhOpenQueryW,
};
use windows::Win32::System::Services::{
    CloseServiceHandle, ControlService, OpenSCManagerW, OpenServiceW, QueryServiceStatus, SC_HANDLE,
    SC_MANAGER_CONNECT, SERVICE_CONTROL_STOP, SERVICE_QUERY_STATUS, SERVICE_RUNNING, SERVICE_START,
    SERVICE_STATUS, SERVICE_STATUS_CURRENT_STATE, SERVICE_STOP, SERVICE_STOPPED, StartServiceW,
};
use windows::Win32::System::Threading::{ALL_PROCESSOR_GROUPS, GetActiveProcessorCount};
use windows::core::{HRESULT, HSTRING, PCWSTR, PWSTR};

use crate::catalogue::parse_multi_sz;
use crate::cli::{self, Command, USAGE};
use crate::harness::{self, ArrayItem, Pdh, PdhQuery, ServiceControl};
use crate::report::Report;

/// pdhmsg.h; not in the `windows` crate's metadata.
const PDH_FMT_NOCAP100: u32 = 0x0000_8000;
const ERROR_SUCCESS: u32 = 0;
/// How often a call that answers PDH_MORE_DATA is retried (instances may appear between two calls).
const MORE_DATA_RETRIES: usize = 8;

/// The real-time PDH data source.
pub struct WinPdh;

pub struct WinQuery(PDH_HQUERY);

impl Drop for WinQuery {
    fn drop(&mut self) {
        // SAFETY: the handle came from PdhOpenQueryW and is closed once.
        unsafe { PdhCloseQuery(self.0) };
    }
}

fn check(status: u32) -> Result<(), u32> {
    if status == ERROR_SUCCESS { Ok(()) } else { Err(status) }
}

impl Pdh for WinPdh {
    type Query = WinQuery;

    fn open_query(&self) -> Result<WinQuery, u32> {
        let mut query = PDH_HQUERY::default();
        // SAFETY: a null data source is the real-time source; `query` is a valid out pointer.
        check(unsafe { PdhOpenQueryW(PCWSTR::null(), 0, &mut query) })?;
        Ok(WinQuery(query))
    }

    fn expand_counters(&self, wildcard: &str) -> Result<Vec<String>, u32> {
        let path = HSTRING::from(wildcard);
        let mut length = 0u32;
        for _ in 0..MORE_DATA_RETRIES {
            let mut buffer = vec![0u16; length as usize];
            let list = (!buffer.is_empty()).then_some(PWSTR(buffer.as_mut_ptr()));
            // SAFETY: `buffer` holds `length` characters; with no buffer PDH only reports the length.
            let status = unsafe {
                PdhExpandWildCardPathW(PCWSTR::null(), &path, list, &mut length, PDH_NOEXPANDINSTANCES)
            };
            match status {
                ERROR_SUCCESS => return Ok(parse_multi_sz(&buffer)),
                PDH_MORE_DATA => continue,
                error => return Err(error),
            }
        }
        Err(PDH_MORE_DATA)
    }
}

/// Calls a PDH array function (size query, then fill) and returns the buffer, 8-byte aligned, and the
/// item count. The items (and the names they point to) live in the buffer.
fn read_array<Item>(
    mut call: impl FnMut(&mut u32, &mut u32, Option<*mut Item>) -> u32,
) -> Result<(Vec<u64>, usize), u32> {
    let (mut bytes, mut count) = (0u32, 0u32);
    for _ in 0..MORE_DATA_RETRIES {
        let mut buffer = vec![0u64; (bytes as usize).div_ceil(8)];
        let items = (!buffer.is_empty()).then_some(buffer.as_mut_ptr().cast::<Item>());
        match call(&mut bytes, &mut count, items) {
            ERROR_SUCCESS if items.is_some() || count == 0 => return Ok((buffer, count as usize)),
            ERROR_SUCCESS | PDH_MORE_DATA => continue,
            error => return Err(error),
        }
    }
    Err(PDH_MORE_DATA)
}

fn name_of(name: PWSTR) -> String {
    if name.is_null() {
        return String::new();
    }
    // SAFETY: PDH's item names are NUL-terminated strings inside the array buffer, alive here.
    unsafe { name.to_string() }.unwrap_or_else(|e| format!("<invalid UTF-16: {e}>"))
}

impl PdhQuery for WinQuery {
    type Counter = PDH_HCOUNTER;

    fn add_english(&mut self, path: &str) -> Result<PDH_HCOUNTER, u32> {
        let mut counter = PDH_HCOUNTER::default();
        // SAFETY: valid query handle, NUL-terminated path, valid out pointer.
        check(unsafe { PdhAddEnglishCounterW(self.0, &HSTRING::from(path), 0, &mut counter) })?;
        Ok(counter)
    }

    fn collect(&mut self) -> Result<(), u32> {
        // SAFETY: valid query handle.
        check(unsafe { PdhCollectQueryData(self.0) })
    }

    fn raw_array(&mut self, counter: PDH_HCOUNTER) -> Result<Vec<ArrayItem<i64>>, u32> {
        let (buffer, count) = read_array::<PDH_RAW_COUNTER_ITEM_W>(|bytes, count, items| {
            // SAFETY: `items` is null or a buffer of `*bytes` bytes, as PDH asked for.
            unsafe { PdhGetRawCounterArrayW(counter, bytes, count, items) }
        })?;
        // SAFETY: PDH wrote `count` items at the start of the (8-aligned) buffer.
        let items =
            unsafe { std::slice::from_raw_parts(buffer.as_ptr().cast::<PDH_RAW_COUNTER_ITEM_W>(), count) };
        Ok(items
            .iter()
            .map(|i| ArrayItem {
                instance: name_of(i.szName),
                status: i.RawValue.CStatus,
                value: i.RawValue.FirstValue,
            })
            .collect())
    }

    fn formatted_array(&mut self, counter: PDH_HCOUNTER) -> Result<Vec<ArrayItem<f64>>, u32> {
        let format = PDH_FMT(PDH_FMT_DOUBLE.0 | PDH_FMT_NOCAP100);
        let (buffer, count) = read_array::<PDH_FMT_COUNTERVALUE_ITEM_W>(|bytes, count, items| {
            // SAFETY: as in raw_array.
            unsafe { PdhGetFormattedCounterArrayW(counter, format, bytes, count, items) }
        })?;
        // SAFETY: as in raw_array.
        let items = unsafe {
            std::slice::from_raw_parts(buffer.as_ptr().cast::<PDH_FMT_COUNTERVALUE_ITEM_W>(), count)
        };
        Ok(items
            .iter()
            .map(|i| ArrayItem {
                instance: name_of(i.szName),
                status: i.FmtValue.CStatus,
                // SAFETY: PDH_FMT_DOUBLE selects the union's double.
                value: unsafe { i.FmtValue.Anonymous.doubleValue },
            })
            .collect())
    }
}

/// The driver's service, opened with the rights to stop, start and query it.
pub struct Scm {
    manager: SC_HANDLE,
    service: SC_HANDLE,
    name: String,
    timeout: Duration,
}

// SAFETY: service control manager handles may be used from any thread.
unsafe impl Send for Scm {}

impl Drop for Scm {
    fn drop(&mut self) {
        // SAFETY: the handle came from OpenServiceW and is closed once, here.
        let _ = unsafe { CloseServiceHandle(self.service) };
        // SAFETY: the handle came from OpenSCManagerW and is closed once, here, after its service's.
        let _ = unsafe { CloseServiceHandle(self.manager) };
    }
}

impl Scm {
    pub fn open(name: &str, timeout: Duration) -> Result<Self, String> {
        // SAFETY: null machine and database name: the local, active database.
        let manager = unsafe { OpenSCManagerW(PCWSTR::null(), PCWSTR::null(), SC_MANAGER_CONNECT) }
            .map_err(|e| format!("OpenSCManagerW: {e}"))?;
        let access = SERVICE_START | SERVICE_STOP | SERVICE_QUERY_STATUS;
        // SAFETY: valid manager handle and NUL-terminated name.
        match unsafe { OpenServiceW(manager, &HSTRING::from(name), access) } {
            Ok(service) => Ok(Self { manager, service, name: name.to_owned(), timeout }),
            Err(e) => {
                // SAFETY: opened above, closed once.
                let _ = unsafe { CloseServiceHandle(manager) };
                Err(format!("OpenServiceW({name}): {e} (is pmupcw installed, and is this prompt elevated?)"))
            }
        }
    }

    pub fn state(&self) -> Result<SERVICE_STATUS_CURRENT_STATE, String> {
        let mut status = SERVICE_STATUS::default();
        // SAFETY: valid service handle and out pointer.
        unsafe { QueryServiceStatus(self.service, &mut status) }
            .map_err(|e| format!("QueryServiceStatus: {e}"))?;
        Ok(status.dwCurrentState)
    }

    fn wait_for(&self, target: SERVICE_STATUS_CURRENT_STATE, what: &str) -> Result<(), String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let state = self.state()?;
            if state == target {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{what}: {} still in state {} after {} ms",
                    self.name,
                    state.0,
                    self.timeout.as_millis()
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl ServiceControl for Scm {
    fn stop(&mut self) -> Result<(), String> {
        let mut status = SERVICE_STATUS::default();
        // SAFETY: valid service handle and out pointer.
        match unsafe { ControlService(self.service, SERVICE_CONTROL_STOP, &mut status) } {
            Ok(()) => {}
            Err(e) if e.code() == HRESULT::from_win32(ERROR_SERVICE_NOT_ACTIVE.0) => {}
            Err(e) => return Err(format!("ControlService(SERVICE_CONTROL_STOP): {e}")),
        }
        self.wait_for(SERVICE_STOPPED, "stop")
    }

    fn start(&mut self) -> Result<(), String> {
        // SAFETY: valid service handle; no arguments.
        match unsafe { StartServiceW(self.service, None) } {
            Ok(()) => {}
            Err(e) if e.code() == HRESULT::from_win32(ERROR_SERVICE_ALREADY_RUNNING.0) => {}
            Err(e) => return Err(format!("StartServiceW: {e}")),
        }
        self.wait_for(SERVICE_RUNNING, "start")
    }
}

/// With `--cycles 0` the harness never opens the service control manager (and needs no elevation).
enum Service {
    Scm(Scm),
    Untouched,
}

impl ServiceControl for Service {
    fn stop(&mut self) -> Result<(), String> {
        match self {
            Service::Scm(s) => s.stop(),
            Service::Untouched => Err("no service control with --cycles 0".into()),
        }
    }
    fn start(&mut self) -> Result<(), String> {
        match self {
            Service::Scm(s) => s.start(),
            Service::Untouched => Err("no service control with --cycles 0".into()),
        }
    }
}

/// The program: 0 when every check passed, 1 on any violation, 2 on a usage or setup error.
pub fn main() -> i32 {
    let options = match cli::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            return 0;
        }
        Ok(Command::Run(options)) => options,
        Err(e) => {
            eprintln!("pdh-harness: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let mut config = options.config.clone();
    // SAFETY: no preconditions.
    let processors = unsafe { GetActiveProcessorCount(ALL_PROCESSOR_GROUPS) } as usize;
    config.active_processors = (processors > 0).then_some(processors);

    let service = if config.cycles == 0 {
        Service::Untouched
    } else {
        let mut scm = match Scm::open(&options.service, options.timeout) {
            Ok(scm) => scm,
            Err(e) => {
                eprintln!("pdh-harness: {e}");
                return 2;
            }
        };
        match scm.state() {
            Ok(SERVICE_RUNNING) => {}
            Ok(_) => {
                println!("pdh-harness: starting service {}", options.service);
                if let Err(e) = scm.start() {
                    eprintln!("pdh-harness: cannot start service {}: {e}", options.service);
                    return 2;
                }
            }
            Err(e) => {
                eprintln!("pdh-harness: {e}");
                return 2;
            }
        }
        Service::Scm(scm)
    };

    let file = match File::create(&options.csv) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pdh-harness: cannot create {}: {e}", options.csv.display());
            return 2;
        }
    };
    println!(
        "pdh-harness: {} query threads, {} stop/start cycles of service {}, {} active processors, report {}",
        config.threads,
        config.cycles,
        options.service,
        processors,
        options.csv.display()
    );
    let result = Report::new(BufWriter::new(file)).and_then(|mut report| {
        harness::run(&WinPdh, service, &config, &mut report)?;
        let violations = report.violations();
        let (_, summary) = report.finish()?;
        Ok((violations, summary))
    });
    match result {
        Ok((violations, summary)) => {
            print!("{summary}");
            println!("report: {}", options.csv.display());
            i32::from(violations > 0)
        }
        Err(e) => {
            eprintln!("pdh-harness: writing {}: {e}", options.csv.display());
            2
        }
    }
}
