package artifact

import (
	"context"
	"errors"
	"io"
)

// Store is a place backup artifacts live, addressed by key. Keys are slash-separated
// relative paths ("ns/cluster/backup.db.gz").
type Store interface {
	// Put stores everything r yields under key, streaming it. The artifact becomes visible
	// only when Put returns nil; when r fails, ctx ends or the store refuses a write, Put
	// returns the error and leaves nothing under key (nor any partial upload). Put replaces
	// an existing artifact of the same key.
	Put(ctx context.Context, key string, r io.Reader) error

	// Open returns the artifact stored under key, to be read to the end and closed. A
	// missing artifact is an error for which errors.Is(err, ErrNotFound) holds.
	Open(ctx context.Context, key string) (io.ReadCloser, error)

	// Stat returns the size in bytes of the artifact stored under key. A missing artifact
	// is an error for which errors.Is(err, ErrNotFound) holds.
	Stat(ctx context.Context, key string) (size int64, err error)

	// Delete removes the artifact stored under key. Deleting a missing artifact succeeds,
	// so Delete can be retried.
	Delete(ctx context.Context, key string) error
}

// ErrNotFound says the artifact, or the bucket or directory that should hold it, does not
// exist. Store errors wrap it, so test with errors.Is.
var ErrNotFound = errors.New("not found")

// notFoundError keeps a store's own error message and cause, and also matches ErrNotFound.
type notFoundError struct{ err error }

func (e notFoundError) Error() string { return e.err.Error() }
func (e notFoundError) Unwrap() []error {
	return []error{e.err, ErrNotFound}
}
