"""The safe expression language of `jaccli -e`: parse, check against the allowed subset, evaluate."""
