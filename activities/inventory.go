package activities

import (
	"context"

	"ctxlab/activities/inventory"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func init() {
	registerNode("inventory", func(a *Activities) any { return a.Inventory })
}

// InventoryParams are declared in specs beside the catalog, which checks every step's params against them.
type InventoryParams = specs.InventoryParams

// Inventory is CQ2-CARE's step 1 (no model): the repository's paths ranked by the words they share with the issue,
// the best kept within tau tokens, listed alphabetically. Its output is an inventory.Inventory.
func (a *Activities) Inventory(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.node(ctx, in, "inventory", func(ctx context.Context, j *job) (NodeOutput, error) {
		p := specs.InventoryDefaults
		inst, m, err := j.setup(ctx, &p)
		if err != nil {
			return NodeOutput{}, err
		}
		inv, err := inventory.Select(m.Paths(), inst.ProblemStatement, p.Tokenizer, p.Ratio, p.Cap)
		if err != nil {
			return NodeOutput{}, permanentf(ErrBadInput, "%s: %v", in.Step, err)
		}
		ref, err := cas.PutJSON(ctx, j.store, inv)
		if err != nil {
			return NodeOutput{}, err
		}
		return NodeOutput{Ref: ref, Row: map[string]any{
			"inventory_paths":  len(inv.Paths),
			"inventory_tokens": inv.Tokens,
		}}, nil
	})
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
