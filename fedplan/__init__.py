"""fedplan: plan differentially private federated and asynchronous training from theory."""
