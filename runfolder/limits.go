package runfolder

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// WriteLimits records a run's limits (what workers read before every paid call: raising one takes effect in a
// running sweep) in the run folder dir, atomically.
func WriteLimits(dir string, limits any) error {
	b, err := json.MarshalIndent(limits, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(Limits(dir), append(b, '\n'))
}

// ReadLimits decodes the run folder's limits into limits; a folder without the file has none (limits is left as it
// is).
func ReadLimits(dir string, limits any) error {
	b, err := ReadFile(Limits(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, limits); err != nil {
		return fmt.Errorf("%s: %w", Limits(dir), err)
	}
	return nil
}
