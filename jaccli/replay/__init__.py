"""record_once and what makes repeated calls fast: replays of a recording, compiled sweeps, sweep templates."""
