"""Early-stopped, L2-regularised logistic regression on synthetic blobs."""
