#Requires -RunAsAdministrator
<#
.SYNOPSIS
    Enables (or with -Disable, resets) Driver Verifier's standard checks for pmupcw.sys.

.DESCRIPTION
    verifier /standard /driver pmupcw.sys, unless the saved settings already verify pmupcw.sys; then
    prints verifier /querysettings (what applies after the next restart) and verifier /query (what
    is active now). Driver Verifier settings take effect at the next restart, so the script warns
    when one is needed. With -Disable: verifier /reset (skipped when no driver is verified).
    A violation found by Driver Verifier is a bug check (usually 0xC4,
    DRIVER_VERIFIER_DETECTED_VIOLATION) naming pmupcw.sys; read the dump with WinDbg's !analyze -v.
    Any failure stops the script with a message and exit code 1.
#>
[CmdletBinding()]
param(
    [switch]$Disable
)
Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

# The package files this script uses, by role (tests/deployment.rs checks each exists in the package).
$PackageFiles = @{
    Driver = 'pmupcw.sys'
    Tools  = 'PmupcwTools.psm1'
}

# The helpers every pmupcw script shares (Write-Step, Invoke-Tool, ...), from the package folder.
$tools = Join-Path $PSScriptRoot $PackageFiles.Tools
if (-not (Test-Path -LiteralPath $tools -PathType Leaf)) {
    Write-Error "verifier: FAILED: $tools is missing: keep the package's scripts together." -ErrorAction Continue
    exit 1
}
Import-Module $tools -Force
Set-StepPrefix 'verifier'

# verifier.exe returns 2 when it changed the settings and a restart applies them.
$VerifierOk = @(0, 2)

try {
    $driver = $PackageFiles.Driver
    if ($Disable) {
        # Resetting is idempotent: it clears whatever is configured, pmupcw.sys or not.
        $null = Invoke-Tool verifier.exe @('/reset') -OkExitCodes $VerifierOk
        Write-Warning 'Driver Verifier settings were reset: restart the machine to turn verification off.'
    } elseif ((Get-VerifierState $driver).Configured) {
        Write-Step "the saved settings already verify $driver"
    } else {
        $null = Invoke-Tool verifier.exe @('/standard', '/driver', $driver) -OkExitCodes $VerifierOk
        Write-Warning "Driver Verifier will verify $driver with the standard checks after a restart: restart now (Restart-Computer)."
    }

    # Status: saved settings (next boot) and the live state (this boot; lists pmupcw.sys with its
    # counters only while it is loaded and verified).
    $state = Get-VerifierState $driver
    Write-Step 'saved settings (verifier /querysettings):'
    Write-Host $state.Settings.TrimEnd()
    Write-Step 'verified now (verifier /query):'
    Write-Host $state.Query.TrimEnd()
    if ($state.Active) {
        Write-Step "$driver is loaded and verified now"
    } else {
        Write-Step "$driver is not verified in this boot (restart after enabling: the service starts at boot)"
    }
    exit 0
} catch {
    Write-Error "verifier: FAILED: $($_.Exception.Message)" -ErrorAction Continue
    exit 1
}
