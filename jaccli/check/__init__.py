"""Checking derivatives: finite differences, kinks and step crossings, comparisons and verdicts, diagnostics."""
