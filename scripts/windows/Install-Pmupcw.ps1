#Requires -RunAsAdministrator
<#
.SYNOPSIS
    Installs the pmupcw driver package, test-signed on a test machine or production-signed on any,
    registers its counters, starts it and runs a typeperf smoke query.

.DESCRIPTION
    Run from the package folder (the one holding pmupcw.inf, pmupcw.sys, pmupcw.man, the signed
    catalog and, in a test-signed package, pmupcw.cer). Each step checks first and is skipped when
    already done, so running the script again is harmless, and running it from a newer package upgrades:
      1. the package's signature decides (docs/install.md): pmupcw.sys and pmupcw.cat are read with
         Get-AuthenticodeSignature, by its Status enum and the signer certificate's thumbprint and
         enhanced key usages, never its localized message. Production-signed (Microsoft's attestation
         or HLK signing) installs on any boot, Secure Boot on and test signing off included.
         Test-signed (by the package's pmupcw.cer) needs a running boot that loads test-signed
         drivers: its code-integrity options (NtQuerySystemInformation, not bcdedit's localized text)
         have TESTSIGN. When they do not, the message says what to do: install a production-signed
         package where Secure Boot stays on, restart first where the boot entry already has test
         signing on (the setting applies from the next boot), else turn it on (Secure Boot off first
         where it is on). An unsigned package, or one whose signature is neither, is refused;
      2. a test-signed package's certificate goes into LocalMachine\Root and
         LocalMachine\TrustedPublisher (skipped when its thumbprint is already there); a
         production-signed package imports no certificate;
      3. pnputil /add-driver pmupcw.inf /install (a primitive driver: this creates the kernel service
         pmupcw, running from the driver store and started at every boot from then on), then checks
         that the service's image
         is now the package's pmupcw.sys (same SHA-256): Windows prefers the package with the later
         DriverVer (date, then version), so an older or equal one may leave the installed one in place;
      4. lodctr /m:<driver store folder>\pmupcw.man <driver store folder>
         (unlodctr /m: first when the provider is already registered);
      5. sc.exe start pmupcw, so the counters are there now and not only after the next restart; when
         the service is already running and the loaded image (the file it was loaded from, listed by
         EnumDeviceDrivers, not the ImagePath configured since) is not the package's pmupcw.sys by
         SHA-256, or cannot be found, sc.exe stop pmupcw first, so that the new image runs against
         the new manifest (an upgrade: a running driver keeps the image it was started from);
      6. typeperf "\Hardware Counters(*)\Instructions Retired/sec" -sc 2 into a CSV file, judged by
         typeperf's exit code and by the CSV's own content (a _Total column with a number), never by
         the words typeperf prints.
    Any failure stops the script with a message saying what failed and what to do, and exit code 1.

.PARAMETER PackageDir
    The package folder. Default: the folder of this script.

.PARAMETER SkipSmokeQuery
    Do not run the typeperf query at the end.

.PARAMETER EventProfile
    -Profile: the event profile: default, topdown or custom. Written to the service's Parameters key
    (HKLM\SYSTEM\CurrentControlSet\Services\pmupcw\Parameters, value Profile, REG_SZ) after step 3.
    The driver reads it at its next acquisition of the counters: no restart needed. Not given: the
    value is left as it is.

.PARAMETER CustomEvents
    The custom profile's raw events, one per element, e.g. 'event=0xC4,umask=0x00,name=branches'
    (keys: event, umask, cmask, inv, edge, name; see the README). Written as the REG_MULTI_SZ value
    CustomEvents. The driver validates each line and counts rejected ones in the status counter
    "Rejected Custom Events"; this script does not parse them.
#>
[CmdletBinding()]
param(
    [string]$PackageDir = $PSScriptRoot,
    [switch]$SkipSmokeQuery,
    # -Profile on the command line; the variable has another name because $PROFILE is PowerShell's own.
    [Alias('Profile')]
    [ValidateSet('default', 'topdown', 'custom')]
    [string]$EventProfile,
    [string[]]$CustomEvents
)
Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

# The package files this script uses, by role (tests/deployment.rs checks each exists in the package).
$PackageFiles = @{
    Inf             = 'pmupcw.inf'
    Certificate     = 'pmupcw.cer'
    Manifest        = 'pmupcw.man'
    Driver          = 'pmupcw.sys'
    UninstallScript = 'Uninstall-Pmupcw.ps1'
    VerifierScript  = 'Enable-Verifier.ps1'
    Catalog         = 'pmupcw.cat'
    Tools           = 'PmupcwTools.psm1'
}
$ServiceName = 'pmupcw'
$SmokeCounter = '\Hardware Counters(*)\Instructions Retired/sec'

# The helpers every pmupcw script shares (Write-Step, Invoke-Tool, ...), from the package folder.
$tools = Join-Path $PSScriptRoot $PackageFiles.Tools
if (-not (Test-Path -LiteralPath $tools -PathType Leaf)) {
    Write-Error "install: FAILED: $tools is missing: keep the package's scripts together." -ErrorAction Continue
    exit 1
}
Import-Module $tools -Force
Set-StepPrefix 'install'

function Get-PackagePath([string]$Name) {
    $path = Join-Path $PackageDir $Name
    if (-not (Test-Path -LiteralPath $path -PathType Leaf)) {
        throw "$Name is missing from the package folder $PackageDir. Run this script from an unpacked pmupcw package (cargo make package)."
    }
    $path
}

try {
    $inf = Get-PackagePath $PackageFiles.Inf
    $driver = Get-PackagePath $PackageFiles.Driver
    $null = Get-PackagePath $PackageFiles.Manifest
    # pnputil installs a driver package only with a catalog signed by a trusted certificate: check it
    # before changing anything.
    $catalog = Join-Path $PackageDir $PackageFiles.Catalog
    if (-not (Test-Path -LiteralPath $catalog -PathType Leaf)) {
        throw ("$($PackageFiles.Catalog) is missing from $PackageDir. pnputil installs a driver package only " +
            "with its signed catalog, which both package flows make ('cargo make package' on Linux, " +
            "'cargo make package --features wdk' with the WDK). With the WDK on this machine: " +
            "inf2cat /driver:. /os:10_X64, then sign pmupcw.cat with signtool (/fd sha256) and a code-signing " +
            "certificate you import into Root and TrustedPublisher.")
    }

    # 1. The package's signature against the running boot (bcdedit's setting applies only from the
    #    next boot). A test-signed package carries its certificate; a production-signed one has none.
    $testCertificate = $null
    $cer = Join-Path $PackageDir $PackageFiles.Certificate
    if (Test-Path -LiteralPath $cer -PathType Leaf) {
        $testCertificate = [System.Security.Cryptography.X509Certificates.X509Certificate2]::new($cer)
    }
    $signature = Get-PackageSignature $driver $catalog $testCertificate
    $integrity = Get-CodeIntegrityState
    $options = '0x{0:X8}' -f $integrity.Options
    $refusal = Get-InstallRefusal -Signature $signature.Kind -Files $signature.Files -Detail $signature.Detail `
        -TestSigning $integrity.TestSigning -SecureBoot $integrity.SecureBoot -Configured (Get-BcdTestSigning) `
        -Options $options
    if ($refusal) { throw $refusal }
    Write-Step ("package signature: $($signature.Kind) ($($signature.Detail)); code integrity options $options " +
        "(test signing $($integrity.TestSigning)); Secure Boot $($integrity.SecureBoot); memory integrity (HVCI) $($integrity.Hvci)")

    # 2. A test-signed package's certificate into Root and TrustedPublisher; none for a production one.
    if ($signature.Kind -eq 'Test') {
        foreach ($storeName in 'Root', 'TrustedPublisher') {
            $store = [System.Security.Cryptography.X509Certificates.X509Store]::new($storeName, 'LocalMachine')
            $store.Open('ReadWrite')
            try {
                if ($store.Certificates.Find('FindByThumbprint', $testCertificate.Thumbprint, $false).Count -gt 0) {
                    Write-Step "certificate $($testCertificate.Thumbprint) ($($testCertificate.Subject)) already in LocalMachine\$storeName"
                } else {
                    $store.Add($testCertificate)
                    Write-Step "imported certificate $($testCertificate.Thumbprint) ($($testCertificate.Subject)) into LocalMachine\$storeName"
                }
            } finally {
                $store.Close()
            }
        }
    } else {
        Write-Step 'production-signed package: no certificate imported'
    }

    # 3. The driver package (its signed catalog was checked above). A running service keeps the image
    #    it was loaded from, whatever pnputil installs or an earlier run configured: note the loaded
    #    image, for step 5.
    $runningImage = $null
    $runningHash = $null
    if ((Get-ServiceState $ServiceName) -eq 'RUNNING') {
        $runningImage = Get-LoadedDriverPath $PackageFiles.Driver
        $runningHash = if ($runningImage -and (Test-Path -LiteralPath $runningImage)) { (Get-FileHash -LiteralPath $runningImage -Algorithm SHA256).Hash }
    }
    $pnp = Invoke-Tool pnputil.exe @('/add-driver', $inf, '/install') -OkExitCodes @(0, 259, 3010)
    if ($pnp.ExitCode -eq 3010) { Write-Warning 'pnputil says a restart is needed to complete the installation.' }
    $image = Get-ServiceImagePath $ServiceName
    if (-not $image) {
        throw ("pnputil added the driver package but the $ServiceName service does not exist. See " +
            "$env:SystemRoot\INF\setupapi.dev.log for the [DefaultInstall] processing of $($PackageFiles.Inf) " +
            '(primitive drivers need Windows 10 version 1903 or later).')
    }
    $packageHash = (Get-FileHash -LiteralPath $driver -Algorithm SHA256).Hash
    $installedHash = (Get-FileHash -LiteralPath $image -Algorithm SHA256).Hash
    if ($installedHash -ne $packageHash) {
        throw ("the $ServiceName service starts $image (SHA-256 $installedHash), not this package's " +
            "$($PackageFiles.Driver) (SHA-256 $packageHash): the installed driver package stayed in place (Windows " +
            "prefers the later DriverVer, date then version). Build the package again ('cargo make package' stamps " +
            "a later DriverVer), or remove the installed one first: powershell -ExecutionPolicy Bypass -File " +
            "$(Join-Path $PSScriptRoot $PackageFiles.UninstallScript)")
    }
    $folder = Split-Path -Parent $image
    Write-Step "service $ServiceName runs $($PackageFiles.Driver) from $folder (SHA-256 $packageHash)"

    # The event profile, in the service's Parameters key (read by the driver at each acquisition).
    if ($EventProfile -or $CustomEvents) {
        $parameters = "HKLM:\SYSTEM\CurrentControlSet\Services\$ServiceName\Parameters"
        if (-not (Test-Path -LiteralPath $parameters)) { $null = New-Item -Path $parameters -Force }
        if ($EventProfile) {
            $null = New-ItemProperty -LiteralPath $parameters -Name 'Profile' -PropertyType String -Value $EventProfile -Force
            Write-Step "event profile: $EventProfile"
        }
        if ($CustomEvents) {
            $null = New-ItemProperty -LiteralPath $parameters -Name 'CustomEvents' -PropertyType MultiString `
                -Value $CustomEvents -Force
            Write-Step "custom events: $($CustomEvents.Count) line(s)"
        }
    }

    # 4. Counter registration, from the manifest the INF placed beside the driver.
    $manifest = Join-Path $folder $PackageFiles.Manifest
    if (-not (Test-Path -LiteralPath $manifest -PathType Leaf)) {
        throw "$manifest is missing: the INF should have copied $($PackageFiles.Manifest) beside $($PackageFiles.Driver)."
    }
    $provider = Get-CounterProvider $manifest
    if ($provider.Registered) {
        Write-Step "counter provider $($provider.Guid) is registered; unregistering it first"
        $null = Invoke-Tool unlodctr.exe @("/m:$manifest")
    }
    $null = Invoke-Tool lodctr.exe @("/m:$manifest", $folder)
    Write-Step "registered the countersets of $manifest"

    # 5. Start the service. One whose loaded image (noted before step 3) is another than the package's,
    #    or could not be found, is restarted, so that the new image runs against the counters just
    #    registered.
    $state = Get-ServiceState $ServiceName
    if ($state -eq 'RUNNING' -and $runningHash -ne $packageHash) {
        $loaded = if ($runningHash) { "$runningImage (SHA-256 $runningHash)" } else { 'an image this script cannot find' }
        Write-Step ("service $ServiceName runs $loaded, not the package's " +
            "$($PackageFiles.Driver) (SHA-256 $packageHash): restarting it")
        try {
            Stop-DriverService $ServiceName
        } catch {
            throw ("$($_.Exception.Message) Restart the machine: the service starts at boot, from the " +
                "package's $($PackageFiles.Driver) now.")
        }
        $state = Get-ServiceState $ServiceName
    }
    if ($state -eq 'RUNNING') {
        Write-Step "service $ServiceName is already running the package's $($PackageFiles.Driver)"
    } else {
        $null = Invoke-Tool sc.exe @('start', $ServiceName) -OkExitCodes @(0, 1056)
        for ($i = 0; $i -lt 20 -and (Get-ServiceState $ServiceName) -eq 'START_PENDING'; $i++) { Start-Sleep -Milliseconds 500 }
        $state = Get-ServiceState $ServiceName
        if ($state -ne 'RUNNING') { throw "service $ServiceName did not start (state $state); see the System event log." }
        Write-Step "started service $ServiceName"
    }

    # 6. Smoke query: two samples, so that the rate has two raw values to compute from.
    if (-not $SkipSmokeQuery) {
        # typeperf's exit code says whether it could query (Invoke-Tool throws on any other than 0); its
        # CSV, read here, says what it read: a _Total column and, in the second sample, a number.
        $csv = Join-Path ([IO.Path]::GetTempPath()) 'pmupcw-install-smoke.csv'
        $null = Invoke-Tool typeperf.exe @($SmokeCounter, '-sc', '2', '-f', 'CSV', '-o', $csv, '-y')
        $rows = @(Import-Csv -LiteralPath $csv)
        Remove-Item -LiteralPath $csv -ErrorAction SilentlyContinue
        $column = if ($rows.Count -gt 0) {
            @($rows[0].PSObject.Properties.Name) | Where-Object { $_.EndsWith('\Hardware Counters(_Total)\Instructions Retired/sec', [StringComparison]::OrdinalIgnoreCase) } | Select-Object -First 1
        }
        # typeperf writes numbers in the invariant or the current culture's form.
        $value = 0.0
        $parsed = $false
        foreach ($culture in [cultureinfo]::InvariantCulture, [cultureinfo]::CurrentCulture) {
            if (-not $parsed -and $column -and $rows.Count -ge 2) {
                $parsed = [double]::TryParse($rows[-1].$column, [Globalization.NumberStyles]::Float, $culture, [ref]$value)
            }
        }
        if (-not $parsed) {
            throw ("typeperf wrote no _Total sample of $SmokeCounter; run 'lodctr /q' and check the counter " +
                'registration (docs/install.md, troubleshooting).')
        }
        Write-Step "typeperf read the Hardware Counters countersets (_Total: $value instructions/s)"
    }
    Write-Step ("done. Remove with: powershell -ExecutionPolicy Bypass -File $(Join-Path $PSScriptRoot $PackageFiles.UninstallScript); " +
        "Driver Verifier with: powershell -ExecutionPolicy Bypass -File $(Join-Path $PSScriptRoot $PackageFiles.VerifierScript)")
    exit 0
} catch {
    Write-Error "install: FAILED: $($_.Exception.Message)" -ErrorAction Continue
    exit 1
}
