#Requires -RunAsAdministrator
<#
.SYNOPSIS
    Re-enables pmupcw's use of the PMU and the memory controllers after its boot guard held them off.

.DESCRIPTION
    pmupcw sets the REG_DWORD Parameters\HardwareGuard = 1 (flushed to disk) before it first programs
    the PMU or maps the memory controllers in a start, and deletes it once a read of every processor
    came back. A start that finds it set (the last start stopped in between: a bug check, a reset, a
    power loss) registers its countersets but touches no hardware: \Hardware Counters Driver\PMU State
    reads 8 and Hardware Guard 2 (or 3). This script deletes the value and restarts the driver
    (sc.exe stop, sc.exe start; with -NoRestart it only deletes the value, and the next boot or
    service start uses the hardware again). The one-line equivalent:
        reg delete HKLM\SYSTEM\CurrentControlSet\Services\pmupcw\Parameters /v HardwareGuard /f
    If the start that set it crashed the machine, the next first programming may crash it again:
    re-enable after a fix (a driver update, a firmware or hypervisor change), or on one machine
    first. Any failure stops the script with a message and exit code 1.
#>
[CmdletBinding()]
param(
    [switch]$NoRestart
)
Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

# The package files this script uses, by role (tests/deployment.rs checks each exists in the package).
$PackageFiles = @{
    Tools = 'PmupcwTools.psm1'
}

# The helpers every pmupcw script shares (Write-Step, Invoke-Tool, ...), from the package folder.
$tools = Join-Path $PSScriptRoot $PackageFiles.Tools
if (-not (Test-Path -LiteralPath $tools -PathType Leaf)) {
    Write-Error "enable-hardware: FAILED: $tools is missing: keep the package's scripts together." -ErrorAction Continue
    exit 1
}
Import-Module $tools -Force
Set-StepPrefix 'enable-hardware'

$ServiceName = 'pmupcw'
$Parameters = "HKLM:\SYSTEM\CurrentControlSet\Services\$ServiceName\Parameters"
$Marker = 'HardwareGuard'

try {
    $key = Get-Item -LiteralPath $Parameters -ErrorAction SilentlyContinue
    if ($null -ne $key -and $null -ne $key.GetValue($Marker, $null)) {
        Remove-ItemProperty -LiteralPath $Parameters -Name $Marker
        Write-Step "deleted Parameters\$Marker"
    } else {
        Write-Step "Parameters\$Marker is not set: the driver is not held off by its boot guard"
    }
    if ($NoRestart) {
        Write-Step 'the next service start (or boot) uses the hardware again'
        exit 0
    }
    Stop-DriverService $ServiceName
    $null = Invoke-Tool sc.exe @('start', $ServiceName) -OkExitCodes @(0, 1056)
    Write-Step 'restarted: the next query programs the PMU, guarded again until its first clean read'
    Write-Step 'check: typeperf "\Hardware Counters Driver\PMU State" "\Hardware Counters Driver\Hardware Guard" -sc 1'
    exit 0
} catch {
    Write-Error "enable-hardware: FAILED: $($_.Exception.Message)" -ErrorAction Continue
    exit 1
}
