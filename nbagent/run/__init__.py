"""The run engine: the loop, its steps, budgets, status lines and typed output."""
