package rdb

import "errors"

// ErrNotReplicated is returned when a write was stored on its master but
// Options.WaitReplicas replicas did not confirm it within WaitTimeout: it
// may be lost if that master fails over now. Retrying the same request is
// safe when it names its job id (a create with an existing id replaces it).
var ErrNotReplicated = errors.New("write not confirmed by replicas")
