"""Rendering for people: rich tables, heatmaps, reports and progress on terminals; plain text elsewhere."""
