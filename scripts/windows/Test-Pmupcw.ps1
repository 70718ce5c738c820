#Requires -RunAsAdministrator
<#
.SYNOPSIS
    One command that puts pmupcw through its paces on a test-signed machine (a VM) and writes one report
    folder ending in a PASS/FAIL line.

.DESCRIPTION
    Run it elevated from the unpacked package folder. Each step records checks (PASS, FAIL, or SKIP with
    the reason) in checks.csv of the report folder, <ReportRoot>\pmupcw-test-<yyyyMMdd-HHmmss>:
      1. system.txt: OS build, CPU (Win32_Processor), hypervisor (Win32_ComputerSystem
         HypervisorPresent), the PMU profile sources the HAL offers (wpr -pmcsources), the package's
         DriverVer;
      2. install or upgrade with Install-Pmupcw.ps1 (install.log); the service must then run the
         package's pmupcw.sys (same SHA-256) with the package's DriverVer (driver.txt);
      3. Driver Verifier on pmupcw.sys (Enable-Verifier.ps1, verifier /standard /driver pmupcw.sys).
         Verifier settings apply from the next restart: the script registers a logon task that runs it
         again with -Resume, tells you to restart (or restarts itself with -Restart) and exits with
         code 2. After the restart and logon the task continues the same report; running the same
         command again does too;
      4. typeperf: \Hardware Counters(*)\* (every processor and _Total, Instructions per Cycle among
         them), \Hardware Counters by Core Type(*)\*, \Hardware Counters Driver\* and
         \Memory Controller(*)\* (per controller and _Total; none where it does not count), -SampleCount
         samples a second apart (typeperf.csv).
         Checks: one instance per logical processor plus _Total; PMU State is the state the processor,
         the hypervisor and the HAL lead to expect (0 idle, 1 active, 2 busy, 3 no PMU under this
         hypervisor, 4 failed, 5 no architectural perfmon, 6 not Intel/AMD, 7 too few counters); with a
         PMU, _Total's Instructions Retired rises, no processor's faster than its clock allows
         (Get-RiseBound), and its Instructions per Cycle is plausible, without
         one every count reads 0;
      5. memory bandwidth, where \Hardware Counters Driver\Memory Controller State reads 1 (counting) while
         queried: typeperf samples _Total's DRAM Read Bytes and DRAM Write Bytes (bandwidth.csv) while the
         script copies a buffer far beyond the last-level cache -BandwidthCopies times; each total must
         rise by at least the bytes every copy but the last has certainly sent to DRAM, and by at most
         $MaxDramFactor times that (other agents use the memory too); the factor is reported. Any other
         state is SKIP, named, with the reason;
      6. the PDH stress harness (pdh-harness.exe beside this script, or -HarnessPath):
         pdh-harness.csv (one row per check) and pdh-harness.log;
      7. sleep and resume, only where the machine has S3 and its real-time clock can wake it from S3
         (GetPwrCapabilities; powercfg /availablesleepstates in sleep-states.txt): a wake timer 60 s
         out, SetSuspendState, and a typeperf running across it (sleep-typeperf.csv); counts must keep
         rising after the resume, and no processor's count may rise between two samples by more than
         the seconds between them x MaxClockSpeed x $TurboAllowance x $MaxInstructionsPerCycle (a
         counter that lost its value at resume jumps far past that). Elsewhere the check is SKIP with
         the reason;
      8. what Driver Verifier has checked (verifier /query, verifier-query.txt) and any bug check logged
         since the run began.
    summary.txt holds the one-line verdict, printed last; transcript.txt everything the run printed.
    Exit code: 0 PASS, 1 FAIL, 2 waiting for a restart.

.PARAMETER PackageDir
    The package folder. Default: the folder of this script.

.PARAMETER ReportRoot
    Where the report folder is made. Default: the reports folder beside this script.

.PARAMETER HarnessPath
    pdh-harness.exe. Default: the one beside this script.

.PARAMETER SampleCount
    typeperf samples (one a second) of every counterset. Default 10.

.PARAMETER HarnessThreads
    The harness's query threads (--threads). Default 8.

.PARAMETER HarnessCycles
    The harness's service stop/start cycles (--cycles). Default 5.

.PARAMETER BandwidthBufferMB
    The memory bandwidth check's buffer, in MiB (two are allocated: source and destination). Default
    1024, at least 256: seven times the largest last-level cache of a client processor the driver
    counts (36 MB), so that a copy cannot be served from the cache.

.PARAMETER BandwidthCopies
    How many times the memory bandwidth check copies the buffer. Default 8.

.PARAMETER NoVerifier
    Run without Driver Verifier (its check is SKIP).

.PARAMETER NoSleep
    Do not try a sleep and resume (its check is SKIP).

.PARAMETER Restart
    When Driver Verifier needs a restart, restart the machine (after 30 s) instead of asking you to.

.PARAMETER Resume
    Continue the run that waits for a restart (what the logon task runs); fails if there is none.
#>
[CmdletBinding()]
param(
    [string]$PackageDir = $PSScriptRoot,
    [string]$ReportRoot = (Join-Path $PSScriptRoot 'reports'),
    [string]$HarnessPath = '',
    [ValidateRange(3, 3600)][int]$SampleCount = 10,
    [ValidateRange(1, 256)][int]$HarnessThreads = 8,
    [ValidateRange(0, 1000)][int]$HarnessCycles = 5,
    [ValidateRange(256, 1024)][int]$BandwidthBufferMB = 1024,
    [ValidateRange(2, 64)][int]$BandwidthCopies = 8,
    [switch]$NoVerifier,
    [switch]$NoSleep,
    [switch]$Restart,
    [switch]$Resume
)
Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

# The package files this script uses, by role (tests/deployment.rs checks each exists in the package).
$PackageFiles = @{
    Inf            = 'pmupcw.inf'
    Driver         = 'pmupcw.sys'
    Symbols        = 'pmupcw.pdb'
    InstallScript  = 'Install-Pmupcw.ps1'
    VerifierScript = 'Enable-Verifier.ps1'
    TestScript     = 'Test-Pmupcw.ps1'
    Tools          = 'PmupcwTools.psm1'
    Harness        = 'pdh-harness.exe'
}
$ServiceName = 'pmupcw'
# The logon task that continues a run after the restart Driver Verifier needs, and the run's state
# (report folder, parameters, stage) that any later run of this script picks up.
$ResumeTaskName = 'pmupcw Test-Pmupcw resume'
$StateFile = Join-Path $ReportRoot 'pending-run.json'
$RememberedParameters = 'PackageDir', 'ReportRoot', 'HarnessPath', 'SampleCount', 'HarnessThreads', 'HarnessCycles', 'BandwidthBufferMB', 'BandwidthCopies', 'NoVerifier', 'NoSleep'
# What typeperf samples: every counterset, every instance (per processor and _Total, per core type)
# and counter. tests/deployment.rs checks these counter paths against the counter manifest.
$CounterPaths = @('\Hardware Counters(*)\*', '\Hardware Counters by Core Type(*)\*', '\Hardware Counters Driver\*', '\Memory Controller(*)\*')
$PerProcessorInstructions = '\Hardware Counters(*)\Instructions Retired'
$TotalInstructions = '\Hardware Counters(_Total)\Instructions Retired'
$TotalIpc = '\Hardware Counters(_Total)\Instructions per Cycle'
$PmuStatePath = '\Hardware Counters Driver\PMU State'
# The most instructions an x86 core retires in one cycle (the Instructions per Cycle check
# allows up to it), and how far above Win32_Processor's MaxClockSpeed a core may run: it
# reports the rated clock, which turbo exceeds, on low-power parts by several times. A count that rises
# faster than elapsed time x MaxClockSpeed x both is not counting (a 48-bit counter's wrap adds 2^48).
$MaxInstructionsPerCycle = 8
$TurboAllowance = 8
# The memory bandwidth check's counters: the memory controller source's status and _Total's raw byte
# totals (64-bit, every controller summed), sampled by one typeperf so that one query spans the copy.
$MemoryControllerStatePath = '\Hardware Counters Driver\Memory Controller State'
$DramReadBytesPath = '\Memory Controller(_Total)\DRAM Read Bytes'
$DramWriteBytesPath = '\Memory Controller(_Total)\DRAM Write Bytes'
$BandwidthCounterPaths = @($MemoryControllerStatePath, $DramReadBytesPath, $DramWriteBytesPath)
# How far above the bytes copied the DRAM totals may rise. The copy itself reads each source byte
# once and, where stores allocate lines, the destination once more (read for ownership), and writes
# each destination byte once: at most 2x. The rest is every other agent at the memory controller in
# the same seconds (the counters count all of them: display scan-out, DMA, other processes and, in
# the Hyper-V root, the guests), and the samples bracket the copy by up to a second on each side.
# 20x leaves room for that on a busy machine, while a wrong offset, scale or width (a count of lines
# instead of bytes is 1/64; a register that is not a DRAM counter is anything) lands outside.
$MaxDramFactor = 20
$MemoryControllerStates = @{
    0 = 'idle'; 1 = 'counting'; 2 = 'unsupported model'; 3 = 'no device'; 4 = 'MCHBAR disabled'
    5 = 'under a hypervisor'; 6 = 'map failed'; 7 = 'held off'
}
# Why the bandwidth check cannot run, per Memory Controller State other than 1 (docs/memory-controller.md).
$MemoryControllerSkipReasons = @{
    0 = 'the driver did not start counting while queried (idle); the next query tries again'
    2 = 'this processor is not a client model with free-running DRAM counters (servers, AMD, older or newer parts)'
    3 = 'device 00:00.0 is not an Intel host bridge with a device ID listed for this model: report its PCI\VEN_8086&DEV_xxxx'
    4 = 'the firmware left MCHBAR disabled or its address unusable: nothing the driver can change'
    5 = 'a virtual machine (or a hypervisor other than the Hyper-V root partition) sees no real memory controller: run the check on the host'
    6 = 'MmMapIoSpaceEx returned no mapping; the debug output says more'
    7 = 'the boot guard holds the hardware off (PMU State 8): re-enable as the README (No boot loop) says'
}
$PmuStates = @{
    0 = 'idle'; 1 = 'active'; 2 = 'busy'; 3 = 'no PMU under this hypervisor'; 4 = 'failed'
    5 = 'no architectural perfmon'; 6 = 'not Intel/AMD'; 7 = 'too few counters'
    8 = 'held off by the boot guard (the README: No boot loop)'
}

# The helpers every pmupcw script shares (Write-Step, Invoke-Tool, ...), from the package folder.
$tools = Join-Path $PSScriptRoot $PackageFiles.Tools
if (-not (Test-Path -LiteralPath $tools -PathType Leaf)) {
    Write-Error "test: FAILED: $tools is missing: keep the package's scripts together." -ErrorAction Continue
    exit 1
}
Import-Module $tools -Force
Set-StepPrefix 'test'

# -------------------------------------------------------------------------------------------------
# The report

function Save-Report([string]$Name, [string]$Text) {
    Set-Content -LiteralPath (Join-Path $script:Report $Name) -Value $Text -Encoding UTF8
}

function Add-Report([string]$Name, [string]$Text) {
    Add-Content -LiteralPath (Join-Path $script:Report $Name) -Value $Text -Encoding UTF8
}

# One row of checks.csv: a check's name, PASS, FAIL or SKIP, and what was seen.
function Add-Check([string]$Name, [ValidateSet('PASS', 'FAIL', 'SKIP')][string]$Verdict, [string]$Detail) {
    Write-Step "$Verdict ${Name}: $Detail"
    [pscustomobject]@{ Time = (Get-Date).ToString('s'); Check = $Name; Verdict = $Verdict; Detail = $Detail } |
        Export-Csv -LiteralPath (Join-Path $script:Report 'checks.csv') -Append -NoTypeInformation -Encoding UTF8
}

# The run's state: its report folder, when it began, its stage and the parameters it runs with.
function Save-RunState([string]$Stage) {
    $parameters = @{}
    foreach ($name in $RememberedParameters) {
        $value = (Get-Variable -Name $name -Scope Script).Value
        if ($value -is [System.Management.Automation.SwitchParameter]) { $value = $value.IsPresent }
        $parameters[$name] = $value
    }
    [pscustomobject]@{
        Report     = $script:Report
        Started    = $script:Started.ToString('o')
        Stage      = $Stage
        Saved      = (Get-Date).ToString('o')
        Parameters = $parameters
    } | ConvertTo-Json | Set-Content -LiteralPath $StateFile -Encoding UTF8
}

# -------------------------------------------------------------------------------------------------
# Tools

function Format-DriverVer($DriverVer) {
    if ($DriverVer) { "$($DriverVer.Date),$($DriverVer.Version)" } else { 'none' }
}

# Runs one of the package's scripts in a child PowerShell (its own module state and exit code), with
# its output in the report's $Log; returns the exit code.
function Invoke-PackageScript([string]$Name, [string[]]$Arguments, [string]$Log) {
    $shell = (Get-Process -Id $PID).Path
    $run = Invoke-Tool $shell (@('-NoProfile', '-ExecutionPolicy', 'Bypass', '-File', (Join-Path $PSScriptRoot $Name)) + $Arguments) -OkExitCodes @(0, 1)
    Add-Report $Log $run.Output
    $run.ExitCode
}

# A number as typeperf prints it (invariant or the current culture's decimal separator), or $null.
function ConvertTo-Number([string]$Text) {
    $value = 0.0
    foreach ($culture in [cultureinfo]::InvariantCulture, [cultureinfo]::CurrentCulture) {
        if ([double]::TryParse($Text.Trim(), [Globalization.NumberStyles]::Float, $culture, [ref]$value)) { return $value }
    }
    $null
}

# A typeperf CSV: its rows, the timestamp column (the first) and the counter columns
# (\\MACHINE\Counterset(Instance)\Counter).
function Read-CounterCsv([string]$Path) {
    $rows = @(Import-Csv -LiteralPath $Path)
    if ($rows.Count -eq 0) { throw "$Path holds no samples" }
    $columns = @($rows[0].PSObject.Properties | ForEach-Object { $_.Name })
    [pscustomobject]@{ Rows = $rows; Time = $columns[0]; Columns = $columns }
}

# The column of counter $Path (\Counterset(Instance)\Counter, or \Counterset\Counter), or $null.
function Find-Column($Csv, [string]$Path) {
    $Csv.Columns | Where-Object { $_.EndsWith($Path, [StringComparison]::OrdinalIgnoreCase) } | Select-Object -First 1
}

# The instances of the columns that $Path, with (*) for its instance, matches.
function Get-Instances($Csv, [string]$Path) {
    $pattern = '(?i)' + [regex]::Escape($Path).Replace('\(\*\)', '\(([^)]*)\)') + '$'
    @($Csv.Columns | ForEach-Object { if ($_ -match $pattern) { $Matches[1] } })
}

# The numbers of one column in $Rows, in order; blank samples (a rate's first) are left out.
function Get-ColumnValues($Rows, [string]$Column) {
    @($Rows | ForEach-Object { ConvertTo-Number $_.PSObject.Properties[$Column].Value } | Where-Object { $null -ne $_ })
}

# Whether $Values never decrease and the last exceeds the first.
function Test-Rising([double[]]$Values) {
    if ($Values.Count -lt 2) { return $false }
    for ($i = 1; $i -lt $Values.Count; $i++) { if ($Values[$i] -lt $Values[$i - 1]) { return $false } }
    $Values[-1] -gt $Values[0]
}

# The most Instructions Retired one processor can add in $Seconds at a clock of at most $MaxHz.
function Get-RiseBound([double]$Seconds, [double]$MaxHz) {
    $Seconds * $MaxHz * $MaxInstructionsPerCycle
}

# Each rise of a processor's Instructions Retired ($PerProcessorInstructions, _Total left out) between
# two consecutive samples of $Rows that is larger than Get-RiseBound allows for the time between them,
# as text; none when every rise is plausible.
function Find-ImplausibleRises($Csv, $Rows, [double]$MaxHz) {
    $times = @($Rows | ForEach-Object { [datetime]::Parse($_.PSObject.Properties[$Csv.Time].Value, [cultureinfo]::InvariantCulture) })
    $pattern = '(?i)' + [regex]::Escape($PerProcessorInstructions).Replace('\(\*\)', '\(([^)]*)\)') + '$'
    foreach ($column in @($Csv.Columns | Where-Object { $_ -match $pattern -and $Matches[1] -ne '_Total' })) {
        # One value per row, $null for a blank sample, so that values and times stay aligned.
        $values = New-Object 'System.Collections.Generic.List[object]'
        foreach ($row in $Rows) { $values.Add((ConvertTo-Number $row.PSObject.Properties[$column].Value)) }
        for ($i = 1; $i -lt $values.Count; $i++) {
            if ($null -eq $values[$i] -or $null -eq $values[$i - 1]) { continue }
            $seconds = ($times[$i] - $times[$i - 1]).TotalSeconds
            $rise = $values[$i] - $values[$i - 1]
            $bound = Get-RiseBound $seconds $MaxHz
            if ($rise -gt $bound) { "$column rose by $rise in $seconds s (at most $bound)" }
        }
    }
}

# typeperf on every counterset into the report's $Name, one sample a second.
function Invoke-Typeperf([string]$Name, [int]$Samples) {
    $csv = Join-Path $script:Report $Name
    $null = Invoke-Tool typeperf.exe @('-cf', $script:CounterFile, '-si', '1', '-sc', $Samples, '-f', 'CSV', '-o', $csv, '-y')
    if (-not (Test-Path -LiteralPath $csv)) { throw "typeperf wrote no $csv" }
    $csv
}

# The PMU profile sources the HAL offers (wpr -pmcsources, https://learn.microsoft.com/windows-hardware/test/wpt/wpr-command-line-options):
# one "Id Name" line each, Timer (id 0) always. Known is false where wpr is missing or its output has
# no Timer line, so that nothing is concluded from output this parser does not understand.
function Get-PmcSources {
    $wpr = Join-Path $env:SystemRoot 'System32\wpr.exe'
    $result = [pscustomobject]@{ Known = $false; Sources = @(); Output = "$wpr is missing" }
    if (-not (Test-Path -LiteralPath $wpr)) { return $result }
    try {
        $result.Output = (Invoke-Tool $wpr @('-pmcsources') -Quiet).Output
    } catch {
        $result.Output = $_.Exception.Message
        return $result
    }
    $lines = @([regex]::Matches($result.Output, '(?m)^\s*(\d+)\s+(\S+)') | ForEach-Object { [pscustomobject]@{ Id = [int]$_.Groups[1].Value; Name = $_.Groups[2].Value } })
    $result.Known = @($lines | Where-Object { $_.Id -eq 0 }).Count -gt 0
    $result.Sources = @($lines | Where-Object { $_.Id -ne 0 } | ForEach-Object { $_.Name })
    $result
}

# The PMU States the driver should report while queried, and why. The driver decides from CPUID
# (src/pmu/model.rs: the vendor; Intel's architectural perfmon version; under Hyper-V, the hypervisor's
# "performance monitors available" bit; the counter count). A script cannot execute CPUID, so this
# reasons from what Windows reports about the same processor: the vendor (Win32_Processor), whether a
# hypervisor is present (Win32_ComputerSystem), and whether the HAL found a PMU (wpr -pmcsources).
function Get-ExpectedPmuState($Cpu, [bool]$Hypervisor, $Pmc) {
    if ($Cpu.Manufacturer -notin 'GenuineIntel', 'AuthenticAMD') {
        return [pscustomobject]@{ States = @(6); Why = "the processor vendor is $($Cpu.Manufacturer)" }
    }
    if ($Pmc.Known -and $Pmc.Sources.Count -gt 0) {
        return [pscustomobject]@{ States = @(1); Why = "the HAL offers PMU profile sources ($($Pmc.Sources -join ', ')), so the PMU is there and a query owns it" }
    }
    if ($Pmc.Known -and $Hypervisor) {
        return [pscustomobject]@{ States = @(3); Why = 'a hypervisor is present and the HAL offers only the timer profile source: the hypervisor exposes no PMU' }
    }
    if ($Pmc.Known) {
        return [pscustomobject]@{ States = @(5); Why = 'no hypervisor, and the HAL offers only the timer profile source: the processor has no usable architectural perfmon' }
    }
    if ($Hypervisor) {
        return [pscustomobject]@{ States = @(1, 3); Why = 'a hypervisor is present and wpr -pmcsources could not tell whether it exposes the PMU' }
    }
    [pscustomobject]@{ States = @(1); Why = 'an Intel or AMD processor without a hypervisor' }
}

# Bug checks Windows logged since $Since (Microsoft-Windows-WER-SystemErrorReporting event 1001).
function Get-BugChecks([datetime]$Since) {
    @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Microsoft-Windows-WER-SystemErrorReporting'; Id = 1001; StartTime = $Since } -ErrorAction SilentlyContinue)
}

# GetPwrCapabilities, SetSuspendState (https://learn.microsoft.com/windows/win32/api/powrprof/) and a
# waitable timer that wakes the machine (SetWaitableTimer with fResume, https://learn.microsoft.com/windows/win32/api/synchapi/nf-synchapi-setwaitabletimer).
function Initialize-PowerApi {
    if ('PmupcwTest.Power' -as [type]) { return }
    Add-Type -Namespace PmupcwTest -Name Power -MemberDefinition @'
[DllImport("powrprof.dll", SetLastError = true)]
[return: MarshalAs(UnmanagedType.I1)]
public static extern bool GetPwrCapabilities([Out] byte[] capabilities);
[DllImport("powrprof.dll", SetLastError = true)]
[return: MarshalAs(UnmanagedType.I1)]
public static extern bool SetSuspendState([MarshalAs(UnmanagedType.I1)] bool hibernate, [MarshalAs(UnmanagedType.I1)] bool force, [MarshalAs(UnmanagedType.I1)] bool wakeupEventsDisabled);
[DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)]
public static extern IntPtr CreateWaitableTimerW(IntPtr attributes, bool manualReset, string name);
[DllImport("kernel32.dll", SetLastError = true)]
public static extern bool SetWaitableTimer(IntPtr timer, ref long dueTime, int period, IntPtr completion, IntPtr argument, bool resume);
[DllImport("kernel32.dll", SetLastError = true)]
public static extern bool CloseHandle(IntPtr handle);
'@
}

# Whether this machine can sleep in S3 and wake itself from it, and why not. SYSTEM_POWER_CAPABILITIES
# (https://learn.microsoft.com/windows/win32/api/winnt/ns-winnt-system_power_capabilities), 0x4C bytes:
# SystemS3 at 0x05, AoAc (S0 low-power idle, Modern Standby) at 0x14, RtcWake (the deepest
# SYSTEM_POWER_STATE the real-time clock wakes from; PowerSystemSleeping3 = 4) at 0x40.
function Get-SleepSupport {
    Initialize-PowerApi
    $caps = New-Object byte[] 0x4C
    if (-not [PmupcwTest.Power]::GetPwrCapabilities($caps)) {
        return [pscustomobject]@{ Possible = $false; Why = "GetPwrCapabilities failed (error $([Runtime.InteropServices.Marshal]::GetLastWin32Error()))" }
    }
    $s3 = $caps[0x05] -ne 0
    $s0ix = $caps[0x14] -ne 0
    $rtcWake = [BitConverter]::ToInt32($caps, 0x40)
    if (-not $s3 -and $s0ix) {
        return [pscustomobject]@{ Possible = $false; Why = 'the machine sleeps only in S0 low-power idle (Modern Standby), which a script cannot enter on demand' }
    }
    if (-not $s3) {
        return [pscustomobject]@{ Possible = $false; Why = 'the machine offers no S3 sleep (usual in VMs: Hyper-V, for one, offers none)' }
    }
    if ($rtcWake -lt 4) {
        return [pscustomobject]@{ Possible = $false; Why = "S3 is offered but the real-time clock cannot wake the machine from it (RtcWake = $rtcWake), so the script could not wake it" }
    }
    [pscustomobject]@{ Possible = $true; Why = 'S3 with real-time-clock wake' }
}

# Sleeps in S3 with a wake timer $Seconds out, while typeperf samples every counterset into the
# report's $Name; returns when typeperf has finished, with when the sleep began and whether the OS
# logged a return from a low-power state (Microsoft-Windows-Power-Troubleshooter event 1).
function Invoke-SleepCycle([string]$Name, [int]$Seconds) {
    $csv = Join-Path $script:Report $Name
    $samples = 40
    $arguments = @('-cf', "`"$script:CounterFile`"", '-si', '1', '-sc', $samples, '-f', 'CSV', '-o', "`"$csv`"", '-y')
    $typeperf = Start-Process -FilePath typeperf.exe -ArgumentList $arguments -WindowStyle Hidden -PassThru
    Start-Sleep -Seconds 10
    $timer = [PmupcwTest.Power]::CreateWaitableTimerW([IntPtr]::Zero, $true, $null)
    if ($timer -eq [IntPtr]::Zero) { throw "CreateWaitableTimer failed (error $([Runtime.InteropServices.Marshal]::GetLastWin32Error()))" }
    try {
        [long]$due = -10000000 * $Seconds   # relative, in 100 ns units
        if (-not [PmupcwTest.Power]::SetWaitableTimer($timer, [ref]$due, 0, [IntPtr]::Zero, [IntPtr]::Zero, $true)) {
            throw "SetWaitableTimer failed (error $([Runtime.InteropServices.Marshal]::GetLastWin32Error()))"
        }
        $began = Get-Date
        Write-Step "sleeping (S3) now; the wake timer is due in $Seconds s. If the machine is not back within 2 minutes, wake it (a key press, or resume the VM from its host)."
        $entered = [PmupcwTest.Power]::SetSuspendState($false, $false, $false)
        $lastError = [Runtime.InteropServices.Marshal]::GetLastWin32Error()
    } finally {
        $null = [PmupcwTest.Power]::CloseHandle($timer)
    }
    if (-not $typeperf.WaitForExit(($samples + $Seconds + 60) * 1000)) { Stop-Process -Id $typeperf.Id -Force }
    $resumed = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Microsoft-Windows-Power-Troubleshooter'; Id = 1; StartTime = $began } -ErrorAction SilentlyContinue)
    [pscustomobject]@{ Csv = $csv; Entered = $entered; Error = $lastError; Resumed = $resumed.Count -gt 0; Began = $began }
}

# Copies a $Megabytes MiB buffer $Copies times while one typeperf samples $BandwidthCounterPaths
# every second into the report's $Name, starting 3 s before the first copy and ending some seconds
# after the last; returns the CSV, when the copies began and ended, and the bytes copied. The source is filled
# first: pages never written would all read Windows' one zero page, which the cache serves. One copy
# is made before typeperf starts: it touches the destination (its first writes are page faults, not
# copies) and times a copy, from which typeperf's sample count is sized (twice the time, and 8 s).
function Invoke-BandwidthCopy([string]$Name, [int]$Megabytes, [int]$Copies) {
    $bytes = [int64]$Megabytes * 1mb
    $source = New-Object byte[] $bytes
    $destination = New-Object byte[] $bytes
    (New-Object Random 31).NextBytes($source)
    $clock = [Diagnostics.Stopwatch]::StartNew()
    [Array]::Copy($source, $destination, $bytes)
    $perCopy = $clock.Elapsed.TotalSeconds
    $counters = Join-Path $script:Report ([IO.Path]::GetFileNameWithoutExtension($Name) + '-counters.txt')
    Set-Content -LiteralPath $counters -Value $BandwidthCounterPaths -Encoding ASCII
    $csv = Join-Path $script:Report $Name
    $samples = [int][Math]::Ceiling($perCopy * $Copies * 2) + 8
    $arguments = @('-cf', "`"$counters`"", '-si', '1', '-sc', $samples, '-f', 'CSV', '-o', "`"$csv`"", '-y')
    $typeperf = Start-Process -FilePath typeperf.exe -ArgumentList $arguments -WindowStyle Hidden -PassThru
    Start-Sleep -Seconds 3
    $began = Get-Date
    for ($i = 0; $i -lt $Copies; $i++) { [Array]::Copy($source, $destination, $bytes) }
    $ended = Get-Date
    if (-not $typeperf.WaitForExit(($samples + 60) * 1000)) { Stop-Process -Id $typeperf.Id -Force }
    # Give the buffers back before the harness and the sleep run.
    $source = $null
    $destination = $null
    [GC]::Collect()
    [pscustomobject]@{ Csv = $csv; Began = $began; Ended = $ended; BufferBytes = $bytes; Copies = $Copies; SecondsPerCopy = $perCopy }
}

# How far the total $Path rose from the last row of $Csv sampled at or before $Began to the first at or
# after $Ended; $null where the CSV lacks it or its samples do not bracket that time.
function Get-TotalRise($Csv, [string]$Path, [datetime]$Began, [datetime]$Ended) {
    $column = Find-Column $Csv $Path
    if (-not $column) { return $null }
    $before = $null
    $after = $null
    foreach ($row in $Csv.Rows) {
        $time = [datetime]::Parse($row.PSObject.Properties[$Csv.Time].Value, [cultureinfo]::InvariantCulture)
        $value = ConvertTo-Number $row.PSObject.Properties[$Column].Value
        if ($null -eq $value) { continue }
        if ($time -le $Began) { $before = $value }
        if ($time -ge $Ended -and $null -eq $after) { $after = $value }
    }
    if ($null -eq $before -or $null -eq $after) { return $null }
    $after - $before
}

# The memory bandwidth check's verdict from what was seen: the last Memory Controller State sampled,
# the rises of _Total's DRAM Read Bytes and DRAM Write Bytes across the copy ($null where the samples
# did not bracket it) and the bytes the copy must have sent each way ($Floor). Counting (1): each
# rise in [$Floor, $MaxDramFactor x $Floor] passes, with the factor (rise / $Floor) reported; any
# other state skips, named, with the reason.
function Get-BandwidthVerdict([int]$State, $ReadRise, $WriteRise, [double]$Floor) {
    $name = if ($MemoryControllerStates.ContainsKey($State)) { $MemoryControllerStates[$State] } else { 'unknown' }
    if ($State -ne 1) {
        $why = if ($MemoryControllerSkipReasons.ContainsKey($State)) { $MemoryControllerSkipReasons[$State] } else { 'a state this script does not know' }
        return [pscustomobject]@{ Verdict = 'SKIP'; Detail = "Memory Controller State $State ($name): $why" }
    }
    if ($null -eq $ReadRise -or $null -eq $WriteRise) {
        return [pscustomobject]@{ Verdict = 'FAIL'; Detail = 'Memory Controller State 1 (counting), but no samples of the DRAM totals before and after the copy' }
    }
    $ceiling = $MaxDramFactor * $Floor
    $seen = "DRAM Read Bytes rose by $ReadRise ($([Math]::Round($ReadRise / $Floor, 2))x), DRAM Write Bytes by $WriteRise ($([Math]::Round($WriteRise / $Floor, 2))x) for $Floor bytes copied that must have reached DRAM (allowed 1x to ${MaxDramFactor}x)"
    $readOk = $ReadRise -ge $Floor -and $ReadRise -le $ceiling
    $writeOk = $WriteRise -ge $Floor -and $WriteRise -le $ceiling
    if ($readOk -and $writeOk) {
        return [pscustomobject]@{ Verdict = 'PASS'; Detail = $seen }
    }
    [pscustomobject]@{ Verdict = 'FAIL'; Detail = "$seen; below 1x the counters miss traffic (a wrong offset or scale), above ${MaxDramFactor}x they count something else" }
}

# Step 5: the copy, typeperf across it (bandwidth.csv) and Get-BandwidthVerdict's check. Every copy
# but the last has certainly reached DRAM by the after-sample: the last one streams twice the buffer
# through the cache, which evicts every earlier line, while its own last lines may still sit in the
# cache. So the floor is (copies - 1) x the buffer, for reads (the sources) and writes alike.
function Add-BandwidthCheck {
    $bytes = [int64]$BandwidthBufferMB * 1mb
    $free = [int64](Get-CimInstance Win32_OperatingSystem).FreePhysicalMemory * 1kb
    if ($free -lt 3 * $bytes) {
        Add-Check 'memory bandwidth' SKIP "$([int]($free / 1mb)) MiB free, under 3 x -BandwidthBufferMB $BandwidthBufferMB (source, destination and a margin); give a smaller -BandwidthBufferMB (at least 256)"
        return
    }
    $copy = Invoke-BandwidthCopy 'bandwidth.csv' $BandwidthBufferMB $BandwidthCopies
    $csv = Read-CounterCsv $copy.Csv
    $stateColumn = Find-Column $csv $MemoryControllerStatePath
    $states = @(if ($stateColumn) { Get-ColumnValues $csv.Rows $stateColumn })
    $state = if ($states.Count) { [int]$states[-1] } else { -1 }
    $readRise = Get-TotalRise $csv $DramReadBytesPath $copy.Began $copy.Ended
    $writeRise = Get-TotalRise $csv $DramWriteBytesPath $copy.Began $copy.Ended
    $floor = [double]($copy.Copies - 1) * $copy.BufferBytes
    $verdict = Get-BandwidthVerdict $state $readRise $writeRise $floor
    $how = "$($copy.Copies) copies of $BandwidthBufferMB MiB in $([Math]::Round(($copy.Ended - $copy.Began).TotalSeconds, 2)) s"
    Add-Check 'memory bandwidth' $verdict.Verdict "$($verdict.Detail); $how; see bandwidth.csv"
}

# -------------------------------------------------------------------------------------------------
# The steps: 'restart' when the run waits for one, 'done' when the report is complete.

function Invoke-TestRun($Pending) {
    $os = Get-CimInstance Win32_OperatingSystem
    if ($Pending -and $Pending.Stage -like 'running*') {
        # The previous process of this run ended without its summary: a bug check restarts the machine.
        $bugChecks = @(Get-BugChecks $script:Started)
        $detail = "the run stopped during $($Pending.Stage -replace '^running: ', '') and did not finish"
        if ($bugChecks.Count -gt 0) { $detail += "; bug checks since it began: $(($bugChecks | ForEach-Object { $_.Message -replace '\s+', ' ' }) -join ' | ')" }
        Add-Check 'run completed' FAIL $detail
        return 'done'
    }

    # 1. The system.
    Save-RunState 'running: system'
    $cpu = Get-CimInstance Win32_Processor | Select-Object -First 1
    $computer = Get-CimInstance Win32_ComputerSystem
    $pmc = Get-PmcSources
    $currentVersion = Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
    $ubr = if ($currentVersion.PSObject.Properties['UBR']) { $currentVersion.UBR } else { '?' }
    $packageDriverVer = Get-InfDriverVer (Join-Path $PackageDir $PackageFiles.Inf)
    if (-not (Test-Path -LiteralPath (Join-Path $script:Report 'system.txt'))) {
        Save-Report 'system.txt' (@(
                "OS: $($os.Caption) $($os.Version) build $($os.BuildNumber).$ubr ($($os.OSArchitecture))"
                "last boot: $($os.LastBootUpTime.ToString('s'))"
                "CPU: $($cpu.Name.Trim()) ($($cpu.Manufacturer), $($cpu.Caption))"
                "logical processors: $($computer.NumberOfLogicalProcessors)"
                "machine: $($computer.Manufacturer) $($computer.Model); hypervisor present: $($computer.HypervisorPresent)"
                "HAL PMU profile sources (wpr -pmcsources): $(if ($pmc.Known) { if ($pmc.Sources.Count) { $pmc.Sources -join ', ' } else { 'none (timer only)' } } else { 'unknown' })"
                "package DriverVer: $(Format-DriverVer $packageDriverVer)"
                "PowerShell: $($PSVersionTable.PSVersion)"
                "run started: $($script:Started.ToString('s'))"
                ''
                'wpr -pmcsources:'
                $pmc.Output
            ) -join "`r`n")
    } else {
        Add-Report 'system.txt' "`r`nresumed $((Get-Date).ToString('s')); last boot: $($os.LastBootUpTime.ToString('s'))"
    }

    # 2. Install or upgrade, then the driver the service runs.
    Save-RunState 'running: install'
    $installCode = Invoke-PackageScript $PackageFiles.InstallScript @('-PackageDir', $PackageDir) 'install.log'
    if ($installCode -ne 0) {
        Add-Check 'install' FAIL "$($PackageFiles.InstallScript) failed (exit code $installCode); see install.log"
        return 'done'
    }
    Add-Check 'install' PASS "$($PackageFiles.InstallScript) installed or upgraded the package and started $ServiceName"
    # The image loaded now (a running service keeps the one it was started from), else the one the
    # service names.
    $configured = Join-Path (Get-ServiceImageFolder $ServiceName) $PackageFiles.Driver
    $loaded = Get-LoadedDriverPath $PackageFiles.Driver
    $running = if ($loaded) { $loaded } else { $configured }
    $folder = Split-Path -Parent $running
    $packaged = Join-Path $PackageDir $PackageFiles.Driver
    $runningHash = (Get-FileHash -LiteralPath $running -Algorithm SHA256).Hash
    $packagedHash = (Get-FileHash -LiteralPath $packaged -Algorithm SHA256).Hash
    $fileVersion = (Get-Item -LiteralPath $running).VersionInfo.FileVersion
    $storeInf = Join-Path $folder $PackageFiles.Inf
    $installedDriverVer = if (Test-Path -LiteralPath $storeInf) { Get-InfDriverVer $storeInf } else { $null }
    Save-Report 'driver.txt' (@(
            "service image: $configured"
            "loaded image: $(if ($loaded) { $loaded } else { 'not listed by EnumDeviceDrivers' })"
            "file version: $fileVersion"
            "SHA-256: $runningHash (package: $packagedHash)"
            "installed DriverVer: $(Format-DriverVer $installedDriverVer) (package: $(Format-DriverVer $packageDriverVer))"
            ''
            # The service as CIM sees it (Win32_SystemDriver), not sc.exe query's localized labels.
            (Get-CimInstance -ClassName Win32_SystemDriver -Filter "Name='$ServiceName'" |
                Format-List Name, State, Status, StartMode, ExitCode, PathName | Out-String).Trim()
        ) -join "`r`n")
    if ($runningHash -eq $packagedHash -and (Format-DriverVer $installedDriverVer) -eq (Format-DriverVer $packageDriverVer)) {
        Add-Check 'installed driver' PASS "the service runs the package's $($PackageFiles.Driver) (file version $fileVersion, DriverVer $(Format-DriverVer $packageDriverVer)) from $folder"
    } else {
        Add-Check 'installed driver' FAIL "the service runs $running (DriverVer $(Format-DriverVer $installedDriverVer)), not the package's $($PackageFiles.Driver) (DriverVer $(Format-DriverVer $packageDriverVer)); see driver.txt"
    }

    # 3. Driver Verifier: its settings apply from the next restart.
    Save-RunState 'running: Driver Verifier'
    if ($NoVerifier) {
        Add-Check 'driver verifier' SKIP '-NoVerifier'
    } else {
        $verifier = Get-VerifierState $PackageFiles.Driver
        Save-Report 'verifier-querysettings.txt' $verifier.Settings
        $restarted = $Pending -and $Pending.Stage -eq 'restart' -and
            $os.LastBootUpTime -gt [datetime]::Parse($Pending.Saved, $null, [Globalization.DateTimeStyles]::RoundtripKind)
        if ($verifier.Active) {
            Add-Check 'driver verifier' PASS "$($PackageFiles.Driver) is verified in this boot (standard checks): everything below runs under Driver Verifier"
        } elseif ($restarted) {
            Add-Check 'driver verifier' FAIL "the machine restarted, yet verifier /query does not list $($PackageFiles.Driver); see verifier-querysettings.txt"
        } else {
            if (-not $verifier.Configured) {
                $code = Invoke-PackageScript $PackageFiles.VerifierScript @() 'verifier.log'
                if ($code -ne 0) {
                    Add-Check 'driver verifier' FAIL "$($PackageFiles.VerifierScript) failed (exit code $code); see verifier.log"
                    return 'done'
                }
            }
            # Continue after the restart: a task at this user's logon, elevated, runs this script with
            # -Resume and the -ReportRoot that holds the run's state; the other parameters come from
            # that state (Register-ScheduledTask, https://learn.microsoft.com/powershell/module/scheduledtasks/register-scheduledtask).
            Save-RunState 'restart'
            $user = [Security.Principal.WindowsIdentity]::GetCurrent().Name
            $action = New-ScheduledTaskAction -Execute (Get-Process -Id $PID).Path -WorkingDirectory $PSScriptRoot `
                -Argument "-NoProfile -ExecutionPolicy Bypass -NoExit -File `"$PSCommandPath`" -Resume -ReportRoot `"$($ReportRoot.TrimEnd('\'))`""
            $trigger = New-ScheduledTaskTrigger -AtLogOn -User $user
            $principal = New-ScheduledTaskPrincipal -UserId $user -LogonType Interactive -RunLevel Highest
            $null = Register-ScheduledTask -TaskName $ResumeTaskName -Action $action -Trigger $trigger -Principal $principal -Force
            Write-Warning ("Driver Verifier verifies $($PackageFiles.Driver) only after a restart. After it, log on as $user " +
                "and the test goes on by itself (task '$ResumeTaskName'), or run the same command again.")
            if ($Restart) {
                Write-Step 'restarting in 30 s (Ctrl+C to cancel; then restart yourself)'
                Start-Sleep -Seconds 30
                Restart-Computer -Force
            } else {
                Write-Step 'restart now: Restart-Computer'
            }
            return 'restart'
        }
    }

    # 4. typeperf on every counterset, and PMU State against what the machine says.
    Save-RunState 'running: typeperf'
    $expected = Get-ExpectedPmuState $cpu ([bool]$computer.HypervisorPresent) $pmc
    # The highest clock a core may run at (see $TurboAllowance); a machine that reports none gets a
    # bound no count can pass, so the rise checks fail saying why.
    $maxHz = [double]$cpu.MaxClockSpeed * 1e6 * $TurboAllowance
    if ($maxHz -le 0) { Add-Check 'processor clock' FAIL 'Win32_Processor reports no MaxClockSpeed: the rise checks cannot be bounded' }
    $csv = $null
    $state = -1
    $stateText = 'not sampled'
    try {
        $csv = Read-CounterCsv (Invoke-Typeperf 'typeperf.csv' $SampleCount)
    } catch {
        Add-Check 'typeperf' FAIL "typeperf could not sample every counterset: $($_.Exception.Message)"
    }
    if ($csv) {
        $instances = @(Get-Instances $csv $PerProcessorInstructions)
        $processors = @($instances | Where-Object { $_ -ne '_Total' })
        if ($instances -contains '_Total' -and $processors.Count -eq $computer.NumberOfLogicalProcessors) {
            Add-Check 'instances' PASS "$($processors.Count) processor instances ($($processors[0]) ... $($processors[-1])) and _Total, one per logical processor"
        } else {
            Add-Check 'instances' FAIL "instances $($instances -join ' ') for $($computer.NumberOfLogicalProcessors) logical processors (want one each, and _Total)"
        }
        $stateColumn = Find-Column $csv $PmuStatePath
        $states = @(if ($stateColumn) { Get-ColumnValues $csv.Rows $stateColumn })
        $state = if ($states.Count) { [int]$states[-1] } else { -1 }
        $stateText = if ($PmuStates.ContainsKey($state)) { "$state ($($PmuStates[$state]))" } else { "$state (unknown)" }
        $wanted = ($expected.States | ForEach-Object { "$_ ($($PmuStates[$_]))" }) -join ' or '
        if ($expected.States -contains $state) {
            Add-Check 'PMU state' PASS "PMU State $stateText, as expected: $($expected.Why)"
        } elseif ($state -eq 2) {
            Add-Check 'PMU state' FAIL "PMU State $stateText: another PMU user (WPR, VTune, a profiler) holds the counters; stop it and run again (expected $wanted: $($expected.Why))"
        } else {
            Add-Check 'PMU state' FAIL "PMU State $stateText, expected $wanted: $($expected.Why)"
        }
        $instructions = Find-Column $csv $TotalInstructions
        $ipc = Find-Column $csv $TotalIpc
        $totals = @(if ($instructions) { Get-ColumnValues $csv.Rows $instructions })
        $ratios = @(if ($ipc) { Get-ColumnValues $csv.Rows $ipc })
        if ($state -eq 1) {
            $implausible = @(Find-ImplausibleRises $csv @($csv.Rows) $maxHz)
            if ($implausible.Count -ne 0) {
                Add-Check 'counts rise' FAIL "a count rose faster than $($maxHz / 1e9) GHz x $MaxInstructionsPerCycle instructions a cycle allow: $($implausible -join '; ')"
            } elseif (Test-Rising $totals) {
                Add-Check 'counts rise' PASS "_Total Instructions Retired rose from $($totals[0]) to $($totals[-1]) over $($totals.Count) samples, never backwards"
            } else {
                Add-Check 'counts rise' FAIL "_Total Instructions Retired did not rise steadily: $($totals -join ', ')"
            }
            # Instructions per cycle: no x86 core retires more than 8 instructions a cycle, so a value
            # is in (0, 8]; a wrong field, type or base shows as a value far outside (100 x the IPC
            # for a base that is not 100 x the cycles).
            if ($ratios.Count -and $ratios[-1] -gt 0 -and $ratios[-1] -le $MaxInstructionsPerCycle) {
                Add-Check 'instructions per cycle' PASS "_Total Instructions per Cycle $($ratios[-1])"
            } else {
                Add-Check 'instructions per cycle' FAIL "_Total Instructions per Cycle is not in (0, $MaxInstructionsPerCycle]: $($ratios -join ', ')"
            }
        } elseif ($state -in 3, 5, 6, 7) {
            if ($totals.Count -and -not ($totals | Where-Object { $_ -ne 0 })) {
                Add-Check 'counts rise' SKIP "no usable PMU (State $stateText): every _Total Instructions Retired sample reads 0, as it should"
            } else {
                Add-Check 'counts rise' FAIL "no usable PMU (State $stateText), yet _Total Instructions Retired reads $($totals -join ', ')"
            }
        } else {
            Add-Check 'counts rise' FAIL "PMU State $stateText: the counters are not owned, nothing to count"
        }
    }

    # 5. Memory bandwidth: DRAM bytes across a copy of known size, where the memory controller counts.
    Save-RunState 'running: memory bandwidth'
    Add-BandwidthCheck

    # 6. The PDH stress harness.
    Save-RunState 'running: PDH harness'
    $harness = if ($HarnessPath) { $HarnessPath } else { Join-Path $PSScriptRoot $PackageFiles.Harness }
    if (-not (Test-Path -LiteralPath $harness -PathType Leaf)) {
        Add-Check 'pdh harness' FAIL ("$harness is missing: the Linux package ships $($PackageFiles.Harness) (cargo make package); " +
            'elsewhere build it with cargo make harness and give its path with -HarnessPath')
    } else {
        $arguments = @('--threads', $HarnessThreads, '--cycles', $HarnessCycles, '--service', $ServiceName, '--csv', (Join-Path $script:Report 'pdh-harness.csv'))
        $run = Invoke-Tool $harness $arguments -OkExitCodes @(0, 1, 2)
        Save-Report 'pdh-harness.log' $run.Output
        $result = if ($run.Output -match '(?m)^result: (.*)$') { $Matches[1].Trim() } else { 'no result line' }
        switch ($run.ExitCode) {
            0 { Add-Check 'pdh harness' PASS "$HarnessThreads threads, $HarnessCycles service stop/start cycles: $result" }
            1 { Add-Check 'pdh harness' FAIL "$result; see pdh-harness.csv (the rows whose verdict is violation)" }
            default { Add-Check 'pdh harness' FAIL "the harness could not run (exit code 2); see pdh-harness.log" }
        }
    }

    # 7. Sleep and resume, where the machine can do it and wake itself.
    Save-RunState 'running: sleep and resume'
    Save-Report 'sleep-states.txt' (Invoke-Tool powercfg.exe @('/availablesleepstates') -Quiet -OkExitCodes @(0, 1)).Output
    $sleep = if ($NoSleep) { [pscustomobject]@{ Possible = $false; Why = '-NoSleep' } } else { Get-SleepSupport }
    if (-not $sleep.Possible) {
        Add-Check 'sleep and resume' SKIP "not exercised: $($sleep.Why); see sleep-states.txt"
    } elseif ((Get-ServiceState $ServiceName) -ne 'RUNNING') {
        Add-Check 'sleep and resume' FAIL "service $ServiceName is not running after the harness"
    } else {
        $cycle = Invoke-SleepCycle 'sleep-typeperf.csv' 60
        $sleepCsv = Read-CounterCsv $cycle.Csv
        $rows = @($sleepCsv.Rows)
        $column = Find-Column $sleepCsv $TotalInstructions
        $stateColumn = Find-Column $sleepCsv $PmuStatePath
        $times = @($rows | ForEach-Object { [datetime]::Parse($_.PSObject.Properties[$sleepCsv.Time].Value, [cultureinfo]::InvariantCulture) })
        # The sleep is the longest gap between two samples.
        $gapAt = 0
        for ($i = 1; $i -lt $times.Count; $i++) { if (($times[$i] - $times[$i - 1]) -gt ($times[$gapAt + 1] - $times[$gapAt])) { $gapAt = $i - 1 } }
        $gap = if ($times.Count -gt 1) { ($times[$gapAt + 1] - $times[$gapAt]).TotalSeconds } else { 0 }
        if (-not $cycle.Entered -and -not $cycle.Resumed) {
            Add-Check 'sleep and resume' SKIP "not exercised: SetSuspendState did not sleep (error $($cycle.Error))"
        } elseif ($gap -lt 20) {
            Add-Check 'sleep and resume' FAIL "SetSuspendState returned $($cycle.Entered), but typeperf's samples show no pause of 20 s or more (longest $gap s)"
        } elseif (-not $column -or -not $stateColumn) {
            Add-Check 'sleep and resume' FAIL "sleep-typeperf.csv lacks _Total Instructions Retired or PMU State"
        } else {
            $before = @(Get-ColumnValues $rows[0..$gapAt] $column)
            $after = @(Get-ColumnValues $rows[($gapAt + 1)..($rows.Count - 1)] $column)
            $afterStates = @(Get-ColumnValues $rows[($gapAt + 1)..($rows.Count - 1)] $stateColumn)
            $afterState = if ($afterStates.Count) { [int]$afterStates[-1] } else { 'none' }
            $lastBefore = if ($before.Count) { $before[-1] } else { 'none' }
            $seen = "slept $([int]$gap) s (Power-Troubleshooter logged the resume: $($cycle.Resumed)); _Total Instructions Retired before: $lastBefore, after: $($after -join ', '); PMU State after: $afterState"
            # No processor's count may rise faster than its clock can retire instructions, the sleep's
            # samples included: a counter reprogrammed at resume without its old value jumps.
            $implausible = @(Find-ImplausibleRises $sleepCsv $rows $maxHz)
            if ($state -ne 1) {
                Add-Check 'sleep and resume' SKIP "no PMU to count with (State $stateText); $seen"
            } elseif ($implausible.Count -ne 0) {
                Add-Check 'sleep and resume' FAIL "a count rose faster than $($maxHz / 1e9) GHz x $MaxInstructionsPerCycle instructions a cycle allow: $($implausible -join '; '); $seen"
            } elseif ($before.Count -and $after.Count -ge 2 -and $after[0] -ge $lastBefore -and (Test-Rising $after) -and $implausible.Count -eq 0) {
                Add-Check 'sleep and resume' PASS "$seen; every processor's rise within elapsed time x $($maxHz / 1e9) GHz x $MaxInstructionsPerCycle"
            } else {
                Add-Check 'sleep and resume' FAIL "counts did not keep rising after the resume: $seen"
            }
        }
    }

    # 8. What Driver Verifier checked, and bug checks since the run began.
    Save-RunState 'running: final checks'
    if (-not $NoVerifier) {
        $verifier = Get-VerifierState $PackageFiles.Driver
        Save-Report 'verifier-query.txt' $verifier.Query
        if ($verifier.Active) {
            Add-Check 'verifier at the end' PASS "$($PackageFiles.Driver) still verified, no violation (one would have been a bug check); counters in verifier-query.txt"
        } else {
            Add-Check 'verifier at the end' FAIL "verifier /query no longer lists $($PackageFiles.Driver); see verifier-query.txt"
        }
    }
    $bugChecks = @(Get-BugChecks $script:Started)
    if ($bugChecks.Count -gt 0) {
        Add-Check 'bug checks' FAIL ("$($bugChecks.Count) since the run began: $(($bugChecks | ForEach-Object { $_.Message -replace '\s+', ' ' }) -join ' | '); " +
            "open $env:SystemRoot\MEMORY.DMP in WinDbg with $($PackageFiles.Symbols) on the symbol path and run !analyze -v")
    } else {
        Add-Check 'bug checks' PASS 'none logged since the run began'
    }
    'done'
}

# -------------------------------------------------------------------------------------------------
# The run: one at a time; a run that waits for a restart (or was cut short) goes on in its own report
# folder, with its parameters unless given again.

$script:Report = $null
$outcome = 'done'
$exitCode = 1
$transcript = $false
$mutex = New-Object System.Threading.Mutex($false, 'Global\pmupcw-Test-Pmupcw')
if (-not $mutex.WaitOne(0)) {
    Write-Error 'test: FAILED: another Test-Pmupcw.ps1 is running on this machine; wait for it to finish.' -ErrorAction Continue
    exit 1
}
try {
    $pending = $null
    if (Test-Path -LiteralPath $StateFile) { $pending = Get-Content -LiteralPath $StateFile -Raw | ConvertFrom-Json }
    if ($Resume -and -not $pending) { throw "-Resume: no run waits for a restart ($StateFile is missing)." }
    if ($pending) {
        foreach ($property in $pending.Parameters.PSObject.Properties) {
            if ($property.Name -in $RememberedParameters -and -not $PSBoundParameters.ContainsKey($property.Name)) {
                Set-Variable -Name $property.Name -Value $property.Value
            }
        }
        $script:Report = $pending.Report
        $script:Started = [datetime]::Parse($pending.Started, $null, [Globalization.DateTimeStyles]::RoundtripKind)
    } else {
        $script:Started = Get-Date
        $script:Report = Join-Path $ReportRoot ('pmupcw-test-' + $script:Started.ToString('yyyyMMdd-HHmmss'))
        $null = New-Item -ItemType Directory -Path $script:Report -Force
    }
    Start-Transcript -LiteralPath (Join-Path $script:Report 'transcript.txt') -Append | Out-Null
    $transcript = $true
    if (Get-ScheduledTask -TaskName $ResumeTaskName -ErrorAction SilentlyContinue) {
        Unregister-ScheduledTask -TaskName $ResumeTaskName -Confirm:$false
    }
    $script:CounterFile = Join-Path $script:Report 'counters.txt'
    Set-Content -LiteralPath $script:CounterFile -Value $CounterPaths -Encoding ASCII
    Write-Step "report: $script:Report"
    $outcome = @(Invoke-TestRun $pending)[-1]
} catch {
    $outcome = 'done'
    Write-Error "test: FAILED: $($_.Exception.Message)" -ErrorAction Continue
    if ($script:Report -and (Test-Path -LiteralPath $script:Report)) { Add-Check 'test script' FAIL $_.Exception.Message }
}
try {
    if ($outcome -eq 'restart') {
        $exitCode = 2
    } elseif ($script:Report -and (Test-Path -LiteralPath (Join-Path $script:Report 'checks.csv'))) {
        # The verdict: PASS when no check failed (a check run in both boots counts once, as last seen).
        $checks = @(Import-Csv -LiteralPath (Join-Path $script:Report 'checks.csv') | Group-Object Check | ForEach-Object { $_.Group[-1] })
        $failed = @($checks | Where-Object { $_.Verdict -eq 'FAIL' })
        $skipped = @($checks | Where-Object { $_.Verdict -eq 'SKIP' })
        $passed = @($checks | Where-Object { $_.Verdict -eq 'PASS' })
        $verdict = if ($failed.Count -eq 0 -and $passed.Count -gt 0) { 'PASS' } else { 'FAIL' }
        $line = "pmupcw test: $verdict ($($passed.Count) passed, $($failed.Count) failed" +
            "$(if ($failed.Count) { ': ' + (($failed | ForEach-Object { $_.Check }) -join ', ') }), $($skipped.Count) skipped" +
            "$(if ($skipped.Count) { ': ' + (($skipped | ForEach-Object { $_.Check }) -join ', ') })); report $script:Report"
        Save-Report 'summary.txt' $line
        $checks | Format-Table -AutoSize -Wrap -Property @('Check', 'Verdict', 'Detail') | Out-Host
        Write-Host $line
        $exitCode = if ($verdict -eq 'PASS') { 0 } else { 1 }
        Remove-Item -LiteralPath $StateFile -ErrorAction SilentlyContinue
    }
} finally {
    if ($transcript) { Stop-Transcript | Out-Null }
    $mutex.ReleaseMutex()
}
exit $exitCode
