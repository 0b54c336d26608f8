"""Studies: the grid of a study file (`grid`), sweeps (`sweep`) into the results database
(`store`), aggregates over repetitions (`aggregate`), the axes figures and tables use
(`axes`) and the published studies shipped as presets (`presets`, `published/`)."""
