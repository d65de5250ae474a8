"""How each source of published training runs becomes validation cases, for
tools/validation/convert_published_runs.py: a module a source (megatron,
korthikanti, bloom, zero_bubble, torchtitan, fms, llmfoundry, deepspeed_azure,
moe, and headlines for claims with no per-run figure), with what they share in
common, what each group's framework ran in framework_rules, and the rankings
between cases in orderings."""
