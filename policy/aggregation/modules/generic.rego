# Aggregation for every kind without a module of its own: the generic rules of docs/aggregation.md
# (numbers → minimum; booleans → false if any false; strings → kept only when all WECs agree;
# conditions by type with three-valued logic, negative types any-True; lists and maps merged only
# when their shapes match), with observedGeneration mapped to the WDS generation.
package statusfold.builtin.generic

combine := {"*": "generic"}
