//go:build !windows

package main

import bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"

// defaultExecutor is what runs when --executor is not given.
const defaultExecutor = bashlocal.Name
