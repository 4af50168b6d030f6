"""What one engine step costs: roofline per part, parallelism, memory, optimisations.

Build a `Deployment` (model, GPU, precisions, parallelism), wrap it in a `StepModel`
(a `StepCost`: batch in, seconds out), and ask `plan_memory` how many KV blocks fit.
"""
