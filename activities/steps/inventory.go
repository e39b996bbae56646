package steps

import (
	"context"

	"ctxlab/activities/api"
	"ctxlab/activities/inventory"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func init() {
	registerStep(specs.Inventory, inventoryStep)
}

// inventoryStep is CQ2-CARE's step 1 (no model): the repository's paths ranked by the words they share with the
// issue, the best kept within tau tokens, listed alphabetically. Its output is an inventory.Inventory.
func inventoryStep(ctx context.Context, j *job, p specs.InventoryParams) (api.NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	inv, err := inventory.Select(m.Paths(), inst.ProblemStatement, p.Tokenizer, p.Ratio, p.Cap)
	if err != nil {
		return api.NodeOutput{}, permanentf(api.ErrBadInput, "%s: %v", j.in.Step, err)
	}
	ref, err := cas.PutJSON(ctx, j.store, inv)
	if err != nil {
		return api.NodeOutput{}, err
	}
	row := map[string]any{}
	specs.InventoryPaths.Set(row, len(inv.Paths))
	specs.InventoryTokens.Set(row, inv.Tokens)
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

// loadInventory reads the inventory a named input points at.
func (j *job) loadInventory(ctx context.Context, name string) (inventory.Inventory, error) {
	var inv inventory.Inventory
	in, err := j.input(name)
	if err != nil {
		return inv, err
	}
	err = cas.GetJSON(ctx, j.store, in.Ref, &inv)
	return inv, err
}
