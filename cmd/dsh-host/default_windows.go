package main

import pwshlocal "github.com/dsh-host/dsh-host/plugins/pwsh-local"

// defaultExecutor is what runs when --executor is not given: PowerShell on
// Windows.
const defaultExecutor = pwshlocal.Name
